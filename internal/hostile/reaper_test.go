package hostile

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/mew-protocol/mew/internal/proc"
	"github.com/mew-protocol/mew/internal/testutil"
)

// mewIn runs `mew args...` (this test binary) in dir to its end, within
// a minute, and returns its output.
func mewIn(t *testing.T, dir string, args ...string) (string, error) {
	t.Helper()
	exe := testutil.Executable(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, exe, args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), envRole+"=mew", "GORACE=atexit_sleep_ms=0")
	out, err := cmd.CombinedOutput()
	return string(out), err
}

// TestHostileDetachedChild (class 11): a bridged MCP server under `mew
// space up` starts a child in a session of its own (setsid), out of the
// process group the bridge stops. `mew space down` stops it all the same:
// on Linux the space's supervisor is a child subreaper, adopts what its
// processes leave behind, and kills it when the space stops.
func TestHostileDetachedChild(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skipf("a subreaper is Linux's; on %s mew space down does not promise to stop a child that left its process group (docs/cli.md)", runtime.GOOS)
	}
	exe := testutil.Executable(t)
	dir := t.TempDir()
	pidFile := filepath.Join(dir, "detached.pid")
	y := `
space: {id: reaper}
participants:
  human: {tokens: [human-token], capabilities: [{kind: "*"}]}
  files:
    type: mcp-bridge
    auto_start: true
    mcp_server:
      command: ` + exe + `
      env: {` + envRole + `: mcp, ` + envDetach + `: ` + pidFile + `, GORACE: atexit_sleep_ms=0}
`
	if err := os.WriteFile(filepath.Join(dir, "space.yaml"), []byte(y), 0o644); err != nil {
		t.Fatal(err)
	}
	if out, err := mewIn(t, dir, "space", "up", "--detach", "-p", "0", "--wait", "0"); err != nil {
		t.Fatalf("space up: %v\n%s", err, out)
	}
	downed := false
	t.Cleanup(func() {
		if !downed {
			_, _ = mewIn(t, dir, "space", "down")
		}
	})
	var pid int
	testutil.WaitFor(t, 30*time.Second, "the detached child's pid", func() bool {
		b, err := os.ReadFile(pidFile)
		pid, _ = strconv.Atoi(strings.TrimSpace(string(b)))
		return err == nil && pid > 0
	})
	t.Cleanup(func() { proc.Terminate(pid, true) })
	if !proc.Alive(pid) {
		t.Fatalf("the detached child %d is not running before down", pid)
	}
	start := time.Now()
	out, err := mewIn(t, dir, "space", "down")
	downed = true
	if err != nil {
		t.Fatalf("space down: %v\n%s", err, out)
	}
	for proc.Alive(pid) {
		if time.Since(start) > 10*time.Second {
			t.Fatalf("the bridged server's detached child %d outlived mew space down by 10 s", pid)
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Logf("the detached child %d was gone %v after mew space down began", pid, time.Since(start))
}
