package capability

import (
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/mew-protocol/mew/internal/jsontape"
)

// jsonPath is a compiled JSONPath expression (see the package doc for the
// subset).
type jsonPath struct {
	steps []jpStep
}

// jpStep selects children of each current node; with descend it first takes
// the node and all its descendants.
type jpStep struct {
	descend  bool
	wildcard bool
	names    []string
	indices  []int
	slice    *jpSlice
	filter   *jpFilter
}

type jpSlice struct {
	start, end, step int
	hasStart, hasEnd bool
}

// jpFilter is a disjunction of conjunctions of tests.
type jpFilter struct {
	or [][]jpTest
}

type jpTest struct {
	negate bool    // !@.a: the path selects nothing
	rel    []jpRel // the path below @
	op     string  // "" for an existence test
	lit    jpLiteral
}

type jpRel struct {
	name    string
	index   int
	isIndex bool
}

type jpLiteral struct {
	kind jsontape.Kind // String, Number, True, False or Null
	str  string
	num  float64
}

// maxPathLen bounds an expression; patterns are configuration, not data.
const maxPathLen = 1024

// compileJSONPath parses expr, which starts with '$'.
func compileJSONPath(expr string) (*jsonPath, error) {
	if len(expr) > maxPathLen {
		return nil, fmt.Errorf("longer than %d bytes", maxPathLen)
	}
	p := &pathParser{s: expr}
	if !p.eat('$') {
		return nil, errors.New("must start with $")
	}
	jp := &jsonPath{}
	for !p.done() {
		st, err := p.step()
		if err != nil {
			return nil, fmt.Errorf("%q at offset %d: %w", expr, p.i, err)
		}
		jp.steps = append(jp.steps, st)
	}
	return jp, nil
}

type pathParser struct {
	s string
	i int
}

func (p *pathParser) done() bool { return p.i >= len(p.s) }

func (p *pathParser) peek() byte {
	if p.done() {
		return 0
	}
	return p.s[p.i]
}

func (p *pathParser) eat(c byte) bool {
	if p.peek() == c && !p.done() {
		p.i++
		return true
	}
	return false
}

func (p *pathParser) skipSpace() {
	for !p.done() && p.s[p.i] == ' ' {
		p.i++
	}
}

func (p *pathParser) step() (jpStep, error) {
	var st jpStep
	switch {
	case strings.HasPrefix(p.s[p.i:], ".."):
		p.i += 2
		st.descend = true
		if p.peek() == '[' {
			return st, p.bracket(&st)
		}
		return st, p.dotted(&st)
	case p.eat('.'):
		return st, p.dotted(&st)
	case p.peek() == '[':
		return st, p.bracket(&st)
	}
	return st, fmt.Errorf("unexpected %q", p.peek())
}

// dotted reads a name or * after '.' or '..'.
func (p *pathParser) dotted(st *jpStep) error {
	if p.eat('*') {
		st.wildcard = true
		return nil
	}
	start := p.i
	for !p.done() && !strings.ContainsRune(".[] ", rune(p.s[p.i])) {
		p.i++
	}
	if p.i == start {
		return errors.New("want a member name")
	}
	st.names = []string{p.s[start:p.i]}
	return nil
}

// bracket reads [*], [names or indices], [slice] or [?(filter)].
func (p *pathParser) bracket(st *jpStep) error {
	p.i++ // '['
	p.skipSpace()
	switch {
	case p.eat('*'):
		st.wildcard = true
	case p.peek() == '?':
		p.i++
		f, err := p.filter()
		if err != nil {
			return err
		}
		st.filter = f
	default:
		if err := p.selectors(st); err != nil {
			return err
		}
	}
	p.skipSpace()
	if !p.eat(']') {
		return errors.New("want ']'")
	}
	return nil
}

