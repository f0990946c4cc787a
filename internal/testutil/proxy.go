package testutil

import (
	"net"
	"sync"
	"sync/atomic"
	"testing"
)

// Proxy forwards TCP connections to a target and can cut them the way a
// network partition does: silently, without a reset, so that each side
// notices only when what it expects stops arriving.
type Proxy struct {
	// Addr is where to connect instead of the target (127.0.0.1:port).
	Addr string

	target string
	l      net.Listener
	cut    atomic.Bool
	wg     sync.WaitGroup

	mu      sync.Mutex
	conns   map[net.Conn]struct{} // open accepted and dialled connections, closed on Heal and at the end
	stopped bool
}

// StartProxy listens on 127.0.0.1:0 and forwards each connection to target
// (host:port) until the test ends.
func StartProxy(t testing.TB, target string) *Proxy {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &Proxy{Addr: l.Addr().String(), target: target, l: l, conns: make(map[net.Conn]struct{})}
	p.wg.Go(p.accept)
	t.Cleanup(func() {
		_ = l.Close()
		p.mu.Lock()
		p.stopped = true
		p.mu.Unlock()
		p.closeAll()
		p.wg.Wait()
	})
	return p
}

// Cut stops the traffic: from now on bytes are dropped in both directions,
// and new connections are accepted but go nowhere.
func (p *Proxy) Cut() { p.cut.Store(true) }

// Heal ends the cut: the connections that lived through it are closed (as
// their peers have long given up on them), and new ones are forwarded.
func (p *Proxy) Heal() {
	p.closeAll()
	p.cut.Store(false)
}

// Reset closes every connection at once, as a network that resets them; new
// ones are forwarded (unless cut).
func (p *Proxy) Reset() { p.closeAll() }

func (p *Proxy) accept() {
	for {
		c, err := p.l.Accept()
		if err != nil {
			return
		}
		if !p.track(c) {
			return
		}
		p.wg.Go(func() { p.serve(c) })
	}
}

// serve forwards c to the target, or, during a cut, swallows it.
func (p *Proxy) serve(c net.Conn) {
	if p.cut.Load() {
		p.pipe(c, nil) // read and drop until Heal closes it
		return
	}
	up, err := net.Dial("tcp", p.target)
	if err != nil || !p.track(up) {
		if up != nil {
			_ = up.Close()
		}
		_ = c.Close()
		return
	}
	p.wg.Go(func() { p.pipe(up, c) })
	p.pipe(c, up)
}

// pipe copies from src to dst (nil: nowhere) until src fails, dropping
// what it reads during a cut; then it closes both.
func (p *Proxy) pipe(src, dst net.Conn) {
	buf := make([]byte, 32<<10)
	for {
		n, err := src.Read(buf)
		if n > 0 && dst != nil && !p.cut.Load() {
			if _, werr := dst.Write(buf[:n]); werr != nil {
				err = werr
			}
		}
		if err != nil {
			break
		}
	}
	p.untrack(src)
	if dst != nil {
		p.untrack(dst)
	}
}

// track remembers c, or closes it and reports false once the proxy has
// stopped.
func (p *Proxy) track(c net.Conn) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.stopped {
		_ = c.Close()
		return false
	}
	p.conns[c] = struct{}{}
	return true
}

func (p *Proxy) untrack(c net.Conn) {
	_ = c.Close()
	p.mu.Lock()
	delete(p.conns, c)
	p.mu.Unlock()
}

func (p *Proxy) closeAll() {
	p.mu.Lock()
	defer p.mu.Unlock()
	for c := range p.conns {
		_ = c.Close()
	}
	clear(p.conns)
}
