package capability

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"unsafe"

	"github.com/mew-protocol/mew/internal/jsontape"
)

// Errors of Compile, wrapped in a *CompileError.
var (
	ErrInvalidPattern = errors.New("invalid capability pattern")
	ErrMissingKind    = errors.New("capability has no kind")
	ErrBadRegex       = errors.New("invalid regular expression")
	ErrBadJSONPath    = errors.New("invalid JSONPath expression")
	ErrDuplicateKey   = errors.New("duplicate key")
	ErrUnknownMember  = errors.New("unknown member")
)

// CompileError says which pattern, and where in it, failed to compile.
type CompileError struct {
	Path   string // e.g. "[2].payload.params.name"
	Err    error
	Detail string
}

func (e *CompileError) Error() string {
	msg := fmt.Sprintf("capability %s: %v", e.Path, e.Err)
	if e.Detail != "" {
		msg += ": " + e.Detail
	}
	return msg
}

func (e *CompileError) Unwrap() error { return e.Err }

// pattern is one compiled capability.
type pattern struct {
	kind    valuePat
	to      *valuePat  // nil: any recipients, a broadcast included
	payload *objectPat // nil: any payload
	raw     json.RawMessage
}

// Set is a compiled list of capability patterns. It is immutable and safe for
// concurrent use.
type Set struct {
	pats []*pattern
}

// Compile compiles a list of capability patterns, each a JSON object with a
// kind and an optional payload pattern. Member names are exact: a key may
// appear once in any object of a pattern, and the only other top-level
// members allowed are the annotations listed in [Annotations], which are kept
// in the raw pattern and otherwise ignored. An error names the pattern's
// index and the path inside it.
func Compile(patterns []json.RawMessage) (*Set, error) {
	s := &Set{pats: make([]*pattern, 0, len(patterns))}
	var t jsontape.Tape
	for i, raw := range patterns {
		p, err := compilePattern(&t, raw, fmt.Sprintf("[%d]", i))
		if err != nil {
			return nil, err
		}
		s.pats = append(s.pats, p)
	}
	return s, nil
}

// MustCompile is Compile for patterns known to be valid; it panics otherwise.
// It is meant for literals in programs and tests, never for input.
func MustCompile(patterns ...string) *Set {
	raws := make([]json.RawMessage, len(patterns))
	for i, p := range patterns {
		raws[i] = json.RawMessage(p)
	}
	s, err := Compile(raws)
	if err != nil {
		panic(err)
	}
	return s
}

func compilePattern(t *jsontape.Tape, raw json.RawMessage, path string) (*pattern, error) {
	if err := t.Parse(raw); err != nil {
		return nil, parseError(raw, path, err)
	}
	if t.Nodes[0].Kind != jsontape.Object {
		return nil, &CompileError{Path: path, Err: ErrInvalidPattern, Detail: "want an object, got " + t.Nodes[0].Kind.String()}
	}
	if err := checkMembers(t, path); err != nil {
		return nil, err
	}
	c := compiler{t: t}
	p := &pattern{raw: append(json.RawMessage(nil), raw...)}
	kind, ok := t.Lookup(0, "kind")
	if !ok {
		return nil, &CompileError{Path: path, Err: ErrMissingKind}
	}
	switch t.Nodes[kind].Kind {
	case jsontape.String, jsontape.Array:
	default:
		return nil, &CompileError{Path: path + ".kind", Err: ErrInvalidPattern, Detail: "want a string or an array of strings, got " + t.Nodes[kind].Kind.String()}
	}
	kp, err := c.value(kind, path+".kind")
	if err != nil {
		return nil, err
	}
	if err := checkKindPattern(&kp, path+".kind"); err != nil {
		return nil, err
	}
	p.kind = kp
	if to, ok := t.Lookup(0, "to"); ok {
		switch t.Nodes[to].Kind {
		case jsontape.String, jsontape.Array:
		default:
			return nil, &CompileError{Path: path + ".to", Err: ErrInvalidPattern, Detail: "want a participant id pattern or an array of them, got " + t.Nodes[to].Kind.String()}
		}
		tp, err := c.value(to, path+".to")
		if err != nil {
			return nil, err
		}
		if err := checkKindPattern(&tp, path+".to"); err != nil {
			return nil, err
		}
		if tp.kind == vOneOf && len(tp.items) == 0 {
			return nil, &CompileError{Path: path + ".to", Err: ErrInvalidPattern, Detail: "an empty list allows no recipient; leave to out to allow any"}
		}
		p.to = &tp
	}
	if pl, ok := t.Lookup(0, "payload"); ok {
		switch t.Nodes[pl].Kind {
		case jsontape.Null:
		case jsontape.Object:
			if p.payload, err = c.object(pl, path+".payload"); err != nil {
				return nil, err
			}
		default:
			return nil, &CompileError{Path: path + ".payload", Err: ErrInvalidPattern, Detail: "want an object, got " + t.Nodes[pl].Kind.String()}
		}
	}
	return p, nil
}

