package capability

import (
	"encoding/json"
	"strings"
	"testing"
	"time"
)

// bigPayload builds an object with n nested members holding strings, the
// shape a hostile participant would send to make deep matches expensive.
func bigPayload(n int) []byte {
	var b strings.Builder
	b.WriteString(`{"method":"tools/call","params":{"items":[`)
	for i := range n {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString(`{"a":{"b":"xxxxxxxx"}}`)
	}
	b.WriteString(`]}}`)
	return []byte(b.String())
}

// Patterns whose cost grows with the square of the payload are cut off by the
// visit budget, and are refused rather than allowed.
func TestDeepMatchBudget(t *testing.T) {
	payload := bigPayload(20000)
	for _, p := range []string{
		`{"kind":"k","payload":{"**":{"**":{"**":"nope"}}}}`,
		`{"kind":"k","payload":{"$..*":{"$..*":"nope"}}}`,
		`{"kind":"k","payload":{"$..[?(@.zz)]..b":"nope"}}`,
	} {
		s := MustCompile(p)
		start := time.Now()
		if s.Allows("k", payload) {
			t.Errorf("%s allowed", p)
		}
		if d := time.Since(start); d > 5*time.Second {
			t.Errorf("%s took %v", p, d)
		}
	}
	// A single deep match over the same payload is within the budget.
	s := MustCompile(`{"kind":"k","payload":{"**":"xxxxxxxx"}}`)
	if !s.Allows("k", payload) {
		t.Error("a linear deep match should succeed")
	}
}

// Hostile payloads never panic and never match patterns that look at them.
func TestHostilePayloads(t *testing.T) {
	s := MustCompile(`{"kind":"k","payload":{"method":"tools/*"}}`, `{"kind":"k","payload":{"**":"x"}}`, `{"kind":"k","payload":{"$..a":"*"}}`)
	for _, p := range []string{
		``, `null`, `"x"`, `[]`, `{`, `{"method":"tools/list"`, `{"method":"tools/list"}x`,
		"{\"method\":\"tools/\xff\"}", `{"method":"tools/list","method":"x"}`,
		strings.Repeat("[", 100000), strings.Repeat(`{"a":`, 600) + `1` + strings.Repeat(`}`, 600),
		`{"method":"\ud800"}`, `{"method":"tools\u0000list"}`,
	} {
		if s.Allows("k", []byte(p)) {
			t.Errorf("payload %.40q allowed", p)
		}
	}
}

// Concurrent matching shares the pooled scratch state safely.
func TestConcurrentMatch(t *testing.T) {
	s := MustCompile(`{"kind":"mcp/request","payload":{"method":"tools/call","params":{"name":"read_*"}}}`)
	allowed := []byte(`{"method":"tools/call","params":{"name":"read_file"}}`)
	denied := []byte(`{"method":"tools/call","params":{"name":"write_file"}}`)
	done := make(chan struct{})
	for g := range 8 {
		go func() {
			defer func() { done <- struct{}{} }()
			for i := range 2000 {
				p, want := allowed, true
				if (i+g)%2 == 1 {
					p, want = denied, false
				}
				if s.Allows("mcp/request", p) != want {
					t.Errorf("goroutine %d, iteration %d: wrong answer", g, i)
					return
				}
			}
		}()
	}
	for range 8 {
		<-done
	}
}

func FuzzCompileMatch(f *testing.F) {
	f.Add(`{"kind":"mcp/request","payload":{"method":"tools/call","params":{"name":"read_*"}}}`, "mcp/request", `{"method":"tools/call","params":{"name":"read_file"}}`)
	f.Add(`{"kind":"*","payload":{"**":"x","$..a[?(@.b > 1)]":"/^y/"}}`, "chat", `{"a":[{"b":2},{"c":"x"}]}`)
	f.Add(`{"kind":["a","!b*"],"payload":{"k*":[1,true,null,{"x":"!y"}]}}`, "a", `{"kk":{"x":"z"}}`)
	f.Add(`{"kind":"k","payload":{"$['a','b'][1:3:2]":"*"}}`, "k", `{"a":[0,1,2,3]}`)
	f.Fuzz(func(t *testing.T, pattern, kind, payload string) {
		s, err := Compile([]json.RawMessage{json.RawMessage(pattern)})
		if err != nil {
			if s != nil {
				t.Fatal("a failed Compile returned a set")
			}
			return
		}
		first := s.Allows(kind, []byte(payload))
		// The same question asked again, after the pooled state served another
		// payload, gets the same answer.
		s.Allows(kind, []byte(`{"other":[1,{"x":"y"}]}`))
		if again := s.Allows(kind, []byte(payload)); again != first {
			t.Fatalf("answer changed: %v then %v", first, again)
		}
		// A pattern with no payload constraint depends on the kind alone.
		if !json.Valid([]byte(payload)) && first {
			var probe struct {
				Payload map[string]json.RawMessage `json:"payload"`
			}
			if json.Unmarshal([]byte(pattern), &probe) == nil && len(probe.Payload) > 0 {
				t.Fatalf("invalid payload %q allowed by a payload pattern %s", payload, pattern)
			}
		}
	})
}
