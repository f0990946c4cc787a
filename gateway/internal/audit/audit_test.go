package audit

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/mew-protocol/mew/internal/auditfmt"
)

// TestDeliveredFanOut: in the compact format a delivered record is one
// grouped line, byte for byte as docs/audit.md shows it.
func TestDeliveredFanOut(t *testing.T) {
	dir := t.TempDir()
	l := openT(t, Options{Dir: dir, EnvelopeHistory: true})
	l.Envelope(EnvelopeRecord{
		Time: fixed, Event: Delivered, ID: "m1", Envelope: []byte(`{"id":"m1"}`),
		Participant: "ignored", Transport: "ignored", Space: "demo",
		Recipients: []Recipient{{"alice", "websocket"}, {"bob", "virtual"}},
		Metadata:   []byte(`{"source_participant":"carol"}`),
	})
	// Without Recipients: Participant and Transport are the one recipient.
	l.Envelope(EnvelopeRecord{Time: fixed, Event: Delivered, ID: "w1", Envelope: []byte(`{"id":"w1"}`), Participant: "carol", Transport: "websocket", Space: "demo"})
	// A recipient without a transport leaves it out.
	l.Envelope(EnvelopeRecord{Time: fixed, Event: Received, ID: "r1", Envelope: []byte(`{"id":"r1"}`), Participant: "carol", Space: "demo"})
	l.Envelope(EnvelopeRecord{Time: fixed, Event: Delivered, ID: "r1", Envelope: []byte(`{"id":"r1"}`), Space: "demo",
		Recipients: []Recipient{{"dave", ""}}})
	closeT(t, l)
	ts := `{"timestamp":"` + fixedTS + `"`
	// The body once, on the grouped line, as no line before holds it; r1's
	// is on its received line.
	want := []string{
		ts + `,"event":"delivered","id":"m1","envelope":{"id":"m1"},"space_id":"demo","direction":"outbound","recipients":[{"participant":"alice","transport":"websocket"},{"participant":"bob","transport":"virtual"}],"metadata":{"source_participant":"carol"},"chain_prev":"00000000000000000000000000000000","chain":"1:`,
		ts + `,"event":"delivered","id":"w1","envelope":{"id":"w1"},"space_id":"demo","direction":"outbound","recipients":[{"participant":"carol","transport":"websocket"}],"chain":"2:`,
		ts + `,"event":"received","id":"r1","envelope":{"id":"r1"},"participant":"carol","space_id":"demo","direction":"inbound","chain":"3:`,
		ts + `,"event":"delivered","id":"r1","space_id":"demo","direction":"outbound","recipients":[{"participant":"dave"}],"chain":"4:`,
	}
	got := readRaw(t, envPath(dir))
	if len(got) != len(want) {
		t.Fatalf("%d lines, want %d: %q", len(got), len(want), got)
	}
	for i := range got {
		// The exact bytes up to the hash, which TestChain checks.
		if !strings.HasPrefix(got[i], want[i]) || len(got[i]) != len(want[i])+auditfmt.HashHex+2 {
			t.Errorf("line %d:\n got %s\nwant %s<hash>\"}", i+1, got[i], want[i])
		}
		checkCompact(t, got[i])
	}
	if s := l.Stats(); s.Records != 4 || s.Lines != 4 {
		t.Errorf("Stats = %+v, want 4 records, 4 lines", s)
	}
}

// TestDeliveredGroups: a fan-out to more than maxGroup recipients is split
// over lines of at most maxGroup, in order, with the body on the first only.
func TestDeliveredGroups(t *testing.T) {
	dir := t.TempDir()
	l := openT(t, Options{Dir: dir, EnvelopeHistory: true})
	rcpts := make([]Recipient, 2*maxGroup+3)
	for i := range rcpts {
		rcpts[i] = Recipient{ID: fmt.Sprint("p", i), Transport: "websocket"}
	}
	l.Envelope(EnvelopeRecord{Time: fixed, Event: Delivered, ID: "big", Envelope: []byte(`{"id":"big"}`), Recipients: rcpts, Space: "demo"})
	closeT(t, l)
	lines := readLines(t, envPath(dir))
	if len(lines) != 3 {
		t.Fatalf("%d lines, want 3", len(lines))
	}
	var got []string
	for i, line := range lines {
		var rec struct {
			Envelope   json.RawMessage
			Recipients []struct{ Participant, Transport string }
		}
		if err := json.Unmarshal([]byte(line), &rec); err != nil {
			t.Fatal(err)
		}
		if (i == 0) != (rec.Envelope != nil) {
			t.Errorf("line %d: envelope %s", i+1, rec.Envelope)
		}
		if n := len(rec.Recipients); n > maxGroup || n == 0 {
			t.Errorf("line %d: %d recipients", i+1, n)
		}
		for _, r := range rec.Recipients {
			got = append(got, r.Participant)
		}
	}
	var want []string
	for _, r := range rcpts {
		want = append(want, r.ID)
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("recipients (-want +got):\n%s", diff)
	}
	if s := l.Stats(); s.Records != 1 || s.Lines != 3 {
		t.Errorf("Stats = %+v, want 1 record, 3 lines", s)
	}
}

