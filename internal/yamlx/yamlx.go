package yamlx

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"

	"go.yaml.in/yaml/v3"

	"github.com/mew-protocol/mew/internal/clip"
)

// Limits bound what a document may expand to, aliases followed. A zero
// field is no limit.
type Limits struct {
	// Depth bounds the nesting of mappings and lists.
	Depth int
	// Nodes bounds the nodes.
	Nodes int
	// Bytes bounds the bytes of scalar text.
	Bytes int
	// Indicators bounds the characters that can start a YAML node (see
	// indicators), checked before parsing: every node but the first needs
	// one, so a file within the bound parses into at most about twice as
	// many nodes (the YAML library keeps some 200 bytes per node in
	// memory), however its bytes are arranged.
	Indicators int
}

// Error is a problem at a node of a document.
type Error struct {
	Line int    // 1-based line of the node, 0 when unknown
	Path string // key path of the value, e.g. "participants.helper.args[1]"; "" for the document
	Err  error
}

func (e *Error) Error() string {
	var b strings.Builder
	if e.Line > 0 {
		fmt.Fprintf(&b, "line %d: ", e.Line)
	}
	if e.Path != "" {
		b.WriteString(e.Path + ": ")
	}
	b.WriteString(e.Err.Error())
	return b.String()
}

func (e *Error) Unwrap() error { return e.Err }

// fail returns an *Error at node n (which may be nil) and key path.
// format may use %w.
func fail(n *yaml.Node, path, format string, args ...any) error {
	line := 0
	if n != nil {
		line = n.Line
	}
	return &Error{Line: line, Path: path, Err: fmt.Errorf(format, args...)}
}

// YAML short tags.
const (
	TagNull      = "!!null"
	TagBool      = "!!bool"
	TagStr       = "!!str"
	TagInt       = "!!int"
	TagFloat     = "!!float"
	TagTimestamp = "!!timestamp"
	TagMerge     = "!!merge"
)

// Decode parses data, one YAML document, into its document node; nil for
// an empty stream. A stream with more than one document is refused
// unless firstOnly, when the others are ignored. A document beyond lim
// is refused. Errors are *Error.
func Decode(data []byte, lim Limits, firstOnly bool) (*yaml.Node, error) {
	if lim.Indicators > 0 && countIndicators(data, lim.Indicators) > lim.Indicators {
		return nil, &Error{Err: fmt.Errorf("too complex: more than %d of the characters %q that make YAML nodes", lim.Indicators, indicators)}
	}
	dec := yaml.NewDecoder(bytes.NewReader(data))
	var doc yaml.Node
	if err := dec.Decode(&doc); err != nil {
		if errors.Is(err, io.EOF) {
			return nil, nil
		}
		return nil, syntax(err)
	}
	if !firstOnly {
		var extra yaml.Node
		switch err := dec.Decode(&extra); {
		case errors.Is(err, io.EOF):
		case err != nil:
			return nil, syntax(err)
		default:
			return nil, fail(&extra, "", "more than one YAML document")
		}
	}
	if err := (&sizer{lim: lim}).check(&doc); err != nil {
		return nil, err
	}
	return &doc, nil
}

// syntax turns a YAML library error ("yaml: line 3: ...") into an *Error.
func syntax(err error) error {
	msg := strings.TrimPrefix(err.Error(), "yaml: ")
	line := 0
	if rest, ok := strings.CutPrefix(msg, "line "); ok {
		if num, after, ok := strings.Cut(rest, ": "); ok {
			if n, err := strconv.Atoi(num); err == nil && n > 0 {
				line, msg = n, after
			}
		}
	}
	return &Error{Line: line, Err: fmt.Errorf("invalid YAML: %s", msg)}
}

// indicators are the bytes that introduce a block sequence item (-), a
// mapping value (:), an explicit key (?), a flow collection ([ {), a flow
// item (,) or an alias (*).
const indicators = ",:-[{?*"

