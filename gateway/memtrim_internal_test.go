package gateway

import (
	"testing"
	"time"
)

// TestMemTrimTick steps memTrim through churn and stillness on a made-up
// clock: no trim while joins and leaves go on, below the churn worth it, or
// within the interval; one when a large enough burst has been still long
// enough.
func TestMemTrimTick(t *testing.T) {
	m := newMemTrim()
	t0 := time.Unix(1_700_000_000, 0)
	at := func(d time.Duration) time.Time { return t0.Add(d) }
	burst := func(n int) {
		for range n {
			m.moved()
		}
	}
	steps := []struct {
		name  string
		churn int
		at    time.Duration
		want  bool
	}{
		{"nothing happened", 0, 0, false},
		{"a few joins", 10, time.Second, false},
		{"still, but too few", 0, 5 * time.Second, false},
		{"a burst goes on", 100, 6 * time.Second, false},
		{"still for less than a second", 0, 6500 * time.Millisecond, false},
		{"still for a second", 0, 7 * time.Second, true},
		{"nothing since", 0, 15 * time.Second, false},
		{"another burst", 100, 20 * time.Second, false},
		{"still, within 30 s of the last trim", 0, 25 * time.Second, false},
		{"still, 30 s after the last trim", 0, 37 * time.Second, true},
		{"a reconnecting loop keeps it moving", 1, 80 * time.Second, false},
		{"moving", 1, 81 * time.Second, false},
		{"moving still", 1, 82 * time.Second, false},
	}
	for _, s := range steps {
		burst(s.churn)
		if got := m.tick(at(s.at)); got != s.want {
			t.Fatalf("%s (at %v): trim %v, want %v", s.name, s.at, got, s.want)
		}
	}
}

// TestMemTrimOff: a nil memTrim, as with Options.KeepFreeMemory, ignores
// churn.
func TestMemTrimOff(t *testing.T) {
	var m *memTrim
	m.moved()
}
