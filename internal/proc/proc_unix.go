//go:build unix

package proc

import (
	"os/exec"
	"syscall"
)

// Group makes cmd, once started, the leader of a process group of its own.
func Group(cmd *exec.Cmd) {
	if cmd.SysProcAttr == nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{}
	}
	cmd.SysProcAttr.Setpgid = true
}

// Detach makes cmd start in a session of its own, so that it outlives the
// terminal and the program that started it.
func Detach(cmd *exec.Cmd) {
	if cmd.SysProcAttr == nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{}
	}
	cmd.SysProcAttr.Setsid = true
}

// SignalGroup sends SIGTERM, or SIGKILL when kill, to the process group
// led by pid.
func SignalGroup(pid int, kill bool) {
	if pid > 0 {
		_ = syscall.Kill(-pid, signal(kill))
	}
}

// Terminate sends SIGTERM, or SIGKILL when kill, to pid and to the group
// it leads.
func Terminate(pid int, kill bool) {
	if pid > 0 {
		_ = syscall.Kill(pid, signal(kill))
		_ = syscall.Kill(-pid, signal(kill))
	}
}

func signal(kill bool) syscall.Signal {
	if kill {
		return syscall.SIGKILL
	}
	return syscall.SIGTERM
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

// GroupLeader reports whether pid leads its own process group, as the
// processes started with Group do.
func GroupLeader(pid int) bool {
	pgid, err := syscall.Getpgid(pid)
	return err == nil && pgid == pid
}