// countIndicators counts the bytes of data that are in indicators, stopping
// early past limit.
func countIndicators(data []byte, limit int) int {
	var table [256]bool
	for i := range len(indicators) {
		table[indicators[i]] = true
	}
	n := 0
	for _, c := range data {
		if table[c] {
			n++
			if n > limit {
				break
			}
		}
	}
	return n
}

// sizer measures a document as if every alias were expanded, refusing it
// when it nests too deeply, expands too far or refers to itself.
type sizer struct {
	lim    Limits
	memo   map[*yaml.Node]extent // anchored nodes already measured
	active map[*yaml.Node]bool   // anchored nodes being measured
}

type extent struct {
	depth, nodes, bytes int
}

func (s *sizer) check(doc *yaml.Node) error {
	s.memo = make(map[*yaml.Node]extent)
	s.active = make(map[*yaml.Node]bool)
	_, err := s.measure(doc, 0)
	return err
}

// measure returns the extent of n, which sits inside depth collections.
func (s *sizer) measure(n *yaml.Node, depth int) (extent, error) {
	if n.Kind == yaml.AliasNode {
		t := n.Alias
		if t == nil {
			return extent{}, fail(n, "", "alias *%s refers to nothing", n.Value)
		}
		if s.active[t] {
			return extent{}, fail(n, "", "alias *%s refers to a node that contains it", n.Value)
		}
		e, ok := s.memo[t]
		if !ok {
			var err error
			if e, err = s.measure(t, depth); err != nil {
				return extent{}, err
			}
		}
		if s.lim.Depth > 0 && depth+e.depth > s.lim.Depth {
			return extent{}, fail(n, "", "nested more than %d levels deep", s.lim.Depth)
		}
		return e, nil
	}
	e := extent{nodes: 1, bytes: len(n.Value)}
	inner := depth
	switch n.Kind {
	case yaml.MappingNode, yaml.SequenceNode:
		e.depth = 1
		inner = depth + 1
		if s.lim.Depth > 0 && inner > s.lim.Depth {
			return extent{}, fail(n, "", "nested more than %d levels deep", s.lim.Depth)
		}
	}
	if n.Anchor != "" {
		s.active[n] = true
		defer delete(s.active, n)
	}
	for _, c := range n.Content {
		ce, err := s.measure(c, inner)
		if err != nil {
			return extent{}, err
		}
		if n.Kind != yaml.DocumentNode {
			e.depth = max(e.depth, ce.depth+1)
		} else {
			e.depth = max(e.depth, ce.depth)
		}
		e.nodes += ce.nodes
		e.bytes += ce.bytes
		if s.lim.Nodes > 0 && e.nodes > s.lim.Nodes {
			return extent{}, fail(n, "", "document expands to more than %d nodes", s.lim.Nodes)
		}
		if s.lim.Bytes > 0 && e.bytes > s.lim.Bytes {
			return extent{}, fail(n, "", "document expands to more than %d bytes", s.lim.Bytes)
		}
	}
	if n.Anchor != "" {
		s.memo[n] = e
	}
	return e, nil
}

// Deref follows an alias.
func Deref(n *yaml.Node) *yaml.Node {
	if n != nil && n.Kind == yaml.AliasNode {
		return n.Alias
	}
	return n
}

// IsNull reports whether n is absent or null.
func IsNull(n *yaml.Node) bool {
	n = Deref(n)
	return n == nil || n.Kind == yaml.ScalarNode && n.ShortTag() == TagNull
}

// Errorf returns an *Error at node n (which may be nil) and key path, for
// callers that check more than the readers do. format may use %w.
func Errorf(n *yaml.Node, path, format string, args ...any) error {
	return fail(n, path, format, args...)
}

