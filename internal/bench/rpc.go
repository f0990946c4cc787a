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
	// Rate is the total round trips per second over all requesters, each sending its share on a
	// fixed schedule whether or not answers have come. 0 is a closed loop: each requester sends
	// its next request when the answer to the last has come, as fast as the target allows.
	Rate float64 `json:"rate"`
	// Size is the length of a text argument in each request and of a text result in each
	// response; 0 sends empty arguments and results.
	Size int `json:"size"`
	// Duration is how long the measured part of the run sends.
	Duration time.Duration `json:"duration_ns"`
	// Warmup is how long the run sends before it starts measuring.
	Warmup time.Duration `json:"warmup_ns"`
}

// Validate reports the first option that is out of range.
func (o RPCOptions) Validate() error {
	if o.Pairs < 1 {
		return fmt.Errorf("pairs must be at least 1, got %d", o.Pairs)
	}
	return errors.Join(checkRate(o.Rate), checkSize(o.Size, 0), checkTimes(o.Duration, o.Warmup))
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
	// Errors counts requests left unanswered (refused by a system/error, lost, or not answered
	// within 2 s of the end) and connections that failed during the run.
	Errors uint64 `json:"errors"`
	// FirstError describes the first failed connection, if any.
	FirstError string `json:"first_error,omitempty"`
}

// requester is one requester's tally, owned by its reader goroutine except for the atomics.
type requester struct {
	sent, answered, refused atomic.Uint64
	hist                    Histogram
	got                     chan int64 // closed loop: sequence numbers of answers and refusals
}

