//go:build unix

package gateway

import "syscall"

// defaultMaxConnections leaves 64 of the process's file descriptors for
// everything but connections (log files, token files, the listener).
func defaultMaxConnections() int {
	var rl syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &rl); err != nil || rl.Cur < 128 {
		return 1024
	}
	return int(min(rl.Cur-64, 65536))
}