// selectors reads a union of quoted names and indices, or a slice.
func (p *pathParser) selectors(st *jpStep) error {
	if c := p.peek(); c == ':' || ((c == '-' || jsontape.IsDigit(c)) && p.isSlice()) {
		return p.sliceSel(st)
	}
	for {
		p.skipSpace()
		switch c := p.peek(); {
		case c == '\'' || c == '"':
			name, err := p.quoted()
			if err != nil {
				return err
			}
			st.names = append(st.names, name)
		case c == '-' || jsontape.IsDigit(c):
			n, err := p.integer()
			if err != nil {
				return err
			}
			st.indices = append(st.indices, n)
		default:
			return errors.New("want a quoted name, an index, '*' or '?'")
		}
		p.skipSpace()
		if !p.eat(',') {
			return nil
		}
	}
}

// isSlice reports whether the bracket being read holds a ':' before ']'.
func (p *pathParser) isSlice() bool {
	for j := p.i; j < len(p.s) && p.s[j] != ']'; j++ {
		if p.s[j] == ':' {
			return true
		}
		if p.s[j] == '\'' || p.s[j] == '"' {
			return false
		}
	}
	return false
}

func (p *pathParser) sliceSel(st *jpStep) error {
	sl := &jpSlice{step: 1}
	var err error
	if p.peek() != ':' {
		if sl.start, err = p.integer(); err != nil {
			return err
		}
		sl.hasStart = true
	}
	if !p.eat(':') {
		return errors.New("want ':' in a slice")
	}
	if c := p.peek(); c == '-' || jsontape.IsDigit(c) {
		if sl.end, err = p.integer(); err != nil {
			return err
		}
		sl.hasEnd = true
	}
	if p.eat(':') {
		if c := p.peek(); c == '-' || jsontape.IsDigit(c) {
			if sl.step, err = p.integer(); err != nil {
				return err
			}
		}
		if sl.step == 0 {
			return errors.New("slice step must not be 0")
		}
	}
	st.slice = sl
	return nil
}

func (p *pathParser) integer() (int, error) {
	start := p.i
	p.eat('-')
	for !p.done() && jsontape.IsDigit(p.s[p.i]) {
		p.i++
	}
	n, err := strconv.Atoi(p.s[start:p.i])
	if err != nil {
		return 0, fmt.Errorf("want an integer: %w", err)
	}
	return n, nil
}

// quoted reads a string in single or double quotes; a backslash escapes the
// next character.
func (p *pathParser) quoted() (string, error) {
	q := p.s[p.i]
	p.i++
	var b strings.Builder
	for !p.done() {
		c := p.s[p.i]
		p.i++
		switch {
		case c == q:
			return b.String(), nil
		case c == '\\' && !p.done():
			b.WriteByte(p.s[p.i])
			p.i++
		default:
			b.WriteByte(c)
		}
	}
	return "", errors.New("unterminated string")
}

// filter reads "(tests)" after '?'.
func (p *pathParser) filter() (*jpFilter, error) {
	if !p.eat('(') {
		return nil, errors.New("want '(' after '?'")
	}
	f := &jpFilter{}
	and := []jpTest{}
	for {
		p.skipSpace()
		t, err := p.test()
		if err != nil {
			return nil, err
		}
		and = append(and, t)
		p.skipSpace()
		switch {
		case strings.HasPrefix(p.s[p.i:], "&&"):
			p.i += 2
		case strings.HasPrefix(p.s[p.i:], "||"):
			p.i += 2
			f.or = append(f.or, and)
			and = []jpTest{}
		case p.eat(')'):
			f.or = append(f.or, and)
			return f, nil
		default:
			return nil, errors.New("want &&, || or ')' in a filter")
		}
	}
}

