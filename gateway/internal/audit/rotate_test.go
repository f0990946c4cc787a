package audit

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/mew-protocol/mew/internal/auditfmt"
)

// clock is a fake Options.Now that moves only when told.
type clock struct{ ns atomic.Int64 }

func newClock(t time.Time) *clock { c := &clock{}; c.ns.Store(t.UnixNano()); return c }

func (c *clock) now() time.Time          { return time.Unix(0, c.ns.Load()).UTC() }
func (c *clock) advance(d time.Duration) { c.ns.Add(int64(d)) }
func (c *clock) tick() func() time.Time {
	return func() time.Time { c.advance(time.Second); return c.now() }
}
func envGlob(dir string) ([]string, error) {
	return filepath.Glob(filepath.Join(dir, "envelope-history*.jsonl"))
}

// logFiles returns the envelope log's files in the order of a shell glob,
// which must be the order they were written in: rotated files oldest first,
// then the current file.
func logFiles(t *testing.T, dir string) []string {
	t.Helper()
	files, err := envGlob(dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(files) == 0 || files[len(files)-1] != envPath(dir) {
		t.Fatalf("the current file does not sort last: %q", files)
	}
	return files
}

// ids returns the "id" of each line followed by its participant or the
// participants of its recipients, checking that every line is compact JSON.
func ids(t *testing.T, lines []string) []string {
	t.Helper()
	var out []string
	for _, line := range lines {
		checkCompact(t, line)
		var rec struct {
			ID, Participant string
			Recipients      []struct{ Participant string }
		}
		if err := json.Unmarshal([]byte(line), &rec); err != nil {
			t.Fatal(err)
		}
		id := rec.ID + rec.Participant
		for _, r := range rec.Recipients {
			id += r.Participant
		}
		out = append(out, id)
	}
	return out
}

func fileSize(t *testing.T, path string) int64 {
	t.Helper()
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	return fi.Size()
}

func checkMode(t *testing.T, path string, want fs.FileMode) {
	t.Helper()
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if fi.Mode().Perm() != want {
		t.Errorf("%s: mode %v, want %v", filepath.Base(path), fi.Mode().Perm(), want)
	}
}

// writeRecords writes n records of varying length, every third one a
// delivered record with two recipients (one grouped line), and returns the
// expected lines' ids in order (see ids).
func writeRecords(l *Log, n int) []string {
	var want []string
	for i := range n {
		id := fmt.Sprintf("r%03d", i)
		env := []byte(`{"text":"` + strings.Repeat("x", i%37) + `"}`)
		if i%3 == 0 {
			l.Envelope(EnvelopeRecord{Time: fixed, Event: Delivered, ID: id, Envelope: env,
				Recipients: []Recipient{{"a", "websocket"}, {"b", "virtual"}}})
			want = append(want, id+"ab")
			continue
		}
		l.Envelope(EnvelopeRecord{Time: fixed, Event: Received, ID: id, Envelope: env, Participant: "p"})
		want = append(want, id+"p")
	}
	return want
}

// TestRotation: files are rotated before a line would take them past
// MaxFileSize, never inside a line, and the glob order is the write order.
func TestRotation(t *testing.T) {
	const maxSize = 2000
	dir := filepath.Join(t.TempDir(), "logs")
	c := newClock(fixed)
	l := openT(t, Options{Dir: dir, EnvelopeHistory: true, MaxFileSize: maxSize, MaxFiles: -1, Now: c.tick()})
	want := writeRecords(l, 200)
	closeT(t, l)

	files := logFiles(t, dir)
	var got []string
	for i, p := range files {
		lines := readLines(t, p)
		got = append(got, ids(t, lines)...)
		size := fileSize(t, p)
		if size > maxSize {
			t.Errorf("%s: %d bytes, over %d", filepath.Base(p), size, maxSize)
		}
		// Rotated only when the next line did not fit. In this file it
		// would have had the next line number and no chain_prev.
		if i+1 < len(files) {
			next := readLines(t, files[i+1])[0]
			fit := int64(len(next) - 1 + suffixLen(uint64(len(lines)+1), false))
			if size+fit <= maxSize {
				t.Errorf("%s rotated at %d bytes, though the next line (%d bytes) fit", filepath.Base(p), size, fit)
			}
		}
		checkMode(t, p, 0o600)
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("lines across the files (-want +got):\n%s", diff)
	}
	s := l.Stats()
	if s.Rotations != uint64(len(files)-1) || s.Rotations < 5 || s.Lost != 0 || s.Errors != 0 {
		t.Errorf("Stats = %+v with %d files", s, len(files))
	}
	// The names carry the clock's time, which moved on with every record.
	for _, p := range files[:len(files)-1] {
		mid := strings.TrimSuffix(strings.TrimPrefix(filepath.Base(p), "envelope-history."), ".jsonl")
		if at, err := time.Parse(auditfmt.RotatedLayout, mid); err != nil || !at.After(fixed) || at.After(c.now()) {
			t.Errorf("%s: time %v, %v", filepath.Base(p), at, err)
		}
	}
}

// TestRotationRetention: only the newest MaxFiles rotated files are kept,
// and what is left is the tail of the log without a gap.
func TestRotationRetention(t *testing.T) {
	dir := t.TempDir()
	c := newClock(fixed)
	l := openT(t, Options{Dir: dir, EnvelopeHistory: true, CapabilityDecisions: true, MaxFileSize: 1500, MaxFiles: 3, Now: c.tick()})
	want := writeRecords(l, 300)
	for i := range 100 {
		l.Decision(DecisionRecord{Time: fixed, EnvelopeID: fmt.Sprint(i), Participant: "p", Allowed: true, Kind: "chat"})
	}
	closeT(t, l)

	files := logFiles(t, dir)
	if len(files) != 4 {
		t.Fatalf("%d files, want 3 rotated and the current one: %q", len(files), files)
	}
	var got []string
	for _, p := range files {
		got = append(got, ids(t, readLines(t, p))...)
	}
	if diff := cmp.Diff(want[len(want)-len(got):], got); diff != "" {
		t.Errorf("kept lines are not the tail of the log (-want +got):\n%s", diff)
	}
	decs, err := filepath.Glob(filepath.Join(dir, "capability-decisions*.jsonl"))
	if err != nil || len(decs) != 4 {
		t.Errorf("decision files %q, %v; want 4", decs, err)
	}
	if s := l.Stats(); s.Rotations < 10 || s.Lost != 0 || s.Errors != 0 {
		t.Errorf("Stats = %+v", s)
	}
}

// TestRotationNames: with a clock that stands still the names still grow;
// rotated files from before Open count for retention, and files that only
// look like them are left alone.
func TestRotationNames(t *testing.T) {
	dir := t.TempDir()
	old := auditfmt.RotatedName(envPath(dir), fixed)
	others := []string{"envelope-history.old.jsonl", "envelope-history.2026.jsonl", "envelope-history.jsonl.1"}
	for _, name := range append(others, filepath.Base(old)) {
		if err := os.WriteFile(filepath.Join(dir, name), []byte("{}\n"), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	l := openT(t, Options{Dir: dir, EnvelopeHistory: true, MaxFileSize: 100, MaxFiles: 2, Now: func() time.Time { return fixed }})
	for i := range 4 {
		l.Envelope(EnvelopeRecord{Time: fixed, Event: Received, ID: fmt.Sprint(i), Envelope: []byte(`{"pad":"` + strings.Repeat("y", 40) + `"}`)})
	}
	closeT(t, l)

	// Four lines of over 100 bytes: three rotations, after the old file.
	ms := fixed.Truncate(time.Millisecond)
	want := []string{auditfmt.RotatedName(envPath(dir), ms.Add(2*time.Millisecond)), auditfmt.RotatedName(envPath(dir), ms.Add(3*time.Millisecond)), envPath(dir)}
	got, err := envGlob(dir)
	if err != nil {
		t.Fatal(err)
	}
	got = slices.DeleteFunc(got, func(p string) bool { return slices.Contains(others, filepath.Base(p)) })
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("files (-want +got):\n%s", diff)
	}
	for _, name := range others {
		if b, err := os.ReadFile(filepath.Join(dir, name)); err != nil || string(b) != "{}\n" {
			t.Errorf("%s touched: %q, %v", name, b, err)
		}
	}
	if lines := readLines(t, envPath(dir)); len(ids(t, lines)) != 1 || !strings.Contains(lines[0], `"id":"3"`) {
		t.Errorf("current file: %q", lines)
	}
}

// TestRotationLongLine: a line longer than MaxFileSize is written whole, in
// a file of its own.
func TestRotationLongLine(t *testing.T) {
	dir := t.TempDir()
	c := newClock(fixed)
	l := openT(t, Options{Dir: dir, EnvelopeHistory: true, MaxFileSize: 100, Now: c.tick()})
	big := []byte(`{"text":"` + strings.Repeat("z", 3*bufferSize) + `"}`)
	for i := range 3 {
		l.Envelope(EnvelopeRecord{Time: fixed, Event: Received, ID: fmt.Sprint(i), Envelope: big})
	}
	closeT(t, l)
	files := logFiles(t, dir)
	if len(files) != 3 {
		t.Fatalf("%d files, want 3", len(files))
	}
	for i, p := range files {
		lines := readLines(t, p)
		if len(lines) != 1 || !strings.Contains(lines[0], `"id":"`+fmt.Sprint(i)+`"`) || !strings.Contains(lines[0], string(big)) {
			t.Errorf("%s: %d lines, or not line %d whole", filepath.Base(p), len(lines), i)
		}
	}
}

// TestRotationRenameFails: when the file cannot be renamed it keeps growing,
// nothing is lost, and the failure is logged once.
func TestRotationRenameFails(t *testing.T) {
	dir := t.TempDir()
	var logBuf syncBuffer
	renames := atomic.Int32{}
	l := openT(t, Options{Dir: dir, EnvelopeHistory: true, MaxFileSize: 200, Logger: slog.New(slog.NewTextHandler(&logBuf, nil)),
		test: &hooks{noRetryDelay: true, rename: func(string, string) error { renames.Add(1); return fs.ErrPermission }}})
	want := writeRecords(l, 30)
	closeT(t, l)
	if diff := cmp.Diff(want, ids(t, readLines(t, envPath(dir)))); diff != "" {
		t.Errorf("lines (-want +got):\n%s", diff)
	}
	s := l.Stats()
	if s.Lost != 0 || s.Rotations != 0 || s.Errors == 0 || s.Errors != uint64(renames.Load()) {
		t.Errorf("Stats = %+v after %d renames", s, renames.Load())
	}
	if n := strings.Count(logBuf.String(), "cannot rotate"); n != 1 {
		t.Errorf("logged %d times, want once:\n%s", n, logBuf.String())
	}
}

// syncBuffer is a bytes.Buffer for a logger written by the writer goroutine
// and read by the test.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// devFull opens /dev/full, where every write fails with ENOSPC.
func devFull(t *testing.T) func() (*os.File, error) {
	t.Helper()
	if _, err := os.Stat("/dev/full"); err != nil {
		t.Skipf("no /dev/full: %v", err)
	}
	return func() (*os.File, error) { return os.OpenFile("/dev/full", os.O_RDWR|os.O_APPEND, 0) }
}

// waitFor polls cond until it holds, failing the test after a generous
// limit.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(time.Millisecond)
	}
}

