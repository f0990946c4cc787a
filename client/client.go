package client

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"net"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"github.com/coder/websocket"

	"github.com/mew-protocol/mew/protocol"
)

// Close codes of the MEW gateway that tell a client not to reconnect.
const (
	closeReplaced = 4000 // another connection of the same participant joined
	closeKicked   = 4001 // the participant was kicked
)

// Client is one participant's connection to a MEW gateway. Its methods are
// safe for concurrent use. See the package documentation for its
// goroutines, events and reconnect rules.
type Client struct {
	// Lock order: mu, then the dispatch queue's mu. handlers.mu and
	// conn.causeMu are never held with another lock. The reader goroutine
	// of the current connection is the only one that stores a welcome; the
	// dispatch goroutine alone moves Joined to Ready.
	opts   Options
	urls   []string     // the gateway URLs to dial, with path and space
	at     atomic.Int64 // the index in urls of the latest attempt
	header http.Header
	join   []byte // the join message, or nil to authenticate with the header

	h    handlers
	bufs sync.Pool // *[]byte for outbound messages

	closed atomic.Bool
	live   atomic.Pointer[conn] // the joined connection Send uses, or nil

	// seen is what a reconnect resumes from: the envelopes received
	// (resume.go). Only the reader of the current connection changes it.
	seen seenIDs

	mu         sync.Mutex
	state      State
	run        *run  // from Connect until the client stops connecting
	cn         *conn // the open connection, from dial to its end
	id         string
	welcome    *protocol.Welcome // never modified once stored
	dispatched chan struct{}     // closed when the latest run's dispatcher returns
	wg         sync.WaitGroup    // Connect calls, supervisors, dispatchers
}

// run is what one successful or failed Connect starts: connections one
// after the other, and one dispatch goroutine with its queue. It ends when
// the client stops connecting (Close, a refusal, no reconnect).
type run struct {
	ctx        context.Context // cancelled when the run ends
	cancel     context.CancelFunc
	q          *queue
	dispatched chan struct{} // closed when the run's dispatcher returns
}

// New returns a client for opts. It checks the options but does not
// connect; see Connect.
func New(opts Options) (*Client, error) {
	o, err := opts.check()
	if err != nil {
		return nil, fmt.Errorf("client: options: %w", err)
	}
	urls, err := o.dialURLs()
	if err != nil {
		return nil, fmt.Errorf("client: options: %w", err)
	}
	c := &Client{opts: o, urls: urls, header: o.upgradeHeader()}
	if o.JoinMessage {
		c.join = o.joinMessage()
	}
	return c, nil
}

// Connect dials the gateway, authenticates, and returns once the gateway's
// welcome has arrived: then ID and Welcome are set and Send works. The
// OnWelcome handlers run on the dispatch goroutine, possibly after Connect
// has returned.
//
// Connect makes one attempt, bounded by ctx and Options.WelcomeTimeout;
// Options.Reconnect applies to connections that drop after it succeeded.
// A refused join returns a *RefusedError (errors.Is(err, ErrRefused)) with
// the gateway's error code. Connect returns ErrAlreadyConnected while the
// client is connected or reconnecting, and ErrClosed after Close; after a
// connection has ended for good it may be called again.
func (c *Client) Connect(ctx context.Context) error {
	c.mu.Lock()
	if c.closed.Load() {
		c.mu.Unlock()
		return ErrClosed
	}
	if c.run != nil {
		c.mu.Unlock()
		return ErrAlreadyConnected
	}
	r := &run{q: newQueue(c.opts.InboundQueue), dispatched: make(chan struct{})}
	r.ctx, r.cancel = context.WithCancel(context.Background())
	prev := c.dispatched
	c.dispatched = r.dispatched
	c.run = r
	c.wg.Add(2) // the dispatcher and this call
	go c.dispatch(r, prev)
	c.mu.Unlock()
	defer c.wg.Done()

	cn, err := c.connectAny(ctx, r)
	if err != nil {
		c.endRun(r)
		return err
	}
	c.wg.Add(1)
	go c.supervise(r, cn)
	return nil
}

