package testutil

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/coder/websocket"
)

// Peer is a raw WebSocket participant for tests: it sends what it is told
// and reads messages one at a time.
//
// A goroutine reads the connection into a queue from the start (reading
// with a deadline would close a coder/websocket connection), unless the peer
// was dialled with DialStalled, which never reads.
type Peer struct {
	t    testing.TB
	Conn *websocket.Conn
	msgs chan Msg
	done chan struct{} // closed when the reader has stopped
	err  error         // why the reader stopped; valid once done is closed
}

// Msg is one received message: the raw bytes and, when it is a JSON
// object, its decoded members.
type Msg struct {
	Raw    []byte
	Binary bool
	Env    map[string]any
}

// Kind returns the envelope's kind.
func (m Msg) Kind() string { s, _ := m.Env["kind"].(string); return s }

// ID returns the envelope's id.
func (m Msg) ID() string { s, _ := m.Env["id"].(string); return s }

// From returns the envelope's from.
func (m Msg) From() string { s, _ := m.Env["from"].(string); return s }

// Payload returns the envelope's payload object.
func (m Msg) Payload() map[string]any { p, _ := m.Env["payload"].(map[string]any); return p }

// Dial connects to url, with an Authorization: Bearer header when token is
// not empty. The connection is closed when the test ends.
func Dial(t testing.TB, url, token string) *Peer {
	t.Helper()
	p, err := TryDial(t, url, token)
	if err != nil {
		t.Fatalf("dial %s: %v", url, err)
	}
	return p
}

// TryDial is Dial returning the error.
func TryDial(t testing.TB, url, token string) (*Peer, error) {
	return dial(t, url, token, true)
}

// DialStalled connects like Dial but never reads: a participant that does
// not keep up.
func DialStalled(t testing.TB, url, token string) *Peer {
	t.Helper()
	p, err := dial(t, url, token, false)
	if err != nil {
		t.Fatalf("dial %s: %v", url, err)
	}
	return p
}

func dial(t testing.TB, url, token string, read bool) (*Peer, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	var opts websocket.DialOptions
	if token != "" {
		opts.HTTPHeader = http.Header{"Authorization": {"Bearer " + token}}
	}
	c, _, err := websocket.Dial(ctx, url, &opts)
	if err != nil {
		return nil, err
	}
	c.SetReadLimit(64 << 20)
	p := &Peer{t: t, Conn: c, msgs: make(chan Msg, 1<<16), done: make(chan struct{})}
	if read {
		go p.readLoop()
	} else {
		close(p.done)
	}
	t.Cleanup(func() {
		_ = c.CloseNow()
		<-p.done
	})
	return p, nil
}

func (p *Peer) readLoop() {
	defer close(p.done)
	for {
		typ, b, err := p.Conn.Read(context.Background())
		if err != nil {
			p.err = err
			return
		}
		m := Msg{Raw: b, Binary: typ == websocket.MessageBinary}
		_ = json.Unmarshal(b, &m.Env)
		select {
		case p.msgs <- m:
		default:
			p.err = errors.New("testutil: peer queue overflow")
			_ = p.Conn.CloseNow()
			return
		}
	}
}

// Join dials url with a bearer token and waits for the welcome.
func Join(t testing.TB, url, token string) (*Peer, Msg) {
	t.Helper()
	p := Dial(t, url, token)
	w := p.Expect("system/welcome")
	return p, w
}

// JoinAll joins a peer for each token, in order, and waits until each has
// seen the later ones join (their system/presence), so that what one sends
// next reaches the others and the test reads on from after the joins.
func JoinAll(t testing.TB, url string, tokens ...string) []*Peer {
	t.Helper()
	peers := make([]*Peer, len(tokens))
	for i, tok := range tokens {
		peers[i], _ = Join(t, url, tok)
	}
	for i, p := range peers {
		for range peers[i+1:] {
			p.Expect("system/presence")
		}
	}
	return peers
}

