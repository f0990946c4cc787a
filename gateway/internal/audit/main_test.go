package audit

import (
	"bytes"
	"encoding/json"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/mew-protocol/mew/internal/auditfmt"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// fixed is the time used by most records; its line form is fixedTS.
var fixed = time.Date(2026, 11, 22, 10, 9, 50, 999_123_456, time.UTC)

const fixedTS = "2026-11-22T10:09:50.999Z"

// openT opens a Log for a test and closes it at cleanup.
func openT(t testing.TB, opts Options) *Log {
	t.Helper()
	l, err := Open(opts)
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	t.Cleanup(func() { _ = l.Close() })
	return l
}

// closeT closes l and fails the test on error.
func closeT(t testing.TB, l *Log) {
	t.Helper()
	if err := l.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
}

// readLines returns the lines of the file at path without their chain
// members (see unchain); every line must end in '\n'.
func readLines(t testing.TB, path string) []string {
	t.Helper()
	lines := readRaw(t, path)
	for i, l := range lines {
		lines[i] = unchain(l)
	}
	return lines
}

// readRaw returns the lines of the file at path as they are; every line
// must end in '\n'.
func readRaw(t testing.TB, path string) []string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if len(b) == 0 {
		return nil
	}
	if b[len(b)-1] != '\n' {
		t.Fatalf("%s does not end in a newline", path)
	}
	return strings.Split(string(b[:len(b)-1]), "\n")
}

// unchain returns line without its chain and chain_prev members, or line
// itself when it has no valid chain.
func unchain(line string) string {
	l, err := auditfmt.ParseLink([]byte(line))
	if err != nil {
		return line
	}
	k := strings.LastIndex(line, auditfmt.ChainKey)
	if l.HasPrev {
		k = strings.LastIndex(line[:k], auditfmt.ChainPrevKey)
	}
	return line[:k] + "}"
}

// testWriter returns a writer without sinks for opts, logging to the test's
// log, for tests that drive it directly instead of through a Log.
func testWriter(t testing.TB, opts *Options) *writer {
	t.Helper()
	now := opts.Now
	if now == nil {
		now = time.Now
	}
	return newWriter(opts, slog.New(slog.NewTextHandler(t.Output(), nil)), now, &counters{})
}

func envPath(dir string) string { return filepath.Join(dir, EnvelopeHistoryFile) }
func decPath(dir string) string { return filepath.Join(dir, CapabilityDecisionsFile) }

// topKeys returns the keys of the JSON object line in order, using the
// decoder's token stream, and checks that line is one valid JSON object.
func topKeys(t testing.TB, line string) []string {
	t.Helper()
	dec := json.NewDecoder(strings.NewReader(line))
	if tok, err := dec.Token(); err != nil || tok != json.Delim('{') {
		t.Fatalf("line does not start an object (%v, %v): %s", tok, err, line)
	}
	var keys []string
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			t.Fatalf("key: %v: %s", err, line)
		}
		keys = append(keys, tok.(string))
		var skip json.RawMessage
		if err := dec.Decode(&skip); err != nil {
			t.Fatalf("value of %s: %v: %s", tok, err, line)
		}
	}
	if tok, err := dec.Token(); err != nil || tok != json.Delim('}') {
		t.Fatalf("object not closed (%v, %v): %s", tok, err, line)
	}
	if _, err := dec.Token(); err != io.EOF {
		t.Fatalf("data after the object: %s", line)
	}
	return keys
}

// checkCompact fails unless line is compact JSON.
func checkCompact(t testing.TB, line string) {
	t.Helper()
	var buf bytes.Buffer
	if err := json.Compact(&buf, []byte(line)); err != nil {
		t.Fatalf("invalid JSON: %v: %s", err, line)
	}
	if buf.String() != line {
		t.Fatalf("not compact:\n got %s\nwant %s", line, buf.String())
	}
}
