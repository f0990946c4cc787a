package capability

import (
	"encoding/json"
	"strings"
	"testing"
	"time"
)

type subsumeCase struct {
	name    string
	granter []string
	granted string
	want    bool
	why     string // a substring of the reason when want is false
}

func runSubsume(t *testing.T, cases []subsumeCase) {
	t.Helper()
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			s := MustCompile(c.granter...)
			g := MustCompile(c.granted)
			ok, why := s.Subsumes(g)
			if ok != c.want {
				t.Fatalf("%v covers %s = %v (%s), want %v", c.granter, c.granted, ok, why, c.want)
			}
			if !ok && !strings.Contains(why, c.why) {
				t.Fatalf("reason %q does not mention %q", why, c.why)
			}
			if ok && why != "" {
				t.Fatalf("a reason with a yes: %q", why)
			}
		})
	}
}

func TestSubsumesKinds(t *testing.T) {
	runSubsume(t, []subsumeCase{
		{"star covers all", []string{`{"kind":"*"}`}, `{"kind":"mcp/request","payload":{"method":"x"}}`, true, ""},
		{"star covers a glob", []string{`{"kind":"*"}`}, `{"kind":"**"}`, true, ""},
		{"star covers star", []string{`{"kind":"*"}`}, `{"kind":"*"}`, true, ""},
		{"exact covers itself", []string{`{"kind":"chat"}`}, `{"kind":"chat"}`, true, ""},
		{"exact does not cover another", []string{`{"kind":"chat"}`}, `{"kind":"mcp/request"}`, false, `"chat" does not cover "mcp/request"`},
		{"exact does not cover star", []string{`{"kind":"chat"}`}, `{"kind":"*"}`, false, `does not cover "*"`},
		{"glob covers exact", []string{`{"kind":"mcp/*"}`}, `{"kind":"mcp/request"}`, true, ""},
		{"glob does not cover outside", []string{`{"kind":"mcp/*"}`}, `{"kind":"chat"}`, false, "does not cover"},
		{"glob within a segment", []string{`{"kind":"mcp/*"}`}, `{"kind":"mcp/re*"}`, true, ""},
		{"narrow glob does not cover wide", []string{`{"kind":"mcp/re*"}`}, `{"kind":"mcp/*"}`, false, "does not cover"},
		{"glob stays in its segment", []string{`{"kind":"mcp/*"}`}, `{"kind":"mcp/**"}`, false, "does not cover"},
		{"globstar spans", []string{`{"kind":"mcp/**"}`}, `{"kind":"mcp/a/b*"}`, true, ""},
		{"globstar covers a globstar", []string{`{"kind":"**"}`}, `{"kind":"mcp/**"}`, true, ""},
		{"globstar does not cover a dot segment", []string{`{"kind":"**"}`}, `{"kind":".hidden/*"}`, false, "does not cover"},
		{"star segment needs a character", []string{`{"kind":"mcp/*"}`}, `{"kind":"mcp/*?"}`, true, ""},
		{"star segment vs maybe-empty", []string{`{"kind":"a/*b"}`}, `{"kind":"a/*"}`, false, "does not cover"},
		{"question mark", []string{`{"kind":"mcp/?equest"}`}, `{"kind":"mcp/request"}`, true, ""},
		{"question covers question", []string{`{"kind":"a?c"}`}, `{"kind":"a?c"}`, true, ""},
		{"question does not cover star", []string{`{"kind":"a?c"}`}, `{"kind":"a*c"}`, false, "does not cover"},
		{"tools chain 1", []string{`{"kind":"tools/*"}`}, `{"kind":"tools/call"}`, true, ""},
		{"tools chain 2", []string{`{"kind":"*"}`}, `{"kind":"tools/*"}`, true, ""},
		{"tools chain reverse", []string{`{"kind":"tools/call"}`}, `{"kind":"tools/*"}`, false, "does not cover"},
		{"escaped star is literal", []string{`{"kind":"a*"}`}, `{"kind":"a\\*"}`, true, ""},
		{"literal does not cover escaped glob", []string{`{"kind":"ab"}`}, `{"kind":"a\\*"}`, false, "does not cover"},
		{"regex covers a literal", []string{`{"kind":"/^mcp\\//"}`}, `{"kind":"mcp/request"}`, true, ""},
		{"regex does not cover a literal", []string{`{"kind":"/^mcp\\//"}`}, `{"kind":"chat"}`, false, "does not cover"},
		{"identical regex", []string{`{"kind":"/^mcp/"}`}, `{"kind":"/^mcp/"}`, true, ""},
		{"different regex undecided", []string{`{"kind":"/a.*/"}`}, `{"kind":"/ab/"}`, false, "cannot decide whether /a.*/ covers /ab/"},
		{"regex vs glob undecided", []string{`{"kind":"/^mcp/"}`}, `{"kind":"mcp/*"}`, false, "cannot decide"},
		{"glob vs regex undecided", []string{`{"kind":"mcp/*"}`}, `{"kind":"/^mcp\\/request$/"}`, false, "cannot decide"},
		{"negation covers a literal", []string{`{"kind":"!chat"}`}, `{"kind":"mcp/request"}`, true, ""},
		{"negation refuses its own", []string{`{"kind":"!chat"}`}, `{"kind":"chat"}`, false, "does not cover"},
		{"negation covers a disjoint glob", []string{`{"kind":"!chat/*"}`}, `{"kind":"mcp/*"}`, true, ""},
		{"negation vs overlapping glob", []string{`{"kind":"!mcp/req*"}`}, `{"kind":"mcp/*"}`, false, "cannot decide"},
		{"negation covers a narrower negation", []string{`{"kind":"!mcp/request"}`}, `{"kind":"!mcp/*"}`, true, ""},
		{"negation does not cover a wider negation", []string{`{"kind":"!mcp/*"}`}, `{"kind":"!mcp/request"}`, false, "does not cover"},
		{"glob does not cover a negation", []string{`{"kind":"**"}`}, `{"kind":"!chat"}`, false, "does not cover"},
		{"array granted: all items", []string{`{"kind":"mcp/*"}`}, `{"kind":["mcp/request","mcp/response"]}`, true, ""},
		{"array granted: one item outside", []string{`{"kind":"mcp/*"}`}, `{"kind":["mcp/request","chat"]}`, false, `"chat"`},
		{"array granter: some item", []string{`{"kind":["chat","mcp/*"]}`}, `{"kind":"mcp/request"}`, true, ""},
		{"arrays both", []string{`{"kind":["chat","mcp/*"]}`}, `{"kind":["mcp/request","chat"]}`, true, ""},
		{"empty array covered", []string{`{"kind":"chat"}`}, `{"kind":[]}`, true, ""},
		{"empty array covers nothing", []string{`{"kind":[]}`}, `{"kind":"chat"}`, false, "does not cover"},
		{"one pattern must cover", []string{`{"kind":"chat"}`, `{"kind":"mcp/request"}`}, `{"kind":["chat","mcp/request"]}`, false, "does not cover"},
		{"second pattern covers", []string{`{"kind":"chat"}`, `{"kind":"mcp/*"}`}, `{"kind":"mcp/request"}`, true, ""},
		{"nothing covers in an empty set", nil, `{"kind":"chat"}`, false, "no capability"},
		{"annotations do not matter", []string{`{"id":"a","kind":"chat"}`}, `{"kind":"chat","description":"talk"}`, true, ""},
	})
}