// Describe names what n is, for "want X, got Y" messages: its kind and,
// for a scalar, its value as written (shortened, and quoted when it is a
// string), as in `a string ("yes")`, `a number (5)`, `a list`, `null`.
func Describe(n *yaml.Node) string {
	kind := DescribeKind(n)
	n = Deref(n)
	if n == nil || n.Kind != yaml.ScalarNode || n.ShortTag() == TagNull {
		return kind
	}
	return kind + " (" + shown(n) + ")"
}

// DescribeKind names the kind of n without showing its value, for values
// that may be secret.
func DescribeKind(n *yaml.Node) string {
	n = Deref(n)
	switch {
	case n == nil:
		return "nothing"
	case n.Kind == yaml.MappingNode:
		return "a mapping"
	case n.Kind == yaml.SequenceNode:
		return "a list"
	case n.Kind != yaml.ScalarNode:
		return "an unexpected node"
	}
	switch tag := n.ShortTag(); tag {
	case TagNull:
		return "null"
	case TagStr:
		return "a string"
	case TagBool:
		return "a boolean"
	case TagInt, TagFloat:
		return "a number"
	case TagTimestamp:
		return "a date"
	default:
		return "a value tagged " + showText(tag, maxShown, false)
	}
}

// maxShown bounds how much of a value a message shows.
const maxShown = 40

// shown is the value of scalar n for a message, quoted unless it is a
// boolean, a number or a date.
func shown(n *yaml.Node) string {
	switch n.ShortTag() {
	case TagBool, TagInt, TagFloat, TagTimestamp:
		return showText(n.Value, maxShown, false)
	}
	return showText(n.Value, maxShown, true)
}

// showText shortens s to limit bytes for a message, marking the cut with
// "…" after the closing quote, and quotes it when quote is set or when it
// is not plain printable text, so that hostile values cannot garble
// messages.
func showText(s string, limit int, quote bool) string {
	cut := clip.Bytes(s, limit)
	out := cut
	if quote || !printable(cut) {
		out = strconv.Quote(cut)
	}
	if len(cut) < len(s) {
		out += "…"
	}
	return out
}

// printable reports whether s is valid UTF-8 of printable characters
// only, double quotes excepted.
func printable(s string) bool {
	return utf8.ValidString(s) && !strings.ContainsFunc(s, func(r rune) bool { return !unicode.IsPrint(r) || r == '"' })
}

// Pair is one entry of a mapping.
type Pair struct {
	Key     string
	KeyNode *yaml.Node
	Value   *yaml.Node // aliases not followed
}

// Pairs returns the entries of mapping n in file order, with merge keys
// (<<) expanded in place: entries written in the mapping win over merged
// ones, earlier merged mappings over later ones. Keys must be strings and
// must not repeat.
func Pairs(n *yaml.Node, path string) ([]Pair, error) {
	type merge struct {
		at int
		v  *yaml.Node
	}
	var (
		out    = make([]Pair, 0, len(n.Content)/2)
		merges []merge
		seen   = make(map[string]bool, len(n.Content)/2)
	)
	for i := 0; i+1 < len(n.Content); i += 2 {
		kn, vn := n.Content[i], n.Content[i+1]
		k := Deref(kn)
		if k != nil && k.Kind == yaml.ScalarNode && k.ShortTag() == TagMerge {
			merges = append(merges, merge{at: len(out), v: vn})
			continue
		}
		if k == nil || k.Kind != yaml.ScalarNode || k.ShortTag() != TagStr {
			return nil, fail(kn, path, "want a string key, got %s", Describe(k))
		}
		if seen[k.Value] {
			return nil, fail(kn, JoinKey(path, k.Value), "duplicate key")
		}
		seen[k.Value] = true
		out = append(out, Pair{Key: k.Value, KeyNode: kn, Value: vn})
	}
	if len(merges) == 0 {
		return out, nil
	}
	explicit := out
	out = make([]Pair, 0, len(explicit))
	next := 0
	for _, m := range merges {
		out = append(out, explicit[next:m.at]...)
		next = m.at
		var srcs []*yaml.Node
		switch v := Deref(m.v); {
		case v != nil && v.Kind == yaml.MappingNode:
			srcs = []*yaml.Node{v}
		case v != nil && v.Kind == yaml.SequenceNode:
			for _, item := range v.Content {
				if d := Deref(item); d != nil && d.Kind == yaml.MappingNode {
					srcs = append(srcs, d)
				} else {
					return nil, fail(item, path, "a merge (<<) wants mappings, got %s", Describe(item))
				}
			}
		default:
			return nil, fail(m.v, path, "a merge (<<) wants a mapping or a list of mappings, got %s", Describe(m.v))
		}
		for _, src := range srcs {
			sub, err := Pairs(src, path)
			if err != nil {
				return nil, err
			}
			for _, sp := range sub {
				if !seen[sp.Key] {
					seen[sp.Key] = true
					out = append(out, sp)
				}
			}
		}
	}
	return append(out, explicit[next:]...), nil
}

