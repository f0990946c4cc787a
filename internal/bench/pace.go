package bench

import (
	"context"
	"time"
)

// maxLag is how far a pacer lets its schedule fall behind before it gives up the missed slots
// instead of sending them in one burst.
const maxLag = 100 * time.Millisecond

// pacer spaces events interval apart on a fixed schedule: a caller that was slow catches up by
// going again at once, so the average rate holds even when the timer's resolution is coarser
// than interval, but never by more than maxLag of backlog.
type pacer struct {
	next     time.Time
	interval time.Duration // 0: no pacing
	timer    *time.Timer
}

// newPacer returns a pacer whose first event is at first.
func newPacer(first time.Time, interval time.Duration) *pacer {
	t := time.NewTimer(time.Hour)
	t.Stop()
	return &pacer{next: first, interval: interval, timer: t}
}

// wait blocks until the next event is due and returns true, or returns false when ctx is done
// or the event would be at or after end.
func (p *pacer) wait(ctx context.Context, end time.Time) bool {
	if p.interval == 0 {
		return ctx.Err() == nil && time.Now().Before(end)
	}
	if !p.next.Before(end) {
		return false
	}
	if d := time.Until(p.next); d > 0 {
		p.timer.Reset(d)
		select {
		case <-ctx.Done():
			p.timer.Stop()
			return false
		case <-p.timer.C:
		}
	} else if ctx.Err() != nil {
		return false
	}
	p.next = p.next.Add(p.interval)
	if now := time.Now(); now.Sub(p.next) > maxLag {
		p.next = now
	}
	return true
}

// interval returns the time between two events of one of n equal shares of rate events per
// second; 0 for rate 0 (as fast as possible).
func interval(rate float64, n int) time.Duration {
	if rate <= 0 {
		return 0
	}
	return time.Duration(float64(n) * float64(time.Second) / rate)
}
