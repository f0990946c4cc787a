package bench

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"sync/atomic"
	"time"
)

const (
	// requestTimeout is how long a closed-loop requester waits for an answer before it counts
	// the request as lost and sends the next.
	requestTimeout = 5 * time.Second
	// responderQueue is how many requests a responder holds while its writer is busy; more are
	// dropped (and counted by their requester as unanswered), so a reader never waits on a write.
	responderQueue = 1024
)

// RPCOptions configures RPC.
type RPCOptions struct {
	// Pairs is how many requester/responder pairs join the space, ids bench-req-I and bench-rsp-I.
	Pairs int `json:"pairs"`
	// Load is what they send: Rate round trips per second over all requesters, each sending its
	// share on a fixed schedule whether or not answers have come, or, at 0, a closed loop (each
	// requester sends its next request when the answer to the last has come); Size bytes of text
	// in each request's argument and each response's result (0: empty ones).
	Load
}

// Validate reports the first option that is out of range.
func (o RPCOptions) Validate() error {
	if o.Pairs < 1 {
		return fmt.Errorf("pairs must be at least 1, got %d", o.Pairs)
	}
	return o.Load.check(0)
}

// RPCResult is what RPC measured, over the measured part of the run.
type RPCResult struct {
	Target string `json:"target"`
	// Sent is how many requests the requesters sent.
	Sent uint64 `json:"sent"`
	// RoundTrips is how many of them were answered.
	RoundTrips uint64 `json:"round_trips"`
	// PerSec is RoundTrips per second of Elapsed.
	PerSec float64 `json:"per_sec"`
	// P50 ... Max are round-trip times, from sending a request to receiving its response.
	P50 time.Duration `json:"p50_ns"`
	P90 time.Duration `json:"p90_ns"`
	P99 time.Duration `json:"p99_ns"`
	Max time.Duration `json:"max_ns"`
	// Elapsed is the measured sending time.
	Elapsed time.Duration `json:"elapsed_ns"`
	// CPUPerRoundTrip is the process's CPU time from the start of the measurement until the last
	// answer, divided by RoundTrips; 0 when unknown. Like FanoutResult.CPUPerDelivery, it covers
	// the clients too, unless the server is a ChildTarget.
	CPUPerRoundTrip time.Duration `json:"cpu_per_round_trip_ns"`
	// Errors counts requests left unanswered (refused by a system/error, lost, or not answered
	// within 2 s of the end) and connections that failed during the run.
	Errors uint64 `json:"errors"`
	// FirstError describes the first failed connection, if any.
	FirstError string `json:"first_error,omitempty"`
}

// requester is one requester's tally, owned by its reader goroutine except for the atomics.
type requester struct {
	answered, refused atomic.Uint64
	hist              Histogram
	got               chan int64  // closed loop: sequence numbers of answers and refusals
	timeout           *time.Timer // closed loop: the wait for the answer; its sender's only
}

// RPC measures request/response round trips through t: o.Pairs requesters each send mcp/request
// envelopes (tools/call) to a responder of their own, which answers each with an mcp/response
// that correlates to it, and the requester times the round trip. progress, if not nil, receives
// lines about the run's phases, from the calling goroutine.
func RPC(ctx context.Context, t Target, o RPCOptions, progress func(string)) (RPCResult, error) {
	if err := o.Validate(); err != nil {
		return RPCResult{}, fmt.Errorf("rpc: %w", err)
	}
	if t == nil {
		return RPCResult{}, errors.New("rpc: no target")
	}
	r := newRPCRun(t, o, progress)
	err := r.run(ctx)
	res := RPCResult{Target: t.Name()}
	if err != nil {
		return res, err
	}
	r.tally(&res)
	return res, nil
}

// rpcRun is one RPC run: the shared skeleton, whose senders are the requesters (participant p
// of the first Pairs), and the responders (participant Pairs+p answers requester p).
type rpcRun struct {
	sending
	o                RPCOptions
	reqIDs, rspIDs   []string
	reqMarker        []string // per pair, the id prefix of its requests, "r<nonce>-<pair>-"
	rspMarker        []string // and of its responses, "a<nonce>-<pair>-"
	reqMark, rspMark [][]byte
	reqs             []requester
	queues           []chan [2]int64 // per responder: seq and send time of requests to answer
	args, result     string          // the request's arguments and the response's result
	closedLoop       bool
}