// connectAny makes Connect's attempts: one per gateway URL, in order,
// until one joins. A refusal, Close or the end of ctx stops it: another
// node of the same space would refuse the token too, and the caller's
// deadline covers all the attempts.
func (c *Client) connectAny(ctx context.Context, r *run) (*conn, error) {
	var errs []error
	for i, u := range c.urls {
		c.at.Store(int64(i))
		cn, err := c.attempt(ctx, r, u)
		if err == nil {
			return cn, nil
		}
		if len(c.urls) == 1 || errors.Is(err, ErrRefused) || errors.Is(err, ErrClosed) || ctx.Err() != nil {
			return nil, err
		}
		c.opts.Logger.Info("connect failed, trying the next gateway", "err", err)
		errs = append(errs, err)
	}
	return nil, fmt.Errorf("client: connect: none of %d gateways joined: %w", len(c.urls), errors.Join(errs...))
}

// nextURL moves to the next gateway URL, round robin, and returns it.
func (c *Client) nextURL() string {
	i := (c.at.Load() + 1) % int64(len(c.urls))
	c.at.Store(i)
	return c.urls[i]
}

// URL returns the gateway URL (with its path and the space) of the latest
// connection attempt: with several Options.Gateways, the node the client
// is connected to, or was last trying.
func (c *Client) URL() string {
	return c.urls[c.at.Load()]
}

// Close closes the connection with 1000 (normal closure), stops every
// goroutine of the client and waits for them, including the handler that
// is running. It must not be called from a handler. Close is idempotent;
// it always returns nil.
func (c *Client) Close() error {
	c.mu.Lock()
	first := !c.closed.Swap(true)
	r, cn := c.run, c.cn
	c.mu.Unlock()
	if first {
		c.live.Store(nil)
		if r != nil {
			r.cancel()
		}
		if cn != nil {
			cn.shutdown(ErrClosed, websocket.StatusNormalClosure, "")
		}
	}
	c.wg.Wait()
	return nil
}

// Send sends env to the space. It fills in env's Protocol, ID (a new
// protocol.NewID), TS (now) and From (the client's ID) where they are
// empty, so the caller learns the id to correlate answers with; env must
// not be changed or sent by another goroutine meanwhile. Send checks env
// with Validate, then queues its encoding; env may be reused once Send has
// returned.
//
// A nil error means the envelope was queued on the current connection: the
// gateway may still refuse it (with a system/error correlated to its id),
// and it is lost if the connection drops before it is written. Send waits
// for room in a full queue until ctx ends. It returns ErrNotConnected when
// the client has no joined connection and ErrClosed after Close.
func (c *Client) Send(ctx context.Context, env *protocol.Envelope) error {
	if env == nil {
		return errors.New("client: send: nil envelope")
	}
	if c.closed.Load() {
		return ErrClosed
	}
	cn := c.live.Load()
	if cn == nil {
		return ErrNotConnected
	}
	if env.Protocol == "" {
		env.Protocol = protocol.Version
	}
	if env.ID == "" {
		env.ID = protocol.NewID()
	}
	if env.TS == "" {
		env.TS = protocol.FormatTime(time.Now())
	}
	if env.From == "" {
		env.From = cn.id
	}
	if err := env.Validate(); err != nil {
		return fmt.Errorf("client: send: %w", err)
	}
	b := c.getBuf()
	*b = env.AppendJSON(*b)
	return c.enqueue(ctx, cn, outMsg{typ: websocket.MessageText, buf: b})
}

