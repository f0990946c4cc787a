//go:build !unix

package proc

import (
	"os"
	"os/exec"
)

// Group does nothing: there are no process groups here.
func Group(*exec.Cmd) {}

// Detach does nothing here.
func Detach(*exec.Cmd) {}

// SignalGroup kills pid: there is no gentler signal here.
func SignalGroup(pid int, _ bool) { Terminate(pid, true) }

// Terminate kills pid.
func Terminate(pid int, _ bool) {
	if p, err := os.FindProcess(pid); err == nil && pid > 0 {
		_ = p.Kill()
	}
}

// Alive reports whether a process with this pid exists.
func Alive(pid int) bool {
	p, err := os.FindProcess(pid)
	return pid > 0 && err == nil && p != nil
}

// GroupLeader reports whether pid is alive (there are no groups).
func GroupLeader(pid int) bool { return Alive(pid) }
