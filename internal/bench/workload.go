package bench

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"time"
)

// sending is the skeleton that Fanout and RPC share: start the target, connect a fleet, start any
// helpers, send from the first senders participants on a paced schedule while reporting
// progress, wait for stragglers, stop. The workload supplies the parts that differ, and reads
// its tallies from the fields the run fills in once run has returned.
type sending struct {
	name   string // the workload, for errors: "fanout", "rpc"
	target Target
	say    func(string)
	ids    []string // participant i is ids[i]; the senders are the first senders of them
	clock  *runClock

	senders          int
	every            time.Duration // between two envelopes of one sender; 0: unpaced
	warmup, duration time.Duration
	bufSize          int // initial capacity of a sender's envelope buffer

	// Progress: the line before connecting, the line before sending, the verb of the periodic
	// lines ("sending", "requesting") and the counts they end with.
	connecting, starting, verb string
	counts                     func() string

	handle handler
	// envelope appends sender s's envelope number seq, stamped ns, to dst.
	envelope func(dst []byte, s int, seq, ns int64) []byte
	// before, if set, runs before sender s sends seq and after, if set, after it is written; false
	// from either stops the sender.
	before, after func(ctx context.Context, s int, seq int64, end time.Time) bool
	// helpers, if set, starts goroutines that run beside the senders once the fleet is connected,
	// and returns a function that stops them and may be called more than once.
	helpers func(ctx context.Context) (stop func())
	// settled reports that nothing more is on its way, once the senders have stopped.
	settled func() bool

	// Filled in by run.
	f                  *fleet
	sent               []atomic.Uint64 // per sender, envelopes sent in the measured part
	measureFrom, ended time.Time       // when measuring began and the senders stopped
	cpu                time.Duration   // server side's CPU time from measureFrom until settled; 0 if unknown
}

// run runs the skeleton. On success the fleet is closed, so its readers' tallies can be read.
func (w *sending) run(ctx context.Context) (err error) {
	ep, err := startTarget(ctx, w.target, w.ids)
	if err != nil {
		return fmt.Errorf("%s: %w", w.name, err)
	}
	defer func() {
		if cerr := ep.stop(); cerr != nil && err == nil {
			err = fmt.Errorf("%s: stop %s: %w", w.name, w.target.Name(), cerr)
		}
	}()

	w.f = newFleet(ctx, ep)
	defer w.f.close(ctx)
	w.say(w.connecting)
	if err := w.f.connect(ctx, w.ids, w.handle, w.say); err != nil {
		return fmt.Errorf("%s: %w", w.name, err)
	}
	stopHelpers := func() {}
	if w.helpers != nil {
		stopHelpers = w.helpers(ctx)
	}
	defer stopHelpers()

	w.say(w.starting)
	cpuFrom := w.send(ctx, ep)
	w.say("waiting for stragglers")
	waitUntil(ctx, stragglerWait, w.settled)
	if to, ok := ep.cpu(); ok && cpuFrom > 0 {
		w.cpu = to - cpuFrom
	}
	if ctx.Err() != nil {
		return fmt.Errorf("%s: %w", w.name, context.Cause(ctx))
	}
	stopHelpers()
	w.f.close(ctx) // stops the readers; the deferred close is a no-op
	return nil
}

// send runs the senders from now until warmup+duration, reporting progress every second. It
// returns the server side's CPU time (see Endpoint.cpu) when measuring began, or 0 when unknown.
func (w *sending) send(ctx context.Context, ep *Endpoint) time.Duration {
	w.sent = make([]atomic.Uint64, w.senders)
	begin, from, end := w.clock.begin(w.warmup, w.duration)
	w.measureFrom = from
	var cpuFrom atomic.Int64
	readCPU := func() {
		if t, ok := ep.cpu(); ok {
			cpuFrom.Store(int64(t))
		}
	}
	if w.warmup == 0 {
		readCPU()
	} else {
		// The timer owns its goroutine; a run cut short stops it.
		t := time.AfterFunc(w.warmup, readCPU)
		defer t.Stop()
	}
	var senders sync.WaitGroup
	for s := range w.senders {
		senders.Add(1)
		go func() {
			defer senders.Done()
			w.sender(ctx, s, begin, end)
		}()
	}
	waitGroupReporting(&senders, time.Second, func() {
		if time.Since(from) < time.Second/2 { // still warming up, or just done
			w.say(fmt.Sprintf("%s: %v elapsed, warming up", w.verb, time.Since(begin).Round(time.Second)))
			return
		}
		w.say(fmt.Sprintf("%s: %v measured, %s", w.verb, time.Since(from).Round(time.Second), w.counts()))
	})
	w.ended = time.Now()
	return time.Duration(cpuFrom.Load())
}

// sender sends participant s's envelopes until end. Sender s's first envelope leaves s/senders
// of an interval after the first sender's.
func (w *sending) sender(ctx context.Context, s int, begin, end time.Time) {
	// A context of its own (see fleet.write), with a deadline in case the target stops reading
	// and a write blocks.
	ctx, cancel := context.WithDeadline(ctx, end.Add(stragglerWait))
	defer cancel()
	pace := newPacer(begin.Add(w.every*time.Duration(s)/time.Duration(w.senders)), w.every)
	buf := make([]byte, 0, w.bufSize)
	for seq := int64(0); pace.wait(ctx, end); seq++ {
		if w.before != nil && !w.before(ctx, s, seq, end) {
			return
		}
		ns := w.clock.now()
		buf = w.envelope(buf[:0], s, seq, ns)
		if !w.f.write(ctx, s, buf) {
			return
		}
		if w.clock.measured(ns) {
			w.sent[s].Add(1)
		}
		if w.after != nil && !w.after(ctx, s, seq, end) {
			return
		}
	}
}

// totalSent returns how many envelopes the senders sent in the measured part.
func (w *sending) totalSent() (n uint64) {
	for s := range w.sent {
		n += w.sent[s].Load()
	}
	return n
}

// elapsed returns the measured sending time: at least the duration, since a paced sender stops
// at its last slot before the end.
func (w *sending) elapsed() time.Duration {
	return max(w.ended.Sub(w.measureFrom), w.duration)
}

// failures returns the connections that failed during the run and the first one's error.
func (w *sending) failures() (n uint64, first string) {
	if e := w.f.firstErr(); e != nil {
		first = e.Error()
	}
	return w.f.failures.Load(), first
}
