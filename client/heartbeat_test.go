package client_test

import (
	"errors"
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mew-protocol/mew/client"
	"github.com/mew-protocol/mew/gateway"
)

// proxy forwards TCP connections to a gateway and can freeze them: bytes
// stop flowing both ways while the connections stay open, as when a
// network path dies without a reset.
type proxy struct {
	ln     net.Listener
	target string
	gate   sync.RWMutex // write-locked while frozen
	mu     sync.Mutex
	conns  []net.Conn
	wg     sync.WaitGroup
}

func startProxy(t *testing.T, target string) *proxy {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &proxy{ln: ln, target: target}
	p.wg.Go(p.accept)
	t.Cleanup(p.close)
	return p
}

func (p *proxy) addr() string { return p.ln.Addr().String() }

func (p *proxy) accept() {
	for {
		in, err := p.ln.Accept()
		if err != nil {
			return
		}
		out, err := net.Dial("tcp", p.target)
		if err != nil {
			in.Close()
			continue
		}
		p.mu.Lock()
		p.conns = append(p.conns, in, out)
		p.mu.Unlock()
		p.wg.Go(func() { p.pipe(out, in) })
		p.wg.Go(func() { p.pipe(in, out) })
	}
}

// pipe copies src to dst, waiting at the gate before each write.
func (p *proxy) pipe(dst, src net.Conn) {
	defer dst.Close()
	defer src.Close()
	buf := make([]byte, 32<<10)
	for {
		n, err := src.Read(buf)
		if n > 0 {
			p.gate.RLock() // blocks while frozen
			_, werr := dst.Write(buf[:n])
			p.gate.RUnlock()
			if werr != nil {
				return
			}
		}
		if err != nil {
			return
		}
	}
}

func (p *proxy) freeze() { p.gate.Lock() }

// thaw drops the frozen connections, whose stale bytes must not reach
// anyone, and lets new ones through.
func (p *proxy) thaw() {
	p.mu.Lock()
	for _, c := range p.conns {
		c.Close()
	}
	p.conns = nil
	p.mu.Unlock()
	p.gate.Unlock()
}

func (p *proxy) close() {
	p.ln.Close()
	p.mu.Lock()
	for _, c := range p.conns {
		c.Close()
	}
	p.mu.Unlock()
	p.wg.Wait()
}

func TestHeartbeatDetectsADeadPath(t *testing.T) {
	g := startGateway(t, gateway.Options{})
	p := startProxy(t, g.Addr)
	o := fast(client.Options{Gateway: "ws://" + p.addr(), Token: "alice-token", HeartbeatInterval: 100 * time.Millisecond})
	o.WelcomeTimeout = 500 * time.Millisecond
	c := newClient(t, g, o)
	ev := record(c)
	if err := c.Connect(t.Context()); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "Ready", func() bool { return c.State() == client.Ready })

	p.freeze()
	start := time.Now()
	waitFor(t, "the heartbeat to drop the connection", func() bool {
		return ev.count(func(ev *events) int { return len(ev.disconnected) }) > 0
	})
	if took := time.Since(start); took > 2*time.Second {
		t.Errorf("a dead path was noticed after %v", took)
	}
	ev.with(func(ev *events) {
		if err := ev.disconnected[0]; !strings.Contains(err.Error(), "heartbeat") || errors.Is(err, client.ErrRefused) {
			t.Errorf("OnDisconnected got %v, want a heartbeat failure", err)
		}
	})
	p.thaw()
	waitFor(t, "the client to rejoin", func() bool { return welcomes(ev) == 2 && c.State() == client.Ready })
	env := chat(t, "through the thawed path")
	send(t, c, env)
	ev.waitEnv(t, "echo", withID(env.ID))
}

func TestCloseWithAFrozenGateway(t *testing.T) {
	g := startGateway(t, gateway.Options{})
	p := startProxy(t, g.Addr)
	c := connect(t, g, client.Options{Gateway: "ws://" + p.addr(), Token: "alice-token", HeartbeatInterval: -1})
	p.freeze()
	defer p.thaw()
	start := time.Now()
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	// The close handshake cannot finish; the client gives up on it.
	if took := time.Since(start); took > 4*time.Second {
		t.Errorf("Close took %v with a gateway that does not answer", took)
	}
}
