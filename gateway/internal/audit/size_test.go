package audit

import (
	"encoding/json"
	"fmt"
	"os"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// fanOutEnvelope returns the i-th chat of the fan-out workload from the
// given sender: about 400 bytes.
func fanOutEnvelope(i int, id string, at time.Time, from string) []byte {
	return fmt.Appendf(nil, `{"protocol":"mew/v0.4","id":%q,"ts":%q,"from":%q,"kind":"chat","payload":{"text":"status update %05d: the build is green, 3 tests were retried, and the deploy is waiting for approval from the release manager; the canary has been healthy for 20 minutes and error rates are flat; the rollout resumes at noon","format":"plain"}}`,
		id, at.Format(timeLayout), from, i)
}

// fanOut logs the records of a fan-out workload to a Log of the given
// format in dir: n chats, each received from one of 4 senders and
// delivered to every one of p participants, with its capability check.
func fanOut(t testing.TB, dir, format string, n, p int) Stats {
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
		env := fanOutEnvelope(i, id, at, from)
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

// sizes runs the fan-out workload in both formats and returns the bytes of
// the envelope history, and of both logs, per envelope.
func sizes(t testing.TB, n, p int) (cdir, rdir string, cEnv, rEnv, cAll, rAll float64) {
	cdir, rdir = t.TempDir(), t.TempDir()
	c := fanOut(t, cdir, FormatCompact, n, p)
	r := fanOut(t, rdir, FormatReference, n, p)
	if c.Lines != uint64(n*3) || r.Lines != uint64(n*(p+2)) {
		t.Fatalf("lines: compact %d, reference %d, want %d and %d", c.Lines, r.Lines, n*3, n*(p+2))
	}
	size := func(path string) float64 {
		fi, err := os.Stat(path)
		if err != nil {
			t.Fatal(err)
		}
		return float64(fi.Size()) / float64(n)
	}
	return cdir, rdir, size(envPath(cdir)), size(envPath(rdir)), float64(c.Bytes) / float64(n), float64(r.Bytes) / float64(n)
}

// TestCompactBytes measures the bytes each format writes for the same
// fan-out workload (20 participants, 1,000 envelopes of about 400 bytes),
// checks issue 19's target (the compact log at most 1/5 of the reference
// layout), and checks that the compact log expands into exactly the lines of
// the reference layout.
func TestCompactBytes(t *testing.T) {
	const n, p = 1000, 20
	cdir, rdir, ce, re, ca, ra := sizes(t, n, p)
	t.Logf("%d envelopes of %d bytes to %d participants: envelope history %.0f bytes an envelope compact, %.0f reference, ratio %.3f (1/%.1f)",
		n, len(fanOutEnvelope(0, "0198a3c2-7d4e-7f01-9c3b-000000000000", fixed, "participant-00")), p, ce, re, ce/re, re/ce)
	t.Logf("with the capability decisions (the same in both): %.0f and %.0f bytes an envelope, ratio %.3f", ca, ra, ca/ra)
	if ce/re > 0.2 || ca/ra > 0.2 {
		t.Errorf("compact is %.3f (envelope history) and %.3f (both logs) of reference, want at most 0.2", ce/re, ca/ra)
	}

	// Expand: each grouped delivered line becomes one reference line per
	// recipient, with the body of the latest earlier line with its id.
	want := readLines(t, envPath(rdir))
	var got []string
	bodies := map[string]json.RawMessage{}
	for _, line := range readLines(t, envPath(cdir)) {
		var rec struct {
			Timestamp, Event, ID string
			SpaceID              string `json:"space_id"`
			Envelope             json.RawMessage
			Recipients           []struct{ Participant, Transport string }
		}
		if err := json.Unmarshal([]byte(line), &rec); err != nil {
			t.Fatal(err)
		}
		if rec.Envelope != nil {
			bodies[rec.ID] = rec.Envelope
		}
		if rec.Event != Delivered {
			got = append(got, line)
			continue
		}
		for _, r := range rec.Recipients {
			got = append(got, `{"timestamp":`+string(mustJSON(t, rec.Timestamp))+`,"event":"delivered","id":`+string(mustJSON(t, rec.ID))+
				`,"envelope":`+string(bodies[rec.ID])+`,"participant":`+string(mustJSON(t, r.Participant))+
				`,"space_id":`+string(mustJSON(t, rec.SpaceID))+`,"direction":"outbound","transport":`+string(mustJSON(t, r.Transport))+`}`)
		}
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("compact expanded differs from reference (-want +got):\n%s", diff)
	}
}

// BenchmarkCompactBytes reports the bytes per envelope of both layouts for
// the fan-out workload of TestCompactBytes, and their ratio: run with
// -bench CompactBytes -benchtime 1x.
func BenchmarkCompactBytes(b *testing.B) {
	const n, p = 1000, 20
	var ce, re, ca, ra float64
	for b.Loop() {
		_, _, ce, re, ca, ra = sizes(b, n, p)
	}
	b.ReportMetric(ce, "compact-B/env")
	b.ReportMetric(re, "reference-B/env")
	b.ReportMetric(ce/re, "compact/reference")
	b.ReportMetric(ca/ra, "compact/reference-with-decisions")
}

func mustJSON(t testing.TB, v any) []byte {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}