// RPC measures request/response round trips through t: o.Pairs requesters each send mcp/request
// envelopes (tools/call) to a responder of their own, which answers each with an mcp/response
// that correlates to it, and the requester times the round trip. progress, if not nil, receives
// lines about the run's phases, from the calling goroutine.
func RPC(ctx context.Context, t Target, o RPCOptions, progress func(string)) (res RPCResult, err error) {
	if err := o.Validate(); err != nil {
		return RPCResult{}, fmt.Errorf("rpc: %w", err)
	}
	if t == nil {
		return RPCResult{}, errors.New("rpc: no target")
	}
	res.Target = t.Name()
	say := prefixed(t.Name(), progress)
	pairs := o.Pairs
	reqIDs, rspIDs := participantIDs("bench-req", pairs), participantIDs("bench-rsp", pairs)
	ids := append(append([]string(nil), reqIDs...), rspIDs...) // requester i is ids[i], its responder ids[pairs+i]
	ep, err := startTarget(ctx, t, ids)
	if err != nil {
		return res, fmt.Errorf("rpc: %w", err)
	}
	defer func() {
		if cerr := ep.stop(); cerr != nil && err == nil {
			err = fmt.Errorf("rpc: stop %s: %w", t.Name(), cerr)
		}
	}()

	nonce := runNonce()
	reqMarker, rspMarker := make([]string, pairs), make([]string, pairs)
	reqMark, rspMark := make([][]byte, pairs), make([][]byte, pairs)
	for p := range pairs {
		reqMarker[p] = "r" + nonce + "-" + strconv.Itoa(p) + "-"
		rspMarker[p] = "a" + nonce + "-" + strconv.Itoa(p) + "-"
		reqMark[p], rspMark[p] = []byte(reqMarker[p]), []byte(rspMarker[p])
	}
	closedLoop := o.Rate == 0
	clock := newRunClock()
	reqs := make([]requester, pairs)
	queues := make([]chan [2]int64, pairs) // per responder: seq and send time of requests to answer
	for p := range pairs {
		reqs[p].got = make(chan int64, 1)
		queues[p] = make(chan [2]int64, responderQueue)
	}
	handle := func(i int, msg []byte) {
		var n [2]int64 // seq, ns
		if i >= pairs {
			// A responder: it answers requests to it, not their echoes in its own responses.
			p := i - pairs
			if findNums(msg, reqMark[p], n[:]) && !bytes.Contains(msg, rspMark[p]) && !containsErr(msg) {
				select {
				case queues[p] <- n:
				default: // overloaded: the requester counts it unanswered
				}
			}
			return
		}
		r := &reqs[i]
		switch {
		case findNums(msg, rspMark[i], n[:]):
			if clock.measured(n[1]) {
				r.hist.Record(clock.since(n[1]))
				r.answered.Add(1)
			}
		case containsErr(msg) && findNums(msg, reqMark[i], n[:]):
			if clock.measured(n[1]) {
				r.refused.Add(1)
			}
		default:
			return
		}
		if closedLoop {
			select {
			case r.got <- n[0]:
			default:
			}
		}
	}

	f := newFleet(ctx, ep)
	defer f.close(ctx)
	say(fmt.Sprintf("connecting %d pairs", pairs))
	if err := f.connect(ctx, ids, handle, say); err != nil {
		return res, fmt.Errorf("rpc: %w", err)
	}

	// Responders: one writer each, so that no reader ever waits for a write. A responder still
	// writing a second after it was told to stop has its context cancelled, which ends a write
	// the target does not take.
	stopResponders := make(chan struct{})
	respondCtx, cancelResponders := context.WithCancel(ctx)
	defer cancelResponders()
	var responders sync.WaitGroup
	for p := range pairs {
		responders.Add(1)
		go func() {
			defer responders.Done()
			ctx, cancel := context.WithCancel(respondCtx) // its own, see fleet.write
			defer cancel()
			result := `{"content":[]}`
			if o.Size > 0 {
				result = `{"content":[{"type":"text","text":"` + padding(o.Size) + `"}]}`
			}
			var buf []byte
			for {
				var n [2]int64
				select {
				case n = <-queues[p]:
				case <-stopResponders:
					return
				}
				buf = append(buf[:0], `{"protocol":"mew/v0.4","id":"`...)
				buf = appendID(buf, rspMarker[p], n[0], n[1])
				buf = append(buf, `","kind":"mcp/response","to":["`...)
				buf = append(buf, reqIDs[p]...)
				buf = append(buf, `"],"correlation_id":["`...)
				buf = appendID(buf, reqMarker[p], n[0], n[1])
				buf = append(buf, `"],"payload":{"jsonrpc":"2.0","id":`...)
				buf = strconv.AppendInt(buf, n[0], 10)
				buf = append(buf, `,"result":`...)
				buf = append(buf, result...)
				buf = append(buf, `}}`...)
				if !f.write(ctx, pairs+p, buf) {
					return
				}
			}
		}()
	}
	stopAll := sync.OnceFunc(func() {
		close(stopResponders)
		stuck := time.AfterFunc(time.Second, cancelResponders)
		defer stuck.Stop()
		responders.Wait()
	})
	defer stopAll()

	if closedLoop {
		say(fmt.Sprintf("requesting as fast as answered, %d pairs, for %v (+%v warmup)", pairs, o.Duration, o.Warmup))
	} else {
		say(fmt.Sprintf("requesting %g/s over %d pairs for %v (+%v warmup)", o.Rate, pairs, o.Duration, o.Warmup))
	}
	every := interval(o.Rate, pairs)
	begin, measureFrom, end := clock.begin(o.Warmup, o.Duration)
	args := `{}`
	if o.Size > 0 {
		args = `{"text":"` + padding(o.Size) + `"}`
	}
	var requesters sync.WaitGroup
	for p := range pairs {
		requesters.Add(1)
		go func() {
			defer requesters.Done()
			// A context of its own (see fleet.write), with a deadline in case the target
			// stops reading and a write blocks.
			ctx, cancel := context.WithDeadline(ctx, end.Add(stragglerWait))
			defer cancel()
			r := &reqs[p]
			pace := newPacer(begin.Add(every*time.Duration(p)/time.Duration(pairs)), every)
			var timeout *time.Timer
			if closedLoop {
				timeout = time.NewTimer(requestTimeout)
				defer timeout.Stop()
			}
			var buf []byte
			for seq := int64(0); pace.wait(ctx, end); seq++ {
				ns := clock.now()
				buf = append(buf[:0], `{"protocol":"mew/v0.4","id":"`...)
				buf = appendID(buf, reqMarker[p], seq, ns)
				buf = append(buf, `","kind":"mcp/request","to":["`...)
				buf = append(buf, rspIDs[p]...)
				buf = append(buf, `"],"payload":{"jsonrpc":"2.0","id":`...)
				buf = strconv.AppendInt(buf, seq, 10)
				buf = append(buf, `,"method":"tools/call","params":{"name":"echo","arguments":`...)
				buf = append(buf, args...)
				buf = append(buf, `}}}`...)
				if !f.write(ctx, p, buf) {
					return
				}
				if clock.measured(ns) {
					r.sent.Add(1)
				}
				if closedLoop && !awaitAnswer(ctx, r.got, seq, timeout, end) {
					return
				}
			}
		}()
	}
	totals := func() (sent, done, refused uint64) {
		for p := range reqs {
			sent += reqs[p].sent.Load()
			done += reqs[p].answered.Load()
			refused += reqs[p].refused.Load()
		}
		return sent, done, refused
	}
	waitGroupReporting(&requesters, time.Second, func() {
		if time.Since(measureFrom) < time.Second/2 { // still warming up, or just done
			say(fmt.Sprintf("requesting: %v elapsed, warming up", time.Since(begin).Round(time.Second)))
			return
		}
		sent, done, _ := totals()
		say(fmt.Sprintf("requesting: %v measured, %d sent, %d answered", time.Since(measureFrom).Round(time.Second), sent, done))
	})
	stopped := time.Now()

	say("waiting for stragglers")
	waitUntil(ctx, stragglerWait, func() bool {
		sent, done, refused := totals()
		return done+refused >= sent
	})
	if ctx.Err() != nil {
		return res, fmt.Errorf("rpc: %w", context.Cause(ctx))
	}
	stopAll()
	f.close(ctx)

	var h Histogram
	for p := range reqs {
		h.Merge(&reqs[p].hist)
	}
	res.Sent, res.RoundTrips, _ = totals() // refused requests are among the unanswered
	res.Errors = res.Sent - min(res.RoundTrips, res.Sent) + f.failures.Load()
	if e := f.firstErr(); e != nil {
		res.FirstError = e.Error()
	}
	res.Elapsed = max(stopped.Sub(measureFrom), o.Duration) // a paced requester stops at its last slot before the end
	if secs := res.Elapsed.Seconds(); secs > 0 {
		res.PerSec = float64(res.RoundTrips) / secs
	}
	res.P50, res.P90, res.P99, res.Max = h.Percentile(0.50), h.Percentile(0.90), h.Percentile(0.99), h.Max()
	return res, nil
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
