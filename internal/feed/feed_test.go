package feed

import (
	"bytes"
	"encoding/json"
	"flag"
	"os"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/mew-protocol/mew/internal/feed/feedtest"

	"github.com/mew-protocol/mew/protocol"
)

var update = flag.Bool("update", false, "rewrite the events of testdata/vectors.json from this reader (review the diff)")

// Encode returns ev as it is written in the vectors: its fields and its
// type.
func encode(t *testing.T, ev Event) map[string]any {
	t.Helper()
	b, err := json.Marshal(ev)
	if err != nil {
		t.Fatalf("%s: %v", ev.Type(), err)
	}
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatal(err)
	}
	m["type"] = ev.Type()
	return m
}

// TestVectors reads every case's envelopes and compares the events with
// the ones the vectors hold.
func TestVectors(t *testing.T) {
	vf := feedtest.Load(t)
	for ci := range vf.Cases {
		c := &vf.Cases[ci]
		r := NewReader()
		got := make([][]json.RawMessage, len(c.Envelopes))
		for i := range c.Envelopes {
			got[i] = []json.RawMessage{}
			for _, ev := range r.Read(c.Envelope(t, i)) {
				b, err := json.Marshal(encode(t, ev))
				if err != nil {
					t.Fatal(err)
				}
				got[i] = append(got[i], b)
			}
		}
		if *update {
			c.Events = got
			continue
		}
		if diff := cmp.Diff(decodeAll(t, c.Events), decodeAll(t, got)); diff != "" {
			t.Errorf("%s (-want +got):\n%s", c.Name, diff)
		}
	}
	if *update {
		var b bytes.Buffer
		enc := json.NewEncoder(&b)
		enc.SetEscapeHTML(false)
		enc.SetIndent("", " ")
		if err := enc.Encode(vf); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(feedtest.Path(t), b.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

func decodeAll(t *testing.T, evs [][]json.RawMessage) [][]any {
	t.Helper()
	out := make([][]any, len(evs))
	for i, l := range evs {
		out[i] = []any{}
		for _, raw := range l {
			var v any
			if err := json.Unmarshal(raw, &v); err != nil {
				t.Fatal(err)
			}
			out[i] = append(out[i], v)
		}
	}
	return out
}

// TestVectorsCoverEveryEvent keeps the vectors honest: every event type
// appears in them, so the console is held to each.
func TestVectorsCoverEveryEvent(t *testing.T) {
	seen := map[string]bool{}
	for _, c := range feedtest.Load(t).Cases {
		for _, l := range c.Events {
			for _, raw := range l {
				var e struct {
					Type string `json:"type"`
				}
				_ = json.Unmarshal(raw, &e)
				seen[e.Type] = true
			}
		}
	}
	all := []Event{&Welcome{}, &Presence{}, &SystemError{}, &Chat{}, &ChatAcked{}, &Request{}, &Response{},
		&Proposal{}, &ProposalSettled{}, &ReasoningStarted{}, &ReasoningStep{}, &ReasoningEnded{}, &Granted{},
		&Revoked{}, &GrantAcked{}, &StreamOpened{}, &StreamClosed{}, &Control{}, &Elicitation{}, &Bookkeeping{},
		&Other{}, &Spoofed{}, &Malformed{}}
	for _, ev := range all {
		if !seen[ev.Type()] {
			t.Errorf("no vector makes a %s event", ev.Type())
		}
	}
}

// TestMalformedKeepsState: a payload that does not decode changes
// nothing, so that a later sound envelope reads as if it had not come.
func TestMalformedKeepsState(t *testing.T) {
	r := NewReader()
	read := func(s string) []Event {
		var env protocol.Envelope
		if err := json.Unmarshal([]byte(s), &env); err != nil {
			t.Fatal(err)
		}
		return r.Read(&env)
	}
	read(`{"id":"p1","kind":"mcp/proposal","from":"bot","payload":{"method":"tools/call","params":{"name":"x"}}}`)
	evs := read(`{"id":"r1","kind":"mcp/reject","from":"ann","correlation_id":["p1"],"payload":{"reason":7}}`)
	if len(evs) != 1 || evs[0].Type() != "malformed" || evs[0].(*Malformed).Err == nil {
		t.Fatalf("a reject with a number for a reason: %#v", evs)
	}
	evs = read(`{"id":"r2","kind":"mcp/reject","from":"ann","correlation_id":["p1"],"payload":{"reason":"unsafe"}}`)
	if len(evs) != 1 || evs[0].(*ProposalSettled).Outcome != Rejected {
		t.Fatalf("the sound reject after it: %#v", evs)
	}
}

// TestBounds: a flood of reasonings ends the oldest rather than growing.
func TestBounds(t *testing.T) {
	r := NewReader()
	evicted := 0
	for i := range MaxReasonings + 10 {
		env := &protocol.Envelope{ID: "s" + string(rune('a'+i%26)) + string(rune('a'+i/26)), Kind: protocol.KindReasoningStart, From: "bot"}
		for _, ev := range r.Read(env) {
			if e, ok := ev.(*ReasoningEnded); ok && e.Cause == Evicted {
				evicted++
			}
		}
	}
	if evicted != 10 || len(r.reasonings) != MaxReasonings {
		t.Fatalf("evicted %d, open %d", evicted, len(r.reasonings))
	}
}
