package cli

import (
	"os/exec"
	"path/filepath"
	"testing"
	"time"
)

// TestMCPServerExitsWhenStdinCloses: an MCP host that goes away closes the
// server's standard input; the server must exit rather than linger.
func TestMCPServerExitsWhenStdinCloses(t *testing.T) {
	for _, args := range [][]string{
		{"mcp", "filesystem", filepath.Join(t.TempDir(), "files")},
		{"mcp", "calculator"},
	} {
		cmd := exec.Command(mewBinary(t), args...)
		stdin, err := cmd.StdinPipe()
		if err != nil {
			t.Fatal(err)
		}
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		done := make(chan error, 1)
		go func() { done <- cmd.Wait() }()
		// A request first, so the server is surely reading when stdin closes.
		if _, err := stdin.Write([]byte(`{"jsonrpc":"2.0","id":1,"method":"ping"}` + "\n")); err != nil {
			t.Fatal(err)
		}
		_ = stdin.Close()
		select {
		case err := <-done:
			if err != nil {
				t.Errorf("%v exited with %v", args, err)
			}
		case <-time.After(10 * time.Second):
			_ = cmd.Process.Kill()
			<-done
			t.Errorf("%v still running 10 s after its stdin closed", args)
		}
	}
}