// checkKindPattern rejects kind patterns that could never match a kind (which
// is always a string), so a typo fails loudly instead of denying silently.
func checkKindPattern(p *valuePat, path string) error {
	switch p.kind {
	case vOneOf:
		for i := range p.items {
			if err := checkKindPattern(&p.items[i], fmt.Sprintf("%s[%d]", path, i)); err != nil {
				return err
			}
		}
	case vNumber, vTrue, vFalse, vNull, vObject:
		return &CompileError{Path: path, Err: ErrInvalidPattern, Detail: "a kind pattern must be a string or an array of strings"}
	}
	return nil
}

// Join returns a set holding the patterns of sets in order, without compiling
// anything again: the gateway keeps one set per grant and joins them when a
// participant's grants change.
func Join(sets ...*Set) *Set {
	n := 0
	for _, s := range sets {
		if s != nil {
			n += len(s.pats)
		}
	}
	j := &Set{pats: make([]*pattern, 0, n)}
	for _, s := range sets {
		if s != nil {
			j.pats = append(j.pats, s.pats...)
		}
	}
	return j
}

// Select returns a set of the patterns of s at the given indices, in that
// order, without compiling anything again: the gateway keeps what a
// revocation leaves of a grant. An index out of range is skipped.
func (s *Set) Select(indices []int) *Set {
	sel := &Set{pats: make([]*pattern, 0, len(indices))}
	for _, i := range indices {
		if i >= 0 && i < s.Len() {
			sel.pats = append(sel.pats, s.pats[i])
		}
	}
	return sel
}

// Len returns the number of patterns.
func (s *Set) Len() int {
	if s == nil {
		return 0
	}
	return len(s.pats)
}

// Pattern returns the i-th pattern as it was given. The caller must not modify
// it.
func (s *Set) Pattern(i int) json.RawMessage { return s.pats[i].raw }

// Patterns returns every pattern as it was given, in order.
func (s *Set) Patterns() []json.RawMessage {
	out := make([]json.RawMessage, s.Len())
	for i := range out {
		out[i] = s.pats[i].raw
	}
	return out
}

// Allows reports whether a broadcast envelope (no to) of this kind and
// payload may be sent.
func (s *Set) Allows(kind string, payload []byte) bool {
	_, ok := s.MatchTo(kind, nil, payload)
	return ok
}

// AllowsTo reports whether an envelope of this kind, addressed to these
// recipients, with this payload may be sent.
func (s *Set) AllowsTo(kind string, to []string, payload []byte) bool {
	_, ok := s.MatchTo(kind, to, payload)
	return ok
}

// Match is MatchTo for a broadcast: an envelope without to, which no
// pattern with a to member allows.
func (s *Set) Match(kind string, payload []byte) (int, bool) {
	return s.MatchTo(kind, nil, payload)
}

// MatchTo returns the index of the first pattern that allows an envelope of
// this kind, addressed to the recipients to, with this payload (the raw
// JSON of the envelope's payload member; nil when it has none), or -1 and
// false. A pattern with a to member allows an envelope only when it names
// at least one recipient and every recipient matches the member (one of its
// patterns, when it is an array). A payload that is not valid JSON matches
// only patterns that do not look at the payload.
func (s *Set) MatchTo(kind string, to []string, payload []byte) (int, bool) {
	if s == nil {
		return -1, false
	}
	var m *matcher
	found := -1
	for i, p := range s.pats {
		if !p.kind.matchString(kind) || !p.matchTo(to) {
			continue
		}
		if p.payload != nil {
			if m == nil {
				m = acquire(payload)
			}
			if !m.matchPayload(p.payload) {
				continue
			}
		}
		found = i
		break
	}
	if m != nil {
		m.release()
	}
	return found, found >= 0
}

// matchTo reports whether recipients to satisfy the pattern's to member.
func (p *pattern) matchTo(to []string) bool {
	if p.to == nil {
		return true
	}
	if len(to) == 0 {
		return false // a broadcast is never a narrower grant's to
	}
	for _, r := range to {
		if !p.to.matchString(r) {
			return false
		}
	}
	return true
}

// matcher holds the scratch state of one Match call: the payload's tape.
type matcher struct {
	tape   jsontape.Tape
	valid  bool // the payload parsed
	object bool // and is an object
	budget int  // node visits left for deep matches and JSONPath descents
	limit  int
	num    []byte // a payload number's canonical spelling
}

