package gateway

// Connection limits. A gateway has a fixed budget of file descriptors and
// memory; these limits keep any one class of client from spending all of it:
//
//   - open connections are capped (Options.Limits.MaxConnections). Past the cap a
//     new connection gets a plain 503 and is closed at once. Near the cap
//     (within Options.Limits.ConnectionHeadroom) plain HTTP requests get 503 and
//     idle keep-alive connections are closed, so the headroom stays free for
//     participants joining over WebSocket;
//   - connections that have not yet authenticated (a WebSocket waiting for
//     its join message) are capped globally and per remote address, and may
//     send one small message: the join;
//   - every HTTP connection has read, write and idle timeouts; a WebSocket
//     has none once it is upgraded (pings find dead peers instead).

import (
	"net"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// HTTPServer returns an http.Server that serves srv with the gateway's
// timeouts and closes idle connections when connections run short. Serve it
// on srv.Listener(ln), which enforces the connection cap.
func (srv *Server) HTTPServer() *http.Server {
	return &http.Server{
		Handler:           srv,
		ReadHeaderTimeout: min(srv.opts.Timing.RequestTimeout, 10*time.Second),
		ReadTimeout:       srv.opts.Timing.RequestTimeout,
		WriteTimeout:      srv.opts.Timing.RequestTimeout,
		IdleTimeout:       srv.opts.Timing.IdleTimeout,
		MaxHeaderBytes:    maxHeaderBytes,
		ConnState:         srv.conns.state,
		ErrorLog:          srv.errorLog,
	}
}

// maxHeaderBytes bounds a request's header: a bearer token and a few
// headers need far less than net/http's 1 MiB default.
const maxHeaderBytes = 16 << 10

// Listener wraps ln so that at most Options.Limits.MaxConnections connections are
// open at once; past that a connection is answered 503 and closed. When ln
// listens on every address (0.0.0.0, ::), requests naming any IP address in
// their Host header are served (see Options.AllowedHosts).
func (srv *Server) Listener(ln net.Listener) net.Listener {
	srv.hosts.listening(ln.Addr())
	return &limitListener{Listener: ln, c: &srv.conns}
}

// connTable counts the open connections and keeps the idle ones, so that
// they can be closed when the headroom is needed.
type connTable struct {
	max, soft int64 // hard cap; above soft, only WebSocket upgrades are served
	open      atomic.Int64
	refused   prometheus.Counter

	mu   sync.Mutex
	idle map[net.Conn]struct{}
}

// crowded reports whether connections are within the headroom of the cap.
func (t *connTable) crowded() bool { return t.open.Load() > t.soft }

// state is the http.Server's ConnState hook: while crowded, a connection
// that falls idle is closed rather than kept alive.
func (t *connTable) state(c net.Conn, st http.ConnState) {
	t.mu.Lock()
	defer t.mu.Unlock()
	switch st {
	case http.StateIdle:
		if t.crowded() {
			_ = c.Close()
			return
		}
		if t.idle == nil {
			t.idle = make(map[net.Conn]struct{})
		}
		t.idle[c] = struct{}{}
	default:
		delete(t.idle, c)
	}
}

// shed closes idle keep-alive connections to make room.
func (t *connTable) shed() {
	t.mu.Lock()
	defer t.mu.Unlock()
	for c := range t.idle {
		_ = c.Close()
		delete(t.idle, c)
	}
}

type limitListener struct {
	net.Listener
	c *connTable
}

// busyResponse is what a connection over the cap gets, written by hand
// because no http.Server will ever see it (TestBusyResponse checks that it
// parses).
const busyResponse = "HTTP/1.1 503 Service Unavailable\r\nContent-Type: application/json\r\n" +
	"Retry-After: 1\r\nConnection: close\r\nContent-Length: 65\r\n\r\n" +
	`{"error":"too_many_connections","message":"the gateway is full"}` + "\n"

func (l *limitListener) Accept() (net.Conn, error) {
	for {
		c, err := l.Listener.Accept()
		if err != nil {
			return nil, err
		}
		n := l.c.open.Add(1)
		if n > l.c.soft {
			l.c.shed()
		}
		if n <= l.c.max {
			return &countedConn{Conn: c, c: l.c}, nil
		}
		l.c.open.Add(-1)
		l.c.refused.Inc()
		// A short deadline: a client that does not read must not hold the
		// accept loop.
		_ = c.SetWriteDeadline(time.Now().Add(100 * time.Millisecond))
		_, _ = c.Write([]byte(busyResponse))
		_ = c.Close()
	}
}

// countedConn gives its slot back when closed, once.
type countedConn struct {
	net.Conn
	c    *connTable
	once sync.Once
}

func (c *countedConn) Close() error {
	err := c.Conn.Close()
	c.once.Do(func() { c.c.open.Add(-1) })
	return err
}

// pendingTable counts connections that have not yet authenticated, in all
// and per remote address.
type pendingTable struct {
	max, perAddr int
	gauge        prometheus.Gauge
	refused      prometheus.Counter

	mu     sync.Mutex
	total  int
	byAddr map[string]int
}

// acquire takes a slot for a connection from addr, or reports false when
// there is none.
func (t *pendingTable) acquire(addr string) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.total >= t.max || t.byAddr[addr] >= t.perAddr {
		t.refused.Inc()
		return false
	}
	if t.byAddr == nil {
		t.byAddr = make(map[string]int)
	}
	t.total++
	t.byAddr[addr]++
	t.gauge.Inc()
	return true
}

func (t *pendingTable) release(addr string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.total--
	if t.byAddr[addr]--; t.byAddr[addr] <= 0 {
		delete(t.byAddr, addr)
	}
	t.gauge.Dec()
}

// remoteHost is the address part of a request's remote address, the unit of
// the per-address limit.
func remoteHost(r *http.Request) string {
	host, _, err := net.SplitHostPort(r.RemoteAddr)
	if err != nil {
		return r.RemoteAddr
	}
	return host
}

// noDeadlines clears the deadlines net/http set for reading and writing the
// upgrade request: a WebSocket lives for as long as its peer answers pings.
func noDeadlines(w http.ResponseWriter) {
	rc := http.NewResponseController(w)
	_ = rc.SetReadDeadline(time.Time{})
	_ = rc.SetWriteDeadline(time.Time{})
}

// crowdedHandler answers plain HTTP requests 503 while connections are
// within the headroom of the cap, keeping it for WebSocket joins.
func (srv *Server) crowdedHandler(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if srv.conns.crowded() && r.Header.Get("Upgrade") == "" {
			srv.metrics.connRefused.WithLabelValues("crowded").Inc()
			w.Header().Set("Connection", "close")
			w.Header().Set("Retry-After", "1")
			writeError(w, http.StatusServiceUnavailable, "too_many_connections", "the gateway is near its connection limit")
			return
		}
		next.ServeHTTP(w, r)
	})
}
