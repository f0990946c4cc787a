package client_test

import (
	"context"
	"errors"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"syscall"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/mew-protocol/mew/client"
	"github.com/mew-protocol/mew/gateway"
	"github.com/mew-protocol/mew/internal/testutil"
	"github.com/mew-protocol/mew/protocol"
	"github.com/mew-protocol/mew/space"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// sdkSpace is the space the tests join: a trusted alice, a limited bob and
// carol, who may only chat.
const sdkSpace = `
space: {id: sdk}
participants:
  alice: {tokens: [alice-token], capabilities: [{kind: "*"}]}
  bob: {tokens: [bob-token], capabilities: [{kind: chat}, {kind: "stream/*"}]}
  carol: {tokens: [carol-token], capabilities: [{kind: chat}]}
`

func startGateway(t testing.TB, opts gateway.Options) *testutil.Gateway {
	t.Helper()
	return testutil.StartGateway(t, sdkSpace, opts)
}

// newClient returns a client of g that is closed when the test ends. Gateway
// and Space are filled in when empty.
func newClient(t testing.TB, g *testutil.Gateway, opts client.Options) *client.Client {
	t.Helper()
	if opts.Gateway == "" && len(opts.Gateways) == 0 {
		opts.Gateway = "ws://" + g.Addr // g may be nil when a gateway is set
	}
	if opts.Space == "" {
		opts.Space = "sdk"
	}
	c, err := client.New(opts)
	if err != nil {
		t.Fatalf("client.New: %v", err)
	}
	t.Cleanup(func() {
		if err := c.Close(); err != nil {
			t.Errorf("Close: %v", err)
		}
	})
	return c
}

// connect is newClient followed by a successful Connect.
func connect(t testing.TB, g *testutil.Gateway, opts client.Options) *client.Client {
	t.Helper()
	c := newClient(t, g, opts)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := c.Connect(ctx); err != nil {
		t.Fatalf("Connect: %v", err)
	}
	return c
}

// connectRecorded is a new client (newClient) whose events are recorded
// from before it connects, so that its first welcome and state changes are
// among them; then it connects.
func connectRecorded(t testing.TB, g *testutil.Gateway, opts client.Options) (*client.Client, *events) {
	t.Helper()
	c := newClient(t, g, opts)
	ev := record(c)
	if err := c.Connect(context.Background()); err != nil {
		t.Fatal(err)
	}
	return c, ev
}

// waitFor polls cond until it holds, failing the test after 5 s.
func waitFor(t testing.TB, what string, cond func() bool) {
	t.Helper()
	testutil.WaitFor(t, 5*time.Second, what, cond)
}

// chat returns a chat envelope.
func chat(t testing.TB, text string) *protocol.Envelope {
	t.Helper()
	env, err := protocol.New(protocol.KindChat, protocol.Chat{Text: text})
	if err != nil {
		t.Fatal(err)
	}
	return env
}

func send(t testing.TB, c *client.Client, env *protocol.Envelope) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := c.Send(ctx, env); err != nil {
		t.Fatalf("Send %s: %v", env.Kind, err)
	}
}

// events records what a client's handlers saw, for tests to wait on.
type events struct {
	mu           sync.Mutex
	states       []client.State
	envs         []*protocol.Envelope
	welcomes     []*protocol.Welcome
	connected    int
	disconnected []error
	reconnecting []int
	errs         []error
}

func record(c *client.Client) *events {
	ev := &events{}
	c.OnStateChange(func(s client.State) { ev.mu.Lock(); ev.states = append(ev.states, s); ev.mu.Unlock() })
	c.OnMessage(func(e *protocol.Envelope) { ev.mu.Lock(); ev.envs = append(ev.envs, e); ev.mu.Unlock() })
	c.OnWelcome(func(w *protocol.Welcome) { ev.mu.Lock(); ev.welcomes = append(ev.welcomes, w); ev.mu.Unlock() })
	c.OnConnected(func() { ev.mu.Lock(); ev.connected++; ev.mu.Unlock() })
	c.OnDisconnected(func(err error) { ev.mu.Lock(); ev.disconnected = append(ev.disconnected, err); ev.mu.Unlock() })
	c.OnReconnecting(func(n int, _ time.Duration) {
		ev.mu.Lock()
		ev.reconnecting = append(ev.reconnecting, n)
		ev.mu.Unlock()
	})
	c.OnError(func(err error) { ev.mu.Lock(); ev.errs = append(ev.errs, err); ev.mu.Unlock() })
	return ev
}

// with runs f with the lock held.
func (ev *events) with(f func(ev *events)) {
	ev.mu.Lock()
	defer ev.mu.Unlock()
	f(ev)
}

func (ev *events) count(f func(ev *events) int) int {
	ev.mu.Lock()
	defer ev.mu.Unlock()
	return f(ev)
}

// find returns the first recorded envelope that satisfies ok.
func (ev *events) find(ok func(*protocol.Envelope) bool) *protocol.Envelope {
	ev.mu.Lock()
	defer ev.mu.Unlock()
	if i := slices.IndexFunc(ev.envs, ok); i >= 0 {
		return ev.envs[i]
	}
	return nil
}

// waitEnv waits for an envelope that satisfies ok.
func (ev *events) waitEnv(t testing.TB, what string, ok func(*protocol.Envelope) bool) *protocol.Envelope {
	t.Helper()
	var env *protocol.Envelope
	waitFor(t, what, func() bool { env = ev.find(ok); return env != nil })
	return env
}

func withID(id string) func(*protocol.Envelope) bool {
	return func(e *protocol.Envelope) bool { return e.ID == id }
}

func chatText(e *protocol.Envelope) string {
	var c protocol.Chat
	if e.Kind != protocol.KindChat || e.DecodePayload(&c) != nil {
		return ""
	}
	return c.Text
}

// restart stops g and serves a new gateway for cfg on g's address, as a
// gateway restarted on the same port. The new gateway stops when the test
// ends.
func restart(t testing.TB, g *testutil.Gateway, cfg *space.Config, opts gateway.Options) {
	t.Helper()
	g.Stop(t)
	opts.Spaces = []*space.Config{cfg}
	srv, err := gateway.New(opts)
	if err != nil {
		t.Fatalf("gateway.New: %v", err)
	}
	var ln net.Listener
	for deadline := time.Now().Add(5 * time.Second); ; {
		ln, err = net.Listen("tcp", g.Addr)
		if err == nil {
			break
		}
		if !errors.Is(err, syscall.EADDRINUSE) || time.Now().After(deadline) {
			t.Fatalf("listen on %s again: %v", g.Addr, err)
		}
		time.Sleep(20 * time.Millisecond)
	}
	hs := &http.Server{Handler: srv, ReadHeaderTimeout: 5 * time.Second}
	go func() { _ = hs.Serve(ln) }()
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		_ = hs.Shutdown(ctx)
		if err := srv.Close(ctx); err != nil && !errors.Is(err, gateway.ErrClosed) {
			t.Errorf("gateway close: %v", err)
		}
	})
}

// loadSpace writes yaml as a space config in a new directory and loads it.
func loadSpace(t testing.TB, yaml string) *space.Config {
	t.Helper()
	path := filepath.Join(t.TempDir(), "space.yaml")
	if err := os.WriteFile(path, []byte(yaml), 0o644); err != nil {
		t.Fatal(err)
	}
	cfg, err := space.Load(path)
	if err != nil {
		t.Fatal(err)
	}
	return cfg
}