// TestDeliveredReferenceFormat: FormatReference writes the body on every
// delivered line.
func TestDeliveredReferenceFormat(t *testing.T) {
	dir := t.TempDir()
	l := openT(t, Options{Dir: dir, EnvelopeHistory: true, Format: FormatReference})
	l.Envelope(EnvelopeRecord{Time: fixed, Event: Received, ID: "m1", Envelope: []byte(`{"id":"m1"}`),
		Participant: "carol", Transport: "websocket", Space: "demo"})
	l.Envelope(EnvelopeRecord{
		Time: fixed, Event: Delivered, ID: "m1", Envelope: []byte(`{"id":"m1"}`), Space: "demo",
		Recipients: []Recipient{{"alice", "websocket"}, {"bob", "virtual"}},
	})
	closeT(t, l)
	head := `{"timestamp":"` + fixedTS + `","event":"delivered","id":"m1","envelope":{"id":"m1"}`
	want := []string{
		`{"timestamp":"` + fixedTS + `","event":"received","id":"m1","envelope":{"id":"m1"},"participant":"carol","space_id":"demo","direction":"inbound","transport":"websocket"}`,
		head + `,"participant":"alice","space_id":"demo","direction":"outbound","transport":"websocket"}`,
		head + `,"participant":"bob","space_id":"demo","direction":"outbound","transport":"virtual"}`,
	}
	if diff := cmp.Diff(want, readLines(t, envPath(dir))); diff != "" {
		t.Errorf("lines (-want +got):\n%s", diff)
	}
	if _, err := Open(Options{Dir: dir, EnvelopeHistory: true, Format: "fancy"}); err == nil {
		t.Error("an unknown format was accepted")
	}
}

// TestCompactBodies: in the compact format a delivered record refers to the
// body of the received line with its id and the same bytes; a different body
// under the same id, or one the writer no longer remembers, is written.
func TestCompactBodies(t *testing.T) {
	dir := t.TempDir()
	l := openT(t, Options{Dir: dir, EnvelopeHistory: true})
	rc := []Recipient{{"a", "websocket"}, {"b", "websocket"}}
	rec := func(ev, id, body string) {
		l.Envelope(EnvelopeRecord{Time: fixed, Event: ev, ID: id, Envelope: []byte(body), Participant: "p", Recipients: rc})
	}
	rec(Received, "x", `{"id":"x"}`)
	rec(Delivered, "x", `{"id":"x"}`)              // no body
	rec(Delivered, "x", `{"id":"x","redacted":1}`) // another body: written
	rec(Delivered, "x", `{"id":"x","redacted":1}`) // now known: not written
	for i := range maxBodies + 1 {
		rec(Received, fmt.Sprint("f", i), `{"id":"f"}`)
	}
	rec(Delivered, "x", `{"id":"x","redacted":1}`) // forgotten: written again
	closeT(t, l)
	var bodies []string
	for _, line := range readLines(t, envPath(dir)) {
		if !strings.Contains(line, `"id":"x"`) {
			continue
		}
		var m struct {
			Event       string
			Envelope    json.RawMessage
			Participant string
			Recipients  []struct{ Participant string }
		}
		if err := json.Unmarshal([]byte(line), &m); err != nil {
			t.Fatal(err)
		}
		who := m.Participant
		for _, r := range m.Recipients {
			who += r.Participant
		}
		bodies = append(bodies, m.Event+" "+who+" "+string(m.Envelope))
	}
	want := []string{
		`received p {"id":"x"}`,
		`delivered ab `,
		`delivered ab {"id":"x","redacted":1}`,
		`delivered ab `,
		`delivered ab {"id":"x","redacted":1}`,
	}
	if diff := cmp.Diff(want, bodies); diff != "" {
		t.Errorf("lines (-want +got):\n%s", diff)
	}
}

