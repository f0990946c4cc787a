package gateway

import (
	"runtime/debug"
	rtmetrics "runtime/metrics"
	"sync/atomic"
	"time"
)

// memTrim gives the operating system back the memory a burst of joins or
// leaves left free, once the membership has been still for a moment.
//
// Why: every join sends the newcomer a welcome that lists everyone, so
// joining N participants makes garbage in proportion to N², and the Go
// runtime keeps the heap it grew for it (about twice the live heap, and the
// pages it touched) long after the burst. An idle gateway then holds twice
// the memory its connections need (38 KB per idle connection against 18 KB
// after a trim, measured with `mew bench idle --spawn`). A trim is a full
// collection and a release of the free pages: a few milliseconds for a
// heap of tens of megabytes, done at most once per interval and only after
// enough churn, never while joins and leaves go on.
//
// The watchdog goroutine calls tick; attach and detach count churn.
type memTrim struct {
	churn atomic.Uint64 // joins and leaves

	// Owned by the watchdog.
	seen      uint64    // churn at the previous tick
	stillFrom time.Time // when churn last moved
	trimmedAt uint64    // churn at the last trim
	last      time.Time // the last trim

	quiet    time.Duration // how long the membership must be still
	every    time.Duration // the least time between trims
	minChurn uint64        // joins and leaves since the last trim worth a trim
	free     func()        // debug.FreeOSMemory; tests count the calls
}

const (
	trimQuiet    = time.Second
	trimEvery    = 30 * time.Second
	trimMinChurn = 64
)

func newMemTrim() *memTrim {
	return &memTrim{quiet: trimQuiet, every: trimEvery, minChurn: trimMinChurn, free: debug.FreeOSMemory}
}

// moved counts a join or a leave; a nil memTrim (trims off) ignores it.
func (m *memTrim) moved() {
	if m != nil {
		m.churn.Add(1)
	}
}

// tick reports whether to trim now: the membership has changed enough since
// the last trim and has then been still for m.quiet. Saying yes, it counts
// the trim as done.
func (m *memTrim) tick(now time.Time) bool {
	c := m.churn.Load()
	if c != m.seen {
		m.seen, m.stillFrom = c, now
		return false
	}
	if c-m.trimmedAt < m.minChurn || now.Sub(m.stillFrom) < m.quiet || (!m.last.IsZero() && now.Sub(m.last) < m.every) {
		return false
	}
	m.trimmedAt, m.last = c, now
	return true
}

// releasedBytes is the heap memory the runtime has given back to the
// operating system, for the log line of a trim.
func releasedBytes() uint64 {
	s := []rtmetrics.Sample{{Name: "/memory/classes/heap/released:bytes"}}
	rtmetrics.Read(s)
	if s[0].Value.Kind() != rtmetrics.KindUint64 {
		return 0
	}
	return s[0].Value.Uint64()
}
