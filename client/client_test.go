package client_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/coder/websocket"
	"github.com/google/go-cmp/cmp"

	"github.com/mew-protocol/mew/client"
	"github.com/mew-protocol/mew/gateway"
	"github.com/mew-protocol/mew/protocol"
)

func TestNewChecksOptions(t *testing.T) {
	ok := client.Options{Gateway: "ws://127.0.0.1:1", Space: "sdk", Token: "secret-token-xyz"}
	if _, err := client.New(ok); err != nil {
		t.Fatalf("New(%+v): %v", ok, err)
	}
	bad := map[string]func(o *client.Options){
		"no gateway":       func(o *client.Options) { o.Gateway = "" },
		"no token":         func(o *client.Options) { o.Token = "" },
		"no space":         func(o *client.Options) { o.Space = "" },
		"bad scheme":       func(o *client.Options) { o.Gateway = "ftp://127.0.0.1:1" },
		"no host":          func(o *client.Options) { o.Gateway = "ws:///ws" },
		"other space":      func(o *client.Options) { o.Gateway = "ws://127.0.0.1:1/ws?space=other" },
		"negative delay":   func(o *client.Options) { o.ReconnectDelay = -time.Second },
		"negative queue":   func(o *client.Options) { o.SendQueue = -1 },
		"long participant": func(o *client.Options) { o.ParticipantID = strings.Repeat("x", protocol.MaxIDLen+1) },
	}
	for name, mutate := range bad {
		o := ok
		mutate(&o)
		if _, err := client.New(o); err == nil {
			t.Errorf("%s: New accepted %+v", name, o)
		} else if strings.Contains(err.Error(), o.Token) && o.Token != "" {
			t.Errorf("%s: the error shows the token: %v", name, err)
		}
	}
	// The space may come from the URL alone.
	o := client.Options{Gateway: "ws://127.0.0.1:1/?space=sdk", Token: "t"}
	if _, err := client.New(o); err != nil {
		t.Errorf("space in the URL: %v", err)
	}
}

func TestConnectBearer(t *testing.T) {
	g := startGateway(t, gateway.Options{})
	c := connect(t, g, client.Options{Token: "alice-token"})
	if got := c.ID(); got != "alice" {
		t.Errorf("ID() = %q, want alice", got)
	}
	w := c.Welcome()
	if w == nil || w.You.ID != "alice" || len(w.You.Capabilities) == 0 {
		t.Fatalf("Welcome() = %+v", w)
	}
	w.You.ID = "changed"
	w.You.Capabilities[0][0] = 'X'
	if again := c.Welcome(); again.You.ID != "alice" || again.You.Capabilities[0][0] != '{' {
		t.Errorf("Welcome() returned the client's own copy: %+v", again)
	}
	waitFor(t, "Ready", func() bool { return c.State() == client.Ready })
}

func TestConnectJoinMessage(t *testing.T) {
	g := startGateway(t, gateway.Options{})
	bob := connect(t, g, client.Options{Token: "bob-token", JoinMessage: true})
	if got := bob.ID(); got != "bob" {
		t.Errorf("ID() = %q, want bob", got)
	}

	t.Run("alias", func(t *testing.T) {
		alice := connect(t, g, client.Options{Token: "alice-token", ParticipantID: "alice-2"})
		if got := alice.ID(); got != "alice-2" {
			t.Fatalf("ID() = %q, want alice-2", got)
		}
		ev := record(alice)
		env := chat(t, "as an alias")
		send(t, alice, env)
		echo := ev.waitEnv(t, "echo", withID(env.ID))
		if echo.From != "alice-2" {
			t.Errorf("echo from %q, want alice-2", echo.From)
		}
	})
}

