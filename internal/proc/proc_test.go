//go:build unix

package proc

import (
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// TestGroup: a command started with Group leads its group, and signalling
// the group reaches the child it started.
func TestGroup(t *testing.T) {
	pidFile := filepath.Join(t.TempDir(), "child")
	cmd := exec.Command("/bin/sh", "-c", "sleep 60 & echo $! > "+pidFile+"; wait")
	Group(cmd)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() { _ = cmd.Wait(); close(done) }()
	var child int
	for deadline := time.Now().Add(5 * time.Second); child == 0; time.Sleep(10 * time.Millisecond) {
		b, _ := os.ReadFile(pidFile)
		child, _ = strconv.Atoi(strings.TrimSpace(string(b)))
		if time.Now().After(deadline) {
			t.Fatal("no child pid")
		}
	}
	if !GroupLeader(cmd.Process.Pid) || GroupLeader(child) || !Alive(child) {
		t.Fatalf("leader %v, child leader %v, child alive %v", GroupLeader(cmd.Process.Pid), GroupLeader(child), Alive(child))
	}
	SignalGroup(cmd.Process.Pid, false)
	<-done
	for deadline := time.Now().Add(5 * time.Second); Alive(child); time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the child survived its group's SIGTERM")
		}
	}
	if Alive(0) || Alive(-1) {
		t.Error("pids 0 and -1 are alive")
	}
}

// TestCountAlive: a process that runs is counted, one that was waited for
// is not.
func TestCountAlive(t *testing.T) {
	cmd := exec.Command("/bin/sh", "-c", "exit 0")
	if err := cmd.Run(); err != nil {
		t.Fatal(err)
	}
	if n := CountAlive([]int{os.Getpid(), cmd.Process.Pid}); n != 1 {
		t.Errorf("CountAlive(this process, an exited one) = %d, want 1", n)
	}
	if n := CountAlive(nil); n != 0 {
		t.Errorf("CountAlive(nil) = %d", n)
	}
}