// SendStreamData sends one data frame "#streamID#data" of an open stream
// (spec 3.10.3), as a binary WebSocket message. Only the stream's
// authorized writers may send frames; the gateway answers others with a
// system/error "unauthorized_stream_write". Otherwise it behaves as Send.
func (c *Client) SendStreamData(ctx context.Context, streamID string, data []byte) error {
	if err := protocol.ValidateStreamID(streamID); err != nil {
		return fmt.Errorf("client: stream data: %w", err)
	}
	if c.closed.Load() {
		return ErrClosed
	}
	cn := c.live.Load()
	if cn == nil {
		return ErrNotConnected
	}
	b := c.getBuf()
	*b = protocol.AppendFrame(*b, streamID, data)
	return c.enqueue(ctx, cn, outMsg{typ: websocket.MessageBinary, buf: b})
}

func (c *Client) enqueue(ctx context.Context, cn *conn, m outMsg) error {
	err := cn.send(ctx, m)
	if err != nil && c.closed.Load() {
		return ErrClosed
	}
	return err
}

// State returns the state of the client's connection.
func (c *Client) State() State {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.state
}

// ID returns the client's participant id in the space, as the latest
// welcome gave it: the token's participant name, or the requested
// Options.ParticipantID. It is "" before the first welcome.
func (c *Client) ID() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.id
}

// Welcome returns a copy of the latest system/welcome payload: the
// client's own capabilities, the other participants and the open streams.
// The gateway sends a new welcome on every join and when the client's
// capabilities change. Welcome returns nil before the first.
func (c *Client) Welcome() *protocol.Welcome {
	c.mu.Lock()
	w := c.welcome
	c.mu.Unlock()
	return cloneWelcome(w)
}

// setStateLocked moves to state s and queues the change. c.mu must be held.
func (c *Client) setStateLocked(r *run, s State) {
	if c.state == s {
		return
	}
	c.state = s
	r.q.push(item{kind: itemState, state: s})
}

func (c *Client) setState(r *run, s State) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.setStateLocked(r, s)
}

// ready moves from Joined to Ready once the handlers have run for cn's
// welcome. It runs on the dispatch goroutine, which runs the OnStateChange
// handlers itself: any later change is queued behind this point.
func (c *Client) ready(cn *conn) {
	c.mu.Lock()
	if c.cn != cn || c.state != Joined {
		c.mu.Unlock()
		return
	}
	c.state = Ready
	c.mu.Unlock()
	c.emitState(Ready)
}

// errWelcomeTimeout is the cause of an attempt's context when the
// WelcomeTimeout has passed.
var errWelcomeTimeout = errors.New("no welcome in time")

// attempt makes one connection: dial, authenticate, wait for the welcome.
// It returns the joined connection, or an error once the connection's
// goroutines have all returned.
func (c *Client) attempt(ctx context.Context, r *run, url string) (*conn, error) {
	ctx, cancel := context.WithTimeoutCause(ctx, c.opts.WelcomeTimeout, errWelcomeTimeout)
	defer cancel()
	defer context.AfterFunc(r.ctx, cancel)()

	c.setState(r, Connecting)
	hc, raw := c.httpClient()
	ws, resp, err := websocket.Dial(ctx, url, &websocket.DialOptions{HTTPClient: hc, HTTPHeader: c.header})
	hc.CloseIdleConnections() // a refused upgrade's keep-alive connection
	if err != nil {
		c.setState(r, Disconnected)
		switch {
		case r.ctx.Err() != nil:
			return nil, ErrClosed
		case ctx.Err() != nil:
			return nil, c.ctxError(ctx)
		case resp != nil && (resp.StatusCode == http.StatusUnauthorized || resp.StatusCode == http.StatusForbidden):
			return nil, &RefusedError{Code: protocol.ErrorUnauthorized, Message: "HTTP " + resp.Status}
		}
		return nil, fmt.Errorf("client: dial %s: %w", url, err)
	}
	ws.SetReadLimit(c.opts.MaxMessageSize)
	cn := newConn(c, r, ws, raw.get())
	c.mu.Lock()
	if c.closed.Load() {
		c.setStateLocked(r, Disconnected)
		c.mu.Unlock()
		_ = ws.CloseNow()
		return nil, ErrClosed
	}
	c.cn = cn
	c.setStateLocked(r, Connected)
	r.q.push(item{kind: itemConnected})
	c.mu.Unlock()
	cn.start(c.join)

	select {
	case <-cn.joinedCh:
		return cn, nil
	case <-cn.readerDone:
	case <-ctx.Done():
	}
	select {
	case <-cn.joinedCh:
		return cn, nil // joined, and perhaps gone already: the supervisor sees to it
	default:
	}
	if ctx.Err() != nil {
		cause := c.ctxError(ctx)
		if r.ctx.Err() != nil {
			cause = ErrClosed
		}
		cn.shutdown(cause, websocket.StatusNormalClosure, "")
	}
	cn.wait()
	_, err = c.ended(cn)
	return nil, err
}

