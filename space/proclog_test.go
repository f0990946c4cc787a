package space

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/time/rate"
)

// TestProcLogBounded: a process's log rotates past its size, keeps only
// its rotated files, and past its rate drops output and says how much.
func TestProcLogBounded(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "p.log")
	l := newProcLog(path)
	l.maxSize, l.maxFiles = 1000, 2
	l.lim = rate.NewLimiter(rate.Inf, 0)
	line := []byte(strings.Repeat("x", 99) + "\n")
	for range 100 { // 10,000 bytes: ten files' worth
		if n, err := l.Write(line); n != len(line) || err != nil {
			t.Fatal(n, err)
		}
	}
	for _, name := range []string{"p.log", "p.log.1", "p.log.2"} {
		st, err := os.Stat(filepath.Join(dir, name))
		if err != nil || st.Size() > 1000 {
			t.Errorf("%s: %v, %v", name, st, err)
		}
	}
	if _, err := os.Stat(filepath.Join(dir, "p.log.3")); err == nil {
		t.Error("a third rotated file was kept")
	}

	// The rate: a burst of 300 bytes, then nothing more for a while.
	l.lim = rate.NewLimiter(1, 300)
	for range 10 {
		_, _ = l.Write(line)
	}
	l.lim = rate.NewLimiter(rate.Inf, 0)
	_, _ = l.Write([]byte("after\n"))
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	b, _ := os.ReadFile(path)
	if !strings.Contains(string(b), "[mew: 700 bytes of output left out of this log") || !strings.HasSuffix(string(b), "after\n") {
		t.Errorf("the log after the rate:\n%s", b)
	}
}
