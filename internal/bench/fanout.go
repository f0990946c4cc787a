package bench

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"
)

const (
	// stragglerWait is how long a run waits, after its senders stop, for envelopes still on
	// their way.
	stragglerWait = 2 * time.Second
	// unpacedWindow is how many envelopes an unpaced sender may have in flight: sent, but not yet
	// seen come back to itself.
	unpacedWindow = 64
)

// FanoutOptions configures Fanout.
type FanoutOptions struct {
	// Participants is how many participants join the space (N), ids bench-0 ... bench-(N-1).
	Participants int `json:"participants"`
	// Senders is how many of them send (K): the first K.
	Senders int `json:"senders"`
	// Rate is the total envelopes per second over all senders. 0 sends as fast as the target
	// delivers: each sender keeps at most 64 envelopes in flight (sent but not yet delivered
	// back to itself), so that latency measures the target rather than a queue of its own making.
	Rate float64 `json:"rate"`
	// Size is the length of each chat's text in bytes.
	Size int `json:"size"`
	// Duration is how long the measured part of the run sends.
	Duration time.Duration `json:"duration_ns"`
	// Warmup is how long the run sends before it starts measuring; its envelopes are not counted.
	Warmup time.Duration `json:"warmup_ns"`
}

// Validate reports the first option that is out of range.
func (o FanoutOptions) Validate() error {
	switch {
	case o.Participants < 1:
		return fmt.Errorf("participants must be at least 1, got %d", o.Participants)
	case o.Senders < 1:
		return fmt.Errorf("senders must be at least 1, got %d", o.Senders)
	case o.Senders > o.Participants:
		return fmt.Errorf("senders (%d) cannot exceed participants (%d)", o.Senders, o.Participants)
	}
	return errors.Join(checkRate(o.Rate), checkSize(o.Size, 1), checkTimes(o.Duration, o.Warmup))
}

// FanoutResult is what Fanout measured. Counts and latencies cover the measured part of the run
// only (after the warmup).
type FanoutResult struct {
	Target string `json:"target"`
	// Sent is how many envelopes the senders sent.
	Sent uint64 `json:"sent"`
	// Expected is Sent × Participants: every participant, the sender included, should receive each.
	Expected uint64 `json:"expected"`
	// Delivered is how many deliveries the participants counted.
	Delivered uint64 `json:"delivered"`
	// Loss is 1 − Delivered/Expected, at least 0.
	Loss float64 `json:"loss"`
	// SendRate is Sent per second of Elapsed: the rate the senders achieved.
	SendRate float64 `json:"send_rate"`
	// DeliveriesPerSec is Delivered per second from the start of the measurement to the last
	// delivery (Elapsed, or a little more for the envelopes still on their way when it ended).
	DeliveriesPerSec float64 `json:"deliveries_per_sec"`
	// P50 ... Max are latencies from send to receipt over all deliveries.
	P50 time.Duration `json:"p50_ns"`
	P90 time.Duration `json:"p90_ns"`
	P99 time.Duration `json:"p99_ns"`
	Max time.Duration `json:"max_ns"`
	// Elapsed is the measured sending time.
	Elapsed time.Duration `json:"elapsed_ns"`
	// OutOfOrder counts deliveries that came after a later envelope of the same sender.
	OutOfOrder uint64 `json:"out_of_order"`
	// Errors counts connections that failed during the run and system/error answers to the
	// run's envelopes.
	Errors uint64 `json:"errors"`
	// FirstError describes the first failed connection, if any.
	FirstError string `json:"first_error,omitempty"`
}

// fanoutReceiver is one participant's tally. Its reader goroutine owns it; the atomics are also
// read while the run goes on.
type fanoutReceiver struct {
	delivered  atomic.Uint64
	errors     atomic.Uint64
	outOfOrder uint64
	last       []int64 // per sender, the last sequence number received
	lastAt     int64   // when the last measured delivery came, in ns since the run's start
	hist       Histogram

	// For a sender: the sequence number of its latest envelope that came back to it, and a
	// wake-up for an unpaced sender waiting for room in its window.
	echoed atomic.Int64
	echo   chan struct{}
}

