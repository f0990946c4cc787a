package capability

import (
	"encoding/json"
	"hash/fnv"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
)

// fz draws choices from the fuzzer's bytes first, then from a generator
// seeded by them, so that short inputs still make whole patterns.
type fz struct {
	b   []byte
	rnd *rand.Rand
}

func newFz(data []byte) *fz {
	h := fnv.New64a()
	h.Write(data)
	s := h.Sum64()
	return &fz{b: data, rnd: rand.New(rand.NewPCG(s, s>>7|1))}
}

func (f *fz) n(k int) int {
	if k <= 1 {
		return 0
	}
	if len(f.b) > 0 {
		v := int(f.b[0])
		f.b = f.b[1:]
		return v % k
	}
	return f.rnd.IntN(k)
}

func (f *fz) pick(xs []string) string { return xs[f.n(len(xs))] }

// jnode is a JSON value whose objects keep their members in order and may
// repeat a key, which encoding/json cannot express.
type jnode struct {
	typ   byte // 's' string, 'r' raw scalar text, 'a' array, 'o' object
	s     string
	items []*jnode
	keys  []string
}

func jstr(s string) *jnode { return &jnode{typ: 's', s: s} }

func (n *jnode) clone() *jnode {
	c := *n
	c.items = make([]*jnode, len(n.items))
	for i, it := range n.items {
		c.items[i] = it.clone()
	}
	c.keys = append([]string(nil), n.keys...)
	return &c
}

func (n *jnode) render(b *strings.Builder) {
	switch n.typ {
	case 's':
		q, _ := json.Marshal(n.s)
		b.Write(q)
	case 'r':
		b.WriteString(n.s)
	case 'a':
		b.WriteByte('[')
		for i, it := range n.items {
			if i > 0 {
				b.WriteByte(',')
			}
			it.render(b)
		}
		b.WriteByte(']')
	case 'o':
		b.WriteByte('{')
		for i, it := range n.items {
			if i > 0 {
				b.WriteByte(',')
			}
			q, _ := json.Marshal(n.keys[i])
			b.Write(q)
			b.WriteByte(':')
			it.render(b)
		}
		b.WriteByte('}')
	}
}

func (n *jnode) String() string {
	var b strings.Builder
	n.render(&b)
	return b.String()
}

// get returns the first member named key.
func (n *jnode) get(key string) *jnode {
	for i, k := range n.keys {
		if k == key {
			return n.items[i]
		}
	}
	return nil
}

// dupKeys reports whether some object of n repeats a key.
func (n *jnode) dupKeys() bool {
	seen := map[string]bool{}
	for i, it := range n.items {
		if n.typ == 'o' {
			if seen[n.keys[i]] {
				return true
			}
			seen[n.keys[i]] = true
		}
		if it.dupKeys() {
			return true
		}
	}
	return false
}

var (
	fzKinds = []string{"*", "chat", "mcp/*", "mcp/request", "mcp/response", "mcp/re*", "mcp/**", "**", "mcp/?equest",
		"!chat", "!mcp/*", "!mcp/request", "/^mcp/", "/req/", "tools/*", "tools/call", `a\*`, ".x/*", "*/request", "*", "mcp/*t"}
	fzSegs    = []string{"mcp", "request", "re", "a", "b", ".x", "*", "?", "**", "r*", "*t", "x?z", "tools", "call"}
	fzStrings = []string{"*", "tools/call", "tools/list", "tools/*", "read_file", "read_*", "!tools/call", "!read_*",
		"/^read_/", "/file$/", "a", "b", "", "x?z", "**", "resources/**", "!*", "/a.*/", "/ab/"}
	fzNumbers = []string{"1", "1.0", "10e-1", "2", "-0", "0", "1e400", "3.5"}
	fzKeys    = []string{"method", "params", "name", "a", "b", "id", "na*", "**", "$.params.name", "$..name", "$.a", "Method", "arguments"}
)

func (f *fz) glob() string {
	n := 1 + f.n(3)
	parts := make([]string, n)
	for i := range parts {
		parts[i] = f.pick(fzSegs)
	}
	return strings.Join(parts, "/")
}

func (f *fz) kindValue() *jnode {
	one := func() *jnode {
		if f.n(3) == 0 {
			return jstr(f.glob())
		}
		return jstr(f.pick(fzKinds))
	}
	if f.n(5) == 0 {
		a := &jnode{typ: 'a'}
		for range f.n(4) {
			a.items = append(a.items, one())
		}
		return a
	}
	return one()
}

func (f *fz) value(depth int) *jnode {
	switch c := f.n(10); {
	case c < 5:
		return jstr(f.pick(fzStrings))
	case c == 5:
		return &jnode{typ: 'r', s: f.pick(fzNumbers)}
	case c == 6:
		return &jnode{typ: 'r', s: f.pick([]string{"true", "false", "null"})}
	case c == 7 && depth < 3:
		a := &jnode{typ: 'a'}
		for range f.n(4) {
			a.items = append(a.items, f.value(depth+1))
		}
		return a
	case depth < 3:
		return f.object(depth + 1)
	}
	return jstr(f.pick(fzStrings))
}