// test reads "[!]@path [op literal]".
func (p *pathParser) test() (jpTest, error) {
	var t jpTest
	if p.eat('!') {
		t.negate = true
		p.skipSpace()
	}
	if !p.eat('@') {
		return t, errors.New("a filter test must start with @")
	}
	for {
		switch {
		case p.eat('.'):
			start := p.i
			for !p.done() && !strings.ContainsRune(".[]()!=<>&| ", rune(p.s[p.i])) {
				p.i++
			}
			if p.i == start {
				return t, errors.New("want a member name after '.'")
			}
			t.rel = append(t.rel, jpRel{name: p.s[start:p.i]})
			continue
		case p.peek() == '[':
			p.i++
			p.skipSpace()
			var r jpRel
			if c := p.peek(); c == '\'' || c == '"' {
				name, err := p.quoted()
				if err != nil {
					return t, err
				}
				r.name = name
			} else {
				n, err := p.integer()
				if err != nil {
					return t, err
				}
				r.index, r.isIndex = n, true
			}
			p.skipSpace()
			if !p.eat(']') {
				return t, errors.New("want ']'")
			}
			t.rel = append(t.rel, r)
			continue
		}
		break
	}
	p.skipSpace()
	for _, op := range []string{"==", "!=", "<=", ">=", "<", ">"} {
		if strings.HasPrefix(p.s[p.i:], op) {
			if t.negate {
				return t, errors.New("'!' applies to existence tests only")
			}
			p.i += len(op)
			t.op = op
			p.skipSpace()
			lit, err := p.literal()
			if err != nil {
				return t, err
			}
			t.lit = lit
			break
		}
	}
	return t, nil
}

func (p *pathParser) literal() (jpLiteral, error) {
	switch c := p.peek(); {
	case c == '\'' || c == '"':
		s, err := p.quoted()
		return jpLiteral{kind: jsontape.String, str: s}, err
	case c == '-' || jsontape.IsDigit(c):
		start := p.i
		for !p.done() && strings.ContainsRune("+-.eE0123456789", rune(p.s[p.i])) {
			p.i++
		}
		f, err := strconv.ParseFloat(p.s[start:p.i], 64)
		if err != nil {
			return jpLiteral{}, fmt.Errorf("want a number: %w", err)
		}
		return jpLiteral{kind: jsontape.Number, num: f}, nil
	}
	for _, w := range []struct {
		word string
		kind jsontape.Kind
	}{{"true", jsontape.True}, {"false", jsontape.False}, {"null", jsontape.Null}} {
		if strings.HasPrefix(p.s[p.i:], w.word) {
			p.i += len(w.word)
			return jpLiteral{kind: w.kind}, nil
		}
	}
	return jpLiteral{}, errors.New("want a literal: a quoted string, a number, true, false or null")
}

// evalPath reports whether any value that steps select from node n matches
// want. It walks depth first and stops at the first match, so it needs no
// result sets.
func (m *matcher) evalPath(steps []jpStep, n uint32, want *valuePat) bool {
	if len(steps) == 0 {
		return m.matchNode(want, n)
	}
	if !steps[0].descend {
		return m.applyStep(steps, n, want)
	}
	t := &m.tape
	end := t.Nodes[n].Next
	if !m.spend(int(end - n)) {
		return false
	}
	for d := n; d < end; d++ {
		if t.Nodes[d].Flags&jsontape.FlagKey == 0 && m.applyStep(steps, d, want) {
			return true
		}
	}
	return false
}

// applyStep selects the children of n that steps[0] names and continues the
// path from each.
func (m *matcher) applyStep(steps []jpStep, n uint32, want *valuePat) bool {
	st, rest := &steps[0], steps[1:]
	t := &m.tape
	node := t.Nodes[n]
	switch node.Kind {
	case jsontape.Object:
		for k := n + 1; k < node.Next; k = t.Nodes[k+1].Next {
			if !m.spend(1) {
				return false
			}
			if m.selectsMember(st, k) && m.evalPath(rest, k+1, want) {
				return true
			}
		}
	case jsontape.Array:
		length := 0
		if st.slice != nil || hasNegative(st.indices) {
			length = t.Len(n)
		}
		idx := 0
		for e := n + 1; e < node.Next; e = t.Nodes[e].Next {
			if !m.spend(1) {
				return false
			}
			if m.selectsElement(st, e, idx, length) && m.evalPath(rest, e, want) {
				return true
			}
			idx++
		}
	}
	return false
}

func hasNegative(indices []int) bool {
	for _, i := range indices {
		if i < 0 {
			return true
		}
	}
	return false
}