// httpClient returns the HTTP client of one connection attempt, and where
// it records the TCP connection it dials: closing that connection is the
// only way to end a WebSocket whose close handshake is stuck.
func (c *Client) httpClient() (*http.Client, *rawConn) {
	raw := new(rawConn)
	d := &net.Dialer{KeepAlive: 30 * time.Second}
	tr := &http.Transport{
		Proxy: http.ProxyFromEnvironment,
		DialContext: func(ctx context.Context, network, addr string) (net.Conn, error) {
			conn, err := d.DialContext(ctx, network, addr)
			if err == nil {
				raw.set(conn)
			}
			return conn, err
		},
		TLSHandshakeTimeout: c.opts.WelcomeTimeout,
		MaxIdleConns:        1,
	}
	return &http.Client{Transport: tr}, raw
}

// rawConn is the TCP connection under a WebSocket.
type rawConn struct {
	mu   sync.Mutex
	conn net.Conn
}

func (r *rawConn) set(conn net.Conn) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.conn = conn
}

func (r *rawConn) get() net.Conn {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.conn
}

// ctxError explains why an attempt's context ended.
func (c *Client) ctxError(ctx context.Context) error {
	if context.Cause(ctx) == errWelcomeTimeout {
		return fmt.Errorf("client: connect: no welcome within %v: %w", c.opts.WelcomeTimeout, context.DeadlineExceeded)
	}
	return fmt.Errorf("client: connect: %w", ctx.Err())
}

// ended records that cn is over, once its goroutines have returned: the
// state becomes Disconnected and the OnDisconnected handlers get the
// reason. stop reports whether the client must not reconnect.
func (c *Client) ended(cn *conn) (stop bool, err error) {
	stop, err = classify(cn.err(), cn.joined.Load())
	c.mu.Lock()
	if c.cn == cn {
		c.cn = nil
	}
	c.live.CompareAndSwap(cn, nil)
	c.setStateLocked(cn.r, Disconnected)
	cn.r.q.push(item{kind: itemDisconnected, err: err})
	c.mu.Unlock()
	if !errors.Is(err, ErrClosed) {
		c.opts.Logger.Info("disconnected", "err", err)
	}
	return stop, err
}

// classify turns the reason a connection ended into the error the
// handlers see, and says whether reconnecting is pointless.
func classify(cause error, joined bool) (stop bool, err error) {
	if cause == nil {
		cause = errors.New("connection ended")
	}
	var refused *RefusedError
	var ce websocket.CloseError
	switch {
	case errors.Is(cause, ErrClosed):
		return true, ErrClosed
	case errors.As(cause, &refused):
		return true, refused
	case errors.Is(cause, ErrSlowConsumer):
		return false, cause
	case errors.As(cause, &ce):
		switch {
		case ce.Code == closeReplaced:
			return true, fmt.Errorf("%w: %w", ErrReplaced, ce)
		case ce.Code == closeKicked:
			return true, fmt.Errorf("%w: %w", ErrKicked, ce)
		case ce.Code == websocket.StatusPolicyViolation && !joined:
			return true, &RefusedError{Code: ce.Reason, Message: "the gateway closed the connection (1008)"}
		}
	}
	return false, fmt.Errorf("client: connection lost: %w", cause)
}