func (f *fz) object(depth int) *jnode {
	o := &jnode{typ: 'o'}
	for range f.n(4) {
		o.keys = append(o.keys, f.pick(fzKeys))
		o.items = append(o.items, f.value(depth))
	}
	return o
}

// pattern makes a capability, sometimes with a trick the strict compiler
// must refuse: a repeated or case-variant kind or payload, or an unknown
// member.
func (f *fz) pattern() *jnode {
	p := &jnode{typ: 'o', keys: []string{"kind"}, items: []*jnode{f.kindValue()}}
	if f.n(3) > 0 {
		p.keys = append(p.keys, "payload")
		p.items = append(p.items, f.object(0))
	}
	switch f.n(12) {
	case 0:
		p.keys = append(p.keys, f.pick([]string{"kind", "KIND", "Kind"}))
		p.items = append(p.items, f.kindValue())
	case 1:
		p.keys = append(p.keys, f.pick([]string{"payload", "PAYLOAD", "Payload"}))
		p.items = append(p.items, f.object(0))
	case 2:
		p.keys = append(p.keys, f.pick([]string{"id", "description", "TO", "To"}))
		p.items = append(p.items, jstr("x"))
	case 3, 4:
		p.keys = append(p.keys, "to")
		p.items = append(p.items, f.kindValue())
	}
	if f.n(2) == 0 { // payload first, as some writers order it
		p.keys[0], p.keys[len(p.keys)-1] = p.keys[len(p.keys)-1], p.keys[0]
		p.items[0], p.items[len(p.items)-1] = p.items[len(p.items)-1], p.items[0]
	}
	return p
}

// narrowPattern narrows a capability's kind and payload, adding a payload
// pattern where there was none.
func (f *fz) narrowPattern(p *jnode) *jnode {
	p = p.clone()
	hasPayload, hasTo := false, false
	for i, k := range p.keys {
		switch strings.ToLower(k) {
		case "kind":
			p.items[i] = f.narrow(p.items[i], 0)
		case "payload":
			hasPayload = true
			p.items[i] = f.narrow(p.items[i], 0)
		case "to":
			hasTo = true
			p.items[i] = f.narrow(p.items[i], 0)
		}
	}
	if !hasTo && f.n(3) == 0 { // naming recipients narrows too
		p.keys, p.items = append(p.keys, "to"), append(p.items, f.kindValue())
	}
	if !hasPayload && f.n(2) == 0 {
		p.keys, p.items = append(p.keys, "payload"), append(p.items, f.object(0))
	}
	return p
}

// narrow derives from a granter's pattern one that allows less, most of the
// time: globs instantiated, members added, arrays cut.
func (f *fz) narrow(n *jnode, depth int) *jnode {
	n = n.clone()
	switch n.typ {
	case 's':
		if f.n(2) == 0 {
			n.s = f.instantiate(n.s)
		}
	case 'a':
		if len(n.items) > 0 && f.n(2) == 0 {
			n.items = n.items[:f.n(len(n.items))+1]
		}
		for i := range n.items {
			n.items[i] = f.narrow(n.items[i], depth+1)
		}
	case 'o':
		for i := range n.items {
			n.items[i] = f.narrow(n.items[i], depth+1)
		}
		if f.n(2) == 0 {
			n.keys = append(n.keys, f.pick(fzKeys))
			n.items = append(n.items, f.value(depth+1))
		}
	}
	return n
}

// instantiate turns a glob into a string it may match.
func (f *fz) instantiate(s string) string {
	if strings.HasPrefix(s, "/") || strings.HasPrefix(s, "!") {
		return f.pick(fzStrings)
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		switch s[i] {
		case '\\':
			if i+1 < len(s) {
				i++
				b.WriteByte(s[i])
			}
		case '*':
			if i+1 < len(s) && s[i+1] == '*' {
				i++
				b.WriteString(f.pick([]string{"", "a", "a/b", ".x", "request"}))
			} else {
				b.WriteString(f.pick([]string{"", "q", "uest", "request", ".d", "file"}))
			}
		case '?':
			b.WriteString(f.pick([]string{"r", "x", "é", "."}))
		default:
			b.WriteByte(s[i])
		}
	}
	return b.String()
}

