package bench

import (
	"context"
	"errors"
	"net"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/coder/websocket"
	"go.uber.org/goleak"
)

// progressLog collects progress lines from a run.
type progressLog struct {
	mu    sync.Mutex
	lines []string
}

func (p *progressLog) add(line string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.lines = append(p.lines, line)
}

func (p *progressLog) text() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return strings.Join(p.lines, "\n")
}

// scheduleBound is the most a paced run of rate envelopes a second over d, from senders sending
// equal shares, can count: its schedule, one slot per sender at each edge, and the backlog of up
// to maxLag that a sender late at the end of the warmup may still send once measuring has begun.
func scheduleBound(rate float64, d time.Duration, senders int) uint64 {
	every := interval(rate, senders)
	return uint64(rate*d.Seconds()) + uint64(senders)*uint64(2+maxLag/every)
}

func checkOrdered(t *testing.T, p50, p90, p99, pmax time.Duration) {
	t.Helper()
	if !(0 < p50 && p50 <= p90 && p90 <= p99 && p99 <= pmax) {
		t.Errorf("percentiles not ordered: p50 %v p90 %v p99 %v max %v", p50, p90, p99, pmax)
	}
}

func TestFanoutRelay(t *testing.T) {
	var log progressLog
	o := FanoutOptions{Participants: 5, Senders: 2, Load: Load{Rate: 200, Size: 64, Duration: time.Second, Warmup: 200 * time.Millisecond}}
	res, err := Fanout(context.Background(), RelayTarget{}, o, log.add)
	if err != nil {
		t.Fatalf("Fanout: %v", err)
	}
	t.Logf("%+v", res)
	if res.Target != "relay" {
		t.Errorf("target = %q, want relay", res.Target)
	}
	// 200/s for 1 s: the pacer never sends ahead of its schedule, so at most one slot more per
	// sender at the edges, plus the slots of the warmup a late sender is still catching up on
	// when measuring starts; a loaded machine may send fewer, which is only reported.
	if most := scheduleBound(200, o.Duration, o.Senders); res.Sent == 0 || res.Sent > most {
		t.Errorf("sent = %d, want at most %d", res.Sent, most)
	}
	if res.Expected != res.Sent*5 || res.Delivered != res.Expected || res.Loss != 0 {
		t.Errorf("sent %d expected %d delivered %d loss %v, want every envelope delivered 5 times",
			res.Sent, res.Expected, res.Delivered, res.Loss)
	}
	if res.Errors != 0 || res.OutOfOrder != 0 {
		t.Errorf("errors %d (%s), out of order %d, want none", res.Errors, res.FirstError, res.OutOfOrder)
	}
	checkOrdered(t, res.P50, res.P90, res.P99, res.Max)
	// The rates are deliveries over a window of at least the duration; how close they come to
	// the asked rate depends on the machine, and is only reported.
	if res.Elapsed < o.Duration {
		t.Errorf("elapsed = %v, want at least the duration %v", res.Elapsed, o.Duration)
	}
	if most := float64(res.Delivered) / o.Duration.Seconds(); res.DeliveriesPerSec <= 0 || res.DeliveriesPerSec > most {
		t.Errorf("deliveries/s = %v, want positive and at most %v (delivered over the duration)", res.DeliveriesPerSec, most)
	}
	t.Logf("elapsed %v (asked %v), send rate %.1f/s (asked %v), deliveries/s %.1f", res.Elapsed, o.Duration, res.SendRate, o.Rate, res.DeliveriesPerSec)
	for _, want := range []string{"relay: connected 5/5", "relay: sending"} {
		if !strings.Contains(log.text(), want) {
			t.Errorf("progress lacks %q:\n%s", want, log.text())
		}
	}
}

// As fast as possible: nothing paces the senders, the relay's backpressure keeps it lossless.
func TestFanoutUnpaced(t *testing.T) {
	o := FanoutOptions{Participants: 3, Senders: 3, Load: Load{Rate: 0, Size: 16, Duration: 300 * time.Millisecond}}
	res, err := Fanout(context.Background(), RelayTarget{}, o, nil)
	if err != nil {
		t.Fatalf("Fanout: %v", err)
	}
	t.Logf("%+v", res)
	if res.Sent == 0 || res.Delivered != res.Expected || res.Errors != 0 || res.OutOfOrder != 0 {
		t.Errorf("sent %d expected %d delivered %d errors %d out of order %d", res.Sent, res.Expected, res.Delivered, res.Errors, res.OutOfOrder)
	}
}