func TestReceivedOnly(t *testing.T) {
	dir := t.TempDir()
	l := openT(t, Options{Dir: dir, EnvelopeHistory: true, ReceivedOnly: true})
	for _, ev := range []string{Received, Delivered, Rejected, Delivered} {
		l.Envelope(EnvelopeRecord{Time: fixed, Event: ev, ID: ev, Envelope: []byte(`{}`), Recipients: []Recipient{{"a", "http"}}})
	}
	closeT(t, l)
	lines := readLines(t, envPath(dir))
	if len(lines) != 2 || !strings.Contains(lines[0], `"event":"received"`) || !strings.Contains(lines[1], `"event":"rejected"`) {
		t.Errorf("lines = %q", lines)
	}
}

func TestSwitchedOff(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "logs")
	l, err := Open(Options{Dir: dir})
	if err != nil {
		t.Fatal(err)
	}
	l.Envelope(EnvelopeRecord{Event: Received, Envelope: []byte(`{}`)})
	l.Decision(DecisionRecord{Allowed: true})
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(dir); !os.IsNotExist(err) {
		t.Errorf("directory created though both files are off: %v", err)
	}
	if s := l.Stats(); s != (Stats{}) {
		t.Errorf("Stats = %+v", s)
	}

	var nl *Log // a nil Log discards too
	nl.Envelope(EnvelopeRecord{})
	nl.Decision(DecisionRecord{})
	if err := nl.Close(); err != nil || nl.Stats() != (Stats{}) {
		t.Errorf("nil Log: %v %+v", err, nl.Stats())
	}
}