// Fanout measures how fast t delivers chat envelopes to a space: o.Participants join, o.Senders
// of them send o.Rate envelopes per second in total, spread evenly over senders and time, and
// every participant records every delivery and its latency. After Warmup+Duration the senders
// stop and the run waits up to 2 s for envelopes still on their way. progress, if not nil,
// receives lines about the run's phases, from the calling goroutine.
func Fanout(ctx context.Context, t Target, o FanoutOptions, progress func(string)) (res FanoutResult, err error) {
	if err := o.Validate(); err != nil {
		return FanoutResult{}, fmt.Errorf("fanout: %w", err)
	}
	if t == nil {
		return FanoutResult{}, errors.New("fanout: no target")
	}
	res.Target = t.Name()
	say := prefixed(t.Name(), progress)
	ids := participantIDs("bench", o.Participants)
	ep, err := startTarget(ctx, t, ids)
	if err != nil {
		return res, fmt.Errorf("fanout: %w", err)
	}
	defer func() {
		if cerr := ep.stop(); cerr != nil && err == nil {
			err = fmt.Errorf("fanout: stop %s: %w", t.Name(), cerr)
		}
	}()

	marker := "b" + runNonce() + "-"
	mark := []byte(marker)
	clock := newRunClock()
	recv := make([]fanoutReceiver, o.Participants)
	for i := range recv {
		recv[i].last = make([]int64, o.Senders)
		for s := range recv[i].last {
			recv[i].last[s] = -1
		}
		recv[i].echoed.Store(-1)
		recv[i].echo = make(chan struct{}, 1)
	}
	handle := func(i int, msg []byte) {
		var n [3]int64 // sender, seq, ns
		if !findNums(msg, mark, n[:]) {
			return
		}
		r := &recv[i]
		if containsErr(msg) {
			r.errors.Add(1)
			return
		}
		if s := n[0]; s < int64(len(r.last)) {
			if n[1] <= r.last[s] {
				r.outOfOrder++
			} else {
				r.last[s] = n[1]
			}
			if s == int64(i) {
				r.echoed.Store(n[1])
				select {
				case r.echo <- struct{}{}:
				default:
				}
			}
		}
		if !clock.measured(n[2]) {
			return
		}
		r.lastAt = clock.now()
		r.hist.Record(time.Duration(r.lastAt - n[2]))
		r.delivered.Add(1)
	}

	f := newFleet(ctx, ep)
	defer f.close(ctx)
	say(fmt.Sprintf("connecting %d participants", o.Participants))
	if err := f.connect(ctx, ids, handle, say); err != nil {
		return res, fmt.Errorf("fanout: %w", err)
	}

	// Sending. Sender s's first envelope leaves s/K of an interval after the others'.
	every := interval(o.Rate, o.Senders)
	if every == 0 {
		say(fmt.Sprintf("sending as fast as delivered from %d senders for %v (+%v warmup)", o.Senders, o.Duration, o.Warmup))
	} else {
		say(fmt.Sprintf("sending %g/s from %d senders for %v (+%v warmup)", o.Rate, o.Senders, o.Duration, o.Warmup))
	}
	begin, measureFrom, end := clock.begin(o.Warmup, o.Duration)
	pad := padding(o.Size)
	var sent atomic.Uint64
	var senders sync.WaitGroup
	for s := range o.Senders {
		senders.Add(1)
		go func() {
			defer senders.Done()
			// A context of its own (see fleet.write), with a deadline in case the target
			// stops reading and a write blocks.
			ctx, cancel := context.WithDeadline(ctx, end.Add(stragglerWait))
			defer cancel()
			p := newPacer(begin.Add(every*time.Duration(s)/time.Duration(o.Senders)), every)
			buf := make([]byte, 0, 128+len(marker)+o.Size)
			for seq := int64(0); p.wait(ctx, end); seq++ {
				if every == 0 && !awaitWindow(ctx, &recv[s], seq, end) {
					return
				}
				ns := clock.now()
				buf = append(buf[:0], `{"protocol":"mew/v0.4","id":"`...)
				buf = appendID(buf, marker, int64(s), seq, ns)
				buf = append(buf, `","kind":"chat","payload":{"text":"`...)
				buf = append(buf, pad...)
				buf = append(buf, `"}}`...)
				if !f.write(ctx, s, buf) {
					return
				}
				if clock.measured(ns) {
					sent.Add(1)
				}
			}
		}()
	}
	delivered := func() (n uint64) {
		for i := range recv {
			n += recv[i].delivered.Load()
		}
		return n
	}
	waitGroupReporting(&senders, time.Second, func() {
		if time.Since(measureFrom) < time.Second/2 { // still warming up, or just done
			say(fmt.Sprintf("sending: %v elapsed, warming up", time.Since(begin).Round(time.Second)))
			return
		}
		say(fmt.Sprintf("sending: %v measured, %d sent, %d delivered",
			time.Since(measureFrom).Round(time.Second), sent.Load(), delivered()))
	})
	stopped := time.Now()

	res.Sent = sent.Load()
	res.Expected = res.Sent * uint64(o.Participants)
	say("waiting for stragglers")
	waitUntil(ctx, stragglerWait, func() bool {
		return delivered() >= res.Expected || f.failures.Load() >= uint64(o.Participants)
	})
	if ctx.Err() != nil {
		return res, fmt.Errorf("fanout: %w", context.Cause(ctx))
	}
	f.close(ctx) // stops the readers, so their tallies can be read; the deferred close is a no-op

	var h Histogram
	var lastAt int64
	for i := range recv {
		r := &recv[i]
		h.Merge(&r.hist)
		lastAt = max(lastAt, r.lastAt)
		res.Delivered += r.delivered.Load()
		res.OutOfOrder += r.outOfOrder
		res.Errors += r.errors.Load()
	}
	res.Errors += f.failures.Load()
	if e := f.firstErr(); e != nil {
		res.FirstError = e.Error()
	}
	res.Elapsed = max(stopped.Sub(measureFrom), o.Duration) // a paced sender stops at its last slot before the end
	if res.Expected > 0 {
		res.Loss = max(1-float64(res.Delivered)/float64(res.Expected), 0)
	}
	if secs := res.Elapsed.Seconds(); secs > 0 {
		res.SendRate = float64(res.Sent) / secs
	}
	window := max(clock.start.Add(time.Duration(lastAt)).Sub(measureFrom), res.Elapsed)
	if secs := window.Seconds(); secs > 0 {
		res.DeliveriesPerSec = float64(res.Delivered) / secs
	}
	res.P50, res.P90, res.P99, res.Max = h.Percentile(0.50), h.Percentile(0.90), h.Percentile(0.99), h.Max()
	return res, nil
}

// awaitWindow waits until sender r has room in its window to send envelope seq. It returns false
// when ctx is done or the run ends first.
func awaitWindow(ctx context.Context, r *fanoutReceiver, seq int64, end time.Time) bool {
	if seq-r.echoed.Load() <= unpacedWindow {
		return true
	}
	timeout := time.NewTimer(time.Until(end))
	defer timeout.Stop()
	for seq-r.echoed.Load() > unpacedWindow {
		select {
		case <-r.echo:
		case <-timeout.C:
			return false
		case <-ctx.Done():
			return false
		}
	}
	return true
}
