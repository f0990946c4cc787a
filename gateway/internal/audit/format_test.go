package audit

import (
	"encoding/json"
	"log/slog"
	"math/rand/v2"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/google/go-cmp/cmp"

	"github.com/mew-protocol/mew/protocol"
)

const sampleEnvelope = `{"protocol":"mew/v0.4","id":"probe-1","ts":"2026-11-22T10:09:50.998Z","from":"alice","to":["bob"],"kind":"chat","payload":{"text":"hi"}}`

var envelopeKeys = []string{"timestamp", "event", "id", "envelope", "participant", "space_id", "direction", "transport", "metadata"}

var decisionKeys = []string{"timestamp", "event", "envelope_id", "participant", "space_id", "result", "required_capability", "matched_capability", "matched_source", "granted_capabilities", "metadata"}

func TestEnvelopeLine(t *testing.T) {
	dir := t.TempDir()
	l := openT(t, Options{Dir: dir, EnvelopeHistory: true, CapabilityDecisions: true})
	l.Envelope(EnvelopeRecord{
		Time:        fixed,
		Event:       Received,
		ID:          "probe-1",
		Envelope:    []byte(sampleEnvelope),
		Participant: "alice",
		Space:       "demo",
		Transport:   "websocket",
		Metadata:    []byte(`{"auto_connect":true}`),
	})
	l.Envelope(EnvelopeRecord{
		Time: fixed, Event: Rejected, ID: "probe-2", Envelope: []byte(`{"id":"probe-2"}`),
		Participant: "alice", Space: "demo", Transport: "http", Metadata: []byte(`{"reason":"capability_violation"}`),
	})
	closeT(t, l)

	want := []string{
		`{"timestamp":"` + fixedTS + `","event":"received","id":"probe-1","envelope":` + sampleEnvelope +
			`,"participant":"alice","space_id":"demo","direction":"inbound","transport":"websocket","metadata":{"auto_connect":true}}`,
		`{"timestamp":"` + fixedTS + `","event":"rejected","id":"probe-2","envelope":{"id":"probe-2"}` +
			`,"participant":"alice","space_id":"demo","direction":"inbound","transport":"http","metadata":{"reason":"capability_violation"}}`,
	}
	got := readLines(t, envPath(dir))
	if diff := cmp.Diff(want, got); diff != "" {
		t.Fatalf("lines (-want +got):\n%s", diff)
	}
	for _, line := range got {
		checkCompact(t, line)
		if keys := topKeys(t, line); !slices.Equal(keys, envelopeKeys) {
			t.Errorf("keys = %v, want %v", keys, envelopeKeys)
		}
	}

	// Values round-trip.
	var rec struct {
		Timestamp, Event, ID, Participant, SpaceID, Direction, Transport string
		Envelope, Metadata                                               json.RawMessage
	}
	dec := json.NewDecoder(strings.NewReader(got[0]))
	if err := dec.Decode(&rec); err != nil {
		t.Fatal(err)
	}
	if rec.Timestamp != fixedTS || rec.ID != "probe-1" || string(rec.Envelope) != sampleEnvelope ||
		string(rec.Metadata) != `{"auto_connect":true}` {
		t.Errorf("round trip: %+v", rec)
	}
	if _, err := os.Stat(decPath(dir)); err != nil {
		t.Errorf("decision file not created: %v", err)
	}
}

