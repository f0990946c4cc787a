//go:build !race

package gateway

// raceEnabled: allocation budgets are checked without -race only.
const raceEnabled = false