// The pool holds scratch tapes only; nothing in it is visible to callers.
var matchers = sync.Pool{New: func() any { return new(matcher) }}

// Payloads larger than this are not kept in the pool's tapes after use, so one
// huge envelope does not pin memory.
const maxPooledNodes = 1 << 14

func acquire(payload []byte) *matcher {
	m := matchers.Get().(*matcher)
	m.valid, m.object = false, false
	if len(payload) > 0 && m.tape.Parse(payload) == nil {
		m.valid = true
		m.object = m.tape.Nodes[0].Kind == jsontape.Object
	}
	// Deep matches may visit each node a few times; more than that is a
	// pathological pattern meeting a large payload.
	m.limit = 16*len(m.tape.Nodes) + 1024
	return m
}

func (m *matcher) release() {
	m.tape.Src = nil
	if cap(m.tape.Nodes) > maxPooledNodes {
		m.tape = jsontape.Tape{}
	}
	matchers.Put(m)
}

// matchPayload matches a payload pattern against the whole payload.
func (m *matcher) matchPayload(p *objectPat) bool {
	m.budget = m.limit
	if len(p.members) == 0 {
		return true
	}
	if !m.object {
		// Absent, invalid or non-object payloads are matched as {}, which
		// only an empty pattern matches.
		return false
	}
	return m.matchObject(p, 0)
}

// spend uses n node visits of the budget and reports whether any is left.
func (m *matcher) spend(n int) bool {
	m.budget -= n
	return m.budget >= 0
}

func (m *matcher) matchObject(p *objectPat, obj uint32) bool {
	t := &m.tape
	end := t.Nodes[obj].Next
	for i := range p.members {
		mp := &p.members[i]
		switch mp.kind {
		case mKey:
			v, ok := t.Lookup(obj, mp.key)
			if !ok || !m.matchNode(&mp.value, v) {
				return false
			}
		case mKeyGlob:
			found := false
			for k := obj + 1; k < end && !found; k = t.Nodes[k+1].Next {
				found = mp.glob.match(m.view(k)) && m.matchNode(&mp.value, k+1)
			}
			if !found {
				return false
			}
		case mDeep:
			if !m.matchDeep(&mp.value, obj) {
				return false
			}
		case mJSONPath:
			if !m.evalPath(mp.path.steps, obj, &mp.value) {
				return false
			}
		}
	}
	return true
}

// matchDeep reports whether p matches node n or any value inside it.
func (m *matcher) matchDeep(p *valuePat, n uint32) bool {
	t := &m.tape
	end := t.Nodes[n].Next
	if !m.spend(int(end - n)) {
		return false
	}
	for d := n; d < end; d++ {
		if t.Nodes[d].Flags&jsontape.FlagKey != 0 {
			continue
		}
		if m.matchNode(p, d) {
			return true
		}
	}
	return false
}

// view returns the text of string node i as a string that shares memory with
// the tape. It is only read, and only until the next call that may reuse the
// tape's scratch buffer, which no caller lets it outlive.
func (m *matcher) view(i uint32) string {
	b := m.tape.Text(i)
	return unsafe.String(unsafe.SliceData(b), len(b))
}

// matchNode matches p against node n of the payload.
func (m *matcher) matchNode(p *valuePat, n uint32) bool {
	t := &m.tape
	node := t.Nodes[n]
	switch p.kind {
	case vAny:
		return true
	case vString:
		return node.Kind == jsontape.String && t.TextEquals(n, p.str)
	case vGlob, vRegex, vNot:
		return node.Kind == jsontape.String && p.matchString(m.view(n))
	case vNumber:
		if node.Kind != jsontape.Number {
			return false
		}
		m.num = jsontape.AppendNormalNumber(m.num[:0], t.Raw(n))
		return string(m.num) == p.str
	case vTrue:
		return node.Kind == jsontape.True
	case vFalse:
		return node.Kind == jsontape.False
	case vNull:
		return node.Kind == jsontape.Null
	case vOneOf:
		for i := range p.items {
			if m.matchNode(&p.items[i], n) {
				return true
			}
		}
		return false
	case vObject:
		return node.Kind == jsontape.Object && m.matchObject(p.obj, n)
	}
	return false
}

// String returns the patterns as a JSON array, for errors and logs.
func (s *Set) String() string {
	var b strings.Builder
	b.WriteByte('[')
	for i, p := range s.pats {
		if i > 0 {
			b.WriteByte(',')
		}
		b.Write(p.raw)
	}
	b.WriteByte(']')
	return b.String()
}