func TestConnectRefused(t *testing.T) {
	g := startGateway(t, gateway.Options{})
	for _, join := range []bool{false, true} {
		t.Run(fmt.Sprintf("join message %v", join), func(t *testing.T) {
			c := newClient(t, g, client.Options{Token: "wrong-token", JoinMessage: join, Reconnect: true, ReconnectDelay: time.Millisecond})
			ev := record(c)
			start := time.Now()
			err := c.Connect(context.Background())
			if took := time.Since(start); took > 2*time.Second {
				t.Errorf("refusal took %v", took)
			}
			var rf *client.RefusedError
			if !errors.Is(err, client.ErrRefused) || !errors.As(err, &rf) || rf.Code != protocol.ErrorUnauthorized {
				t.Fatalf("Connect = %v, want a refusal with code unauthorized", err)
			}
			if strings.Contains(err.Error(), "wrong-token") {
				t.Errorf("the error shows the token: %v", err)
			}
			if s := c.State(); s != client.Disconnected {
				t.Errorf("State() = %v after a refusal", s)
			}
			time.Sleep(50 * time.Millisecond) // time enough for a reconnect, which must not happen
			ev.with(func(ev *events) {
				if len(ev.reconnecting) != 0 {
					t.Errorf("reconnected after a refusal: %v", ev.reconnecting)
				}
				if len(ev.disconnected) != 1 || !errors.Is(ev.disconnected[0], client.ErrRefused) {
					t.Errorf("OnDisconnected got %v, want one refusal", ev.disconnected)
				}
			})
			// The client may try again.
			if err := c.Connect(context.Background()); !errors.Is(err, client.ErrRefused) {
				t.Errorf("second Connect = %v", err)
			}
		})
	}
}

func TestConnectTimeout(t *testing.T) {
	g := startGateway(t, gateway.Options{})
	c := newClient(t, g, client.Options{Token: "alice-token"})
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := c.Connect(ctx); !errors.Is(err, context.Canceled) {
		t.Errorf("Connect with a cancelled context = %v", err)
	}

	// A WebSocket server that never welcomes anyone.
	mute := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		conn, err := websocket.Accept(w, r, nil)
		if err != nil {
			return
		}
		defer conn.CloseNow()
		for {
			if _, _, err := conn.Read(r.Context()); err != nil {
				return
			}
		}
	}))
	defer mute.Close()
	c2 := newClient(t, g, client.Options{Gateway: "ws" + strings.TrimPrefix(mute.URL, "http"), Token: "alice-token", WelcomeTimeout: 100 * time.Millisecond})
	start := time.Now()
	err := c2.Connect(context.Background())
	if !errors.Is(err, context.DeadlineExceeded) || errors.Is(err, client.ErrRefused) {
		t.Errorf("Connect to a server that never welcomes = %v", err)
	}
	if took := time.Since(start); took > 3*time.Second {
		t.Errorf("the welcome timeout took %v", took)
	}
	if err := c2.Close(); err != nil {
		t.Fatal(err)
	}

	// Nobody listening.
	g.Stop(t)
	c3 := newClient(t, g, client.Options{Token: "alice-token"})
	if err := c3.Connect(context.Background()); err == nil || errors.Is(err, client.ErrRefused) {
		t.Errorf("Connect to a stopped gateway = %v", err)
	}
}

func TestStatesInOrder(t *testing.T) {
	g := startGateway(t, gateway.Options{})
	c := newClient(t, g, client.Options{Token: "alice-token"})
	ev := record(c)
	if s := c.State(); s != client.Disconnected {
		t.Errorf("State() before Connect = %v", s)
	}
	if err := c.Connect(context.Background()); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "Ready", func() bool { return c.State() == client.Ready })
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	want := []client.State{client.Connecting, client.Connected, client.Joined, client.Ready, client.Disconnected}
	ev.with(func(ev *events) {
		if diff := cmp.Diff(want, ev.states); diff != "" {
			t.Errorf("states (-want +got):\n%s", diff)
		}
		if ev.connected != 1 || len(ev.welcomes) != 1 {
			t.Errorf("connected %d, welcomes %d; want 1, 1", ev.connected, len(ev.welcomes))
		}
		if len(ev.disconnected) != 1 || !errors.Is(ev.disconnected[0], client.ErrClosed) {
			t.Errorf("OnDisconnected got %v, want ErrClosed", ev.disconnected)
		}
		if len(ev.envs) == 0 || ev.envs[0].Kind != protocol.KindSystemWelcome {
			t.Errorf("first envelope is not the welcome")
		}
	})
	if s := c.State(); s != client.Disconnected {
		t.Errorf("State() after Close = %v", s)
	}
	for _, s := range append(want, client.State(42)) {
		if s.String() == "" {
			t.Errorf("State(%d) has no name", s)
		}
	}
}

