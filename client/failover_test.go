package client_test

import (
	"context"
	"errors"
	"net"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/mew-protocol/mew/client"
	"github.com/mew-protocol/mew/gateway"
)

// deadURL returns a ws:// URL on which nothing listens: a port that was
// just free.
func deadURL(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	if err := ln.Close(); err != nil {
		t.Fatal(err)
	}
	return "ws://" + addr
}

func TestConnectTriesTheNextGateway(t *testing.T) {
	g := startGateway(t, gateway.Options{})
	dead := deadURL(t)
	c := newClient(t, nil, client.Options{Gateway: dead, Gateways: []string{"ws://" + g.Addr}, Token: "alice-token"})
	ev := record(c)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := c.Connect(ctx); err != nil {
		t.Fatalf("Connect with a dead gateway first: %v", err)
	}
	if !strings.HasPrefix(c.URL(), "ws://"+g.Addr+"/ws?") {
		t.Errorf("URL() = %q, want the live gateway's", c.URL())
	}
	env := chat(t, "through the second gateway")
	send(t, c, env)
	ev.waitEnv(t, "the echo", withID(env.ID))
	// The dead gateway's attempt is not a connection: no OnConnected for it.
	if n := ev.count(func(ev *events) int { return ev.connected }); n != 1 {
		t.Errorf("OnConnected ran %d times, want 1", n)
	}
}

func TestConnectAllGatewaysDead(t *testing.T) {
	a, b := deadURL(t), deadURL(t)
	c := newClient(t, nil, client.Options{Gateways: []string{a, b}, Token: "alice-token"})
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	err := c.Connect(ctx)
	if err == nil {
		t.Fatal("Connect succeeded with every gateway dead")
	}
	// The error names both attempts.
	for _, u := range []string{a, b} {
		if !strings.Contains(err.Error(), strings.TrimPrefix(u, "ws://")) {
			t.Errorf("Connect's error %q does not name %s", err, u)
		}
	}
	if errors.Is(err, client.ErrRefused) {
		t.Errorf("a dead gateway reported as a refusal: %v", err)
	}
}

func TestConnectStopsAtARefusal(t *testing.T) {
	g1 := startGateway(t, gateway.Options{})
	g2 := startGateway(t, gateway.Options{})
	c := newClient(t, nil, client.Options{Gateways: []string{"ws://" + g1.Addr, "ws://" + g2.Addr}, Token: "nobody-token"})
	ev := record(c)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := c.Connect(ctx); !errors.Is(err, client.ErrRefused) {
		t.Fatalf("Connect with an unknown token = %v, want ErrRefused", err)
	}
	// Every node of a space would refuse the token: the second is not tried.
	if !strings.HasPrefix(c.URL(), "ws://"+g1.Addr) {
		t.Errorf("URL() = %q: the client went on after a refusal", c.URL())
	}
	if n := ev.count(func(ev *events) int { return ev.connected }); n > 1 {
		t.Errorf("%d connections opened after a refusal", n)
	}
}

func TestReconnectMovesToTheNextGateway(t *testing.T) {
	g1 := startGateway(t, gateway.Options{})
	g2 := startGateway(t, gateway.Options{})
	g3 := startGateway(t, gateway.Options{})
	urls := []string{"ws://" + g1.Addr, "ws://" + g2.Addr, "ws://" + g3.Addr}
	c := newClient(t, nil, fast(client.Options{Gateways: urls, Token: "alice-token"}))
	ev := record(c)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := c.Connect(ctx); err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(c.URL(), urls[0]) {
		t.Fatalf("URL() = %q, want the first gateway", c.URL())
	}

	// The first node goes away: the client joins the second.
	g1.Stop(t)
	waitFor(t, "the welcome of the second gateway", func() bool { return welcomes(ev) == 2 && c.State() == client.Ready })
	if !strings.HasPrefix(c.URL(), urls[1]) {
		t.Errorf("after the first gateway stopped, URL() = %q, want %s", c.URL(), urls[1])
	}
	env := chat(t, "on the second node")
	send(t, c, env)
	ev.waitEnv(t, "the echo from the second gateway", withID(env.ID))

	// The second goes too: the next is the third, not the dead first.
	g2.Stop(t)
	waitFor(t, "the welcome of the third gateway", func() bool { return welcomes(ev) == 3 && c.State() == client.Ready })
	if !strings.HasPrefix(c.URL(), urls[2]) {
		t.Errorf("after the second gateway stopped, URL() = %q, want %s", c.URL(), urls[2])
	}
	ev.with(func(ev *events) {
		// Each drop was followed by a single attempt, straight on the next
		// live node.
		if !reflect.DeepEqual(ev.reconnecting, []int{1, 1}) {
			t.Errorf("reconnect attempts %v, want [1 1]", ev.reconnecting)
		}
	})
}