// TestDiskFull: with the envelope file on a full disk the callers are not
// held up, every line is counted as lost, the decisions file is unaffected,
// and once there is room the log is written again.
func TestDiskFull(t *testing.T) {
	full := devFull(t)
	dir := t.TempDir()
	var diskFull atomic.Bool
	diskFull.Store(true)
	open := func(path string) (*os.File, error) {
		if path == envPath(dir) && diskFull.Load() {
			return full()
		}
		return openLogFile(path)
	}
	var logBuf syncBuffer
	l := openT(t, Options{Dir: dir, EnvelopeHistory: true, CapabilityDecisions: true, QueueSize: 1,
		Logger: slog.New(slog.NewTextHandler(&logBuf, nil)), test: &hooks{open: open, noRetryDelay: true}})

	const goroutines, perG = 4, 500
	var wg sync.WaitGroup
	for g := range goroutines {
		wg.Go(func() {
			for i := range perG {
				id := fmt.Sprintf("g%d-%d", g, i)
				_ = l.WaitRoom(context.Background()) // as a gateway's reader does
				l.Envelope(EnvelopeRecord{Time: fixed, Event: Received, ID: id, Envelope: []byte(`{}`)})
				l.Decision(DecisionRecord{Time: fixed, EnvelopeID: id})
			}
		})
	}
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(20 * time.Second):
		t.Fatal("callers blocked by the full disk")
	}
	const n = goroutines * perG
	waitFor(t, "the writer to process the records", func() bool { return l.Stats().Records == 2*n })
	// The last lines sit in the buffer until the writer, now idle, flushes.
	// and the last decisions sit in theirs until it flushes that file too.
	waitFor(t, "the last lines to be lost and the decisions written", func() bool {
		s := l.Stats()
		return s.Lost == n && s.Lines >= n
	})
	s := l.Stats()
	if s.Lines != n || s.Errors == 0 {
		t.Errorf("Stats = %+v, want %d lines (the decisions)", s, n)
	}
	if got := strings.Count(logBuf.String(), "cannot write the log"); got != 1 {
		t.Errorf("logged %d failures, want 1:\n%s", got, logBuf.String())
	}
	if !strings.Contains(logBuf.String(), "no space left on device") {
		t.Errorf("ENOSPC not logged:\n%s", logBuf.String())
	}

	diskFull.Store(false)
	for i := range 10 {
		_ = l.WaitRoom(context.Background())
		l.Envelope(EnvelopeRecord{Time: fixed, Event: Received, ID: fmt.Sprint("after-", i), Envelope: []byte(`{}`)})
	}
	waitFor(t, "the writer to write again", func() bool { return l.Stats().Lines == n+10 })
	closeT(t, l)
	lines := readLines(t, envPath(dir))
	if len(lines) != 10 || !strings.Contains(lines[0], `"id":"after-0"`) {
		t.Errorf("after the disk has room: %d lines: %q", len(lines), lines)
	}
	if s := l.Stats(); s.Lost != n || s.Lines != n+10 {
		t.Errorf("Stats = %+v", s)
	}
	if got := strings.Count(logBuf.String(), "writing the log again"); got != 1 {
		t.Errorf("logged %d recoveries, want 1:\n%s", got, logBuf.String())
	}
	if fi, err := os.Stat("/dev/full"); err != nil || fi.Mode().Perm() != 0o666 {
		t.Errorf("/dev/full changed: %v, %v", fi.Mode(), err)
	}
}