func TestOpenErrors(t *testing.T) {
	if _, err := Open(Options{EnvelopeHistory: true}); err == nil {
		t.Error("no error for an empty Dir")
	}
	file := filepath.Join(t.TempDir(), "file")
	if err := os.WriteFile(file, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := Open(Options{Dir: file, CapabilityDecisions: true}); err == nil {
		t.Error("no error for a Dir that is a file")
	}
	if _, err := Open(Options{Dir: filepath.Join(file, "sub"), CapabilityDecisions: true}); err == nil {
		t.Error("no error for a Dir below a file")
	}
}

func TestGitignore(t *testing.T) {
	t.Run("created with the directory", func(t *testing.T) {
		dir := filepath.Join(t.TempDir(), ".mew", "logs")
		l := openT(t, Options{Dir: dir, EnvelopeHistory: true, CapabilityDecisions: true})
		closeT(t, l)
		b, err := os.ReadFile(filepath.Join(dir, ".gitignore"))
		if err != nil || string(b) != "*\n!.gitignore\n" {
			t.Errorf(".gitignore = %q, %v", b, err)
		}
		fi, err := os.Stat(dir)
		if err != nil || !fi.IsDir() || fi.Mode().Perm() != 0o700 {
			t.Errorf("dir: %v, %v", fi.Mode(), err)
		}
		for _, p := range []string{envPath(dir), decPath(dir), filepath.Join(dir, ".gitignore")} {
			fi, err := os.Stat(p)
			if err != nil || fi.Mode().Perm() != 0o600 {
				t.Errorf("%s: %v, %v", p, fi.Mode(), err)
			}
		}
	})
	t.Run("not in an existing directory", func(t *testing.T) {
		dir := t.TempDir()
		l := openT(t, Options{Dir: dir, EnvelopeHistory: true})
		closeT(t, l)
		if _, err := os.Stat(filepath.Join(dir, ".gitignore")); !os.IsNotExist(err) {
			t.Errorf(".gitignore written into an existing directory: %v", err)
		}
	})
}

// TestAppends: a chained file is appended to, never truncated, and its
// chain goes on; a file that does not end in a chained line (an older
// gateway's, or one cut off) is set aside as a rotated file first.
func TestAppends(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(envPath(dir), []byte("{\"old\":1}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(decPath(dir), []byte(`{"cut":`), 0o644); err != nil {
		t.Fatal(err)
	}
	for i := range 2 {
		l := openT(t, Options{Dir: dir, EnvelopeHistory: true, CapabilityDecisions: true})
		l.Envelope(EnvelopeRecord{Time: fixed, Event: Received, ID: fmt.Sprint(i), Envelope: []byte(`{}`)})
		l.Decision(DecisionRecord{Time: fixed, EnvelopeID: fmt.Sprint(i)})
		closeT(t, l)
	}
	for _, tc := range []struct{ path, key, old string }{
		{envPath(dir), `"id":`, "{\"old\":1}\n"},
		{decPath(dir), `"envelope_id":`, `{"cut":`},
	} {
		lines := readRaw(t, tc.path)
		if len(lines) != 2 || !strings.Contains(lines[0], tc.key+`"0"`) || !strings.Contains(lines[1], tc.key+`"1"`) {
			t.Errorf("%s: %q", tc.path, lines)
			continue
		}
		// Both Opens stated where they started; the second continued
		// the first's chain and numbering.
		l0, err0 := auditfmt.ParseLink([]byte(lines[0]))
		l1, err1 := auditfmt.ParseLink([]byte(lines[1]))
		if err0 != nil || err1 != nil || l0.N != 1 || l1.N != 2 || !l0.HasPrev || !l1.HasPrev || l1.Prev != l0.Sum || l0.Prev != (auditfmt.Hash{}) {
			t.Errorf("%s: chains %+v %v, %+v %v", tc.path, l0, err0, l1, err1)
		}
		rotated, err := findRotated(tc.path)
		if err != nil || len(rotated) != 1 {
			t.Fatalf("%s: rotated %v, %v", tc.path, rotated, err)
		}
		if b, _ := os.ReadFile(rotated[0].path); string(b) != tc.old {
			t.Errorf("set aside %q, want %q", b, tc.old)
		}
	}
}

// TestCloseLosesNothing: 100,000 records from 8 goroutines, then Close; every
// record is in the files, in each goroutine's order.
func TestCloseLosesNothing(t *testing.T) {
	for _, queue := range []int{0, 7} {
		t.Run(fmt.Sprintf("queue=%d", queue), func(t *testing.T) {
			const goroutines, perG = 8, 12500
			dir := t.TempDir()
			l := openT(t, Options{Dir: dir, EnvelopeHistory: true, CapabilityDecisions: true, QueueSize: queue})
			var wg sync.WaitGroup
			for g := range goroutines {
				wg.Go(func() {
					env := []byte(`{"kind":"chat","payload":{"text":"hello"}}`)
					rcpts := []Recipient{{"a", "websocket"}, {"b", "virtual"}}
					for i := range perG {
						id := fmt.Sprintf("g%d-%d", g, i)
						switch i % 4 {
						case 0:
							l.Decision(DecisionRecord{Time: fixed, EnvelopeID: id, Participant: "p", Allowed: true, Kind: "chat"})
						case 1:
							l.Envelope(EnvelopeRecord{Time: fixed, Event: Delivered, ID: id, Envelope: env, Recipients: rcpts})
						default:
							l.Envelope(EnvelopeRecord{Time: fixed, Event: Received, ID: id, Envelope: env, Participant: "p"})
						}
					}
				})
			}
			wg.Wait()
			closeT(t, l)

			envLines := readLines(t, envPath(dir))
			decLines := readLines(t, decPath(dir))
			const decisions = goroutines * perG / 4
			const envelopes = goroutines * perG / 4 * (2 + 1) // two received, one delivered to two on one line
			if len(envLines) != envelopes || len(decLines) != decisions {
				t.Fatalf("%d envelope lines, %d decision lines; want %d, %d", len(envLines), len(decLines), envelopes, decisions)
			}
			next := make(map[string]int) // per goroutine: the next index expected
			for _, line := range envLines {
				var rec struct {
					ID, Event  string
					Recipients []struct{ Participant string }
				}
				if err := json.Unmarshal([]byte(line), &rec); err != nil {
					t.Fatalf("%v: %s", err, line)
				}
				var g, i int
				if _, err := fmt.Sscanf(rec.ID, "g%d-%d", &g, &i); err != nil {
					t.Fatal(err)
				}
				key := fmt.Sprint(g)
				if rec.Event == Delivered && len(rec.Recipients) != 2 {
					t.Fatalf("%s: recipients %v, want a and b", rec.ID, rec.Recipients)
				}
				if i < next[key] {
					t.Fatalf("goroutine %d: %s out of order", g, rec.ID)
				}
				next[key] = i + 1
			}
			var size int64
			for _, p := range []string{envPath(dir), decPath(dir)} {
				fi, err := os.Stat(p)
				if err != nil {
					t.Fatal(err)
				}
				size += fi.Size()
			}
			want := Stats{Records: goroutines * perG, Lines: envelopes + decisions, Bytes: uint64(size)}
			s := l.Stats()
			if s.Writes == 0 {
				t.Error("no writes counted")
			}
			if s.Writes = 0; s != want {
				t.Errorf("Stats = %+v, want %+v (writes aside)", s, want)
			}
		})
	}
}

// TestCloseWhileBusy: records racing with Close are either written or
// counted as dropped, never lost, and nothing panics.
func TestCloseWhileBusy(t *testing.T) {
	dir := t.TempDir()
	l := openT(t, Options{Dir: dir, CapabilityDecisions: true, QueueSize: 1})
	var wg sync.WaitGroup
	const goroutines, perG = 8, 2000
	for range goroutines {
		wg.Go(func() {
			for range perG {
				l.Decision(DecisionRecord{Time: fixed, EnvelopeID: "x"})
			}
		})
	}
	time.Sleep(5 * time.Millisecond)
	closeT(t, l)
	wg.Wait()
	s := l.Stats()
	if s.Records+s.Dropped != goroutines*perG {
		t.Errorf("Records %d + Dropped %d != %d", s.Records, s.Dropped, goroutines*perG)
	}
	if n := len(readLines(t, decPath(dir))); uint64(n) != s.Records || s.Lines != s.Records {
		t.Errorf("%d lines, Stats %+v", n, s)
	}
}

func TestAfterClose(t *testing.T) {
	dir := t.TempDir()
	l := openT(t, Options{Dir: dir, EnvelopeHistory: true, CapabilityDecisions: true})
	closeT(t, l)
	l.Envelope(EnvelopeRecord{Event: Received, Envelope: []byte(`{}`)})
	l.Decision(DecisionRecord{})
	closeT(t, l)
	if s := l.Stats(); s.Dropped != 2 || s.Records != 0 {
		t.Errorf("Stats = %+v, want 2 dropped", s)
	}
	if lines := readLines(t, envPath(dir)); len(lines) != 0 {
		t.Errorf("lines after Close: %q", lines)
	}
}

// tailer reads a growing file incrementally.
type tailer struct {
	f    *os.File
	seen bytes.Buffer
}

func (tl *tailer) contains(t *testing.T, s string) bool {
	t.Helper()
	if _, err := io.Copy(&tl.seen, tl.f); err != nil {
		t.Fatal(err)
	}
	found := bytes.Contains(tl.seen.Bytes(), []byte(s))
	if i := bytes.LastIndexByte(tl.seen.Bytes(), '\n'); i >= 0 && !found {
		tl.seen.Next(i + 1) // keep only the unfinished line
	}
	return found
}

// waitForLine polls path for s and returns how long it took to appear.
func waitForLine(t *testing.T, tl *tailer, s string, limit time.Duration) time.Duration {
	t.Helper()
	start := time.Now()
	for !tl.contains(t, s) {
		if time.Since(start) > limit {
			t.Fatalf("%s not in the file after %v", s, limit)
		}
		time.Sleep(2 * time.Millisecond)
	}
	return time.Since(start)
}

// TestLinesVisibleWithoutClose: a line reaches the file within about 200 ms,
// both when the log is idle and while it is busy.
func TestLinesVisibleWithoutClose(t *testing.T) {
	dir := t.TempDir()
	l := openT(t, Options{Dir: dir, EnvelopeHistory: true})
	f, err := os.Open(envPath(dir))
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = f.Close() }()
	tl := &tailer{f: f}
	// Generous limits: -race and loaded machines are slow. The idle case
	// takes well under a millisecond.
	const limit = 400 * time.Millisecond

	l.Envelope(EnvelopeRecord{Event: Received, ID: "idle-marker", Envelope: []byte(`{}`)})
	t.Logf("idle: visible after %v", waitForLine(t, tl, `"id":"idle-marker"`, limit))

	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() { // keep the writer busy with a steady stream
		env := []byte(`{"kind":"chat","payload":{"text":"filler"}}`)
		for {
			select {
			case <-stop:
				return
			default:
			}
			for range 20 {
				l.Envelope(EnvelopeRecord{Event: Received, ID: "filler", Envelope: env})
			}
			time.Sleep(50 * time.Microsecond)
		}
	})
	time.Sleep(50 * time.Millisecond)
	l.Envelope(EnvelopeRecord{Event: Received, ID: "busy-marker", Envelope: []byte(`{}`)})
	took := waitForLine(t, tl, `"id":"busy-marker"`, limit)
	close(stop)
	wg.Wait()
	t.Logf("busy: visible after %v", took)
}

