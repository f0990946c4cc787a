package jsontape

import (
	"bytes"
	"errors"
	"fmt"
	"math"
	"unicode/utf8"
)

// Kind is the JSON type of a node.
type Kind uint8

// The kinds of node.
const (
	Invalid Kind = iota
	Null
	False
	True
	Number
	String
	Array
	Object
)

var kindNames = [...]string{"invalid", "null", "false", "true", "number", "string", "array", "object"}

func (k Kind) String() string {
	if int(k) < len(kindNames) {
		return kindNames[k]
	}
	return fmt.Sprintf("kind(%d)", uint8(k))
}

// Node flags.
const (
	// FlagEscaped marks a string whose source holds at least one backslash escape.
	FlagEscaped uint8 = 1 << iota
	// FlagKey marks a string that is an object member's name.
	FlagKey
)

// Node is one value of the document.
type Node struct {
	// Start and End delimit the node in the source. For a string they are the
	// bytes between the quotes (escapes not undone); for a container they
	// include the brackets; for a number or literal they are its token.
	Start, End uint32
	// Next is the index of the node after this node's subtree.
	Next  uint32
	Kind  Kind
	Flags uint8
}

// DefaultMaxDepth bounds nesting when a Tape has no MaxDepth of its own.
const DefaultMaxDepth = 512

// Errors reported by Parse, wrapped in a *SyntaxError.
var (
	ErrSyntax       = errors.New("invalid JSON")
	ErrDepth        = errors.New("nesting too deep")
	ErrDuplicateKey = errors.New("duplicate key in object")
	ErrInvalidUTF8  = errors.New("invalid UTF-8 in string")
	ErrTooLarge     = errors.New("document too large")
)

// SyntaxError says where in the source parsing failed and why.
type SyntaxError struct {
	Offset int    // byte offset of the problem
	Err    error  // one of the Err* values of this package
	Detail string // what was expected or found, for people
}

func (e *SyntaxError) Error() string {
	if e.Detail == "" {
		return fmt.Sprintf("%v at offset %d", e.Err, e.Offset)
	}
	return fmt.Sprintf("%v at offset %d: %s", e.Err, e.Offset, e.Detail)
}

func (e *SyntaxError) Unwrap() error { return e.Err }

// frame is an open container during parsing.
type frame struct {
	node  uint32
	count uint32              // members so far (objects)
	keys  map[string]struct{} // set of member names once count passes smallObject
}

// Objects with up to smallObject members are checked for duplicate keys by
// comparing against each earlier key; larger ones switch to a set so a hostile
// document cannot make the check quadratic.
const smallObject = 16

// Tape is the index of one document. The zero value is ready to use.
type Tape struct {
	// MaxDepth bounds nesting; zero means DefaultMaxDepth.
	MaxDepth int

	Src   []byte
	Nodes []Node

	stack   []frame
	scratch []byte // Text's buffer
	keyA    []byte // sameString's buffers
	keyB    []byte
	numA    []byte // Equal's buffers for numbers
	numB    []byte
}