func TestReconnectRoundRobinPastDeadGateways(t *testing.T) {
	g := startGateway(t, gateway.Options{})
	live := "ws://" + g.Addr
	dead1, dead2 := deadURL(t), deadURL(t)
	c, ev := connectRecorded(t, nil, fast(client.Options{Gateway: live, Gateways: []string{dead1, dead2}, Token: "alice-token"}))
	// The live gateway restarts on its port: the client tries the two dead
	// ones and comes back round to it, with the backoff growing meanwhile.
	restart(t, g, g.Config, gateway.Options{})
	waitFor(t, "the welcome after coming round", func() bool { return welcomes(ev) == 2 && c.State() == client.Ready })
	if !strings.HasPrefix(c.URL(), live) {
		t.Errorf("URL() = %q, want %s", c.URL(), live)
	}
	ev.with(func(ev *events) {
		if n := len(ev.reconnecting); n < 3 || n%3 != 0 {
			t.Errorf("reconnect attempts %v: want the live gateway to be reached on attempt 3, 6, ...", ev.reconnecting)
		}
		if len(ev.errs) != len(ev.reconnecting)-1 {
			t.Errorf("%d failed attempts reported for %d attempts: %v", len(ev.errs), len(ev.reconnecting), ev.errs)
		}
	})
}

func TestGatewaysOptionChecks(t *testing.T) {
	for _, tc := range []struct {
		name string
		opts client.Options
		want string
	}{
		{"a bad second URL", client.Options{Gateways: []string{"ws://127.0.0.1:1", "ftp://x"}, Space: "s", Token: "t"}, "gateway URL 2"},
		{"spaces that disagree", client.Options{Gateways: []string{"ws://a/ws?space=x", "ws://b/ws?space=y"}, Token: "t"}, "names space"},
		{"too many URLs", client.Options{Gateways: make([]string, 65), Space: "s", Token: "t"}, "more than 64"},
		{"credentials", client.Options{Gateway: "ws://a", Gateways: []string{"ws://u:p@b"}, Space: "s", Token: "t"}, "credentials"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := client.New(tc.opts)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("New = %v, want an error containing %q", err, tc.want)
			}
		})
	}
	// The space may come from any URL of the list.
	c, err := client.New(client.Options{Gateways: []string{"ws://a", "ws://b/ws?space=x"}, Token: "t"})
	if err != nil {
		t.Fatalf("New with the space in the second URL: %v", err)
	}
	if got := c.URL(); got != "ws://a/ws?space=x" {
		t.Errorf("URL() = %q", got)
	}
	_ = c.Close()
}

func TestSplitGateways(t *testing.T) {
	for in, want := range map[string][]string{
		"":                          nil,
		"ws://a":                    {"ws://a"},
		" ws://a , ws://b:8080/ws,": {"ws://a", "ws://b:8080/ws"},
		",,,":                       nil,
	} {
		if got := client.SplitGateways(in); !reflect.DeepEqual(got, want) {
			t.Errorf("SplitGateways(%q) = %q, want %q", in, got, want)
		}
	}
}
