//go:build unix

package bridge

import (
	"os/exec"
	"syscall"
)

// setProcessGroup makes the command the leader of a process group of its
// own.
func setProcessGroup(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
}

// killGroup signals the command's process group: SIGKILL when kill is
// set, else SIGTERM.
func killGroup(cmd *exec.Cmd, kill bool) {
	if cmd.Process == nil {
		return
	}
	sig := syscall.SIGTERM
	if kill {
		sig = syscall.SIGKILL
	}
	_ = syscall.Kill(-cmd.Process.Pid, sig)
}