// Mapping returns the entries of the mapping at n; none when n is null.
func Mapping(n *yaml.Node, key string) ([]Pair, error) {
	if IsNull(n) {
		return nil, nil
	}
	return StrictMapping(n, key)
}

// StrictMapping returns the entries of the mapping at n, refusing null.
func StrictMapping(n *yaml.Node, key string) ([]Pair, error) {
	v := Deref(n)
	if v == nil || v.Kind != yaml.MappingNode {
		return nil, fail(n, key, "want a mapping, got %s", Describe(v))
	}
	return Pairs(v, key)
}

// List returns the items of the list at n (aliases not followed),
// refusing null.
func List(n *yaml.Node, key string) ([]*yaml.Node, error) {
	v := Deref(n)
	if v == nil || v.Kind != yaml.SequenceNode {
		return nil, fail(n, key, "want a list, got %s", Describe(v))
	}
	return v.Content, nil
}

// String returns the text of a scalar: strings, and numbers, booleans and
// dates as written. Null is "".
func String(n *yaml.Node, key string) (string, error) {
	v := Deref(n)
	if IsNull(v) {
		return "", nil
	}
	if v.Kind == yaml.ScalarNode {
		switch tag := v.ShortTag(); tag {
		case TagStr, TagInt, TagFloat, TagBool, TagTimestamp:
			return v.Value, nil
		default:
			return "", fail(n, key, "unsupported YAML tag %s", tag)
		}
	}
	return "", fail(n, key, "want a string, got %s", Describe(v))
}

// StrictString returns a string, refusing what YAML reads as anything
// else: null, a number, a boolean, a date.
func StrictString(n *yaml.Node, key string) (string, error) {
	v := Deref(n)
	if v == nil || v.Kind != yaml.ScalarNode || v.ShortTag() != TagStr {
		return "", fail(n, key, "want a string, got %s", Describe(v))
	}
	return v.Value, nil
}

// Bool returns a boolean, def when n is null.
func Bool(n *yaml.Node, key string, def bool) (bool, error) {
	if IsNull(n) {
		return def, nil
	}
	return StrictBool(n, key)
}

// StrictBool returns a boolean, refusing null.
func StrictBool(n *yaml.Node, key string) (bool, error) {
	v := Deref(n)
	var b bool
	if v == nil || v.Kind != yaml.ScalarNode || v.ShortTag() != TagBool || v.Decode(&b) != nil {
		return false, fail(n, key, "want a boolean, got %s", Describe(v))
	}
	return b, nil
}

// Number returns a finite number, refusing null.
func Number(n *yaml.Node, key string) (float64, error) {
	v := Deref(n)
	var f float64
	if v == nil || v.Kind != yaml.ScalarNode || (v.ShortTag() != TagInt && v.ShortTag() != TagFloat) || v.Decode(&f) != nil {
		return 0, fail(n, key, "want a number, got %s", Describe(v))
	}
	if math.IsInf(f, 0) || math.IsNaN(f) {
		return 0, fail(n, key, "want a finite number, got %s", shown(v))
	}
	return f, nil
}

