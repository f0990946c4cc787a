package audit

import (
	"encoding/json"
	"fmt"
	"os"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// fanOut logs the records of a fan-out workload to a Log of the given
// format in dir: n chats, each received from one of 4 senders and
// delivered to every one of p participants, with its capability check.
func fanOut(t *testing.T, dir, format string, n, p int) Stats {
	t.Helper()
	l := openT(t, Options{Dir: dir, EnvelopeHistory: true, CapabilityDecisions: true, Format: format, MaxFileSize: -1})
	rcpts := make([]Recipient, p)
	for i := range rcpts {
		rcpts[i] = Recipient{ID: fmt.Sprintf("participant-%02d", i), Transport: "websocket"}
	}
	at := fixed
	for i := range n {
		id := fmt.Sprintf("0198a3c2-7d4e-7f01-9c3b-%012d", i)
		from := rcpts[i%4].ID
		env := fmt.Appendf(nil, `{"protocol":"mew/v0.4","id":%q,"ts":%q,"from":%q,"kind":"chat","payload":{"text":"status update %d: the build is green, 3 tests were retried, and the deploy is waiting for approval","format":"plain"}}`,
			id, at.Format(timeLayout), from, i)
		l.Decision(DecisionRecord{Time: at, EnvelopeID: id, Participant: from, Space: "bench", Allowed: true, Kind: "chat",
			Matched: []byte(`{"kind":"chat"}`), Source: "static", Granted: []byte(`[{"kind":"chat"},{"id":"mcp-response","kind":"mcp/response"}]`),
			Metadata: []byte(`{"source":"websocket","transport":"websocket"}`)})
		l.Envelope(EnvelopeRecord{Time: at, Event: Received, ID: id, Envelope: env, Participant: from, Space: "bench", Transport: "websocket"})
		l.Envelope(EnvelopeRecord{Time: at, Event: Delivered, ID: id, Envelope: env, Recipients: rcpts, Space: "bench"})
		at = at.Add(time.Millisecond)
	}
	closeT(t, l)
	return l.Stats()
}

// TestCompactBytes measures the bytes each format writes for the same
// fan-out workload (20 participants, 1,000 envelopes) and checks that the
// compact log reads back into the lines of the reference layout.
func TestCompactBytes(t *testing.T) {
	const n, p = 1000, 20
	cdir, rdir := t.TempDir(), t.TempDir()
	c := fanOut(t, cdir, FormatCompact, n, p)
	r := fanOut(t, rdir, FormatReference, n, p)
	if c.Lines != r.Lines || c.Lines != uint64(n*(p+2)) {
		t.Fatalf("lines: compact %d, reference %d, want %d", c.Lines, r.Lines, n*(p+2))
	}
	size := func(path string) int64 {
		fi, err := os.Stat(path)
		if err != nil {
			t.Fatal(err)
		}
		return fi.Size()
	}
	ch, rh := size(envPath(cdir)), size(envPath(rdir))
	ratio := float64(ch) / float64(rh)
	t.Logf("%d envelopes to %d participants: envelope history compact %d bytes, reference %d bytes, ratio %.3f (1/%.1f); %d and %d bytes an envelope",
		n, p, ch, rh, ratio, 1/ratio, ch/n, rh/n)
	t.Logf("with the capability decisions (the same in both): compact %d bytes, reference %d bytes, ratio %.3f",
		c.Bytes, r.Bytes, float64(c.Bytes)/float64(r.Bytes))
	if ratio > 0.5 {
		t.Errorf("compact is %.2f of reference, want at most half", ratio)
	}

	// Read back: each delivered line without a body gets the body of the
	// latest earlier line with its id, placed where the reference has it.
	want := readLines(t, envPath(rdir))
	got := readLines(t, envPath(cdir))
	bodies := map[string]json.RawMessage{}
	for i, line := range got {
		var rec struct {
			ID       string
			Envelope json.RawMessage
		}
		if err := json.Unmarshal([]byte(line), &rec); err != nil {
			t.Fatal(err)
		}
		if rec.Envelope != nil {
			bodies[rec.ID] = rec.Envelope
			continue
		}
		head := `"id":` + string(mustJSON(t, rec.ID))
		k := len(`{"timestamp":"`+fixedTS+`","event":"delivered",`) + len(head)
		got[i] = line[:k] + `,"envelope":` + string(bodies[rec.ID]) + line[k:]
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("compact read back differs from reference (-want +got):\n%s", diff)
	}
}

func mustJSON(t *testing.T, v any) []byte {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}
