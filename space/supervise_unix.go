//go:build unix

package space

import (
	"os/exec"
	"syscall"
)

// newGroup makes cmd the leader of a new process group, so that stopping it
// reaches the programs it starts (npx starts node, a shell starts its
// commands).
func newGroup(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
}

// signalGroup sends SIGTERM, or SIGKILL when kill, to the process group
// led by pid.
func signalGroup(pid int, kill bool) {
	sig := syscall.SIGTERM
	if kill {
		sig = syscall.SIGKILL
	}
	_ = syscall.Kill(-pid, sig)
}

// Alive reports whether a process with this pid exists (one that exited
// counts until its parent reaps it).
func Alive(pid int) bool {
	if pid <= 0 {
		return false
	}
	err := syscall.Kill(pid, 0)
	return err == nil || err == syscall.EPERM
}

// Terminate sends SIGTERM, or SIGKILL when kill, to pid and its process
// group.
func Terminate(pid int, kill bool) {
	if pid <= 0 {
		return
	}
	sig := syscall.SIGTERM
	if kill {
		sig = syscall.SIGKILL
	}
	_ = syscall.Kill(pid, sig)
	_ = syscall.Kill(-pid, sig)
}

// Detach makes cmd start in a session of its own, so that it outlives the
// terminal and the command that started it (`mew space up --detach`).
func Detach(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
}

// GroupLeader reports whether pid leads its own process group, as the
// processes the supervisor starts do.
func GroupLeader(pid int) bool {
	pgid, err := syscall.Getpgid(pid)
	return err == nil && pgid == pid
}