func TestDecisionLine(t *testing.T) {
	dir := t.TempDir()
	l := openT(t, Options{Dir: dir, CapabilityDecisions: true})
	l.Decision(DecisionRecord{
		Time: fixed, EnvelopeID: "probe-1", Participant: "test-client", Space: "demo", Allowed: true,
		Kind: "chat", Matched: []byte(`{"kind":"chat"}`), Source: "static",
		Granted:  []byte(`[{"kind":"chat"},{"kind":"mcp/*"}]`),
		Metadata: []byte(`{"source":"http_api","transport":"http"}`),
	})
	l.Decision(DecisionRecord{
		Time: fixed, EnvelopeID: "probe-2", Participant: "test-client", Space: "demo",
		Kind: "mcp/request", Granted: []byte(`[]`),
	})
	closeT(t, l)

	want := []string{
		`{"timestamp":"` + fixedTS + `","event":"capability_check","envelope_id":"probe-1","participant":"test-client","space_id":"demo",` +
			`"result":"allowed","required_capability":"chat","matched_capability":{"kind":"chat"},"matched_source":"static",` +
			`"granted_capabilities":[{"kind":"chat"},{"kind":"mcp/*"}],"metadata":{"source":"http_api","transport":"http"}}`,
		`{"timestamp":"` + fixedTS + `","event":"capability_check","envelope_id":"probe-2","participant":"test-client","space_id":"demo",` +
			`"result":"denied","required_capability":"mcp/request","granted_capabilities":[]}`,
	}
	got := readLines(t, decPath(dir))
	if diff := cmp.Diff(want, got); diff != "" {
		t.Fatalf("lines (-want +got):\n%s", diff)
	}
	checkCompact(t, got[0])
	if keys := topKeys(t, got[0]); !slices.Equal(keys, decisionKeys) {
		t.Errorf("keys = %v, want %v", keys, decisionKeys)
	}
	if _, err := os.Stat(envPath(dir)); !os.IsNotExist(err) {
		t.Errorf("envelope file exists though switched off: %v", err)
	}
}

// TestOmitted: empty strings, nil values and {} are left out, [] is kept,
// an unknown event has no direction.
func TestOmitted(t *testing.T) {
	dir := t.TempDir()
	l := openT(t, Options{Dir: dir, EnvelopeHistory: true, CapabilityDecisions: true})
	l.Envelope(EnvelopeRecord{Time: fixed, Event: Received, Envelope: []byte(`{}`), Metadata: []byte(`{}`)})
	l.Envelope(EnvelopeRecord{Time: fixed, Event: "custom", ID: "x", Envelope: []byte(`[]`), Participant: "p"})
	l.Decision(DecisionRecord{Time: fixed, Matched: []byte(`{}`), Metadata: []byte(`{}`), Granted: []byte(`[]`)})
	closeT(t, l)
	want := []string{
		`{"timestamp":"` + fixedTS + `","event":"received","direction":"inbound"}`,
		`{"timestamp":"` + fixedTS + `","event":"custom","id":"x","envelope":[],"participant":"p"}`,
	}
	if diff := cmp.Diff(want, readLines(t, envPath(dir))); diff != "" {
		t.Errorf("envelope lines (-want +got):\n%s", diff)
	}
	wantDec := []string{`{"timestamp":"` + fixedTS + `","event":"capability_check","result":"denied","granted_capabilities":[]}`}
	if diff := cmp.Diff(wantDec, readLines(t, decPath(dir))); diff != "" {
		t.Errorf("decision lines (-want +got):\n%s", diff)
	}
	if s := l.Stats(); s.Errors != 0 {
		t.Errorf("Errors = %d, want 0", s.Errors)
	}
}

