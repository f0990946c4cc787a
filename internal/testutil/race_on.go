//go:build race

package testutil

// Race reports whether the race detector is on: it slows every goroutine
// several times over, which tests with timing budgets take into account.
const Race = true