func TestSendFillsAndEchoes(t *testing.T) {
	g := startGateway(t, gateway.Options{})
	alice := connect(t, g, client.Options{Token: "alice-token"})
	bob := connect(t, g, client.Options{Token: "bob-token"})
	evA, evB := record(alice), record(bob)

	env := chat(t, "hello bob")
	env.To = []string{"bob"}
	before := time.Now().Add(-time.Second)
	send(t, alice, env)
	if env.Protocol != protocol.Version || env.ID == "" || env.From != "alice" || env.TS == "" {
		t.Fatalf("Send did not fill the envelope: %+v", env)
	}
	if ts, err := env.Time(); err != nil || ts.Before(before) {
		t.Errorf("ts %q: %v", env.TS, err)
	}
	for name, ev := range map[string]*events{"alice": evA, "bob": evB} {
		got := ev.waitEnv(t, name+"'s copy", withID(env.ID))
		if diff := cmp.Diff(env.AppendJSON(nil), got.AppendJSON(nil)); diff != "" {
			t.Errorf("%s received a different envelope (-sent +got):\n%s", name, diff)
		}
	}

	// What the caller fills is kept.
	own := chat(t, "mine")
	own.ID, own.TS = "my-id", "2026-01-02T03:04:05.678Z"
	send(t, alice, own)
	if got := evB.waitEnv(t, "own id", withID("my-id")); got.TS != own.TS {
		t.Errorf("ts = %q, want %q", got.TS, own.TS)
	}

	// The gateway refuses what bob may not send, and says so.
	grant := &protocol.Envelope{Kind: protocol.KindMCPRequest, Payload: []byte(`{"method":"tools/list"}`)}
	send(t, bob, grant)
	refusal := evB.waitEnv(t, "capability_violation", func(e *protocol.Envelope) bool {
		return e.Kind == protocol.KindSystemError && e.CorrelatesWith(grant.ID)
	})
	var se protocol.SystemError
	if err := refusal.DecodePayload(&se); err != nil || se.Error != protocol.ErrorCapabilityViolation {
		t.Errorf("refusal %s: %v", refusal.Payload, err)
	}
}

func TestSendErrors(t *testing.T) {
	g := startGateway(t, gateway.Options{})
	c := newClient(t, g, client.Options{Token: "alice-token"})
	ctx := context.Background()
	if err := c.Send(ctx, chat(t, "early")); !errors.Is(err, client.ErrNotConnected) {
		t.Errorf("Send before Connect = %v", err)
	}
	if err := c.SendStreamData(ctx, "stream-1", []byte("x")); !errors.Is(err, client.ErrNotConnected) {
		t.Errorf("SendStreamData before Connect = %v", err)
	}
	if err := c.Connect(ctx); err != nil {
		t.Fatal(err)
	}
	if err := c.Connect(ctx); !errors.Is(err, client.ErrAlreadyConnected) {
		t.Errorf("second Connect = %v", err)
	}
	if err := c.Send(ctx, nil); err == nil {
		t.Error("Send(nil) succeeded")
	}
	if err := c.Send(ctx, &protocol.Envelope{}); !errors.Is(err, protocol.ErrMissingKind) {
		t.Errorf("Send without kind = %v", err)
	}
	if err := c.Send(ctx, &protocol.Envelope{Kind: protocol.KindChat}); !errors.Is(err, protocol.ErrMissingPayload) {
		t.Errorf("Send of a chat without payload = %v", err)
	}
	if err := c.SendStreamData(ctx, "a#b", nil); err == nil {
		t.Error("SendStreamData with '#' in the id succeeded")
	}
	if err := c.SendStreamData(ctx, "", nil); !errors.Is(err, protocol.ErrEmptyStreamID) {
		t.Errorf("SendStreamData with an empty id = %v", err)
	}
	done, cancel := context.WithCancel(ctx)
	cancel()
	_ = c.Send(done, chat(t, "maybe")) // queued or ctx error; either is fine, it must not block

	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	if err := c.Close(); err != nil {
		t.Errorf("second Close = %v", err)
	}
	if err := c.Send(ctx, chat(t, "late")); !errors.Is(err, client.ErrClosed) {
		t.Errorf("Send after Close = %v", err)
	}
	if err := c.SendStreamData(ctx, "stream-1", nil); !errors.Is(err, client.ErrClosed) {
		t.Errorf("SendStreamData after Close = %v", err)
	}
	if err := c.Connect(ctx); !errors.Is(err, client.ErrClosed) {
		t.Errorf("Connect after Close = %v", err)
	}
}

