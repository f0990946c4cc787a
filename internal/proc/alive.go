package proc

// CountAlive returns how many of pids name processes that exist (Alive).
func CountAlive(pids []int) int {
	n := 0
	for _, pid := range pids {
		if Alive(pid) {
			n++
		}
	}
	return n
}