func TestSubsumesPayloads(t *testing.T) {
	const req = `{"kind":"mcp/request","payload":`
	runSubsume(t, []subsumeCase{
		{"no condition covers any", []string{`{"kind":"mcp/request"}`}, req + `{"method":"tools/call"}}`, true, ""},
		{"empty condition covers any", []string{req + `{}}`}, req + `{"method":"tools/call"}}`, true, ""},
		{"empty condition covers none", []string{req + `{}}`}, `{"kind":"mcp/request"}`, true, ""},
		{"condition does not cover none", []string{req + `{"method":"tools/*"}}`}, `{"kind":"mcp/request"}`, false, "any payload is allowed here"},
		{"condition does not cover empty", []string{req + `{"method":"tools/*"}}`}, req + `{}}`, false, "any payload is allowed here"},
		{"tools/* covers tools/call with params", []string{req + `{"method":"tools/*"}}`}, req + `{"method":"tools/call","params":{"name":"read_file"}}}`, true, ""},
		{"tools/call does not cover tools/*", []string{req + `{"method":"tools/call","params":{"name":"read_file"}}}`}, req + `{"method":"tools/*"}}`, false, `payload.method: "tools/call" does not cover "tools/*"`},
		{"missing member", []string{req + `{"method":"tools/call","params":{"name":"read_*"}}}`}, req + `{"method":"tools/call"}}`, false, "payload.params: required"},
		{"nested narrower", []string{req + `{"method":"tools/call","params":{"name":"read_*"}}}`}, req + `{"method":"tools/call","params":{"name":"read_file","arguments":{"path":"/tmp/x"}}}}`, true, ""},
		{"nested wider", []string{req + `{"method":"tools/call","params":{"name":"read_file"}}}`}, req + `{"method":"tools/call","params":{"name":"read_*"}}}`, false, "payload.params.name"},
		{"nested empty covers an object", []string{req + `{"params":{}}}`}, req + `{"params":{"a":1}}}`, true, ""},
		{"nested empty does not cover a string", []string{req + `{"params":{}}}`}, req + `{"params":"x"}}`, false, "does not cover"},
		{"nested object does not cover an empty one", []string{req + `{"params":{"a":1}}}`}, req + `{"params":{}}}`, false, "payload.params.a: required"},
		{"numbers compare numerically", []string{req + `{"id":1}}`}, req + `{"id":1.0}}`, true, ""},
		{"numbers differ", []string{req + `{"id":1}}`}, req + `{"id":2}}`, false, "1 does not cover 2"},
		{"number vs string", []string{req + `{"id":1}}`}, req + `{"id":"1"}}`, false, "does not cover"},
		{"star covers a number", []string{req + `{"id":"*"}}`}, req + `{"id":5}}`, true, ""},
		{"string glob does not cover a number", []string{req + `{"id":"*?"}}`}, req + `{"id":5}}`, false, "does not cover"},
		{"booleans and null", []string{req + `{"a":true,"b":null}}`}, req + `{"a":true,"b":null,"c":false}}`, true, ""},
		{"false is not true", []string{req + `{"a":true}}`}, req + `{"a":false}}`, false, "true does not cover false"},
		{"array value granted", []string{req + `{"method":"tools/*"}}`}, req + `{"method":["tools/list","tools/call"]}}`, true, ""},
		{"array value granter", []string{req + `{"method":["tools/list","resources/*"]}}`}, req + `{"method":"resources/read"}}`, true, ""},
		{"array value outside", []string{req + `{"method":["tools/list"]}}`}, req + `{"method":["tools/list","tools/call"]}}`, false, "does not cover"},
		{"regex literal", []string{req + `{"method":"/^tools\\//"}}`}, req + `{"method":"tools/call"}}`, true, ""},
		{"regex vs regex", []string{req + `{"params":{"name":"/a.*/"}}}`}, req + `{"params":{"name":"/ab/"}}}`, false, "payload.params.name: cannot decide whether /a.*/ covers /ab/"},
		{"negation of a payload value", []string{req + `{"method":"!tools/call"}}`}, req + `{"method":"tools/list"}}`, true, ""},
		{"negation vs its value", []string{req + `{"method":"!tools/call"}}`}, req + `{"method":"tools/call"}}`, false, "does not cover"},
		{"negation does not cover star", []string{req + `{"method":"!tools/call"}}`}, req + `{"method":"*"}}`, false, "does not cover"},
		{"negation does not cover a number", []string{req + `{"id":"!1"}}`}, req + `{"id":1}}`, false, "does not cover"},
		{"JSONPath identical", []string{req + `{"$.params.name":"read_*"}}`}, req + `{"$.params.name":"read_*","method":"tools/call"}}`, true, ""},
		{"JSONPath not repeated", []string{req + `{"$.params.name":"read_*"}}`}, req + `{"params":{"name":"read_file"}}}`, false, "cannot decide"},
		{"JSONPath different value", []string{req + `{"$.params.name":"read_*"}}`}, req + `{"$.params.name":"read_file"}}`, false, "cannot decide"},
		{"deep identical", []string{req + `{"**":"secret"}}`}, req + `{"**":"secret","method":"x"}}`, true, ""},
		{"deep not repeated", []string{req + `{"**":"secret"}}`}, req + `{"a":"secret"}}`, false, "cannot decide"},
		{"key glob identical", []string{req + `{"na*":"x"}}`}, req + `{"na*":"x"}}`, true, ""},
		{"key glob vs plain key", []string{req + `{"na*":"x"}}`}, req + `{"name":"x"}}`, false, "cannot decide"},
		{"granted JSONPath needs nothing of a plain granter", []string{req + `{"method":"tools/*"}}`}, req + `{"method":"tools/call","$..secret":"*"}}`, true, ""},
		{"plain key not implied by a JSONPath", []string{req + `{"method":"tools/*"}}`}, req + `{"$.method":"tools/call"}}`, false, "payload.method: required"},
		{"costly alternative first", []string{req + `{"a":[{"**":"x"},{"b":1}]}}`}, req + `{"a":{"b":1}}}`, false, "cannot decide"},
		{"costly alternative after", []string{req + `{"a":[{"b":1},{"**":"x"}]}}`}, req + `{"a":{"b":1}}}`, true, ""},
		{"kind and payload both", []string{`{"kind":"mcp/*","payload":{"method":"tools/*"}}`}, req + `{"method":"tools/call"}}`, true, ""},
		{"kind covered, payload not", []string{`{"kind":"chat"}`, `{"kind":"mcp/*","payload":{"method":"tools/list"}}`}, req + `{"method":"tools/call"}}`, false, "payload.method"},
	})
}