// TestWriteErrors: a failing file counts errors, logs once, and the log
// keeps working; the other file is unaffected.
func TestWriteErrors(t *testing.T) {
	dir := t.TempDir()
	var logBuf bytes.Buffer
	l := openT(t, Options{Dir: dir, EnvelopeHistory: true, CapabilityDecisions: true, Logger: slog.New(slog.NewTextHandler(&logBuf, nil))})
	// Break the envelope file under the writer. os.File is safe for this.
	if err := l.w.env.f.Close(); err != nil {
		t.Fatal(err)
	}
	for i := range 5 {
		l.Envelope(EnvelopeRecord{Time: fixed, Event: Received, ID: fmt.Sprint(i), Envelope: []byte(`{}`)})
		l.Decision(DecisionRecord{Time: fixed, EnvelopeID: fmt.Sprint(i)})
		time.Sleep(time.Millisecond) // let the writer flush each one: five failures
	}
	if err := l.Close(); err == nil {
		t.Error("Close: no error for the broken file")
	}
	s := l.Stats()
	// The first failure closes the file and the retry is a second away: the
	// other four envelope lines are dropped without a write.
	if s.Records != 10 || s.Lines != 5 || s.Errors != 1 || s.Lost != 5 {
		t.Errorf("Stats = %+v, want 10 records, 5 lines, 1 error, 5 lost", s)
	}
	if n := strings.Count(logBuf.String(), "cannot write the log"); n != 1 {
		t.Errorf("logged %d write failures, want 1:\n%s", n, logBuf.String())
	}
	if n := len(readLines(t, decPath(dir))); n != 5 {
		t.Errorf("%d decision lines, want 5", n)
	}
}