// Parse indexes src, replacing what the tape held. The tape keeps a reference
// to src: the caller must not modify it while the tape is in use.
func (t *Tape) Parse(src []byte) error {
	t.Src = src
	t.Nodes = t.Nodes[:0]
	t.stack = t.stack[:0]
	if uint64(len(src)) >= math.MaxUint32 {
		return &SyntaxError{Offset: 0, Err: ErrTooLarge}
	}
	maxDepth := t.MaxDepth
	if maxDepth <= 0 {
		maxDepth = DefaultMaxDepth
	}
	p := skipSpace(src, 0)
	for {
		// A value starts at p.
		if p >= len(src) {
			return t.syntax(p, "unexpected end of input, want a value")
		}
		var err error
		switch c := src[p]; c {
		case '{', '[':
			if len(t.stack) >= maxDepth {
				return &SyntaxError{Offset: p, Err: ErrDepth, Detail: fmt.Sprintf("more than %d levels", maxDepth)}
			}
			k := Object
			closer := byte('}')
			if c == '[' {
				k = Array
				closer = ']'
			}
			idx := uint32(len(t.Nodes))
			t.Nodes = append(t.Nodes, Node{Start: uint32(p), Kind: k})
			t.stack = append(t.stack, frame{node: idx})
			p = skipSpace(src, p+1)
			if p < len(src) && src[p] == closer {
				p = t.close(p)
				break
			}
			if k == Object {
				if p, err = t.member(p); err != nil {
					return err
				}
			}
			continue
		case '"':
			if p, err = t.str(p, 0); err != nil {
				return err
			}
		case 't':
			if p, err = t.literal(p, "true", True); err != nil {
				return err
			}
		case 'f':
			if p, err = t.literal(p, "false", False); err != nil {
				return err
			}
		case 'n':
			if p, err = t.literal(p, "null", Null); err != nil {
				return err
			}
		default:
			if c == '-' || (c >= '0' && c <= '9') {
				if p, err = t.number(p); err != nil {
					return err
				}
			} else {
				return t.syntax(p, fmt.Sprintf("unexpected %q, want a value", c))
			}
		}
		// A value ended before p: close containers or move to the next member.
		for {
			if len(t.stack) == 0 {
				p = skipSpace(src, p)
				if p != len(src) {
					return t.syntax(p, "data after the top-level value")
				}
				return nil
			}
			top := &t.stack[len(t.stack)-1]
			p = skipSpace(src, p)
			if p >= len(src) {
				return t.syntax(p, "unexpected end of input in "+t.Nodes[top.node].Kind.String())
			}
			c := src[p]
			if c == ',' {
				p = skipSpace(src, p+1)
				if t.Nodes[top.node].Kind == Object {
					if p, err = t.member(p); err != nil {
						return err
					}
				}
				break
			}
			want := byte(']')
			if t.Nodes[top.node].Kind == Object {
				want = '}'
			}
			if c != want {
				return t.syntax(p, fmt.Sprintf("unexpected %q, want ',' or %q", c, want))
			}
			p = t.close(p)
		}
	}
}

func (t *Tape) syntax(p int, detail string) error {
	return &SyntaxError{Offset: p, Err: ErrSyntax, Detail: detail}
}

// close ends the innermost container at its closing bracket p.
func (t *Tape) close(p int) int {
	top := t.stack[len(t.stack)-1]
	n := &t.Nodes[top.node]
	n.End = uint32(p + 1)
	n.Next = uint32(len(t.Nodes))
	t.stack[len(t.stack)-1] = frame{}
	t.stack = t.stack[:len(t.stack)-1]
	return p + 1
}

// member reads `"key" :` at p and returns the offset of the value.
func (t *Tape) member(p int) (int, error) {
	if p >= len(t.Src) || t.Src[p] != '"' {
		return p, t.syntax(p, "want an object key")
	}
	keyIdx := uint32(len(t.Nodes))
	p, err := t.str(p, FlagKey)
	if err != nil {
		return p, err
	}
	if err := t.checkDuplicate(keyIdx); err != nil {
		return p, err
	}
	p = skipSpace(t.Src, p)
	if p >= len(t.Src) || t.Src[p] != ':' {
		return p, t.syntax(p, "want ':' after an object key")
	}
	return skipSpace(t.Src, p+1), nil
}

func (t *Tape) checkDuplicate(keyIdx uint32) error {
	top := &t.stack[len(t.stack)-1]
	top.count++
	dup := false
	switch {
	case top.count <= smallObject:
		for i := top.node + 1; i < keyIdx; i = t.Nodes[i+1].Next {
			if t.sameString(i, keyIdx) {
				dup = true
				break
			}
		}
	default:
		if top.keys == nil {
			top.keys = make(map[string]struct{}, 2*smallObject)
			for i := top.node + 1; i < keyIdx; i = t.Nodes[i+1].Next {
				top.keys[string(t.Text(i))] = struct{}{}
			}
		}
		k := string(t.Text(keyIdx))
		if _, dup = top.keys[k]; !dup {
			top.keys[k] = struct{}{}
		}
	}
	if dup {
		n := t.Nodes[keyIdx]
		return &SyntaxError{Offset: int(n.Start) - 1, Err: ErrDuplicateKey, Detail: fmt.Sprintf("%q", t.Text(keyIdx))}
	}
	return nil
}

