package bridge

import (
	"bytes"
	"log/slog"
	"strings"
	"testing"
)

// TestLogLinesBounded: a server that writes 20,000 tiny lines to stderr at
// once grows the bridge's log by a bounded amount (the burst, then a
// count of the lines left out), not 50 times its input.
func TestLogLinesBounded(t *testing.T) {
	in := strings.Repeat("x\n", 20_000) // 40 KB
	var out bytes.Buffer
	logLines(strings.NewReader(in), slog.New(slog.NewTextHandler(&out, nil)))
	records := strings.Count(out.String(), "\n")
	if records > stderrBurst+20 {
		t.Errorf("%d log records for 20,000 lines at once, want about the burst of %d", records, stderrBurst)
	}
	if !strings.Contains(out.String(), "MCP server stderr lines not logged") || !strings.Contains(out.String(), "lines=") {
		t.Errorf("the lines left out are not counted:\n%.500s", out.String())
	}
	if out.Len() > 20*len(in) {
		t.Errorf("the log grew by %d bytes for %d bytes of stderr", out.Len(), len(in))
	}
}
