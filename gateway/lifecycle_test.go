package gateway_test

import (
	"testing"
	"time"

	"github.com/coder/websocket"

	"github.com/mew-protocol/mew/gateway"
	"github.com/mew-protocol/mew/internal/testutil"
)

func TestSilentPeerIsDropped(t *testing.T) {
	g := start(t, gateway.Options{Timing: gateway.Timing{PingInterval: 100 * time.Millisecond, PongTimeout: 200 * time.Millisecond}})
	alice, _ := testutil.Join(t, g.WSURL, "alice-token")
	// A peer that never reads never answers pings either.
	testutil.DialStalled(t, g.WSURL, "bob-token")
	alice.ExpectFunc("system/presence", func(m testutil.Msg) bool { return m.Payload()["event"] == "join" })
	begin := time.Now()
	alice.ExpectFunc("system/presence", func(m testutil.Msg) bool { return m.Payload()["event"] == "leave" })
	if d := time.Since(begin); d > 2*time.Second {
		t.Fatalf("dropped after %v", d)
	}
	// A peer that reads answers pings and stays, even when silent.
	if m, quiet := alice.Quiet(600*time.Millisecond, nil); !quiet {
		t.Fatalf("alice got %s", m.Raw)
	}
	alice.SendText(`{"kind":"chat","payload":{"text":"still here"}}`)
	alice.Expect("chat")
}

func TestShutdownClosesWith1001AndKeepsLogs(t *testing.T) {
	g := start(t, gateway.Options{})
	alice, _ := testutil.Join(t, g.WSURL, "alice-token")
	alice.SendText(`{"id":"last","kind":"chat","payload":{"text":"before shutdown"}}`)
	alice.Expect("chat")
	g.Stop(t)
	if code, _ := alice.Closed(5 * time.Second); code != websocket.StatusGoingAway {
		t.Fatalf("close code %v, want 1001", code)
	}
	waitFile(t, g.LogPath("envelope-history.jsonl"), `"event":"received","id":"last"`)
	waitFile(t, g.Config.Resolve("logs/watcher.jsonl"), `"id":"last"`)
	// After Close, new connections are refused.
	if _, err := testutil.TryDial(t, g.WSURL, "alice-token"); err == nil {
		t.Fatal("dial after shutdown succeeded")
	}
}