func TestConcurrentSends(t *testing.T) {
	const senders, each = 100, 50
	g := startGateway(t, gateway.Options{Limits: gateway.Limits{Rate: -1, SendQueue: 1 << 14}})
	c := connect(t, g, client.Options{Token: "alice-token"})
	var mu sync.Mutex
	seen := make(map[string]int)
	c.OnKind(protocol.KindChat, func(e *protocol.Envelope) {
		mu.Lock()
		seen[e.ID]++
		mu.Unlock()
	})
	ids := make([][]string, senders)
	var wg sync.WaitGroup
	for i := range senders {
		wg.Go(func() {
			for j := range each {
				env := chat(t, fmt.Sprintf("%d/%d", i, j))
				if err := c.Send(context.Background(), env); err != nil {
					t.Errorf("Send: %v", err)
					return
				}
				ids[i] = append(ids[i], env.ID)
			}
		})
	}
	wg.Wait()
	waitFor(t, "every echo", func() bool { mu.Lock(); defer mu.Unlock(); return len(seen) >= senders*each })
	time.Sleep(50 * time.Millisecond) // time for duplicates to show
	mu.Lock()
	defer mu.Unlock()
	if len(seen) != senders*each {
		t.Errorf("%d distinct echoes, want %d", len(seen), senders*each)
	}
	for _, list := range ids {
		for _, id := range list {
			if seen[id] != 1 {
				t.Fatalf("envelope %s echoed %d times", id, seen[id])
			}
		}
	}
}