func TestRPCRelay(t *testing.T) {
	o := RPCOptions{Pairs: 3, Load: Load{Rate: 150, Size: 32, Duration: time.Second, Warmup: 100 * time.Millisecond}}
	res, err := RPC(context.Background(), RelayTarget{}, o, nil)
	if err != nil {
		t.Fatalf("RPC: %v", err)
	}
	t.Logf("%+v", res)
	// As in TestFanoutRelay: never more than the schedule, all answered; the rate is reported.
	if most := scheduleBound(150, o.Duration, o.Pairs); res.Sent == 0 || res.Sent > most || res.RoundTrips != res.Sent || res.Errors != 0 {
		t.Errorf("sent %d round trips %d errors %d (%s), want at most %d, all answered", res.Sent, res.RoundTrips, res.Errors, res.FirstError, most)
	}
	if most := float64(res.RoundTrips) / o.Duration.Seconds(); res.Elapsed < o.Duration || res.PerSec <= 0 || res.PerSec > most {
		t.Errorf("elapsed %v per sec %v, want at least %v and at most %v/s", res.Elapsed, res.PerSec, o.Duration, most)
	}
	t.Logf("elapsed %v (asked %v), %.1f round trips/s (asked %v)", res.Elapsed, o.Duration, res.PerSec, o.Rate)
	checkOrdered(t, res.P50, res.P90, res.P99, res.Max)
}

func TestRPCClosedLoop(t *testing.T) {
	o := RPCOptions{Pairs: 2, Load: Load{Duration: 300 * time.Millisecond}}
	res, err := RPC(context.Background(), RelayTarget{}, o, nil)
	if err != nil {
		t.Fatalf("RPC: %v", err)
	}
	t.Logf("%+v", res)
	if res.RoundTrips == 0 || res.RoundTrips != res.Sent || res.Errors != 0 {
		t.Errorf("sent %d round trips %d errors %d (%s)", res.Sent, res.RoundTrips, res.Errors, res.FirstError)
	}
	checkOrdered(t, res.P50, res.P90, res.P99, res.Max)
}

func TestIdleRelay(t *testing.T) {
	res, err := Idle(context.Background(), RelayTarget{}, IdleOptions{Connections: 50, Settle: 100 * time.Millisecond}, nil)
	if err != nil {
		t.Fatalf("Idle: %v", err)
	}
	t.Logf("%+v", res)
	if res.Connections != 50 || res.Scope != ScopeInProcess || res.Errors != 0 {
		t.Errorf("result %+v", res)
	}
	// Per connection at least a client reader, a server reader and a server writer, and their buffers.
	if res.BytesPerConn < 4096 {
		t.Errorf("bytes/conn = %v, want several KiB", res.BytesPerConn)
	}
	if res.GoroutinesPerConn < 2.9 || res.GoroutinesPerConn > 3.1 {
		t.Errorf("goroutines/conn = %v, want 3", res.GoroutinesPerConn)
	}
}

// startRelay starts a relay the test controls, for URLTarget.
func startRelay(t *testing.T, ids []string) *Endpoint {
	t.Helper()
	ep, err := RelayTarget{}.Start(context.Background(), ids)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := ep.Close(); err != nil {
			t.Error(err)
		}
	})
	return ep
}

func TestURLTarget(t *testing.T) {
	ep := startRelay(t, participantIDs("bench-idle", 4))
	res, err := Idle(context.Background(), URLTarget{URL: ep.URL, Tokens: ep.Tokens}, IdleOptions{Connections: 4}, nil)
	if err != nil {
		t.Fatalf("Idle: %v", err)
	}
	if res.Target != "url" || res.Scope != ScopeClientOnly {
		t.Errorf("target %q scope %q, want url, %q", res.Target, res.Scope, ScopeClientOnly)
	}
}

func TestURLTargetErrors(t *testing.T) {
	ep := startRelay(t, []string{"bench-idle-0"})
	ctx := context.Background()
	tests := []struct {
		name   string
		target URLTarget
		want   string
	}{
		{"missing token", URLTarget{URL: ep.URL, Tokens: map[string]string{"bench-idle-0": "x"}}, "no token for participant bench-idle-1"},
		{"not ws", URLTarget{URL: "http://127.0.0.1:1/ws", Tokens: map[string]string{AnyID: "x"}}, "not a ws://"},
		{"wrong token", URLTarget{URL: ep.URL, Tokens: map[string]string{AnyID: "wrong"}}, "401"},
	}
	for _, tt := range tests {
		_, err := Idle(ctx, tt.target, IdleOptions{Connections: 2}, nil)
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%s: err = %v, want it to mention %q", tt.name, err, tt.want)
		}
	}
}

func TestOptionsValidate(t *testing.T) {
	t.Parallel()
	good := FanoutOptions{Participants: 2, Senders: 1, Load: Load{Rate: 1, Size: 1, Duration: time.Second}}
	for _, tt := range []struct {
		change func(*FanoutOptions)
		want   string
	}{
		{func(o *FanoutOptions) { o.Participants = 0 }, "participants must be at least 1"},
		{func(o *FanoutOptions) { o.Senders = 3 }, "senders (3) cannot exceed participants (2)"},
		{func(o *FanoutOptions) { o.Senders = 0 }, "senders must be at least 1"},
		{func(o *FanoutOptions) { o.Rate = -1 }, "rate must be"},
		{func(o *FanoutOptions) { o.Size = 0 }, "size must be at least 1"},
		{func(o *FanoutOptions) { o.Duration = 0 }, "duration must be positive"},
		{func(o *FanoutOptions) { o.Warmup = -time.Second }, "warmup cannot be negative"},
	} {
		o := good
		tt.change(&o)
		if err := o.Validate(); err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%+v: err = %v, want %q", o, err, tt.want)
		}
	}
	if err := good.Validate(); err != nil {
		t.Errorf("good options: %v", err)
	}
	if err := (RPCOptions{Pairs: 0, Load: Load{Duration: time.Second}}).Validate(); err == nil {
		t.Error("rpc with 0 pairs: no error")
	}
	if err := (IdleOptions{Connections: 0}).Validate(); err == nil {
		t.Error("idle with 0 connections: no error")
	}
}

