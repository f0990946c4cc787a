package client_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/mew-protocol/mew/client"
	"github.com/mew-protocol/mew/gateway"
	"github.com/mew-protocol/mew/protocol"
)

// fast makes reconnecting quick enough for tests.
func fast(o client.Options) client.Options {
	o.Reconnect = true
	o.ReconnectDelay = 20 * time.Millisecond
	o.MaxReconnectDelay = 100 * time.Millisecond
	return o
}

func welcomes(ev *events) int { return ev.count(func(ev *events) int { return len(ev.welcomes) }) }

func TestReconnectAfterGatewayRestart(t *testing.T) {
	g := startGateway(t, gateway.Options{})
	c, ev := connectRecorded(t, g, fast(client.Options{Token: "alice-token"}))
	waitFor(t, "the first welcome", func() bool { return welcomes(ev) == 1 })

	restart(t, g, g.Config, gateway.Options{})
	waitFor(t, "the welcome after the restart", func() bool { return welcomes(ev) == 2 })
	waitFor(t, "Ready", func() bool { return c.State() == client.Ready })
	if c.ID() != "alice" {
		t.Errorf("ID() = %q after reconnecting", c.ID())
	}
	env := chat(t, "after the restart")
	send(t, c, env)
	ev.waitEnv(t, "echo after the restart", withID(env.ID))

	ev.with(func(ev *events) {
		if len(ev.disconnected) != 1 {
			t.Fatalf("OnDisconnected got %v, want one loss", ev.disconnected)
		}
		if errors.Is(ev.disconnected[0], client.ErrClosed) || errors.Is(ev.disconnected[0], client.ErrRefused) {
			t.Errorf("the loss is reported as %v", ev.disconnected[0])
		}
		if len(ev.reconnecting) == 0 || ev.reconnecting[0] != 1 {
			t.Errorf("OnReconnecting got attempts %v", ev.reconnecting)
		}
		for i, n := range ev.reconnecting {
			if n != i+1 {
				t.Errorf("attempts %v are not 1, 2, ...", ev.reconnecting)
				break
			}
		}
		// Every failed attempt (the port is closed for a moment) was reported.
		if len(ev.errs) != len(ev.reconnecting)-1 {
			t.Errorf("%d errors for %d attempts: %v", len(ev.errs), len(ev.reconnecting), ev.errs)
		}
		// The states of the second connection follow the first's.
		want := []client.State{
			client.Connecting, client.Connected, client.Joined, client.Ready, client.Disconnected,
		}
		if len(ev.states) < len(want) {
			t.Fatalf("states %v", ev.states)
		}
		for i, s := range want {
			if ev.states[i] != s {
				t.Fatalf("states %v, want them to start with %v", ev.states, want)
			}
		}
		tail := ev.states[len(ev.states)-4:]
		for i, s := range want[:4] {
			if tail[i] != s {
				t.Fatalf("states %v, want them to end with %v", ev.states, want[:4])
			}
		}
	})
}

func TestNoReconnectWhenReplaced(t *testing.T) {
	g := startGateway(t, gateway.Options{})
	first, ev := connectRecorded(t, g, fast(client.Options{Token: "bob-token"}))
	second := connect(t, g, fast(client.Options{Token: "bob-token"}))
	evSecond := record(second)

	waitFor(t, "the replaced client to stop", func() bool {
		return ev.count(func(ev *events) int { return len(ev.disconnected) }) > 0
	})
	waitRunEnded(t, first)
	ev.with(func(ev *events) {
		if !errors.Is(ev.disconnected[0], client.ErrReplaced) {
			t.Errorf("OnDisconnected got %v, want ErrReplaced", ev.disconnected[0])
		}
		if len(ev.reconnecting) != 0 || len(ev.disconnected) != 1 {
			t.Errorf("the replaced client went on: reconnecting %v, disconnected %v", ev.reconnecting, ev.disconnected)
		}
	})
	if s := first.State(); s != client.Disconnected {
		t.Errorf("replaced client's State() = %v", s)
	}
	if err := first.Send(context.Background(), chat(t, "x")); !errors.Is(err, client.ErrNotConnected) {
		t.Errorf("Send on the replaced client = %v", err)
	}
	env := chat(t, "I am bob now")
	send(t, second, env)
	evSecond.waitEnv(t, "echo on the new connection", withID(env.ID))
	if s := second.State(); s != client.Ready {
		t.Errorf("new client's State() = %v", s)
	}
	// The gateway saw no new join of bob after the second connection's.
	evSecond.with(func(ev *events) {
		for _, e := range ev.envs {
			var p protocol.Presence
			if e.Kind == protocol.KindSystemPresence && e.DecodePayload(&p) == nil && p.Event == protocol.PresenceJoin && p.Participant.ID == "bob" {
				t.Errorf("bob joined again after being replaced: %s", e.Payload)
			}
		}
	})
}