// selectsMember reports whether step st selects the member whose key is node k.
func (m *matcher) selectsMember(st *jpStep, k uint32) bool {
	switch {
	case st.wildcard:
		return true
	case st.filter != nil:
		return m.filterMatches(st.filter, k+1)
	}
	for _, name := range st.names {
		if m.tape.TextEquals(k, name) {
			return true
		}
	}
	return false
}

// selectsElement reports whether step st selects element e at index idx of
// an array of the given length (known when slices or negative indices need it).
func (m *matcher) selectsElement(st *jpStep, e uint32, idx, length int) bool {
	switch {
	case st.wildcard:
		return true
	case st.filter != nil:
		return m.filterMatches(st.filter, e)
	case st.slice != nil:
		return st.slice.contains(idx, length)
	}
	for _, i := range st.indices {
		if i == idx || (i < 0 && length+i == idx) {
			return true
		}
	}
	return false
}

// contains reports whether index idx of an array of this length is in the
// slice, with Python's rules for defaults and negative bounds.
func (s *jpSlice) contains(idx, length int) bool {
	norm := func(v int) int {
		if v < 0 {
			v += length
		}
		return v
	}
	if s.step > 0 {
		start, end := 0, length
		if s.hasStart {
			start = max(norm(s.start), 0)
		}
		if s.hasEnd {
			end = min(norm(s.end), length)
		}
		return idx >= start && idx < end && (idx-start)%s.step == 0
	}
	start, end := length-1, -1
	if s.hasStart {
		start = min(norm(s.start), length-1)
	}
	if s.hasEnd {
		end = max(norm(s.end), -1)
	}
	return idx <= start && idx > end && (start-idx)%(-s.step) == 0
}

func (m *matcher) filterMatches(f *jpFilter, n uint32) bool {
	for _, and := range f.or {
		ok := true
		for i := range and {
			if !m.testMatches(&and[i], n) {
				ok = false
				break
			}
		}
		if ok {
			return true
		}
	}
	return false
}

func (m *matcher) testMatches(t *jpTest, n uint32) bool {
	v, ok := m.resolve(t.rel, n)
	if t.op == "" {
		return ok != t.negate
	}
	if !ok {
		// As in JavaScript: a missing value differs from everything.
		return t.op == "!="
	}
	tape := &m.tape
	node := tape.Nodes[v]
	var cmp int
	switch {
	case node.Kind == jsontape.String && t.lit.kind == jsontape.String:
		cmp = strings.Compare(m.view(v), t.lit.str)
	case node.Kind == jsontape.Number && t.lit.kind == jsontape.Number:
		f, err := tape.Float(v)
		if err != nil {
			return false
		}
		switch {
		case f < t.lit.num:
			cmp = -1
		case f > t.lit.num:
			cmp = 1
		}
	case node.Kind == t.lit.kind && (node.Kind == jsontape.True || node.Kind == jsontape.False || node.Kind == jsontape.Null):
		cmp = 0
	default:
		return t.op == "!="
	}
	switch t.op {
	case "==":
		return cmp == 0
	case "!=":
		return cmp != 0
	case "<":
		return cmp < 0
	case "<=":
		return cmp <= 0
	case ">":
		return cmp > 0
	default: // ">="
		return cmp >= 0
	}
}

// resolve follows a relative path from n.
func (m *matcher) resolve(rel []jpRel, n uint32) (uint32, bool) {
	t := &m.tape
	for _, r := range rel {
		node := t.Nodes[n]
		switch {
		case r.isIndex && node.Kind == jsontape.Array:
			want := r.index
			if want < 0 {
				want += t.Len(n)
			}
			found := false
			idx := 0
			for e := n + 1; e < node.Next; e = t.Nodes[e].Next {
				if !m.spend(1) {
					return 0, false
				}
				if idx == want {
					n, found = e, true
					break
				}
				idx++
			}
			if !found {
				return 0, false
			}
		case !r.isIndex && node.Kind == jsontape.Object:
			v, ok := t.Lookup(n, r.name)
			if !ok {
				return 0, false
			}
			n = v
		default:
			return 0, false
		}
	}
	return n, true
}