// TestFailureReports: a file that keeps failing is logged at once, then at
// most once a minute with what was lost meanwhile, and is re-opened only
// once per retry interval rather than for every line.
func TestFailureReports(t *testing.T) {
	full := devFull(t)
	c := newClock(fixed)
	var logBuf syncBuffer
	opens := 0
	opts := &Options{Now: c.now, test: &hooks{open: func(string) (*os.File, error) { opens++; return full() }}}
	w := newWriter(opts, slog.New(slog.NewTextHandler(&logBuf, nil)), c.now, &counters{})
	s, err := w.openSink(envPath(t.TempDir()))
	if err != nil {
		t.Fatal(err)
	}
	w.env = s
	line := []byte("{\"a\":1}\n")
	// 121 seconds, a line every 100 ms: 1210 lines.
	for range 1210 {
		w.write(s, line)
		w.flush()
		c.advance(100 * time.Millisecond)
	}
	if err := w.close(); err == nil || !errors.Is(err, syscall.ENOSPC) {
		t.Errorf("close: %v, want the ENOSPC", err)
	}
	if got := w.stats.lost.Load(); got != 1210 {
		t.Errorf("lost %d lines, want 1210", got)
	}
	if opens < 120 || opens > 123 {
		t.Errorf("%d opens, want about one a second (121)", opens)
	}
	msgs := strings.Count(logBuf.String(), "cannot write the log")
	if msgs != 3 || !strings.Contains(logBuf.String(), "lost_lines=600") {
		t.Errorf("%d messages, want 3 (at 0 s, 60 s and 120 s), the later ones with 600 lost lines:\n%s", msgs, logBuf.String())
	}
}