// Cancelling a run returns promptly and leaves nothing running.
func TestCancelMidRun(t *testing.T) {
	defer goleak.VerifyNone(t)
	for _, name := range []string{"fanout", "rpc", "idle"} {
		ctx, cancel := context.WithCancel(context.Background())
		timer := time.AfterFunc(400*time.Millisecond, cancel)
		begin := time.Now()
		var err error
		switch name {
		case "fanout":
			_, err = Fanout(ctx, RelayTarget{}, FanoutOptions{Participants: 10, Senders: 3, Load: Load{Rate: 3000, Size: 100, Duration: time.Minute}}, nil)
		case "rpc":
			_, err = RPC(ctx, RelayTarget{}, RPCOptions{Pairs: 4, Load: Load{Duration: time.Minute}}, nil)
		case "idle":
			_, err = Idle(ctx, RelayTarget{}, IdleOptions{Connections: 10, Settle: time.Minute}, nil)
		}
		took := time.Since(begin)
		timer.Stop()
		cancel()
		if !errors.Is(err, context.Canceled) {
			t.Errorf("%s: err = %v, want context.Canceled", name, err)
		}
		if took > 2*time.Second {
			t.Errorf("%s: returned %v after the start, want soon after the cancel at 400ms", name, took)
		}
	}
}

// A server that goes away mid-run gives an error count, not a hang or a failure of the run.
func TestServerGoesAway(t *testing.T) {
	defer goleak.VerifyNone(t)
	ep, err := RelayTarget{}.Start(context.Background(), participantIDs("bench", 4))
	if err != nil {
		t.Fatal(err)
	}
	stop := time.AfterFunc(500*time.Millisecond, func() { _ = ep.Close() })
	defer stop.Stop()
	begin := time.Now()
	res, err := Fanout(context.Background(), URLTarget{URL: ep.URL, Tokens: ep.Tokens},
		FanoutOptions{Participants: 4, Senders: 2, Load: Load{Rate: 500, Size: 10, Duration: 1500 * time.Millisecond}}, nil)
	if err != nil {
		t.Fatalf("Fanout: %v", err)
	}
	t.Logf("%+v (after %v)", res, time.Since(begin))
	if res.Errors < 4 || res.FirstError == "" || res.Loss == 0 {
		t.Errorf("errors %d (%q), loss %v: want each of the 4 connections failed and loss", res.Errors, res.FirstError, res.Loss)
	}
	if took := time.Since(begin); took > 5*time.Second {
		t.Errorf("run took %v", took)
	}
	_ = ep.Close()
}

// A server that stops reading makes writes block; the run must still end, with errors.
func TestServerStopsReading(t *testing.T) {
	defer goleak.VerifyNone(t)
	inner, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	// A small receive buffer on the server's side makes the writes block
	// after a few MB whatever the machine's pace: on a slow (or -race) run
	// the senders may send less than loopback's default buffers would hold.
	ln := smallReadBuffer{inner}
	release := make(chan struct{})
	var handlers sync.WaitGroup
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		handlers.Add(1)
		defer handlers.Done()
		c, err := websocket.Accept(w, r, nil)
		if err != nil {
			return
		}
		defer func() { _ = c.CloseNow() }()
		if err := c.Write(r.Context(), websocket.MessageText, relayWelcome("x")); err != nil {
			return
		}
		<-release // and never read
	})}
	served := make(chan struct{})
	go func() {
		defer close(served)
		_ = srv.Serve(ln)
	}()
	defer func() {
		close(release)
		_ = srv.Close()
		handlers.Wait()
		<-served
	}()

	begin := time.Now()
	res, err := Fanout(context.Background(), URLTarget{URL: "ws://" + ln.Addr().String() + "/ws", Tokens: map[string]string{AnyID: "t"}},
		FanoutOptions{Participants: 2, Senders: 2, Load: Load{Rate: 2000, Size: 64 << 10, Duration: 300 * time.Millisecond}}, nil)
	took := time.Since(begin)
	if err != nil {
		t.Fatalf("Fanout: %v", err)
	}
	t.Logf("%+v (after %v)", res, took)
	if res.Errors == 0 || res.Loss != 1 {
		t.Errorf("errors %d, loss %v: want errors and everything lost", res.Errors, res.Loss)
	}
	if took > 8*time.Second {
		t.Errorf("run took %v", took)
	}
}

// smallReadBuffer is a listener whose connections get a 4 KiB receive
// buffer.
type smallReadBuffer struct{ net.Listener }

func (l smallReadBuffer) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if tc, ok := c.(*net.TCPConn); ok {
		_ = tc.SetReadBuffer(4 << 10)
	}
	return c, err
}
