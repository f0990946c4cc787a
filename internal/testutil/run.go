package testutil

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mew-protocol/mew/bridge"
	"github.com/mew-protocol/mew/internal/mcptest"
	"github.com/mew-protocol/mew/participant"
)

// runTimeout bounds how long a Run may take to get ready, and to return
// once its context has ended.
const runTimeout = 30 * time.Second

// Running is a long-running Run(ctx) method (a bridge's, an agent's)
// started by StartRun or Background. It owns the goroutine that calls it: Stop, or the
// end of the test, cancels the context and waits for Run to return.
type Running struct {
	cancel context.CancelFunc
	done   chan struct{}
	err    error // Run's, once done is closed

	read     atomic.Bool // the test has Run's error and judges it itself
	stopOnce sync.Once
	stopErr  error
}

// StartRun calls run on a goroutine and waits until ready is closed. It
// returns an error when run returns first (its error) or when ready is not
// closed within 30 s. When the test ends run is stopped, and the test fails
// if run returned an error that neither StartRun nor Stop handed over.
func StartRun(t testing.TB, run func(context.Context) error, ready <-chan struct{}) (*Running, error) {
	t.Helper()
	r := Background(t, run)
	timer := time.NewTimer(runTimeout)
	defer timer.Stop()
	select {
	case <-ready:
		return r, nil
	case <-r.done:
		r.read.Store(true)
		if r.err == nil {
			return r, errors.New("run returned nil before it was ready")
		}
		return r, r.err
	case <-timer.C:
		return r, fmt.Errorf("not ready within %v", runTimeout)
	}
}

// Background calls run on a goroutine until the test ends, when run's
// context is canceled and the test fails unless run returns nil within
// 30 s: StartRun for a run with no signal of readiness, such as a server
// on a listener already open. Stop ends it sooner and hands its error to
// the test.
func Background(t testing.TB, run func(context.Context) error) *Running {
	ctx, cancel := context.WithCancel(context.Background())
	r := &Running{cancel: cancel, done: make(chan struct{})}
	go func() {
		defer close(r.done)
		r.err = run(ctx)
	}()
	t.Cleanup(func() {
		if err := r.stop(); err != nil && !r.read.Load() {
			t.Errorf("Run: %v", err)
		}
	})
	return r
}

// Stop cancels Run's context and returns Run's error, which the test then
// judges itself. It may be called more than once.
func (r *Running) Stop() error {
	r.read.Store(true)
	return r.stop()
}

// Done is closed when Run has returned.
func (r *Running) Done() <-chan struct{} { return r.done }

func (r *Running) stop() error {
	r.stopOnce.Do(func() {
		r.cancel()
		timer := time.NewTimer(runTimeout)
		defer timer.Stop()
		select {
		case <-r.done:
			r.stopErr = r.err
		case <-timer.C:
			r.stopErr = fmt.Errorf("run did not return within %v of its context's end", runTimeout)
		}
	})
	return r.stopErr
}

// StartBridge runs a bridge that joins g's space with token until the test
// ends, and waits until it is ready; opts.Participant.Client's gateway,
// space and token are filled in. The test fails if the bridge cannot be
// made or never gets ready, or if Run returns an error.
func StartBridge(t testing.TB, g *Gateway, token string, opts bridge.Options) *bridge.Bridge {
	t.Helper()
	opts.Participant.Client.Gateway = "ws://" + g.Addr
	opts.Participant.Client.Space = g.Config.Space.ID
	opts.Participant.Client.Token = token
	b, err := bridge.New(opts)
	if err != nil {
		t.Fatalf("bridge: %v", err)
	}
	if _, err := StartRun(t, b.Run, b.Ready()); err != nil {
		t.Fatalf("bridge: %v", err)
	}
	return b
}

// StartBooking serves mcptest.Booking over streamable HTTP and bridges it
// into g's space with token until the test ends: the set-up of the
// elicitation tests end to end (a caller's "book" or "consent" becomes an
// elicitation someone in the space answers). opts sets the bridge's other
// options, such as ElicitationTimeout.
func StartBooking(t testing.TB, g *Gateway, token string, opts bridge.Options) *bridge.Bridge {
	t.Helper()
	opts.Server = bridge.Server{URL: mcptest.ServeHTTP(t, mcptest.Booking(BookingConsentURL))}
	return StartBridge(t, g, token, opts)
}

// BookingConsentURL is the link the "consent" tool of StartBooking's
// server asks the user to open.
const BookingConsentURL = "https://example.com/consent"

// CallBooking makes who's call of tool, with no arguments, on the
// participant "booking" (StartBooking's), on a goroutine of its own: the
// call waits while its elicitation is answered. The channel gets the
// result's text items, one a line, or "error: " and the call's error.
func CallBooking(t testing.TB, who *participant.Participant, tool string) <-chan string {
	ch := make(chan string, 1)
	go func() {
		ctx, cancel := context.WithTimeout(t.Context(), 60*time.Second)
		defer cancel()
		raw, err := who.Request(ctx, "booking", map[string]any{"method": "tools/call", "params": map[string]any{"name": tool, "arguments": map[string]any{}}})
		if err != nil {
			ch <- "error: " + err.Error()
			return
		}
		var r struct {
			Content []struct {
				Text string `json:"text"`
			} `json:"content"`
		}
		_ = json.Unmarshal(raw, &r)
		texts := make([]string, 0, len(r.Content))
		for _, c := range r.Content {
			texts = append(texts, c.Text)
		}
		ch <- strings.Join(texts, "\n")
	}()
	return ch
}

// Executable is the path of the running test binary, which tests run again
// as a server or a child process of the code under test.
func Executable(t testing.TB) string {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	return exe
}