func newRPCRun(t Target, o RPCOptions, progress func(string)) *rpcRun {
	pairs := o.Pairs
	r := &rpcRun{
		o:          o,
		reqIDs:     participantIDs("bench-req", pairs),
		rspIDs:     participantIDs("bench-rsp", pairs),
		reqMarker:  make([]string, pairs),
		rspMarker:  make([]string, pairs),
		reqMark:    make([][]byte, pairs),
		rspMark:    make([][]byte, pairs),
		reqs:       make([]requester, pairs),
		queues:     make([]chan [2]int64, pairs),
		args:       `{}`,
		result:     `{"content":[]}`,
		closedLoop: o.Rate == 0,
	}
	if o.Size > 0 {
		r.args = `{"text":"` + padding(o.Size) + `"}`
		r.result = `{"content":[{"type":"text","text":"` + padding(o.Size) + `"}]}`
	}
	nonce := runNonce()
	for p := range pairs {
		r.reqMarker[p] = "r" + nonce + "-" + strconv.Itoa(p) + "-"
		r.rspMarker[p] = "a" + nonce + "-" + strconv.Itoa(p) + "-"
		r.reqMark[p], r.rspMark[p] = []byte(r.reqMarker[p]), []byte(r.rspMarker[p])
		r.reqs[p].got = make(chan int64, 1)
		r.queues[p] = make(chan [2]int64, responderQueue)
	}
	starting := fmt.Sprintf("requesting %g/s over %d pairs for %v (+%v warmup)", o.Rate, pairs, o.Duration, o.Warmup)
	if r.closedLoop {
		starting = fmt.Sprintf("requesting as fast as answered, %d pairs, for %v (+%v warmup)", pairs, o.Duration, o.Warmup)
	}
	r.sending = sending{
		name:       "rpc",
		target:     t,
		say:        prefixed(t.Name(), progress),
		ids:        append(append([]string(nil), r.reqIDs...), r.rspIDs...), // requester p is ids[p], its responder ids[pairs+p]
		clock:      newRunClock(),
		senders:    pairs,
		every:      interval(o.Rate, pairs),
		warmup:     o.Warmup,
		duration:   o.Duration,
		connecting: fmt.Sprintf("connecting %d pairs", pairs),
		starting:   starting,
		verb:       "requesting",
		counts: func() string {
			done, _ := r.answers()
			return fmt.Sprintf("%d sent, %d answered", r.totalSent(), done)
		},
		handle:   r.handle,
		envelope: r.request,
		helpers:  r.startResponders,
		settled: func() bool {
			done, refused := r.answers()
			return done+refused >= r.totalSent()
		},
	}
	if r.closedLoop {
		for p := range r.reqs {
			r.reqs[p].timeout = time.NewTimer(requestTimeout)
			r.reqs[p].timeout.Stop()
		}
		// Closed loop: a requester sends its next request once the last is answered.
		r.after = func(ctx context.Context, p int, seq int64, end time.Time) bool {
			return awaitAnswer(ctx, r.reqs[p].got, seq, r.reqs[p].timeout, end)
		}
	}
	return r
}

// request appends requester p's mcp/request number seq, stamped ns, to dst.
func (r *rpcRun) request(dst []byte, p int, seq, ns int64) []byte {
	dst = append(dst, `{"protocol":"mew/v0.4","id":"`...)
	dst = appendID(dst, r.reqMarker[p], seq, ns)
	dst = append(dst, `","kind":"mcp/request","to":["`...)
	dst = append(dst, r.rspIDs[p]...)
	dst = append(dst, `"],"payload":{"jsonrpc":"2.0","id":`...)
	dst = strconv.AppendInt(dst, seq, 10)
	dst = append(dst, `,"method":"tools/call","params":{"name":"echo","arguments":`...)
	dst = append(dst, r.args...)
	return append(dst, `}}}`...)
}

// response appends responder p's mcp/response to request n (seq, ns) to dst.
func (r *rpcRun) response(dst []byte, p int, n [2]int64) []byte {
	dst = append(dst, `{"protocol":"mew/v0.4","id":"`...)
	dst = appendID(dst, r.rspMarker[p], n[0], n[1])
	dst = append(dst, `","kind":"mcp/response","to":["`...)
	dst = append(dst, r.reqIDs[p]...)
	dst = append(dst, `"],"correlation_id":["`...)
	dst = appendID(dst, r.reqMarker[p], n[0], n[1])
	dst = append(dst, `"],"payload":{"jsonrpc":"2.0","id":`...)
	dst = strconv.AppendInt(dst, n[0], 10)
	dst = append(dst, `,"result":`...)
	dst = append(dst, r.result...)
	return append(dst, `}}`...)
}