func TestKindHandlersAndRemoval(t *testing.T) {
	g := startGateway(t, gateway.Options{})
	c := connect(t, g, client.Options{Token: "alice-token"})
	ev := record(c)
	var mu sync.Mutex
	var chats, reasoning []string
	removeChat := c.OnKind(protocol.KindChat, func(e *protocol.Envelope) {
		mu.Lock()
		chats = append(chats, chatText(e))
		mu.Unlock()
	})
	c.OnKind(protocol.KindReasoningThought, func(e *protocol.Envelope) {
		mu.Lock()
		reasoning = append(reasoning, e.ID)
		mu.Unlock()
	})
	order := make(chan string, 4)
	c.OnMessage(func(e *protocol.Envelope) {
		if e.Kind == protocol.KindChat {
			order <- "message"
		}
	})
	c.OnKind(protocol.KindChat, func(*protocol.Envelope) { order <- "kind" })

	first := chat(t, "one")
	send(t, c, first)
	thought := &protocol.Envelope{Kind: protocol.KindReasoningThought, Payload: []byte(`{"message":"hm"}`)}
	send(t, c, thought)
	ev.waitEnv(t, "the thought", withID(thought.ID))
	if a, b := <-order, <-order; a != "message" || b != "kind" {
		t.Errorf("handlers ran as %s, %s; want OnMessage before OnKind", a, b)
	}

	removeChat()
	removeChat() // twice is harmless
	second := chat(t, "two")
	send(t, c, second)
	ev.waitEnv(t, "the second chat", withID(second.ID))
	<-order
	<-order
	mu.Lock()
	defer mu.Unlock()
	if diff := cmp.Diff([]string{"one"}, chats); diff != "" {
		t.Errorf("chat handler (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]string{thought.ID}, reasoning); diff != "" {
		t.Errorf("reasoning handler (-want +got):\n%s", diff)
	}
}

func TestHandlerPanicIsRecovered(t *testing.T) {
	g := startGateway(t, gateway.Options{})
	c := connect(t, g, client.Options{Token: "alice-token"})
	ev := record(c)
	c.OnKind(protocol.KindChat, func(e *protocol.Envelope) {
		if chatText(e) == "boom" {
			panic("handler exploded")
		}
	})
	c.OnError(func(error) { panic("and so did the error handler") })
	send(t, c, chat(t, "boom"))
	after := chat(t, "still here")
	send(t, c, after)
	ev.waitEnv(t, "the chat after the panic", withID(after.ID))
	ev.with(func(ev *events) {
		if len(ev.errs) != 1 || !errors.Is(ev.errs[0], client.ErrHandlerPanic) || !strings.Contains(ev.errs[0].Error(), "handler exploded") {
			t.Errorf("OnError got %v, want one ErrHandlerPanic", ev.errs)
		}
	})
	if s := c.State(); s != client.Ready {
		t.Errorf("State() = %v after a panic", s)
	}
}

func TestWelcomeUpdateOnGrant(t *testing.T) {
	g := startGateway(t, gateway.Options{})
	alice := connect(t, g, client.Options{Token: "alice-token"})
	bob := connect(t, g, client.Options{Token: "bob-token"})
	ev := record(bob)
	grant := &protocol.Envelope{Kind: protocol.KindCapabilityGrant,
		Payload: []byte(`{"recipient":"bob","capabilities":[{"kind":"mcp/request"}]}`)}
	send(t, alice, grant)
	// The handler may or may not have seen the first welcome too: Connect
	// returns before the handlers have run for it.
	waitFor(t, "the updated welcome", func() bool {
		return ev.count(func(ev *events) int {
			if n := len(ev.welcomes); n > 0 && strings.Contains(fmt.Sprintf("%s", ev.welcomes[n-1].You.Capabilities), "mcp/request") {
				return n
			}
			return 0
		}) > 0
	})
	if !strings.Contains(fmt.Sprintf("%s", bob.Welcome().You.Capabilities), "mcp/request") {
		t.Errorf("Welcome() is not the updated welcome")
	}
	// Now bob may send it.
	req := &protocol.Envelope{Kind: protocol.KindMCPRequest, Payload: []byte(`{"method":"tools/list"}`)}
	send(t, bob, req)
	ev.waitEnv(t, "bob's request", withID(req.ID))
}

func TestStreamData(t *testing.T) {
	g := startGateway(t, gateway.Options{})
	alice := connect(t, g, client.Options{Token: "alice-token"})
	bob := connect(t, g, client.Options{Token: "bob-token"})
	evA := record(alice)

	frames := make(chan string, 16)
	bob.OnKind(protocol.KindStreamOpen, func(e *protocol.Envelope) {
		var open protocol.StreamOpen
		if err := e.DecodePayload(&open); err == nil {
			bob.OnStream(open.StreamID, func(data []byte) { frames <- string(data) })
		}
	})
	req := &protocol.Envelope{Kind: protocol.KindStreamRequest, Payload: []byte(`{"direction":"upload"}`)}
	send(t, alice, req)
	open := evA.waitEnv(t, "stream/open", func(e *protocol.Envelope) bool {
		return e.Kind == protocol.KindStreamOpen || (e.Kind == protocol.KindSystemError && e.CorrelatesWith(req.ID))
	})
	if open.Kind != protocol.KindStreamOpen {
		t.Fatalf("stream/request refused: %s", open.Payload)
	}
	var p protocol.StreamOpen
	if err := open.DecodePayload(&p); err != nil || p.StreamID == "" {
		t.Fatalf("stream/open payload %s: %v", open.Payload, err)
	}
	ctx := context.Background()
	want := []string{"one", "", "three#with#hashes", "\x00\xffbinary"}
	for _, f := range want {
		if err := alice.SendStreamData(ctx, p.StreamID, []byte(f)); err != nil {
			t.Fatal(err)
		}
	}
	var got []string
	timeout := time.After(5 * time.Second)
	for len(got) < len(want) {
		select {
		case f := <-frames:
			got = append(got, f)
		case <-timeout:
			t.Fatalf("frames received: %q, want %q (alice saw errors: %v)", got, want, evA.find(func(e *protocol.Envelope) bool {
				return e.Kind == protocol.KindSystemError
			}))
		}
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("frames (-want +got):\n%s", diff)
	}

	// Who joins later learns of the stream from the welcome.
	carol := connect(t, g, client.Options{Token: "carol-token"})
	w := carol.Welcome()
	if len(w.ActiveStreams) != 1 || w.ActiveStreams[0].StreamID != p.StreamID || w.ActiveStreams[0].Owner != "alice" {
		t.Fatalf("carol's welcome: active streams %+v", w.ActiveStreams)
	}
	w.ActiveStreams[0].StreamID = "changed"
	if carol.Welcome().ActiveStreams[0].StreamID != p.StreamID {
		t.Error("Welcome() returned the client's own copy of the streams")
	}
}

func TestRemoveHandlers(t *testing.T) {
	g := startGateway(t, gateway.Options{})
	c := newClient(t, g, client.Options{Token: "alice-token"})
	var mu sync.Mutex
	calls := map[string]int{}
	count := func(name string) { mu.Lock(); calls[name]++; mu.Unlock() }
	removes := []func(){
		c.OnMessage(func(*protocol.Envelope) { count("message") }),
		c.OnWelcome(func(*protocol.Welcome) { count("welcome") }),
		c.OnStateChange(func(client.State) { count("state") }),
		c.OnConnected(func() { count("connected") }),
		c.OnDisconnected(func(error) { count("disconnected") }),
		c.OnReconnecting(func(int, time.Duration) { count("reconnecting") }),
		c.OnError(func(error) { count("error") }),
		c.OnStream("stream-1", func([]byte) { count("stream") }),
		c.OnKind(protocol.KindChat, func(*protocol.Envelope) { count("kind") }),
		// Nil handlers are ignored.
		c.OnMessage(nil), c.OnKind("chat", nil), c.OnWelcome(nil), c.OnStateChange(nil), c.OnConnected(nil),
		c.OnDisconnected(nil), c.OnReconnecting(nil), c.OnError(nil), c.OnStream("x", nil),
	}
	for _, remove := range removes {
		remove()
	}
	kept := make(chan struct{}, 8)
	c.OnMessage(func(*protocol.Envelope) { kept <- struct{}{} })
	if err := c.Connect(context.Background()); err != nil {
		t.Fatal(err)
	}
	send(t, c, chat(t, "anyone?"))
	<-kept // the welcome
	<-kept // the chat
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(calls) != 0 {
		t.Errorf("removed handlers ran: %v", calls)
	}
}

func TestRefusedErrorText(t *testing.T) {
	for _, tc := range []struct {
		err  client.RefusedError
		want string
	}{
		{client.RefusedError{}, "client: join refused"},
		{client.RefusedError{Code: "unauthorized"}, "client: join refused: unauthorized"},
		{client.RefusedError{Message: "go away"}, "client: join refused: go away"},
		{client.RefusedError{Code: "unauthorized", Message: "unknown token"}, "client: join refused: unauthorized: unknown token"},
	} {
		if got := tc.err.Error(); got != tc.want {
			t.Errorf("%+v: Error() = %q, want %q", tc.err, got, tc.want)
		}
	}
}

func TestHeartbeat(t *testing.T) {
	g := startGateway(t, gateway.Options{Timing: gateway.Timing{PingInterval: 200 * time.Millisecond, PongTimeout: 200 * time.Millisecond}})
	pinging := connect(t, g, client.Options{Token: "alice-token", HeartbeatInterval: 100 * time.Millisecond})
	silent := connect(t, g, client.Options{Token: "bob-token", HeartbeatInterval: -1})
	evs := []*events{record(pinging), record(silent)}
	time.Sleep(time.Second)
	for i, c := range []*client.Client{pinging, silent} {
		if s := c.State(); s != client.Ready {
			t.Errorf("client %d: State() = %v after idling", i, s)
		}
		evs[i].with(func(ev *events) {
			if len(ev.disconnected) != 0 {
				t.Errorf("client %d disconnected: %v", i, ev.disconnected)
			}
		})
		env := chat(t, "still there")
		send(t, c, env)
		evs[i].waitEnv(t, "echo", withID(env.ID))
	}
}

func TestSlowHandlersDropTheConnection(t *testing.T) {
	g := startGateway(t, gateway.Options{})
	c := connect(t, g, client.Options{Token: "bob-token", InboundQueue: 4, Reconnect: true, ReconnectDelay: 20 * time.Millisecond})
	alice := connect(t, g, client.Options{Token: "alice-token"})
	ev := record(c)
	release := make(chan struct{})
	var once sync.Once
	c.OnKind(protocol.KindChat, func(*protocol.Envelope) { once.Do(func() { <-release }) })
	for i := range 20 {
		send(t, alice, chat(t, fmt.Sprint("flood ", i)))
	}
	waitFor(t, "the connection to drop", func() bool { return c.State() != client.Ready })
	close(release)
	waitFor(t, "OnDisconnected", func() bool { return ev.count(func(ev *events) int { return len(ev.disconnected) }) > 0 })
	ev.with(func(ev *events) {
		if !errors.Is(ev.disconnected[0], client.ErrSlowConsumer) {
			t.Errorf("OnDisconnected got %v, want ErrSlowConsumer", ev.disconnected[0])
		}
	})
	// It rejoins, resuming after the last chat its handlers took: the
	// replay of the flood is a burst its queue of 4 may not hold either,
	// and it may drop and resume again, each time further on, until it
	// has caught up.
	env := chat(t, "back")
	waitFor(t, "the client to rejoin and take a chat", func() bool {
		if c.State() != client.Ready {
			return false
		}
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		return c.Send(ctx, env) == nil
	})
	ev.waitEnv(t, "echo after rejoining", withID(env.ID))
	for i := range 20 {
		ev.waitEnv(t, "every chat of the flood, the last after the resume", func(e *protocol.Envelope) bool { return chatText(e) == fmt.Sprint("flood ", i) })
	}
}

// TestMalformedMessages needs a gateway that misbehaves, which the real one
// never does: a WebSocket server that welcomes the client and then sends
// what no gateway should.
func TestMalformedMessages(t *testing.T) {
	script := []string{
		`{"protocol":"mew/v0.4","id":"w1","ts":"2026-01-01T00:00:00.000Z","from":"system:gateway","to":["alice"],"kind":"system/welcome","payload":{"you":{"id":"alice","capabilities":[]},"participants":[]}}`,
		`not json`,
		`{"kind":"chat","kind":"chat","payload":{"text":"duplicate key"}}`,
		`##no-stream-id`,
		`{"protocol":"mew/v0.4","id":"w2","from":"system:gateway","kind":"system/welcome","payload":{"you":{}}}`,
		// A welcome relayed from a participant would make the client someone else.
		`{"protocol":"mew/v0.4","id":"w3","from":"bob","to":["alice"],"kind":"system/welcome","payload":{"you":{"id":"mallory","capabilities":[{"kind":"*"}]},"participants":[]}}`,
		`{"protocol":"mew/v0.4","id":"last","from":"bob","kind":"chat","payload":{"text":"fine"}}`,
	}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		conn, err := websocket.Accept(w, r, nil)
		if err != nil {
			return
		}
		defer conn.CloseNow()
		for _, msg := range script {
			if err := conn.Write(r.Context(), websocket.MessageText, []byte(msg)); err != nil {
				return
			}
		}
		for {
			if _, _, err := conn.Read(r.Context()); err != nil {
				return
			}
		}
	}))
	defer srv.Close()
	c, ev := connectRecorded(t, nil, client.Options{Gateway: "ws" + strings.TrimPrefix(srv.URL, "http"), Space: "sdk", Token: "alice-token"})
	ev.waitEnv(t, "the last envelope", withID("last"))
	ev.with(func(ev *events) {
		if len(ev.errs) != 5 {
			t.Fatalf("OnError got %d errors, want 5: %v", len(ev.errs), ev.errs)
		}
		for i, err := range ev.errs {
			want := client.ErrBadMessage
			if i == 4 {
				want = client.ErrNotFromGateway
			}
			if !errors.Is(err, want) {
				t.Errorf("OnError got %v, want %v", err, want)
			}
		}
		if len(ev.welcomes) != 1 || slices.ContainsFunc(ev.envs, func(e *protocol.Envelope) bool { return e.ID == "w3" }) {
			t.Errorf("the forged welcome was delivered: %d welcomes", len(ev.welcomes))
		}
		if len(ev.disconnected) != 0 {
			t.Errorf("disconnected: %v", ev.disconnected)
		}
	})
	if s := c.State(); s != client.Ready {
		t.Errorf("State() = %v", s)
	}
	if id := c.ID(); id != "alice" {
		t.Errorf("ID() = %q after a forged welcome", id)
	}
}
