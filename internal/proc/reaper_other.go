//go:build !linux

package proc

// Subreaper is a no-op where the system has no child subreapers.
func Subreaper() error { return nil }

// KillAdopted kills nothing where the system has no child subreapers.
func KillAdopted(map[int]bool) []int { return nil }
