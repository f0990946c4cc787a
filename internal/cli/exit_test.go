package cli

import (
	"errors"
	"os/exec"
	"strings"
	"testing"
)

// TestWrongTokenExitsNonZero: every command that joins a space exits
// non-zero, saying why, when the gateway refuses its token — a bridge that
// exits 0 is not restarted and its failure goes unseen.
func TestWrongTokenExitsNonZero(t *testing.T) {
	g := bridgeGateway(t)
	ws := "ws://" + g.Addr
	for _, args := range [][]string{
		{"bridge", "start", "-g", ws, "-s", "clibridge", "-p", "files", "-t", "wrong-token", "-m", "mew", "--mcp-args", "mcp,calculator"},
		{"agent", "run", "-g", ws, "-s", "clibridge", "--id", "plain", "-t", "wrong-token"},
		{"client", "connect", "-g", ws, "-s", "clibridge", "-t", "wrong-token"},
	} {
		stdout, stderr, err := mewEnv(t, t.TempDir(), cleanEnv(), args...)
		var exit *exec.ExitError
		if !errors.As(err, &exit) || exit.ExitCode() == 0 {
			t.Errorf("mew %s: exit %v, want non-zero\n%s%s", strings.Join(args[:2], " "), err, stdout, stderr)
			continue
		}
		if !strings.Contains(stderr, "mew: ") || !strings.Contains(stderr, "token") {
			t.Errorf("mew %s: the reason is not given:\n%s", strings.Join(args[:2], " "), stderr)
		}
	}
}
