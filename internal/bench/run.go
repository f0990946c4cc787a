package bench

import (
	"context"
	"errors"
	"fmt"
	"math"
	"sync"
	"sync/atomic"
	"time"
)

// Load is what a paced workload sends: how fast, how much, for how long. Each workload's
// options say what Rate and Size count for it.
type Load struct {
	// Rate is the total per second over all senders; 0 means as fast as the target allows.
	Rate float64 `json:"rate"`
	// Size is how many bytes of text each message carries.
	Size int `json:"size"`
	// Duration is how long the measured part of the run sends.
	Duration time.Duration `json:"duration_ns"`
	// Warmup is how long the run sends before it starts measuring; what it sends then is not
	// counted.
	Warmup time.Duration `json:"warmup_ns"`
}

// check reports the load's values that are out of range; a size must be at least least.
func (l Load) check(least int) error {
	return errors.Join(checkRate(l.Rate), checkSize(l.Size, least), checkTimes(l.Duration, l.Warmup))
}

// checkRate checks a Rate option.
func checkRate(rate float64) error {
	if rate < 0 || math.IsNaN(rate) || math.IsInf(rate, 0) {
		return fmt.Errorf("rate must be a finite number >= 0 (0 = as fast as possible), got %v", rate)
	}
	return nil
}

// checkSize checks a Size option against its smallest allowed value.
func checkSize(size, least int) error {
	if size < least {
		return fmt.Errorf("size must be at least %d, got %d", least, size)
	}
	return nil
}

// checkTimes checks the Duration and Warmup options.
func checkTimes(duration, warmup time.Duration) error {
	switch {
	case duration <= 0:
		return fmt.Errorf("duration must be positive, got %v", duration)
	case warmup < 0:
		return fmt.Errorf("warmup cannot be negative, got %v", warmup)
	}
	return nil
}

// prefixed returns a progress function that prefixes lines with the target's name; it does
// nothing when progress is nil.
func prefixed(name string, progress func(string)) func(string) {
	return func(line string) {
		if progress != nil {
			progress(name + ": " + line)
		}
	}
}

// waitGroupReporting waits for wg, calling report every period meanwhile.
func waitGroupReporting(wg *sync.WaitGroup, period time.Duration, report func()) {
	done := make(chan struct{})
	go func() {
		wg.Wait()
		close(done)
	}()
	tick := time.NewTicker(period)
	defer tick.Stop()
	for {
		select {
		case <-done:
			return
		case <-tick.C:
			report()
		}
	}
}

// waitUntil polls cond until it holds, limit passes or ctx is done, and reports whether it held.
func waitUntil(ctx context.Context, limit time.Duration, cond func() bool) bool {
	deadline := time.NewTimer(limit)
	defer deadline.Stop()
	tick := time.NewTicker(5 * time.Millisecond)
	defer tick.Stop()
	for !cond() {
		select {
		case <-ctx.Done():
			return false
		case <-deadline.C:
			return cond()
		case <-tick.C:
		}
	}
	return true
}

// sleep waits for d or until ctx is done, and reports whether it slept the whole time.
func sleep(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-t.C:
		return true
	}
}

// runClock is a run's time base, shared by all its clients: a send time is nanoseconds since
// start, and envelopes sent from the end of the warmup on are measured.
type runClock struct {
	start time.Time
	from  atomic.Int64 // ns since start where measuring begins; MaxInt64 until sending starts
}

func newRunClock() *runClock {
	c := &runClock{start: time.Now()}
	c.from.Store(math.MaxInt64)
	return c
}

// now returns the time since start in nanoseconds.
func (c *runClock) now() int64 { return int64(time.Since(c.start)) }

// measured reports whether an envelope sent at ns counts.
func (c *runClock) measured(ns int64) bool { return ns >= c.from.Load() }

// since returns the time elapsed since ns.
func (c *runClock) since(ns int64) time.Duration { return time.Duration(c.now() - ns) }

// begin starts sending now: it returns when sending starts, when measuring starts (after
// warmup) and when sending ends (duration later).
func (c *runClock) begin(warmup, duration time.Duration) (begin, from, end time.Time) {
	begin = time.Now()
	from = begin.Add(warmup)
	c.from.Store(int64(from.Sub(c.start)))
	return begin, from, from.Add(duration)
}