// SendText sends s as a text message.
func (p *Peer) SendText(s string) {
	p.t.Helper()
	if err := p.Write(websocket.MessageText, []byte(s)); err != nil {
		p.t.Fatalf("send: %v", err)
	}
}

// Write sends one message.
func (p *Peer) Write(typ websocket.MessageType, b []byte) error {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	return p.Conn.Write(ctx, typ, b)
}

// Read returns the next message, or an error (a close error when the
// gateway closed the connection) after d.
func (p *Peer) Read(d time.Duration) (Msg, error) {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case m := <-p.msgs:
		return m, nil
	default:
	}
	select {
	case m := <-p.msgs:
		return m, nil
	case <-p.done:
		select {
		case m := <-p.msgs:
			return m, nil
		default:
		}
		if p.err == nil {
			return Msg{}, errors.New("testutil: peer does not read")
		}
		return Msg{}, p.err
	case <-t.C:
		return Msg{}, errTimeout
	}
}

var errTimeout = errors.New("testutil: timed out")

// Next returns the next message or fails the test after 5 s.
func (p *Peer) Next() Msg {
	p.t.Helper()
	m, err := p.Read(5 * time.Second)
	if err != nil {
		p.t.Fatalf("read: %v", err)
	}
	return m
}

// Expect skips messages until one of the given kind arrives (5 s at most).
func (p *Peer) Expect(kind string) Msg {
	p.t.Helper()
	return p.ExpectFunc(kind, func(Msg) bool { return true })
}

// ExpectFunc skips messages until one of the given kind satisfies ok (5 s
// at most).
func (p *Peer) ExpectFunc(kind string, ok func(Msg) bool) Msg {
	p.t.Helper()
	return p.Within(5*time.Second, kind, func(m Msg) bool { return m.Kind() == kind && ok(m) })
}

// Within skips messages until one satisfies ok, for at most d; what names
// the awaited message when the test fails.
func (p *Peer) Within(d time.Duration, what string, ok func(Msg) bool) Msg {
	p.t.Helper()
	deadline := time.Now().Add(d)
	var seen []string
	for {
		m, err := p.Read(time.Until(deadline))
		if err != nil {
			p.t.Fatalf("waiting for %s: %v (seen: %s)", what, err, strings.Join(seen, " | "))
		}
		if ok(m) {
			return m
		}
		if len(seen) < 20 {
			seen = append(seen, string(m.Raw))
		}
	}
}

// Quiet reports whether nothing arrives within d, ignoring messages for
// which skip returns true. A connection that ends meanwhile fails the test:
// a gateway that dropped the peer has not kept it quiet, and the caller's
// negative check would otherwise pass on the drop. Call it from the test's
// goroutine.
func (p *Peer) Quiet(d time.Duration, skip func(Msg) bool) (Msg, bool) {
	p.t.Helper()
	m, err := p.quiet(d, skip)
	switch {
	case err == errTimeout:
		return Msg{}, true
	case err != nil:
		p.t.Fatalf("peer not quiet: its connection ended while it should have stayed silent: %v", err)
	}
	return m, false
}

// quiet returns the first message skip does not ignore, or the read error
// (errTimeout after d).
func (p *Peer) quiet(d time.Duration, skip func(Msg) bool) (Msg, error) {
	deadline := time.Now().Add(d)
	for {
		m, err := p.Read(time.Until(deadline))
		if err != nil {
			return Msg{}, err
		}
		if skip == nil || !skip(m) {
			return m, nil
		}
	}
}

// Closed waits for the gateway to close the connection and returns the
// close status and reason.
func (p *Peer) Closed(d time.Duration) (websocket.StatusCode, string) {
	p.t.Helper()
	deadline := time.Now().Add(d)
	for {
		_, err := p.Read(time.Until(deadline))
		if err == nil {
			continue
		}
		if err == errTimeout {
			return -1, "not closed"
		}
		var ce websocket.CloseError
		if errors.As(err, &ce) {
			return ce.Code, ce.Reason
		}
		return -1, err.Error()
	}
}