// waitRunEnded waits until c has stopped for good: from then on it cannot
// reconnect by itself.
func waitRunEnded(t *testing.T, c *client.Client) {
	t.Helper()
	select {
	case <-client.RunEnded(c):
	case <-time.After(5 * time.Second):
		t.Fatal("the client is still running")
	}
}

func TestNoReconnectWhenKicked(t *testing.T) {
	g := startGateway(t, gateway.Options{})
	alice := connect(t, g, client.Options{Token: "alice-token"})
	bob, ev := connectRecorded(t, g, fast(client.Options{Token: "bob-token"}))
	kick := &protocol.Envelope{Kind: protocol.KindSpaceKick, Payload: []byte(`{"participant_id":"bob","reason":"testing"}`)}
	send(t, alice, kick)
	waitFor(t, "bob to be kicked", func() bool { return ev.count(func(ev *events) int { return len(ev.disconnected) }) > 0 })
	waitRunEnded(t, bob)
	ev.with(func(ev *events) {
		if !errors.Is(ev.disconnected[0], client.ErrKicked) {
			t.Errorf("OnDisconnected got %v, want ErrKicked", ev.disconnected[0])
		}
		if len(ev.reconnecting) != 0 {
			t.Errorf("a kicked client reconnected: %v", ev.reconnecting)
		}
	})
}

func TestNoReconnectWhenRefusedAfterRestart(t *testing.T) {
	g := startGateway(t, gateway.Options{})
	c, ev := connectRecorded(t, g, fast(client.Options{Token: "alice-token"}))
	// The gateway comes back with alice's token changed.
	cfg := loadSpace(t, `
space: {id: sdk}
participants:
  alice: {tokens: [new-alice-token], capabilities: [{kind: "*"}]}
`)
	restart(t, g, cfg, gateway.Options{})
	waitFor(t, "the refusal", func() bool {
		return ev.count(func(ev *events) int {
			for _, err := range ev.errs {
				if errors.Is(err, client.ErrRefused) {
					return 1
				}
			}
			return 0
		}) > 0
	})
	n := ev.count(func(ev *events) int { return len(ev.reconnecting) })
	time.Sleep(300 * time.Millisecond)
	if m := ev.count(func(ev *events) int { return len(ev.reconnecting) }); m != n {
		t.Errorf("reconnecting went on after the refusal: %d attempts, then %d", n, m)
	}
	if s := c.State(); s != client.Disconnected {
		t.Errorf("State() = %v after the refusal", s)
	}
	// Connect may be called again, and is refused again.
	if err := c.Connect(context.Background()); !errors.Is(err, client.ErrRefused) {
		t.Errorf("Connect after the refusal = %v", err)
	}
}

