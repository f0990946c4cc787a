//go:build linux

package proc

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
)

// prSetChildSubreaper is PR_SET_CHILD_SUBREAPER of prctl(2).
const prSetChildSubreaper = 36

// Subreaper makes this process the reaper of its descendants that lose
// their parent: a process that puts itself in a session of its own
// (setsid) and whose parent exits is then this process's child, instead of
// init's, so that KillAdopted can end it. Only a process that starts and
// stops others, and nothing else, should ask for it.
func Subreaper() error {
	if _, _, e := syscall.RawSyscall(syscall.SYS_PRCTL, prSetChildSubreaper, 1, 0); e != 0 {
		return e
	}
	return nil
}

// KillAdopted kills (SIGKILL) every child of this process but those in
// keep, and waits for each: after Subreaper, the descendants that escaped
// their process group. It returns the pids it killed.
func KillAdopted(keep map[int]bool) []int {
	var killed []int
	for _, pid := range children() {
		if keep[pid] {
			continue
		}
		if syscall.Kill(pid, syscall.SIGKILL) == nil {
			var ws syscall.WaitStatus
			_, _ = syscall.Wait4(pid, &ws, 0, nil)
			killed = append(killed, pid)
		}
	}
	return killed
}

// children lists this process's children, from every thread's list (a
// child belongs to the thread that forked it).
func children() []int {
	tasks, _ := filepath.Glob("/proc/self/task/*/children")
	var out []int
	for _, t := range tasks {
		b, err := os.ReadFile(t)
		if err != nil {
			continue
		}
		for _, f := range strings.Fields(string(b)) {
			if pid, err := strconv.Atoi(f); err == nil {
				out = append(out, pid)
			}
		}
	}
	return out
}