// supervise is a run's supervisor goroutine: it waits for the joined
// connection cn to end and, when allowed, reconnects.
func (c *Client) supervise(r *run, cn *conn) {
	defer c.wg.Done()
	defer c.endRun(r)
	for cn != nil {
		cn.wait()
		stop, err := c.ended(cn)
		if stop || !c.opts.Reconnect || r.ctx.Err() != nil {
			return
		}
		c.opts.Logger.Info("reconnecting", "after", err)
		cn = c.reconnect(r)
	}
}

// reconnect dials again, after a backoff, until an attempt joins, the run
// ends, the gateway refuses, or the attempts run out; it then returns nil.
// Each attempt takes the next gateway URL: the node that dropped the
// connection is tried last.
func (c *Client) reconnect(r *run) *conn {
	for attempt := 1; ; attempt++ {
		if n := c.opts.MaxReconnectAttempts; n > 0 && attempt > n {
			err := fmt.Errorf("%w: %d attempts", ErrReconnectFailed, n)
			c.opts.Logger.Warn("giving up", "err", err)
			r.q.push(item{kind: itemError, err: err})
			return nil
		}
		d := c.backoff(attempt)
		r.q.push(item{kind: itemReconnecting, attempt: attempt, delay: d})
		t := time.NewTimer(d)
		select {
		case <-r.ctx.Done():
			t.Stop()
			return nil
		case <-t.C:
		}
		cn, err := c.attempt(r.ctx, r, c.resumeURL(c.nextURL()))
		if err == nil {
			return cn
		}
		if r.ctx.Err() != nil || errors.Is(err, ErrClosed) {
			return nil
		}
		err = fmt.Errorf("client: reconnect attempt %d: %w", attempt, err)
		c.opts.Logger.Info("reconnect failed", "err", err)
		r.q.push(item{kind: itemError, err: err})
		if errors.Is(err, ErrRefused) || errors.Is(err, ErrReplaced) || errors.Is(err, ErrKicked) {
			return nil
		}
	}
}

// backoff returns the delay before reconnect attempt n (1, 2, ...):
// ReconnectDelay doubled n-1 times, capped at MaxReconnectDelay, ±20%.
func (c *Client) backoff(n int) time.Duration {
	d, limit := c.opts.ReconnectDelay, c.opts.MaxReconnectDelay
	for i := 1; i < n && d < limit; i++ {
		d *= 2
	}
	d = min(d, limit)
	d = time.Duration(float64(d) * (0.8 + 0.4*rand.Float64()))
	return min(d, limit)
}

// endRun ends r: no more connections, and its dispatcher returns once it
// has run the handlers for everything queued.
func (c *Client) endRun(r *run) {
	r.cancel()
	c.mu.Lock()
	if c.run == r {
		c.run = nil
	}
	c.mu.Unlock()
	r.q.push(item{kind: itemStop})
}

// OnMessage registers f for every envelope the client receives, the
// gateway's own (welcome, presence, errors) included, and returns a
// function that removes it. f runs on the dispatch goroutine and must not
// modify the envelope, which other handlers receive too; it may keep it.
func (c *Client) OnMessage(f func(*protocol.Envelope)) (remove func()) {
	if f == nil {
		return func() {}
	}
	return add(&c.h, &c.h.message, f)
}

// OnKind registers f for the envelopes of one kind (exactly: "mcp/*" is
// not a pattern), after the OnMessage handlers, and returns a function that
// removes it. As OnMessage, f must not modify the envelope.
func (c *Client) OnKind(kind string, f func(*protocol.Envelope)) (remove func()) {
	if f == nil {
		return func() {}
	}
	return addKey(&c.h, &c.h.kind, kind, f)
}

