package cli

import (
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/mew-protocol/mew/internal/proc"

	"github.com/mew-protocol/mew/space"
)

// TestDemoScripted runs `mew demo` as a user would, typing into it: a sum
// answered by the assistant with the calculator, a file write proposed by the
// helper and approved, then /quit, which leaves no process behind. The
// environment has no model settings: the demo runs the offline model.
func TestDemoScripted(t *testing.T) {
	dir := t.TempDir()
	it := startInteractive(t, "", cleanEnv(), "demo", "--dir", dir)
	stdin, out := it.stdin, it.out
	var pids []int
	defer func() {
		_ = it.c.Process.Kill()
		for _, pid := range pids {
			proc.Terminate(pid, true)
		}
	}()
	it.expect(t, "Ctrl-C or /quit stops the space")
	if st, err := space.ReadRunState(filepath.Join(dir, ".mew")); err == nil {
		pids = st.PIDs()
	}
	it.expect(t, "offline rule-based model")

	io.WriteString(stdin, "what is 2 plus 3\n")
	it.expect(t, "assistant: 2 + 3 = 5. (offline model)")

	io.WriteString(stdin, "@helper write hello to notes.txt\n")
	it.expect(t, `[#1] helper proposes write_file {"content":"hello","path":"notes.txt"} to files`)
	io.WriteString(stdin, "/approve 1\n")
	it.expect(t, "#1 done: ") // the Go server says "wrote 5 bytes to notes.txt", the npm one "Successfully wrote to notes.txt"
	if data, err := os.ReadFile(filepath.Join(dir, "files", "notes.txt")); err != nil || string(data) != "hello" {
		t.Errorf("notes.txt: %q, %v", data, err)
	}

	io.WriteString(stdin, "/quit\n")
	if err := it.wait(t); err != nil {
		t.Errorf("demo exit: %v\n%s", err, out.String())
	}
	if len(pids) < 5 {
		t.Fatalf("the demo's state named %d processes", len(pids))
	}
	for deadline := time.Now().Add(5 * time.Second); ; {
		alive := proc.CountAlive(pids)
		if alive == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d of the demo's processes survived it", alive)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// TestDemoInterruptedWhileStarting: Ctrl-C while the demo is still
// starting its space is the person leaving, not a failure: mew exits 0,
// says nothing of a cancelled context, and leaves no process behind.
func TestDemoInterruptedWhileStarting(t *testing.T) {
	dir := t.TempDir()
	c := exec.Command(mewBinary(t), "demo", "--dir", dir)
	c.Env = cleanEnv()
	out := &lineWriter{}
	c.Stdout, c.Stderr = out, out
	if err := c.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = c.Process.Kill() }()
	for deadline := time.Now().Add(30 * time.Second); !strings.Contains(out.String(), "starting the demo space"); {
		if time.Now().After(deadline) {
			t.Fatalf("the demo never started:\n%s", out.String())
		}
		time.Sleep(5 * time.Millisecond)
	}
	time.Sleep(150 * time.Millisecond) // the gateway is starting or its participants joining
	st, _ := space.ReadRunState(filepath.Join(dir, ".mew"))
	if err := c.Process.Signal(os.Interrupt); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- c.Wait() }()
	select {
	case err := <-done:
		if err != nil || strings.Contains(out.String(), "context canceled") {
			t.Errorf("Ctrl-C during start-up: %v\n%s", err, out.String())
		}
	case <-time.After(30 * time.Second):
		t.Fatalf("the demo did not stop on Ctrl-C:\n%s", out.String())
	}
	if st != nil {
		for _, pid := range st.PIDs() {
			if pid != 0 && proc.Alive(pid) {
				t.Errorf("pid %d outlived the demo", pid)
				proc.Terminate(pid, true)
			}
		}
	}
}