// Count returns a whole number of at least 0, refusing null.
func Count(n *yaml.Node, key string) (int, error) {
	v := Deref(n)
	var i int
	if v == nil || v.Kind != yaml.ScalarNode || v.ShortTag() != TagInt || v.Decode(&i) != nil || i < 0 {
		return 0, fail(n, key, "want a whole number of at least 0, got %s", Describe(v))
	}
	return i, nil
}

// StringList returns a list of texts (see String) without nulls; nil
// when n is null.
func StringList(n *yaml.Node, key string) ([]string, error) {
	if IsNull(n) {
		return nil, nil
	}
	return listOf(n, key, func(item *yaml.Node, k string) (string, error) {
		if IsNull(item) {
			return "", fail(item, k, "want a string, got null")
		}
		return String(item, k)
	})
}

// StrictStringList returns a list of strings (see StrictString), refusing
// null.
func StrictStringList(n *yaml.Node, key string) ([]string, error) {
	return listOf(n, key, StrictString)
}

// listOf returns the items of the list at n, each read with read,
// refusing null.
func listOf[T any](n *yaml.Node, key string, read func(*yaml.Node, string) (T, error)) ([]T, error) {
	items, err := List(n, key)
	if err != nil {
		return nil, err
	}
	out := make([]T, 0, len(items))
	for i, item := range items {
		x, err := read(item, IndexKey(key, i))
		if err != nil {
			return nil, err
		}
		out = append(out, x)
	}
	return out, nil
}

// StringMap returns a mapping of keys to texts (see String: a null value
// is ""), refusing null for the mapping.
func StringMap(n *yaml.Node, key string) (map[string]string, error) {
	pairs, err := StrictMapping(n, key)
	if err != nil {
		return nil, err
	}
	out := make(map[string]string, len(pairs))
	for _, p := range pairs {
		s, err := String(p.Value, JoinKey(key, p.Key))
		if err != nil {
			return nil, err
		}
		out[p.Key] = s
	}
	return out, nil
}

// AppendJSON appends n as compact JSON, mapping keys in file order.
func AppendJSON(dst []byte, n *yaml.Node, key string) ([]byte, error) {
	v := Deref(n)
	if v == nil {
		return append(dst, "null"...), nil
	}
	switch v.Kind {
	case yaml.MappingNode:
		pairs, err := Pairs(v, key)
		if err != nil {
			return nil, err
		}
		return AppendObject(dst, pairs, key)
	case yaml.SequenceNode:
		dst = append(dst, '[')
		for i, item := range v.Content {
			if i > 0 {
				dst = append(dst, ',')
			}
			var err error
			if dst, err = AppendJSON(dst, item, IndexKey(key, i)); err != nil {
				return nil, err
			}
		}
		return append(dst, ']'), nil
	case yaml.ScalarNode:
		return appendScalar(dst, n, v, key)
	}
	return nil, fail(n, key, "unexpected YAML node")
}

// AppendObject appends the entries of a mapping as a JSON object.
func AppendObject(dst []byte, pairs []Pair, key string) ([]byte, error) {
	dst = append(dst, '{')
	for i, kv := range pairs {
		if i > 0 {
			dst = append(dst, ',')
		}
		dst = appendJSONString(dst, kv.Key)
		dst = append(dst, ':')
		var err error
		if dst, err = AppendJSON(dst, kv.Value, JoinKey(key, kv.Key)); err != nil {
			return nil, err
		}
	}
	return append(dst, '}'), nil
}