func TestEscaping(t *testing.T) {
	cases := []struct{ in, want string }{
		{``, `""`},
		{`plain text`, `"plain text"`},
		{`say "hi"`, `"say \"hi\""`},
		{`C:\dir\`, `"C:\\dir\\"`},
		{"\b\f\n\r\t", `"\b\f\n\r\t"`},
		{"\x00\x01\x0b\x1b\x1f", `"\u0000\u0001\u000b\u001b\u001f"`},
		{"\x7f", "\"\x7f\""},
		{`</script><b>&amp;`, `"</script><b>&amp;"`},
		{"😊 © ™ 漢字", `"😊 © ™ 漢字"`},
		{"a\u2028b\u2029c", "\"a\u2028b\u2029c\""},
		{"bad\xffutf8\xc3", `"bad\ufffdutf8\ufffd"`},
		{"\ufffd", "\"\ufffd\""},
	}
	for _, c := range cases {
		got := string(protocol.AppendString(nil, c.in))
		if got != c.want {
			t.Errorf("AppendString(%q) = %s, want %s", c.in, got, c.want)
		}
		var back string
		if err := json.Unmarshal([]byte(got), &back); err != nil {
			t.Errorf("%s: %v", got, err)
		} else if utf8.ValidString(c.in) && back != c.in {
			t.Errorf("round trip %q = %q", c.in, back)
		}
	}

	// The same through a whole line.
	dir := t.TempDir()
	l := openT(t, Options{Dir: dir, EnvelopeHistory: true})
	nasty := "q\"\\\x00\n😊</script>&\u2028"
	l.Envelope(EnvelopeRecord{Time: fixed, Event: Received, ID: nasty, Envelope: []byte(`{}`), Participant: nasty, Space: nasty, Transport: nasty})
	closeT(t, l)
	lines := readLines(t, envPath(dir))
	if len(lines) != 1 {
		t.Fatalf("%d lines, want 1", len(lines))
	}
	const esc = `"q\"\\\u0000\n😊</script>&` + "\u2028\""
	want := `{"timestamp":"` + fixedTS + `","event":"received","id":` + esc + `,"participant":` + esc +
		`,"space_id":` + esc + `,"direction":"inbound","transport":` + esc + `}`
	if lines[0] != want {
		t.Errorf("line\n got %s\nwant %s", lines[0], want)
	}
	var rec struct{ ID, Participant, SpaceID, Transport string }
	if err := json.Unmarshal([]byte(lines[0]), &rec); err != nil {
		t.Fatal(err)
	}
	if rec.ID != nasty || rec.Participant != nasty || rec.Transport != nasty {
		t.Errorf("round trip: %+v", rec)
	}
}

// FuzzAppendString: the output is always one valid JSON string without raw
// control characters, and decodes to what encoding/json would make of s.
func FuzzAppendString(f *testing.F) {
	for _, s := range []string{"", "a\"b", "\\", "\x00\x1f\x7f", "😊", "\xff\xfe", "\xed\xa0\x80", "\u2028</script>"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		out := protocol.AppendString([]byte("x"), s)[1:]
		for _, c := range out {
			if c < 0x20 {
				t.Fatalf("raw control character in %q", out)
			}
		}
		if !utf8.Valid(out) {
			t.Fatalf("invalid UTF-8 in %q", out)
		}
		var got string
		if err := json.Unmarshal(out, &got); err != nil {
			t.Fatalf("%q: %v", out, err)
		}
		ref, _ := json.Marshal(s)
		var want string
		if err := json.Unmarshal(ref, &want); err != nil {
			t.Fatal(err)
		}
		if got != want {
			t.Fatalf("AppendString(%q) decodes to %q, encoding/json to %q", s, got, want)
		}
	})
}

func TestTimeLayoutMatchesProtocol(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	times := []time.Time{
		fixed,
		time.Date(2025, 1, 2, 3, 4, 5, 0, time.UTC),
		time.Date(1999, 12, 31, 23, 59, 59, 999_999_999, time.FixedZone("x", -5*3600)),
		fixed.In(time.FixedZone("y", 3600+1800)),
		time.Unix(0, 0),
	}
	for range 2000 {
		times = append(times, time.Unix(rng.Int64N(6e9)-2e9, rng.Int64N(1e9)).In(time.FixedZone("z", rng.IntN(86400)-43200)))
	}
	// Runs within one second, to exercise the cache.
	base := time.Date(2026, 11, 22, 23, 59, 59, 0, time.FixedZone("w", 7200))
	for i := range 20 {
		times = append(times, base.Add(time.Duration(i)*77*time.Millisecond))
	}
	var c secondCache
	for _, tm := range times {
		want := protocol.FormatTime(tm)
		if got := string(c.appendTime([]byte("x"), tm)[1:]); got != want {
			t.Fatalf("secondCache.appendTime(%v) = %s, protocol.FormatTime = %s", tm, got, want)
		}
	}
}

// TestNowStampsZeroTime: a record without Time gets Options.Now().
func TestNowStampsZeroTime(t *testing.T) {
	dir := t.TempDir()
	l := openT(t, Options{Dir: dir, EnvelopeHistory: true, CapabilityDecisions: true, Now: func() time.Time { return fixed }})
	l.Envelope(EnvelopeRecord{Event: Received, ID: "a", Envelope: []byte(`{}`)})
	l.Decision(DecisionRecord{EnvelopeID: "a", Allowed: true})
	closeT(t, l)
	for _, p := range []string{envPath(dir), decPath(dir)} {
		lines := readLines(t, p)
		if len(lines) != 1 || !strings.HasPrefix(lines[0], `{"timestamp":"`+fixedTS+`",`) {
			t.Errorf("%s: %q", filepath.Base(p), lines)
		}
	}
}

// TestBadValues: a value that is not JSON gives a valid line and a counted
// error; a pretty-printed one is compacted without error.
func TestBadValues(t *testing.T) {
	dir := t.TempDir()
	var logBuf strings.Builder
	logger := slog.New(slog.NewTextHandler(&logBuf, nil))
	l := openT(t, Options{Dir: dir, EnvelopeHistory: true, CapabilityDecisions: true, Logger: logger})
	l.Envelope(EnvelopeRecord{Time: fixed, Event: Received, ID: "garbage", Envelope: []byte("not json\n{"), Metadata: []byte(`{"a":1`)})
	l.Envelope(EnvelopeRecord{Time: fixed, Event: Received, ID: "nil"})
	l.Envelope(EnvelopeRecord{Time: fixed, Event: Received, ID: "pretty", Envelope: []byte(" {\n  \"a\": [1, 2],\n  \"b\": \"x y\"\n}\n"), Metadata: []byte(`{ }`)})
	l.Envelope(EnvelopeRecord{Time: fixed, Event: Received, ID: "scalar", Envelope: []byte(`"a string"`), Metadata: []byte(`42`)})
	l.Decision(DecisionRecord{Time: fixed, EnvelopeID: "d", Matched: []byte(`{"kind":`), Granted: []byte(`nope`), Metadata: []byte(`[1,`)})
	closeT(t, l)

	wantEnv := []string{
		`{"timestamp":"` + fixedTS + `","event":"received","id":"garbage","envelope":null,"direction":"inbound"}`,
		`{"timestamp":"` + fixedTS + `","event":"received","id":"nil","envelope":null,"direction":"inbound"}`,
		`{"timestamp":"` + fixedTS + `","event":"received","id":"pretty","envelope":{"a":[1,2],"b":"x y"},"direction":"inbound"}`,
		`{"timestamp":"` + fixedTS + `","event":"received","id":"scalar","envelope":null,"direction":"inbound"}`,
	}
	gotEnv := readLines(t, envPath(dir))
	if diff := cmp.Diff(wantEnv, gotEnv); diff != "" {
		t.Errorf("envelope lines (-want +got):\n%s", diff)
	}
	wantDec := []string{`{"timestamp":"` + fixedTS + `","event":"capability_check","envelope_id":"d","result":"denied"}`}
	gotDec := readLines(t, decPath(dir))
	if diff := cmp.Diff(wantDec, gotDec); diff != "" {
		t.Errorf("decision lines (-want +got):\n%s", diff)
	}
	for _, line := range append(gotEnv, gotDec...) {
		checkCompact(t, line)
	}
	// garbage: envelope + metadata; nil: envelope; scalar: envelope +
	// metadata; decision: three values.
	if s := l.Stats(); s.Errors != 8 || s.Lines != 5 || s.Records != 5 {
		t.Errorf("Stats = %+v, want 8 errors, 5 lines, 5 records", s)
	}
	if n := strings.Count(logBuf.String(), "not JSON"); n != 1 {
		t.Errorf("logged %d times, want once:\n%s", n, logBuf.String())
	}
}

// TestFormatAllocs: formatting and writing a line allocates nothing.
func TestFormatAllocs(t *testing.T) {
	if testing.Short() {
		t.Skip("short")
	}
	dir := t.TempDir()
	w := testWriter(t, &Options{})
	var err error
	if w.env, err = w.openSink(envPath(dir)); err != nil {
		t.Fatal(err)
	}
	if w.dec, err = w.openSink(decPath(dir)); err != nil {
		t.Fatal(err)
	}
	defer func() {
		if err := w.close(); err != nil {
			t.Error(err)
		}
	}()
	rcpts := []Recipient{{"a", "websocket"}, {"b", "virtual"}, {"c<&>", "http"}}
	recv := EnvelopeRecord{Time: fixed, Event: Received, ID: "id-1", Envelope: []byte(sampleEnvelope), Participant: "alice\n", Space: "demo", Transport: "websocket", Metadata: []byte(`{"x":1}`)}
	deliv := EnvelopeRecord{Time: fixed, Event: Delivered, ID: "id-1", Envelope: []byte(sampleEnvelope), Recipients: rcpts, Space: "demo"}
	decision := DecisionRecord{Time: fixed, EnvelopeID: "id-1", Participant: "alice", Space: "demo", Allowed: true, Kind: "chat", Matched: []byte(`{"kind":"chat"}`), Source: "static"}
	if n := testing.AllocsPerRun(1000, func() { w.envelope(&recv); w.envelope(&deliv); w.decision(&decision) }); n != 0 {
		t.Errorf("%v allocations per run, want 0", n)
	}
}

// TestGroupedGrep: the reference's grep for a delivery,
// "event":"delivered".*"id":"X".*"participant":"P", finds each recipient on
// a grouped line and nothing else: not a metadata key that ends in
// participant, not a participant or envelope id built to look like another
// recipient. Every line stays one JSON object.
func TestGroupedGrep(t *testing.T) {
	dir := t.TempDir()
	l := openT(t, Options{Dir: dir, EnvelopeHistory: true})
	hostileP := `mal"},{"participant":"carol`
	hostileID := `x","participant":"carol\`
	l.Envelope(EnvelopeRecord{Time: fixed, Event: Delivered, ID: "m1", Envelope: []byte(`{"id":"m1"}`), Space: "demo",
		Recipients: []Recipient{{"alice", "websocket"}, {hostileP, "http"}, {"猫", "virtual"}},
		Metadata:   []byte(`{"source_participant":"carol","original_participant":"carol"}`)})
	l.Envelope(EnvelopeRecord{Time: fixed, Event: Delivered, ID: hostileID, Envelope: []byte(`{"id":"h"}`), Space: "demo",
		Recipients: []Recipient{{"alice", "websocket"}}})
	closeT(t, l)
	lines := readRaw(t, envPath(dir))
	for _, line := range lines {
		checkCompact(t, line)
	}
	q := func(s string) string { return regexp.QuoteMeta(string(protocol.AppendString(nil, s))) }
	for _, tc := range []struct {
		id, p string
		want  int
	}{
		{"m1", "alice", 1}, {"m1", hostileP, 1}, {"m1", "猫", 1},
		{"m1", "carol", 0}, {"m1", "mal", 0},
		{hostileID, "alice", 1}, {hostileID, "carol", 0}, {"x", "carol", 0}, {"x", "alice", 0},
	} {
		re := regexp.MustCompile(`"event":"delivered".*"id":` + q(tc.id) + `.*"participant":` + q(tc.p))
		n := 0
		for _, line := range lines {
			if re.MatchString(line) {
				n++
			}
		}
		if n != tc.want {
			t.Errorf("delivery of %q to %q: %d lines, want %d", tc.id, tc.p, n, tc.want)
		}
	}
	if n := strings.Count(strings.Join(lines, "\n"), `"participant":"carol"`); n != 0 {
		t.Errorf(`"participant":"carol" appears %d times`, n)
	}
}