// TestRecoverAfterPartialWrite: after a failed write that left half a line
// in the file, the file is set aside, and the new one continues the chain
// from the last line known to be whole.
func TestRecoverAfterPartialWrite(t *testing.T) {
	dir := t.TempDir()
	w := testWriter(t, &Options{test: &hooks{noRetryDelay: true}})
	s, err := w.openSink(envPath(dir))
	if err != nil {
		t.Fatal(err)
	}
	w.env = s
	w.write(s, []byte(`{"a":1`))
	w.flush()
	// Simulate a write that failed half way.
	if _, err := s.f.WriteString(`{"half":`); err != nil {
		t.Fatal(err)
	}
	w.fail(s, io.ErrShortWrite, 0)
	w.write(s, []byte(`{"b":2`))
	if err := w.close(); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{`{"b":2}`}, readLines(t, envPath(dir))); diff != "" {
		t.Errorf("lines (-want +got):\n%s", diff)
	}
	rotated, err := findRotated(envPath(dir))
	if err != nil || len(rotated) != 1 {
		t.Fatalf("rotated %v, %v", rotated, err)
	}
	b, _ := os.ReadFile(rotated[0].path)
	first, _, _ := strings.Cut(string(b), "\n")
	if unchain(first) != `{"a":1}` || !strings.HasSuffix(string(b), "\n"+`{"half":`) {
		t.Errorf("set aside:\n%s", b)
	}
	a, _ := auditfmt.ParseLink([]byte(first))
	bl, _ := auditfmt.ParseLink([]byte(readRaw(t, envPath(dir))[0]))
	if !bl.HasPrev || bl.Prev != a.Sum || bl.N != 1 {
		t.Errorf("the new file starts from %x (line %d), want %x", bl.Prev, bl.N, a.Sum)
	}
	if st := w.stats; st.lines.Load() != 2 || st.errors.Load() != 1 {
		t.Errorf("lines %d errors %d", st.lines.Load(), st.errors.Load())
	}
}

