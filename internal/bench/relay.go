package bench

import (
	"context"
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/coder/websocket"
)

// relayQueue is the length of a relay connection's outbound queue.
const relayQueue = 128

// readLimit is the largest message a bench connection (client or relay) accepts.
const readLimit = 64 << 20

// RelayTarget is a bare relay to compare a gateway with: an HTTP server on 127.0.0.1 that admits
// its participants by bearer token, greets each with a minimal system/welcome, and forwards every
// message it receives, verbatim, to every connected participant, the sender included. It parses,
// validates, enforces and logs nothing. Like the gateway it gives each connection a buffered
// outbound queue drained by a writer goroutine of its own; a full queue makes the forwarding
// reader wait (backpressure), so the relay never drops a message.
//
// With Presence it also announces each join to everyone already there, with a minimal
// system/presence of its own, one message per recipient as it forwards: the cost a protocol with
// presence cannot avoid, for comparing the time of many joins like for like.
type RelayTarget struct {
	Presence bool
}

// Name returns "relay".
func (RelayTarget) Name() string { return "relay" }

// Start listens on 127.0.0.1:0 and serves the relay at /ws, with a random token per id.
func (t RelayTarget) Start(ctx context.Context, ids []string) (*Endpoint, error) {
	ln, err := (&net.ListenConfig{}).Listen(ctx, "tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("relay: %w", err)
	}
	r := &relay{
		presence:  t.Presence,
		ids:       make(map[string]string, len(ids)),
		peers:     make(map[*relayPeer]struct{}),
		serveDone: make(chan struct{}),
	}
	r.list.Store(&[]*relayPeer{})
	tokens := make(map[string]string, len(ids))
	for _, id := range ids {
		tok := rand.Text()
		tokens[id] = tok
		r.ids[tok] = id
	}
	r.srv = &http.Server{
		Handler:           r,
		ReadHeaderTimeout: 10 * time.Second,
		ErrorLog:          log.New(io.Discard, "", 0),
	}
	go func() {
		defer close(r.serveDone)
		_ = r.srv.Serve(ln) // always an error; http.ErrServerClosed after Close
	}()
	return &Endpoint{
		URL:    "ws://" + ln.Addr().String() + "/ws?space=bench",
		Tokens: tokens,
		Close:  r.close,
	}, nil
}

// relay is the server behind RelayTarget. Each connection has a handler goroutine, which reads
// and forwards, and a writer goroutine, which the handler starts and waits for.
type relay struct {
	presence  bool              // announce joins (RelayTarget.Presence)
	ids       map[string]string // token → participant id; read-only after Start
	srv       *http.Server
	serveDone chan struct{} // closed when srv.Serve returns

	// list is the current peers, replaced (never changed in place) under mu, so that forwarding
	// reads it without a lock.
	list atomic.Pointer[[]*relayPeer]

	mu       sync.Mutex // guards peers and closed; handlers.Add happens under it
	peers    map[*relayPeer]struct{}
	closed   bool
	handlers sync.WaitGroup
}

// relayPeer is one connection of the relay.
type relayPeer struct {
	conn *websocket.Conn
	out  chan relayMsg
	done chan struct{} // closed by the handler when it stops reading: the writer stops
	gone chan struct{} // closed by the writer when it stops: forwarders stop waiting on out
}

// relayMsg is one message to forward; data is shared by all recipients and never changed.
type relayMsg struct {
	typ  websocket.MessageType
	data []byte
}