// TestModes: files are created 0600, and existing files with a looser mode
// are tightened on Open.
func TestModes(t *testing.T) {
	dir := t.TempDir()
	for _, p := range []string{envPath(dir), decPath(dir)} {
		if err := os.WriteFile(p, []byte("{}\n"), 0o600); err != nil {
			t.Fatal(err)
		}
		if err := os.Chmod(p, 0o664); err != nil {
			t.Fatal(err)
		}
	}
	l := openT(t, Options{Dir: dir, EnvelopeHistory: true, CapabilityDecisions: true})
	closeT(t, l)
	checkMode(t, envPath(dir), 0o600)
	checkMode(t, decPath(dir), 0o600)
}

func TestLimitDefaults(t *testing.T) {
	for _, tc := range []struct {
		size, wantSize int64
		files, want    int
	}{
		{0, DefaultMaxFileSize, 0, DefaultMaxFiles},
		{-1, 0, -1, -1},
		{4096, 4096, 3, 3},
	} {
		w := newWriter(&Options{MaxFileSize: tc.size, MaxFiles: tc.files}, slog.New(slog.DiscardHandler), time.Now, &counters{})
		if w.cfg.maxSize != tc.wantSize || w.cfg.maxFiles != tc.want || w.cfg.retry != retryInterval {
			t.Errorf("MaxFileSize %d, MaxFiles %d: %+v", tc.size, tc.files, w.cfg)
		}
	}
}