// handle takes one message participant i received: a responder queues the requests to it, a
// requester counts the answers and refusals of its own requests.
func (r *rpcRun) handle(i int, msg []byte) {
	pairs := r.o.Pairs
	var n [2]int64 // seq, ns
	if i >= pairs {
		// A responder: it answers requests to it, not their echoes in its own responses.
		p := i - pairs
		if findNums(msg, r.reqMark[p], n[:]) && !bytes.Contains(msg, r.rspMark[p]) && !containsErr(msg) {
			select {
			case r.queues[p] <- n:
			default: // overloaded: the requester counts it unanswered
			}
		}
		return
	}
	rq := &r.reqs[i]
	switch {
	case findNums(msg, r.rspMark[i], n[:]):
		if r.clock.measured(n[1]) {
			rq.hist.Record(r.clock.since(n[1]))
			rq.answered.Add(1)
		}
	case containsErr(msg) && findNums(msg, r.reqMark[i], n[:]):
		if r.clock.measured(n[1]) {
			rq.refused.Add(1)
		}
	default:
		return
	}
	if r.closedLoop {
		select {
		case rq.got <- n[0]:
		default:
		}
	}
}

// startResponders starts one writer per responder, so that no reader ever waits for a write,
// and returns their stop: a responder still writing a second after it was told to stop has its
// context cancelled, which ends a write the target does not take.
func (r *rpcRun) startResponders(ctx context.Context) (stop func()) {
	stopped := make(chan struct{})
	respondCtx, cancel := context.WithCancel(ctx)
	var responders sync.WaitGroup
	for p := range r.o.Pairs {
		responders.Add(1)
		go func() {
			defer responders.Done()
			r.respond(respondCtx, p, stopped)
		}()
	}
	return sync.OnceFunc(func() {
		defer cancel()
		close(stopped)
		stuck := time.AfterFunc(time.Second, cancel)
		defer stuck.Stop()
		responders.Wait()
	})
}

// respond answers the requests queued for responder p until stopped is closed.
func (r *rpcRun) respond(ctx context.Context, p int, stopped <-chan struct{}) {
	ctx, cancel := context.WithCancel(ctx) // its own, see fleet.write
	defer cancel()
	var buf []byte
	for {
		var n [2]int64
		select {
		case n = <-r.queues[p]:
		case <-stopped:
			return
		}
		buf = r.response(buf[:0], p, n)
		if !r.f.write(ctx, r.o.Pairs+p, buf) {
			return
		}
	}
}

// answers returns the measured requests answered and refused so far.
func (r *rpcRun) answers() (done, refused uint64) {
	for p := range r.reqs {
		done += r.reqs[p].answered.Load()
		refused += r.reqs[p].refused.Load()
	}
	return done, refused
}

// tally fills res in from the finished run.
func (r *rpcRun) tally(res *RPCResult) {
	var h Histogram
	for p := range r.reqs {
		h.Merge(&r.reqs[p].hist)
		if t := r.reqs[p].timeout; t != nil {
			t.Stop()
		}
	}
	res.Sent = r.totalSent()
	res.RoundTrips, _ = r.answers() // refused requests are among the unanswered
	failed, first := r.failures()
	res.Errors = res.Sent - min(res.RoundTrips, res.Sent) + failed
	res.FirstError = first
	res.Elapsed = r.elapsed()
	if secs := res.Elapsed.Seconds(); secs > 0 {
		res.PerSec = float64(res.RoundTrips) / secs
	}
	res.P50, res.P90, res.P99, res.Max = h.Percentile(0.50), h.Percentile(0.90), h.Percentile(0.99), h.Max()
	if res.RoundTrips > 0 {
		res.CPUPerRoundTrip = r.cpu / time.Duration(res.RoundTrips)
	}
}

// awaitAnswer waits until got delivers seq, the request times out, or the run ends. It returns
// false when ctx is done.
func awaitAnswer(ctx context.Context, got <-chan int64, seq int64, timeout *time.Timer, end time.Time) bool {
	timeout.Reset(min(requestTimeout, max(time.Until(end), 0)))
	for {
		select {
		case s := <-got:
			if s >= seq {
				return true
			}
		case <-timeout.C:
			return true
		case <-ctx.Done():
			return false
		}
	}
}