// witness makes a concrete value that the pattern value v is likely to match.
func (f *fz) witness(v *jnode, depth int) *jnode {
	switch v.typ {
	case 's':
		if v.s == "*" {
			return f.value(3)
		}
		return jstr(f.instantiate(v.s))
	case 'r':
		if f.n(3) == 0 {
			return &jnode{typ: 'r', s: f.pick(fzNumbers)}
		}
		return v
	case 'a':
		if len(v.items) == 0 || depth > 6 {
			return jstr("x")
		}
		return f.witness(v.items[f.n(len(v.items))], depth+1)
	}
	o := &jnode{typ: 'o'}
	for i, k := range v.keys {
		if depth > 6 {
			break
		}
		w := f.witness(v.items[i], depth+1)
		switch {
		case k == "**":
			o.keys, o.items = append(o.keys, "deep"), append(o.items, &jnode{typ: 'o', keys: []string{"x"}, items: []*jnode{w}})
		case strings.HasPrefix(k, "$"):
			path := strings.FieldsFunc(k[1:], func(r rune) bool { return r == '.' })
			node := w
			for j := len(path) - 1; j >= 0; j-- {
				node = &jnode{typ: 'o', keys: []string{path[j]}, items: []*jnode{node}}
			}
			if node.typ == 'o' && len(node.keys) > 0 && o.get(node.keys[0]) == nil {
				o.keys, o.items = append(o.keys, node.keys[0]), append(o.items, node.items[0])
			}
		default:
			if key := f.instantiate(k); o.get(key) == nil {
				o.keys, o.items = append(o.keys, key), append(o.items, w)
			}
		}
	}
	if f.n(3) == 0 {
		if key := f.pick(fzKeys); o.get(key) == nil {
			o.keys, o.items = append(o.keys, key), append(o.items, f.value(2))
		}
	}
	return o
}

// FuzzSubsumes checks Covering against the matcher: whenever a granter's
// pattern is said to cover a granted one, every envelope made to fit the
// granted pattern that it allows, the covering pattern allows too. Patterns
// with repeated or case-variant members must not compile at all.
func FuzzSubsumes(f *testing.F) {
	for _, seed := range []string{"", "a", "ab", "\x00\x01\x02", "granter", "kind", "\xff\xfe\xfd\xfc", "payload-tricks"} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		fz := newFz(data)
		var granter []*jnode
		for range 1 + fz.n(3) {
			granter = append(granter, fz.pattern())
		}
		var granted *jnode
		if fz.n(3) > 0 {
			granted = fz.narrowPattern(granter[fz.n(len(granter))])
		} else {
			granted = fz.pattern()
		}
		s, ok := compileFz(t, granter)
		if !ok {
			return
		}
		g, ok := compileFz(t, []*jnode{granted})
		if !ok {
			return
		}
		j, why := s.Covering(g, 0)
		if j < 0 {
			if why == "" {
				t.Fatal("no cover and no reason")
			}
			return
		}
		cover := &Set{pats: s.pats[j : j+1]}
		kinds := []string{"chat", "mcp/request", "mcp/response", "mcp/a/b", ".x/y", "", "tools/call", "a*", "mcp/.x"}
		payloads := []string{"", "null", "{}", `"x"`, "[]", `{"method":"tools/call"}`}
		recipients := [][]string{nil, {"x"}, {"chat"}, {"mcp/request", "x"}}
		for _, p := range append(granter, granted) {
			if tv := p.get("to"); tv != nil {
				for range 3 {
					var r string
					if json.Unmarshal([]byte(fz.witness(tv, 0).String()), &r) == nil {
						recipients = append(recipients, []string{r}, []string{r, "x"})
					}
				}
			}
			kv := p.get("kind")
			if kv == nil {
				continue
			}
			for range 3 {
				kinds = append(kinds, fz.witness(kv, 0).String())
			}
			if pl := p.get("payload"); pl != nil {
				for range 4 {
					payloads = append(payloads, fz.witness(pl, 0).String())
				}
			}
		}
		for _, k := range kinds {
			var kind string
			if json.Unmarshal([]byte(k), &kind) != nil {
				kind = k
			}
			for _, pl := range payloads {
				for _, to := range recipients {
					if g.AllowsTo(kind, to, []byte(pl)) && !cover.AllowsTo(kind, to, []byte(pl)) {
						t.Fatalf("%s is said to cover %s, but kind %q to %q payload %s is allowed by the second only", s.pats[j].raw, g.pats[0].raw, kind, to, pl)
					}
				}
			}
		}
	})
}

// compileFz compiles generated patterns, checking that the tricks the
// generator plays are refused.
func compileFz(t *testing.T, ps []*jnode) (*Set, bool) {
	t.Helper()
	raws := make([]json.RawMessage, len(ps))
	tricky := false
	for i, p := range ps {
		raws[i] = json.RawMessage(p.String())
		for _, k := range p.keys {
			if k != "kind" && k != "payload" && k != "to" && !slices.Contains(Annotations, k) {
				tricky = true
			}
		}
		tricky = tricky || p.dupKeys()
	}
	s, err := Compile(raws)
	if tricky && err == nil {
		t.Fatalf("compiled %s, which repeats or misspells a member", raws)
	}
	return s, err == nil
}