// ServeHTTP admits one participant and relays its messages until its connection ends.
func (r *relay) ServeHTTP(w http.ResponseWriter, req *http.Request) {
	if req.URL.Path != "/ws" {
		http.NotFound(w, req)
		return
	}
	tok, ok := strings.CutPrefix(req.Header.Get("Authorization"), "Bearer ")
	id, known := r.ids[tok]
	if !ok || !known {
		http.Error(w, `{"error":"unauthorized"}`, http.StatusUnauthorized)
		return
	}
	if !r.enter() {
		http.Error(w, `{"error":"shutting down"}`, http.StatusServiceUnavailable)
		return
	}
	defer r.handlers.Done()

	conn, err := websocket.Accept(w, req, nil)
	if err != nil {
		return // Accept has answered the request
	}
	conn.SetReadLimit(readLimit)
	p := &relayPeer{
		conn: conn,
		out:  make(chan relayMsg, relayQueue),
		done: make(chan struct{}),
		gone: make(chan struct{}),
	}
	// The welcome goes first, and only once p receives what others send: a participant that
	// has its welcome misses nothing sent after it.
	p.out <- relayMsg{websocket.MessageText, relayWelcome(id)}
	if !r.add(p) {
		_ = conn.CloseNow()
		return
	}
	go p.write()
	if r.presence {
		r.forward(p, relayMsg{websocket.MessageText, relayPresence(id)})
	}
	defer func() {
		r.remove(p)
		close(p.done)
		<-p.gone
		_ = conn.CloseNow()
	}()

	ctx := req.Context()
	for {
		typ, data, err := conn.Read(ctx)
		if err != nil {
			return
		}
		r.forward(nil, relayMsg{typ, data})
	}
}

// forward queues m for every peer but skip, waiting for room (backpressure).
func (r *relay) forward(skip *relayPeer, m relayMsg) {
	for _, q := range *r.list.Load() {
		if q == skip {
			continue
		}
		select {
		case q.out <- m:
		case <-q.gone:
		}
	}
}

// write sends p's queued messages until p is done or a write fails.
func (p *relayPeer) write() {
	defer close(p.gone)
	for {
		select {
		case m := <-p.out:
			if err := p.conn.Write(context.Background(), m.typ, m.data); err != nil {
				_ = p.conn.CloseNow() // ends the handler's read, which ends p
				return
			}
		case <-p.done:
			return
		}
	}
}

// enter registers a handler unless the relay is closed.
func (r *relay) enter() bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.closed {
		return false
	}
	r.handlers.Add(1)
	return true
}

// add makes p a recipient of forwarded messages unless the relay is closed.
func (r *relay) add(p *relayPeer) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.closed {
		return false
	}
	r.peers[p] = struct{}{}
	r.publish()
	return true
}

// remove stops forwarding to p.
func (r *relay) remove(p *relayPeer) {
	r.mu.Lock()
	defer r.mu.Unlock()
	delete(r.peers, p)
	r.publish()
}

// publish replaces list with the current peers; r.mu must be held.
func (r *relay) publish() {
	list := make([]*relayPeer, 0, len(r.peers))
	for p := range r.peers {
		list = append(list, p)
	}
	r.list.Store(&list)
}

// close stops the listener, closes every connection and waits for all goroutines.
func (r *relay) close() error {
	r.mu.Lock()
	if r.closed {
		r.mu.Unlock()
		return nil
	}
	r.closed = true
	peers := make([]*relayPeer, 0, len(r.peers))
	for p := range r.peers {
		peers = append(peers, p)
	}
	r.mu.Unlock()

	err := r.srv.Close() // listener and connections not yet upgraded
	for _, p := range peers {
		_ = p.conn.CloseNow()
	}
	r.handlers.Wait()
	<-r.serveDone
	if err != nil && !errors.Is(err, http.ErrServerClosed) {
		return fmt.Errorf("relay: %w", err)
	}
	return nil
}

// relayWelcome returns the minimal system/welcome the relay greets participant id with.
// relayPresence is the relay's announcement that id joined.
func relayPresence(id string) []byte {
	q, _ := json.Marshal(id) // a string always marshals
	return fmt.Appendf(nil, `{"protocol":"mew/v0.4","id":"p","from":"system:gateway","kind":"system/presence","payload":{"event":"join","participant":{"id":%s}}}`, q)
}

func relayWelcome(id string) []byte {
	q, _ := json.Marshal(id) // a string always marshals
	return fmt.Appendf(nil, `{"protocol":"mew/v0.4","id":"w","from":"system:gateway","to":[%s],"kind":"system/welcome","payload":{"you":{"id":%s,"capabilities":[]},"participants":[]}}`, q, q)
}