func TestGiveUpAfterMaxAttempts(t *testing.T) {
	g := startGateway(t, gateway.Options{})
	o := fast(client.Options{Token: "alice-token", MaxReconnectAttempts: 3})
	o.ReconnectDelay, o.MaxReconnectDelay = time.Millisecond, 5*time.Millisecond
	c, ev := connectRecorded(t, g, o)
	g.Stop(t)
	waitFor(t, "giving up", func() bool {
		return ev.count(func(ev *events) int {
			if n := len(ev.errs); n > 0 && errors.Is(ev.errs[n-1], client.ErrReconnectFailed) {
				return 1
			}
			return 0
		}) > 0
	})
	ev.with(func(ev *events) {
		if len(ev.reconnecting) != 3 || len(ev.errs) != 4 {
			t.Errorf("attempts %v, errors %v; want 3 attempts, 3 failures and giving up", ev.reconnecting, ev.errs)
		}
	})
	if s := c.State(); s != client.Disconnected {
		t.Errorf("State() = %v", s)
	}
}

func TestCloseWhileReconnecting(t *testing.T) {
	g := startGateway(t, gateway.Options{})
	o := fast(client.Options{Token: "alice-token"})
	o.ReconnectDelay, o.MaxReconnectDelay = time.Hour, time.Hour
	c, ev := connectRecorded(t, g, o)
	g.Stop(t)
	waitFor(t, "the backoff", func() bool { return ev.count(func(ev *events) int { return len(ev.reconnecting) }) > 0 })
	start := time.Now()
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	if took := time.Since(start); took > time.Second {
		t.Errorf("Close took %v during a backoff", took)
	}
	if err := c.Send(context.Background(), chat(t, "x")); !errors.Is(err, client.ErrClosed) {
		t.Errorf("Send after Close = %v", err)
	}
}

func TestCloseIsPrompt(t *testing.T) {
	g := startGateway(t, gateway.Options{})
	c := connect(t, g, client.Options{Token: "alice-token"})
	bob := connect(t, g, client.Options{Token: "bob-token"})
	evBob := record(bob)
	start := time.Now()
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	if took := time.Since(start); took > time.Second {
		t.Errorf("Close took %v", took)
	}
	// The gateway saw a clean leave.
	evBob.waitEnv(t, "alice's leave", func(e *protocol.Envelope) bool {
		var p protocol.Presence
		return e.Kind == protocol.KindSystemPresence && e.DecodePayload(&p) == nil &&
			p.Event == protocol.PresenceLeave && p.Participant.ID == "alice"
	})
}

// TestOnFinal: a client replaced by another connection with its token
// reports it once through OnFinal; one closed by its owner does not.
func TestOnFinal(t *testing.T) {
	g := startGateway(t, gateway.Options{})
	first := newClient(t, g, fast(client.Options{Token: "bob-token"}))
	finals := make(chan error, 4)
	first.OnFinal(func(err error) { finals <- err })
	if err := first.Connect(context.Background()); err != nil {
		t.Fatal(err)
	}
	connect(t, g, fast(client.Options{Token: "bob-token"}))
	select {
	case err := <-finals:
		if !errors.Is(err, client.ErrReplaced) || !client.Final(err) {
			t.Fatalf("OnFinal got %v, want ErrReplaced", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("OnFinal was not called for a replaced client")
	}
	waitRunEnded(t, first)
	if len(finals) != 0 {
		t.Fatalf("OnFinal called again: %v", <-finals)
	}

	closed := connect(t, g, fast(client.Options{Token: "alice-token"}))
	closedFinals := make(chan error, 1)
	closed.OnFinal(func(err error) { closedFinals <- err })
	_ = closed.Close()
	waitRunEnded(t, closed)
	select {
	case err := <-closedFinals:
		t.Fatalf("OnFinal called after Close: %v", err)
	default:
	}
	for _, err := range []error{client.ErrClosed, errors.New("connection lost"), nil} {
		if client.Final(err) {
			t.Errorf("Final(%v) = true", err)
		}
	}
	if !client.Final(fmt.Errorf("x: %w", client.ErrReconnectFailed)) || !client.Final(&client.RefusedError{Code: "unauthorized"}) {
		t.Error("Final misses reconnect failure or refusal")
	}
}
