//go:build race

package hostile

// raceEnabled: the tests run under the race detector.
const raceEnabled = true
