//go:build !unix

package space

import (
	"os"
	"os/exec"
)

// newGroup does nothing: process groups are a Unix notion.
func newGroup(*exec.Cmd) {}

// signalGroup kills the process (there is no gentler signal here).
func signalGroup(pid int, _ bool) { Terminate(pid, true) }

// Alive reports whether a process with this pid exists.
func Alive(pid int) bool {
	p, err := os.FindProcess(pid)
	return pid > 0 && err == nil && p != nil
}

// Terminate kills pid.
func Terminate(pid int, _ bool) {
	if p, err := os.FindProcess(pid); err == nil {
		_ = p.Kill()
	}
}

// Detach does nothing here.
func Detach(*exec.Cmd) {}

// GroupLeader reports whether pid is alive (there are no process groups).
func GroupLeader(pid int) bool { return Alive(pid) }
