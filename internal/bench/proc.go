package bench

import (
	"bytes"
	"fmt"
	"os"
	"strconv"
	"time"
)

// clockTicks is the unit of /proc/PID/stat's times, USER_HZ, which is 100 on Linux everywhere.
const clockTicks = 100

// childCPU returns the CPU time (user and system) process pid has used, from /proc/PID/stat, or
// false when it cannot be read (not Linux, or the process is gone).
func childCPU(pid int) (time.Duration, bool) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, false
	}
	return parseStatCPU(b)
}

// parseStatCPU reads utime and stime, the 14th and 15th fields of /proc/PID/stat. The second
// field, the command in parentheses, may hold spaces, so fields are counted after its last ')'.
func parseStatCPU(b []byte) (time.Duration, bool) {
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return 0, false
	}
	f := bytes.Fields(b[i+1:]) // f[0] is field 3, the state
	if len(f) < 13 {
		return 0, false
	}
	utime, err1 := strconv.ParseInt(string(f[11]), 10, 64)
	stime, err2 := strconv.ParseInt(string(f[12]), 10, 64)
	if err1 != nil || err2 != nil {
		return 0, false
	}
	return time.Duration(utime+stime) * time.Second / clockTicks, true
}

// childRSS returns process pid's resident set size in bytes, from VmRSS in /proc/PID/status.
func childRSS(pid int) (uint64, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0, fmt.Errorf("rss: %w", err)
	}
	return parseVmRSS(b)
}

// parseVmRSS finds the line "VmRSS:  1234 kB".
func parseVmRSS(b []byte) (uint64, error) {
	for line := range bytes.Lines(b) {
		rest, ok := bytes.CutPrefix(line, []byte("VmRSS:"))
		if !ok {
			continue
		}
		f := bytes.Fields(rest)
		if len(f) != 2 || string(f[1]) != "kB" {
			break
		}
		kb, err := strconv.ParseUint(string(f[0]), 10, 64)
		if err != nil {
			return 0, fmt.Errorf("rss: %w", err)
		}
		return kb << 10, nil
	}
	return 0, fmt.Errorf("rss: no VmRSS line in %q", bytes.TrimSpace(b))
}