// appendScalar appends the JSON equivalent of scalar v (reached through n).
func appendScalar(dst []byte, n, v *yaml.Node, key string) ([]byte, error) {
	switch tag := v.ShortTag(); tag {
	case TagNull:
		return append(dst, "null"...), nil
	case TagBool:
		var b bool
		if err := v.Decode(&b); err != nil {
			return nil, fail(n, key, "invalid boolean %s", shown(v))
		}
		return strconv.AppendBool(dst, b), nil
	case TagInt:
		var x any
		if err := v.Decode(&x); err != nil {
			return nil, fail(n, key, "invalid integer %s", shown(v))
		}
		switch x := x.(type) {
		case int:
			return strconv.AppendInt(dst, int64(x), 10), nil
		case int64:
			return strconv.AppendInt(dst, x, 10), nil
		case uint64:
			return strconv.AppendUint(dst, x, 10), nil
		case float64:
			return appendFloat(dst, n, key, x)
		}
		return nil, fail(n, key, "invalid integer %s", shown(v))
	case TagFloat:
		var f float64
		if err := v.Decode(&f); err != nil {
			return nil, fail(n, key, "invalid number %s", shown(v))
		}
		return appendFloat(dst, n, key, f)
	case TagStr, TagTimestamp:
		return appendJSONString(dst, v.Value), nil
	default:
		return nil, fail(n, key, "unsupported YAML tag %s", tag)
	}
}

// appendFloat appends f the way JavaScript's JSON.stringify writes numbers.
func appendFloat(dst []byte, n *yaml.Node, key string, f float64) ([]byte, error) {
	if math.IsInf(f, 0) || math.IsNaN(f) {
		return nil, fail(n, key, "%s cannot be written as JSON", shown(Deref(n)))
	}
	if f == 0 {
		return append(dst, '0'), nil // also -0, as JSON.stringify does
	}
	abs := math.Abs(f)
	if abs < 1e21 && abs >= 1e-6 {
		return strconv.AppendFloat(dst, f, 'f', -1, 64), nil
	}
	b := strconv.AppendFloat(dst, f, 'e', -1, 64)
	// Go writes e-07 and e+21; JavaScript writes e-7 and e+21.
	if i := bytes.LastIndexByte(b, 'e'); i >= 0 && i+2 < len(b) && b[i+2] == '0' {
		b = append(b[:i+2], b[i+3:]...)
	}
	return b, nil
}

// appendJSONString appends s as a JSON string: invalid UTF-8 becomes U+FFFD,
// control characters are escaped, nothing else is (as JSON.stringify does).
func appendJSONString(dst []byte, s string) []byte {
	const hex = "0123456789abcdef"
	dst = append(dst, '"')
	for i := 0; i < len(s); {
		c := s[i]
		if c >= utf8.RuneSelf {
			r, size := utf8.DecodeRuneInString(s[i:])
			if r == utf8.RuneError && size == 1 {
				dst = append(dst, `\ufffd`...)
			} else {
				dst = append(dst, s[i:i+size]...)
			}
			i += size
			continue
		}
		switch {
		case c == '"' || c == '\\':
			dst = append(dst, '\\', c)
		case c == '\n':
			dst = append(dst, '\\', 'n')
		case c == '\r':
			dst = append(dst, '\\', 'r')
		case c == '\t':
			dst = append(dst, '\\', 't')
		case c == '\b':
			dst = append(dst, '\\', 'b')
		case c == '\f':
			dst = append(dst, '\\', 'f')
		case c < 0x20:
			dst = append(dst, '\\', 'u', '0', '0', hex[c>>4], hex[c&0xf])
		default:
			dst = append(dst, c)
		}
		i++
	}
	return append(dst, '"')
}

// maxKeyInPath bounds how much of one key is shown in a key path.
const maxKeyInPath = 128

// keyPart formats one mapping key for a key path: as written when it is
// plain printable text, quoted (and shortened) otherwise, so that hostile
// keys cannot garble messages.
func keyPart(k string) string {
	return showText(k, maxKeyInPath, k == "")
}

// JoinKey appends a mapping key to a key path.
func JoinKey(path, k string) string {
	if path == "" {
		return keyPart(k)
	}
	return path + "." + keyPart(k)
}

// IndexKey appends a list index to a key path.
func IndexKey(path string, i int) string {
	return path + "[" + strconv.Itoa(i) + "]"
}