// Covering names the first pattern that covers, for the audit's grant chain.
func TestCoveringIndex(t *testing.T) {
	s := MustCompile(`{"kind":"chat"}`, `{"kind":"mcp/request","payload":{"method":"tools/list"}}`, `{"kind":"mcp/*"}`, `{"kind":"*"}`)
	g := MustCompile(`{"kind":"chat"}`, `{"kind":"mcp/request","payload":{"method":"tools/list","id":1}}`, `{"kind":"mcp/response"}`, `{"kind":"space/invite"}`)
	for i, want := range []int{0, 1, 2, 3} {
		if j, why := s.Covering(g, i); j != want {
			t.Errorf("pattern %d covered by %d (%s), want %d", i, j, why, want)
		}
	}
	if j, why := s.Covering(g, 9); j != -1 || why == "" {
		t.Errorf("out of range: %d %q", j, why)
	}
	var none *Set
	if j, _ := none.Covering(g, 0); j != -1 {
		t.Errorf("a nil set covers: %d", j)
	}
}

// A pattern the strict compiler refuses is never accepted: Compile returns no
// set at all (not one without the bad pattern), and MustCompile panics.
func TestRefusedPatternsNeverAccepted(t *testing.T) {
	bad := []string{
		`{"kind":"*","KIND":"chat"}`,
		`{"Kind":"*"}`,
		`{"kind":"chat","kind":"*"}`,
		`{"kind":"chat","\u006bind":"*"}`,
		`{"kind":"mcp/request","payload":{},"PAYLOAD":{"method":"x"}}`,
		`{"kind":"mcp/request","payload":{"method":"tools/list"},"payload":{}}`,
		`{"kind":"mcp/request","payload":{"params":{"name":"read_file","name":"*"}}}`,
		`{"kind":"mcp/request","payload":{"a":[{"b":1,"b":2}]}}`,
		`{"kind":"chat","To":["x"]}`,
		`{"kind":"chat","Payload":{}}`,
	}
	good := `{"kind":"chat"}`
	for _, b := range bad {
		for _, list := range [][]string{{b}, {good, b}, {b, good}} {
			raws := make([]json.RawMessage, len(list))
			for i, p := range list {
				raws[i] = json.RawMessage(p)
			}
			if s, err := Compile(raws); err == nil || s != nil {
				t.Errorf("Compile(%v) = %v, %v; want no set and an error", list, s, err)
			}
		}
		func() {
			defer func() {
				if recover() == nil {
					t.Errorf("MustCompile(%s) did not panic", b)
				}
			}()
			MustCompile(b)
		}()
	}
}