// sameString reports whether string nodes a and b hold the same text.
func (t *Tape) sameString(a, b uint32) bool {
	na, nb := t.Nodes[a], t.Nodes[b]
	ra, rb := t.Src[na.Start:na.End], t.Src[nb.Start:nb.End]
	if (na.Flags|nb.Flags)&FlagEscaped == 0 {
		return bytes.Equal(ra, rb)
	}
	t.keyA = AppendUnescaped(t.keyA[:0], ra)
	t.keyB = AppendUnescaped(t.keyB[:0], rb)
	return bytes.Equal(t.keyA, t.keyB)
}

func (t *Tape) literal(p int, word string, k Kind) (int, error) {
	if len(t.Src)-p < len(word) || string(t.Src[p:p+len(word)]) != word {
		return p, t.syntax(p, "invalid literal")
	}
	idx := uint32(len(t.Nodes))
	t.Nodes = append(t.Nodes, Node{Start: uint32(p), End: uint32(p + len(word)), Next: idx + 1, Kind: k})
	return p + len(word), nil
}

func (t *Tape) number(p int) (int, error) {
	src := t.Src
	start := p
	if src[p] == '-' {
		p++
	}
	switch {
	case p < len(src) && src[p] == '0':
		p++
	case p < len(src) && src[p] >= '1' && src[p] <= '9':
		for p < len(src) && IsDigit(src[p]) {
			p++
		}
	default:
		return p, t.syntax(p, "invalid number")
	}
	if p < len(src) && src[p] == '.' {
		p++
		if p >= len(src) || !IsDigit(src[p]) {
			return p, t.syntax(p, "invalid number: want a digit after '.'")
		}
		for p < len(src) && IsDigit(src[p]) {
			p++
		}
	}
	if p < len(src) && (src[p] == 'e' || src[p] == 'E') {
		p++
		if p < len(src) && (src[p] == '+' || src[p] == '-') {
			p++
		}
		if p >= len(src) || !IsDigit(src[p]) {
			return p, t.syntax(p, "invalid number: want a digit in the exponent")
		}
		for p < len(src) && IsDigit(src[p]) {
			p++
		}
	}
	idx := uint32(len(t.Nodes))
	t.Nodes = append(t.Nodes, Node{Start: uint32(start), End: uint32(p), Next: idx + 1, Kind: Number})
	return p, nil
}

// str reads the string whose opening quote is at p.
func (t *Tape) str(p int, flags uint8) (int, error) {
	src := t.Src
	p++
	start := p
	for {
		if p >= len(src) {
			return p, t.syntax(p, "unterminated string")
		}
		c := src[p]
		switch {
		case c == '"':
			idx := uint32(len(t.Nodes))
			t.Nodes = append(t.Nodes, Node{Start: uint32(start), End: uint32(p), Next: idx + 1, Kind: String, Flags: flags})
			return p + 1, nil
		case c == '\\':
			flags |= FlagEscaped
			if p+1 >= len(src) {
				return p, t.syntax(p, "unterminated escape")
			}
			switch src[p+1] {
			case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
				p += 2
			case 'u':
				if p+6 > len(src) {
					return p, t.syntax(p, "short \\u escape")
				}
				for _, h := range src[p+2 : p+6] {
					if unhex(h) < 0 {
						return p, t.syntax(p, "invalid \\u escape")
					}
				}
				p += 6
			default:
				return p, t.syntax(p, fmt.Sprintf("invalid escape \\%c", src[p+1]))
			}
		case c < 0x20:
			return p, t.syntax(p, "control character in string")
		case c < utf8.RuneSelf:
			p++
		default:
			r, size := utf8.DecodeRune(src[p:])
			if r == utf8.RuneError && size == 1 {
				return p, &SyntaxError{Offset: p, Err: ErrInvalidUTF8}
			}
			p += size
		}
	}
}

// IsDigit reports whether c is an ASCII digit, as JSON numbers (and the
// JSONPath indices of the capability package) spell them.
func IsDigit(c byte) bool { return c >= '0' && c <= '9' }

func skipSpace(src []byte, p int) int {
	for p < len(src) {
		switch src[p] {
		case ' ', '\t', '\n', '\r':
			p++
		default:
			return p
		}
	}
	return p
}

func unhex(c byte) rune {
	switch {
	case c >= '0' && c <= '9':
		return rune(c - '0')
	case c >= 'a' && c <= 'f':
		return rune(c - 'a' + 10)
	case c >= 'A' && c <= 'F':
		return rune(c - 'A' + 10)
	}
	return -1
}
