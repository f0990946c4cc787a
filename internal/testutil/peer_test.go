package testutil_test

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/coder/websocket"

	"github.com/mew-protocol/mew/gateway"
	"github.com/mew-protocol/mew/internal/testutil"
)

// fatalTB records a Fatalf and ends the goroutine that called it, as testing.T does.
type fatalTB struct {
	testing.TB
	msg string
}

func (f *fatalTB) Helper() {}

func (f *fatalTB) Fatalf(format string, args ...any) {
	f.msg = fmt.Sprintf(format, args...)
	panic(f)
}

// quietOn runs Quiet on p for d from a goroutine of its own and returns what it reported, or the
// message it failed with.
func quietOn(p *testutil.Peer, tb *fatalTB, d time.Duration) (quiet bool, failed string) {
	done := make(chan struct{})
	go func() {
		defer close(done)
		defer func() {
			if r := recover(); r != nil && r != tb {
				panic(r)
			}
		}()
		_, quiet = p.Quiet(d, nil)
	}()
	<-done
	return quiet, tb.msg
}

// A peer whose connection the server ends is not quiet: Quiet fails the test rather than report
// silence, so that a negative check cannot pass because the gateway dropped the peer.
func TestQuietFailsOnClosedPeer(t *testing.T) {
	closeIt := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		c, err := websocket.Accept(w, r, nil)
		if err != nil {
			return
		}
		select {
		case <-closeIt:
			_ = c.Close(websocket.StatusPolicyViolation, "kicked")
		case <-r.Context().Done():
			_ = c.CloseNow()
		}
	}))
	defer srv.Close()
	url := "ws" + strings.TrimPrefix(srv.URL, "http")

	tb := &fatalTB{TB: t}
	p := testutil.Dial(tb, url, "")
	if quiet, failed := quietOn(p, tb, 100*time.Millisecond); !quiet || failed != "" {
		t.Fatalf("open and silent peer: quiet=%v failed=%q", quiet, failed)
	}
	close(closeIt)
	if quiet, failed := quietOn(p, tb, 2*time.Second); quiet || !strings.Contains(failed, "kicked") {
		t.Fatalf("closed peer: quiet=%v failed=%q, want a failure naming the close", quiet, failed)
	}
}

// JoinAll returns once each peer has read the presences of those that
// joined after it: a chat sent next is the next message the others read.
func TestJoinAll(t *testing.T) {
	g := testutil.StartGateway(t, testutil.SpaceYAML("joins",
		testutil.Member("alice", "chat"), testutil.Member("bob", "chat"), testutil.Member("carol", "chat")), gateway.Options{})
	peers := testutil.JoinAll(t, g.WSURL, "alice-token", "bob-token", "carol-token")
	peers[2].SendText(`{"id":"hello","kind":"chat","payload":{"text":"hi"}}`)
	for _, p := range peers[:2] {
		if m := p.Next(); m.Kind() != "chat" || m.ID() != "hello" {
			t.Errorf("next message %s, want the chat", m.Raw)
		}
	}
}

// Receive returns what comes on the channel, and fails the test, naming
// what it waited for, when nothing comes in time.
func TestReceive(t *testing.T) {
	ch := make(chan int, 1)
	ch <- 7
	if v := testutil.Receive(t, ch, time.Second, "seven"); v != 7 {
		t.Errorf("Receive = %d, want 7", v)
	}
	tb := &fatalTB{TB: t}
	func() {
		defer func() {
			if r := recover(); r != nil && r != tb {
				panic(r)
			}
		}()
		testutil.Receive(tb, ch, 10*time.Millisecond, "nothing")
	}()
	if !strings.Contains(tb.msg, "waiting for nothing") {
		t.Errorf("the failure says %q", tb.msg)
	}
}