// OnWelcome registers f for every system/welcome: the first, the one after
// each reconnect, and the updates the gateway sends when the client's
// capabilities change. Each call gets its own copy of the payload. It
// returns a function that removes f.
func (c *Client) OnWelcome(f func(*protocol.Welcome)) (remove func()) {
	if f == nil {
		return func() {}
	}
	return add(&c.h, &c.h.welcome, f)
}

// OnStateChange registers f for every change of State, in order, and
// returns a function that removes it.
func (c *Client) OnStateChange(f func(State)) (remove func()) {
	if f == nil {
		return func() {}
	}
	return add(&c.h, &c.h.state, f)
}

// OnConnected registers f for every WebSocket connection that opens
// (before authentication; OnWelcome follows when the join succeeds), and
// returns a function that removes it.
func (c *Client) OnConnected(f func()) (remove func()) {
	if f == nil {
		return func() {}
	}
	return add(&c.h, &c.h.connected, func(struct{}) { f() })
}

// OnDisconnected registers f for every connection that ends after it
// opened, and returns a function that removes it. The error says why:
// ErrClosed after Close; ErrReplaced, ErrKicked or a *RefusedError when the
// client stops for good; otherwise the connection was lost, and the client
// reconnects if Options.Reconnect is set (OnReconnecting tells when).
func (c *Client) OnDisconnected(f func(error)) (remove func()) {
	if f == nil {
		return func() {}
	}
	return add(&c.h, &c.h.disconnected, f)
}

// OnReconnecting registers f, called before each reconnect attempt with
// the attempt's number (from 1) and the delay before it, and returns a
// function that removes it.
func (c *Client) OnReconnecting(f func(attempt int, delay time.Duration)) (remove func()) {
	if f == nil {
		return func() {}
	}
	return add(&c.h, &c.h.reconnecting, func(r reconnecting) { f(r.attempt, r.delay) })
}

// OnError registers f for errors that do not end the client: a message
// from the gateway that could not be decoded (ErrBadMessage), a
// gateway-only envelope that did not come from the gateway
// (ErrNotFromGateway, dropped), a handler
// that panicked (ErrHandlerPanic), a failed reconnect attempt, giving up
// (ErrReconnectFailed). It returns a function that removes f. A panic in
// f itself is only logged.
func (c *Client) OnError(f func(error)) (remove func()) {
	if f == nil {
		return func() {}
	}
	return add(&c.h, &c.h.errs, f)
}

// OnFinal registers f, called once with the reason when the client stops
// for good without Close having been called (see Final), and returns a
// function that removes it. It is for programs that should end with their
// connection: an agent, a bridge.
func (c *Client) OnFinal(f func(error)) (remove func()) {
	if f == nil {
		return func() {}
	}
	var once sync.Once
	final := func(err error) {
		if Final(err) {
			once.Do(func() { f(err) })
		}
	}
	r1, r2 := c.OnDisconnected(final), c.OnError(final)
	return func() { r1(); r2() }
}

// Final reports whether err, as given to OnDisconnected or OnError, means
// the client will not connect again by itself: it was kicked (ErrKicked),
// replaced by another connection with its token (ErrReplaced), refused by
// the gateway (*RefusedError), or ran out of reconnect attempts
// (ErrReconnectFailed). ErrClosed, the client's own Close, is not final in
// this sense.
func Final(err error) bool {
	var refused *RefusedError
	return errors.Is(err, ErrKicked) || errors.Is(err, ErrReplaced) ||
		errors.Is(err, ErrReconnectFailed) || errors.As(err, &refused)
}

// OnStream registers f for the data frames of one stream, and returns a
// function that removes it. data is the frame's content after
// "#streamID#"; f may keep it. Frames are dispatched in order with the
// envelopes, so a handler registered when stream/open arrives sees the
// stream's first frame.
func (c *Client) OnStream(streamID string, f func(data []byte)) (remove func()) {
	if f == nil {
		return func() {}
	}
	return addKey(&c.h, &c.h.stream, streamID, f)
}
