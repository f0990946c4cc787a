package bench

import (
	"context"
	"errors"
	"fmt"
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
	// Load is what they send: Rate envelopes per second over all senders, or, at 0, as fast as
	// the target delivers (each sender keeps at most 64 envelopes in flight, sent but not yet
	// delivered back to itself, so that latency measures the target rather than a queue of its
	// own making); Size bytes of chat text each.
	Load
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
	return o.Load.check(1)
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
	// Nodes is how many gateway nodes the participants were spread over (Endpoint.URLs), 1 for
	// a single server.
	Nodes int `json:"nodes"`
	// CrossP50 and CrossP99 are the latencies of the deliveries whose sender and receiver were
	// on different nodes (participant i on node i mod Nodes); 0 with one node.
	CrossP50 time.Duration `json:"cross_p50_ns,omitempty"`
	CrossP99 time.Duration `json:"cross_p99_ns,omitempty"`
	// Elapsed is the measured sending time.
	Elapsed time.Duration `json:"elapsed_ns"`
	// CPUPerDelivery is the process's CPU time (user and system) from the start of the
	// measurement until the last delivery, divided by Delivered; 0 when unknown. For a target
	// whose server runs in this process it covers clients and server together (the clients' share
	// is the same for every target, so a difference between targets is the servers'); for a
	// ChildTarget it is the server's alone, read from /proc.
	CPUPerDelivery time.Duration `json:"cpu_per_delivery_ns"`
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
	cross      Histogram // the deliveries from a sender on another node

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
func Fanout(ctx context.Context, t Target, o FanoutOptions, progress func(string)) (FanoutResult, error) {
	if err := o.Validate(); err != nil {
		return FanoutResult{}, fmt.Errorf("fanout: %w", err)
	}
	if t == nil {
		return FanoutResult{}, errors.New("fanout: no target")
	}
	r := newFanoutRun(t, o, progress)
	err := r.run(ctx)
	res := FanoutResult{Target: t.Name()}
	if err != nil {
		return res, err
	}
	r.tally(&res)
	return res, nil
}

// fanoutRun is one Fanout run: the shared skeleton and every participant's tally.
type fanoutRun struct {
	sending
	o      FanoutOptions
	marker string // the run's id prefix, "b<nonce>-"
	mark   []byte
	recv   []fanoutReceiver
}

func newFanoutRun(t Target, o FanoutOptions, progress func(string)) *fanoutRun {
	r := &fanoutRun{o: o, marker: "b" + runNonce() + "-", recv: make([]fanoutReceiver, o.Participants)}
	r.mark = []byte(r.marker)
	for i := range r.recv {
		rc := &r.recv[i]
		rc.last = make([]int64, o.Senders)
		for s := range rc.last {
			rc.last[s] = -1
		}
		rc.echoed.Store(-1)
		rc.echo = make(chan struct{}, 1)
	}
	every := interval(o.Rate, o.Senders)
	starting := fmt.Sprintf("sending %g/s from %d senders for %v (+%v warmup)", o.Rate, o.Senders, o.Duration, o.Warmup)
	if every == 0 {
		starting = fmt.Sprintf("sending as fast as delivered from %d senders for %v (+%v warmup)", o.Senders, o.Duration, o.Warmup)
	}
	r.sending = sending{
		name:       "fanout",
		target:     t,
		say:        prefixed(t.Name(), progress),
		ids:        participantIDs("bench", o.Participants),
		clock:      newRunClock(),
		senders:    o.Senders,
		every:      every,
		warmup:     o.Warmup,
		duration:   o.Duration,
		bufSize:    128 + len(r.marker) + o.Size,
		connecting: fmt.Sprintf("connecting %d participants", o.Participants),
		starting:   starting,
		verb:       "sending",
		counts:     func() string { return fmt.Sprintf("%d sent, %d delivered", r.totalSent(), r.delivered()) },
		handle:     r.handle,
		envelope:   r.chat(padding(o.Size)),
		settled: func() bool {
			return r.delivered() >= r.totalSent()*uint64(o.Participants) || r.f.failures.Load() >= uint64(o.Participants)
		},
	}
	if every == 0 {
		// Unpaced: a sender waits for room in its window of envelopes in flight.
		r.before = func(ctx context.Context, s int, seq int64, end time.Time) bool {
			return awaitWindow(ctx, &r.recv[s], seq, end)
		}
	}
	return r
}

// chat returns the envelope function: a chat whose text is pad, its id naming sender, sequence
// number and send time.
func (r *fanoutRun) chat(pad string) func(dst []byte, s int, seq, ns int64) []byte {
	return func(dst []byte, s int, seq, ns int64) []byte {
		dst = append(dst, `{"protocol":"mew/v0.4","id":"`...)
		dst = appendID(dst, r.marker, int64(s), seq, ns)
		dst = append(dst, `","kind":"chat","payload":{"text":"`...)
		dst = append(dst, pad...)
		return append(dst, `"}}`...)
	}
}

// handle counts one message participant i received: a delivery of the run's chats (with its
// latency and order), an error about one, or nothing.
func (r *fanoutRun) handle(i int, msg []byte) {
	var n [3]int64 // sender, seq, ns
	if !findNums(msg, r.mark, n[:]) {
		return
	}
	rc := &r.recv[i]
	if containsErr(msg) {
		rc.errors.Add(1)
		return
	}
	if s := n[0]; s < int64(len(rc.last)) {
		if n[1] <= rc.last[s] {
			rc.outOfOrder++
		} else {
			rc.last[s] = n[1]
		}
		if s == int64(i) {
			rc.echoed.Store(n[1])
			select {
			case rc.echo <- struct{}{}:
			default:
			}
		}
	}
	if !r.clock.measured(n[2]) {
		return
	}
	rc.lastAt = r.clock.now()
	rc.hist.Record(time.Duration(rc.lastAt - n[2]))
	if nodes := r.nodes(); nodes > 1 && n[0]%int64(nodes) != int64(i%nodes) {
		rc.cross.Record(time.Duration(rc.lastAt - n[2]))
	}
	rc.delivered.Add(1)
}

// nodes returns how many nodes the run's participants are spread over, once connected.
func (r *fanoutRun) nodes() int {
	if r.f == nil {
		return 1
	}
	return r.f.ep.nodes()
}

// delivered returns the measured deliveries so far.
func (r *fanoutRun) delivered() (n uint64) {
	for i := range r.recv {
		n += r.recv[i].delivered.Load()
	}
	return n
}

// tally fills res in from the finished run.
func (r *fanoutRun) tally(res *FanoutResult) {
	res.Sent = r.totalSent()
	res.Expected = res.Sent * uint64(r.o.Participants)
	var h, cross Histogram
	var lastAt int64
	for i := range r.recv {
		rc := &r.recv[i]
		h.Merge(&rc.hist)
		cross.Merge(&rc.cross)
		lastAt = max(lastAt, rc.lastAt)
		res.Delivered += rc.delivered.Load()
		res.OutOfOrder += rc.outOfOrder
		res.Errors += rc.errors.Load()
	}
	failed, first := r.failures()
	res.Errors += failed
	res.FirstError = first
	res.Elapsed = r.elapsed()
	if res.Expected > 0 {
		res.Loss = max(1-float64(res.Delivered)/float64(res.Expected), 0)
	}
	if secs := res.Elapsed.Seconds(); secs > 0 {
		res.SendRate = float64(res.Sent) / secs
	}
	window := max(r.clock.start.Add(time.Duration(lastAt)).Sub(r.measureFrom), res.Elapsed)
	if secs := window.Seconds(); secs > 0 {
		res.DeliveriesPerSec = float64(res.Delivered) / secs
	}
	res.P50, res.P90, res.P99, res.Max = h.Percentile(0.50), h.Percentile(0.90), h.Percentile(0.99), h.Max()
	res.Nodes = r.nodes()
	res.CrossP50, res.CrossP99 = cross.Percentile(0.50), cross.Percentile(0.99)
	if res.Delivered > 0 {
		res.CPUPerDelivery = r.cpu / time.Duration(res.Delivered)
	}
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