func TestSelect(t *testing.T) {
	s := MustCompile(`{"kind":"a"}`, `{"kind":"b"}`, `{"kind":"c"}`)
	sel := s.Select([]int{2, 0, 7, -1})
	if sel.String() != `[{"kind":"c"},{"kind":"a"}]` || !sel.Allows("c", nil) || sel.Allows("b", nil) {
		t.Fatalf("Select: %s", sel)
	}
	var none *Set
	if none.Select([]int{0}).Len() != 0 {
		t.Fatal("Select on a nil set")
	}
}

func BenchmarkCovering(b *testing.B) {
	s := MustCompile(`{"kind":"chat"}`, `{"kind":"mcp/*","payload":{"method":"tools/*"}}`, `{"kind":"**/*a*b*c*"}`, `{"kind":"mcp/request","payload":{"params":{"name":"read_*"}}}`)
	cases := map[string]string{
		"narrow":     `{"kind":"mcp/request","payload":{"method":"tools/call","params":{"name":"read_file"}}}`,
		"long glob":  `{"kind":"` + strings.Repeat("a*", 8000) + `"}`,
		"many segs":  `{"kind":"` + strings.Repeat("x*/", 4000) + `"}`,
		"undecided":  `{"kind":"/a.*/"}`,
		"deep value": `{"kind":"mcp/request","payload":{"method":"tools/*","params":` + strings.Repeat(`{"a":`, 100) + `1` + strings.Repeat(`}`, 100) + `}}`,
	}
	for name, p := range cases {
		g := MustCompile(p)
		b.Run(name, func(b *testing.B) {
			for range b.N {
				s.Covering(g, 0)
			}
		})
	}
}

// A glob too large to compare is undecided, and says so quickly.
func TestCoveringHugeGlob(t *testing.T) {
	s := MustCompile(`{"kind":"a*"}`, `{"kind":"**/*a*b*"}`)
	g := MustCompile(`{"kind":"` + strings.Repeat("a*", 40000) + `"}`)
	start := time.Now()
	ok, why := s.Subsumes(g)
	if ok || !strings.Contains(why, "cannot decide") {
		t.Fatalf("huge glob: %v %q", ok, why[len(why)-80:])
	}
	if d := time.Since(start); d > time.Second {
		t.Fatalf("took %v", d)
	}
}
