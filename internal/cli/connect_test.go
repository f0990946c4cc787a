package cli

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/mew-protocol/mew/internal/proc"
	"github.com/mew-protocol/mew/space"
)

// interactive is a mew command run with a piped standard input, as a
// user's terminal would be.
type interactive struct {
	c      *exec.Cmd
	stdin  interface{ Write([]byte) (int, error) }
	out    *lineWriter
	exited chan error
}

// startInteractive starts the built binary with args in dir.
func startInteractive(t *testing.T, dir string, env []string, args ...string) *interactive {
	t.Helper()
	c := exec.Command(mewBinary(t), args...)
	c.Dir, c.Env = dir, env
	stdin, err := c.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	it := &interactive{c: c, stdin: stdin, out: &lineWriter{}, exited: make(chan error, 1)}
	c.Stdout, c.Stderr = it.out, it.out
	if err := c.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { it.exited <- c.Wait() }()
	t.Cleanup(func() { _ = c.Process.Kill(); _ = stdin.Close() })
	return it
}

// expect waits until the output holds want; the command exiting first
// fails the test.
func (it *interactive) expect(t *testing.T, want string) {
	t.Helper()
	for deadline := time.Now().Add(60 * time.Second); !strings.Contains(it.out.String(), want); {
		if time.Now().After(deadline) {
			t.Fatalf("never printed %q:\n%s", want, it.out.String())
		}
		select {
		case err := <-it.exited:
			it.exited <- err
			t.Fatalf("exited (%v) before printing %q:\n%s", err, want, it.out.String())
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// wait waits for the command's exit and returns its error.
func (it *interactive) wait(t *testing.T) error {
	t.Helper()
	select {
	case err := <-it.exited:
		return err
	case <-time.After(45 * time.Second):
		t.Fatalf("did not exit:\n%s", it.out.String())
		return nil
	}
}

const connectSpace = `
space: {id: conn-space, default_participant: human}
participants:
  human: {capabilities: [{kind: "*"}]}
  watcher:
    tokens: [watcher-token]
    auto_connect: true
    output_log: ./logs/watcher.jsonl
    capabilities: [{kind: chat}]
`

// TestSpaceConnect: in the directory of a running space, `mew space
// connect` joins it as the default participant with no flags; what is
// typed is sent; /quit leaves with status 0 and the space keeps running.
// -c works on status and down as on up.
func TestSpaceConnect(t *testing.T) {
	dir := t.TempDir()
	env := cleanEnv()
	if _, errOut, err := mewEnv(t, dir, env, "space", "connect"); err == nil || !strings.Contains(errOut, "mew init") {
		t.Errorf("connect without a space: %v\n%s", err, errOut)
	}
	if err := os.WriteFile(filepath.Join(dir, "space.yaml"), []byte(connectSpace), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, errOut, err := mewEnv(t, dir, env, "space", "connect"); err == nil || !strings.Contains(errOut, "not running") || !strings.Contains(errOut, "mew space up") {
		t.Errorf("connect to a stopped space: %v\n%s", err, errOut)
	}
	if out, errOut, err := mewEnv(t, dir, env, "space", "up", "--detach", "-p", "0"); err != nil {
		t.Fatalf("space up: %v\n%s%s", err, out, errOut)
	}
	st, err := space.ReadRunState(dir)
	if err != nil {
		t.Fatal(err)
	}
	reapOnCleanup(t, st)

	it := startInteractive(t, dir, env, "space", "connect")
	it.expect(t, "connected to conn-space as human")
	if _, err := it.stdin.Write([]byte("hello from connect\n")); err != nil {
		t.Fatal(err)
	}
	waitFile(t, filepath.Join(dir, "logs", "watcher.jsonl"), `"text":"hello from connect"`, 1)
	if _, err := it.stdin.Write([]byte("/quit\n")); err != nil {
		t.Fatal(err)
	}
	if err := it.wait(t); err != nil {
		t.Errorf("connect exit: %v\n%s", err, it.out.String())
	}
	if !proc.Alive(st.Gateway) {
		t.Error("leaving stopped the space")
	}

	// -c on status and down, from another directory.
	other := t.TempDir()
	cfgPath := filepath.Join(dir, "space.yaml")
	if out, _, err := mewEnv(t, other, env, "space", "status", "-c", cfgPath); err != nil || !strings.Contains(out, "state:     running") {
		t.Errorf("status -c: %v\n%s", err, out)
	}
	if out, _, err := mewEnv(t, other, env, "space", "down", "-c", cfgPath); err != nil || !strings.Contains(out, "space conn-space stopped") {
		t.Errorf("down -c: %v\n%s", err, out)
	}
	if proc.Alive(st.Gateway) {
		t.Error("down -c left the gateway running")
	}
}

// reapOnCleanup ends the processes of st when the test ends, whatever
// happened to the run.
func reapOnCleanup(t *testing.T, st *space.RunState) {
	t.Cleanup(func() {
		for _, pid := range st.PIDs() {
			proc.Terminate(pid, true)
		}
	})
}

// hangUp closes the terminal of it (SIGHUP), expects a clean exit, and
// checks that none of the processes of st survived it.
func (it *interactive) hangUp(t *testing.T, st *space.RunState) {
	t.Helper()
	if err := it.c.Process.Signal(syscall.SIGHUP); err != nil {
		t.Fatal(err)
	}
	if err := it.wait(t); err != nil {
		t.Errorf("exit after a hang-up: %v\n%s", err, it.out.String())
	}
	for _, pid := range st.PIDs() {
		if pid != it.c.Process.Pid && proc.Alive(pid) {
			t.Errorf("pid %d survived the hang-up", pid)
		}
	}
}

// TestSpaceUpHangup: closing the terminal of `mew space up -i` (SIGHUP)
// stops the space as Ctrl-C does, with status 0.
func TestSpaceUpHangup(t *testing.T) {
	yaml := "space: {id: hup}\nparticipants:\n  human: {capabilities: [{kind: \"*\"}]}\n" +
		"  sleeper: {auto_start: true, command: /bin/sh, args: [-c, \"exec sleep 600\"]}\n" +
		"  calc: {type: mcp-bridge, auto_start: true, mcp_server: {command: mew, args: [mcp, calculator]}}\n"
	dir := spaceDir(t, yaml)
	it := startInteractive(t, dir, cleanEnv(), "space", "up", "-i", "-p", "0")
	it.expect(t, "connected to hup as human")
	st, err := space.ReadRunState(dir)
	if err != nil {
		t.Fatal(err)
	}
	reapOnCleanup(t, st)
	waitConnected(t, st.Port, "hup", "calc")
	it.hangUp(t, st)
	if _, err := os.Stat(filepath.Join(dir, space.RunStateFile)); err == nil {
		t.Error("pids.json survived the hang-up")
	}
}

// TestDemoHangup: closing the terminal of `mew demo` stops every process
// it started and removes its temporary folder.
func TestDemoHangup(t *testing.T) {
	it := startInteractive(t, t.TempDir(), cleanEnv(), "demo")
	it.expect(t, "Ctrl-C or /quit stops the space")
	m := regexp.MustCompile(`starting the demo space in (\S+) `).FindStringSubmatch(it.out.String())
	if m == nil {
		t.Fatalf("no folder in:\n%s", it.out.String())
	}
	tmp := m[1]
	t.Cleanup(func() { _ = os.RemoveAll(tmp) })
	st, err := space.ReadRunState(filepath.Join(tmp, ".mew"))
	if err != nil {
		t.Fatal(err)
	}
	reapOnCleanup(t, st)
	if len(st.Agents) < 4 {
		t.Fatalf("the demo started %v", st.Agents)
	}
	it.hangUp(t, st)
	if _, err := os.Stat(tmp); err == nil {
		t.Errorf("the demo's folder %s survived the hang-up", tmp)
	}
}