// TestLongLines: lines longer than the 64 KiB buffer are written whole.
func TestLongLines(t *testing.T) {
	dir := t.TempDir()
	l := openT(t, Options{Dir: dir, EnvelopeHistory: true})
	big := []byte(`{"text":"` + strings.Repeat("x", 3*bufferSize) + `"}`)
	for i := range 3 {
		l.Envelope(EnvelopeRecord{Time: fixed, Event: Received, ID: fmt.Sprint(i), Envelope: []byte(`{}`)})
		l.Envelope(EnvelopeRecord{Time: fixed, Event: Received, ID: fmt.Sprint(i), Envelope: big})
	}
	closeT(t, l)
	lines := readLines(t, envPath(dir))
	if len(lines) != 6 {
		t.Fatalf("%d lines, want 6", len(lines))
	}
	for i, line := range lines {
		checkCompact(t, line)
		if i%2 == 1 && !strings.Contains(line, string(big)) {
			t.Errorf("line %d lost its envelope", i)
		}
	}
	fi, _ := os.Stat(envPath(dir))
	if s := l.Stats(); s.Lines != 6 || s.Bytes != uint64(fi.Size()) {
		t.Errorf("Stats = %+v, file size %d", s, fi.Size())
	}
}

// TestEveryoneAndAbridged: the compact format writes a delivery to
// everyone else (a presence) as their number on one line, and an abridged
// record's short form with its metadata, so that neither grows with the
// space; the reference format writes a line per recipient and the whole
// envelope, as ever.
func TestEveryoneAndAbridged(t *testing.T) {
	rcpts := make([]Recipient, 600) // past maxGroup: still one compact line
	for i := range rcpts {
		rcpts[i] = Recipient{fmt.Sprintf("p%d", i), "websocket"}
	}
	records := []EnvelopeRecord{
		{Time: fixed, Event: Delivered, ID: "p1", Envelope: []byte(`{"id":"p1","kind":"system/presence"}`),
			Space: "demo", Recipients: rcpts, Everyone: true},
		{Time: fixed, Event: Delivered, ID: "w1", Envelope: []byte(`{"id":"w1","payload":{"participants":[{"id":"x"}]}}`),
			Abridged: []byte(`{"id":"w1","payload":{"participants":[]}}`), AbridgedMeta: []byte(`{"abridged":{"participants":1}}`),
			Space: "demo", Recipients: rcpts[:1]},
		// Everyone without recipients is a delivery to nobody: the usual line.
		{Time: fixed, Event: Delivered, ID: "p2", Envelope: []byte(`{"id":"p2"}`), Space: "demo",
			Participant: "solo", Transport: "http", Everyone: true},
	}
	for _, format := range []string{FormatCompact, FormatReference} {
		dir := t.TempDir()
		l := openT(t, Options{Dir: dir, EnvelopeHistory: true, Format: format})
		for _, r := range records {
			l.Envelope(r)
		}
		closeT(t, l)
		lines := readLines(t, envPath(dir))
		head := `{"timestamp":"` + fixedTS + `","event":"delivered","id":`
		if format == FormatCompact {
			want := []string{
				head + `"p1","envelope":{"id":"p1","kind":"system/presence"},"space_id":"demo","direction":"outbound","everyone":600}`,
				head + `"w1","envelope":{"id":"w1","payload":{"participants":[]}},"space_id":"demo","direction":"outbound","recipients":[{"participant":"p0","transport":"websocket"}],"metadata":{"abridged":{"participants":1}}}`,
				head + `"p2","envelope":{"id":"p2"},"space_id":"demo","direction":"outbound","recipients":[{"participant":"solo","transport":"http"}]}`,
			}
			if diff := cmp.Diff(want, lines); diff != "" {
				t.Errorf("compact lines (-want +got):\n%s", diff)
			}
			continue
		}
		if len(lines) != 602 || !strings.Contains(lines[599], `"participant":"p599"`) ||
			!strings.Contains(lines[600], `"participants":[{"id":"x"}]`) || strings.Contains(lines[600], "abridged") {
			t.Errorf("reference: %d lines, want a line per recipient and the whole welcome; line 600: %s", len(lines), lines[600])
		}
	}
}
