package client

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"sync"
	"sync/atomic"
	"time"

	"github.com/coder/websocket"

	"github.com/mew-protocol/mew/protocol"
)

// closeGrace bounds the close handshake: a gateway that has not answered
// our close frame by then is dropped without one.
const closeGrace = time.Second

// outMsg is one message for the writer goroutine.
type outMsg struct {
	typ websocket.MessageType
	buf *[]byte // pooled; the message is *buf
}

// conn is one WebSocket connection to the gateway and its goroutines: a
// reader (which owns reading and the inbound side of the dispatch queue), a
// writer (which owns the out queue) and a heartbeat. All three stop when
// ctx is cancelled; the reader cancels it when it returns.
type conn struct {
	c   *Client
	r   *run
	ws  *websocket.Conn
	raw net.Conn // the TCP connection under ws, or nil if unknown

	ctx    context.Context
	cancel context.CancelFunc
	out    chan outMsg
	wg     sync.WaitGroup

	joinedCh   chan struct{} // closed when the first welcome has arrived
	readerDone chan struct{} // closed when the reader has returned
	joined     atomic.Bool
	id         string // own id from the first welcome; set before joined

	causeMu sync.Mutex
	cause   error // why the connection ended: the first reason given
}

func newConn(c *Client, r *run, ws *websocket.Conn, raw net.Conn) *conn {
	ctx, cancel := context.WithCancel(context.Background())
	return &conn{
		c: c, r: r, ws: ws, raw: raw,
		ctx: ctx, cancel: cancel,
		out:        make(chan outMsg, c.opts.SendQueue),
		joinedCh:   make(chan struct{}),
		readerDone: make(chan struct{}),
	}
}

// start starts the connection's goroutines, sending first (when not nil)
// the join message.
func (cn *conn) start(join []byte) {
	if join != nil {
		b := cn.c.getBuf()
		*b = append(*b, join...)
		cn.out <- outMsg{typ: websocket.MessageText, buf: b}
	}
	cn.wg.Add(2)
	go cn.read()
	go cn.write()
	if d := cn.c.opts.HeartbeatInterval; d > 0 {
		cn.wg.Add(1)
		go cn.heartbeat(d)
	}
}

// setCause records why the connection ends, unless a reason was given
// before. It reports whether this was the first.
func (cn *conn) setCause(err error) bool {
	cn.causeMu.Lock()
	defer cn.causeMu.Unlock()
	if cn.cause != nil {
		return false
	}
	cn.cause = err
	return true
}

func (cn *conn) err() error {
	cn.causeMu.Lock()
	defer cn.causeMu.Unlock()
	return cn.cause
}

// fail ends the connection at once, without a close handshake: for a
// gateway that no longer answers, or a connection that already failed.
func (cn *conn) fail(err error) {
	cn.setCause(err)
	cn.kill()
}

// kill stops the goroutines and drops the TCP connection.
func (cn *conn) kill() {
	cn.c.live.CompareAndSwap(cn, nil)
	cn.cancel()
	if cn.raw != nil {
		_ = cn.raw.Close()
	}
}

// shutdown ends the connection with a close handshake, which waits at most
// closeGrace for the gateway. Only the first reason counts.
func (cn *conn) shutdown(err error, code websocket.StatusCode, reason string) {
	if !cn.setCause(err) {
		cn.cancel()
		return
	}
	cn.c.live.CompareAndSwap(cn, nil)
	t := time.AfterFunc(closeGrace, cn.kill)
	_ = cn.ws.Close(code, reason)
	t.Stop()
	cn.cancel()
}

// wait waits for the connection's goroutines and releases the connection.
func (cn *conn) wait() {
	<-cn.readerDone
	cn.cancel()
	cn.wg.Wait()
	_ = cn.ws.CloseNow()
	if n := len(cn.out); n > 0 {
		cn.c.opts.Logger.Warn("unsent messages dropped with the connection", "count", n)
	}
}

// read is the reader goroutine.
func (cn *conn) read() {
	defer cn.wg.Done()
	defer close(cn.readerDone)
	defer cn.cancel()
	var dec protocol.Decoder
	var buf []byte
	for {
		_, rd, err := cn.ws.Reader(cn.ctx)
		if err == nil {
			buf, err = readAll(rd, buf[:0])
		}
		if err != nil {
			cn.fail(err)
			return
		}
		if !cn.handle(&dec, buf) {
			return
		}
		if cap(buf) > 64<<10 {
			buf = nil // don't keep a big message's buffer for an idle connection
		}
	}
}

// readAll appends what r holds to buf.
func readAll(r io.Reader, buf []byte) ([]byte, error) {
	for {
		if len(buf) == cap(buf) {
			buf = append(buf, 0)[:len(buf)]
		}
		n, err := r.Read(buf[len(buf):cap(buf)])
		buf = buf[:len(buf)+n]
		if errors.Is(err, io.EOF) {
			return buf, nil
		}
		if err != nil {
			return buf, err
		}
	}
}

// handle queues one message from the gateway for the dispatcher. It
// reports false when the connection is to end.
func (cn *conn) handle(dec *protocol.Decoder, msg []byte) bool {
	if protocol.IsFrame(msg) {
		id, data, err := protocol.ParseFrame(msg)
		if err != nil {
			return cn.inbound(item{kind: itemError, err: fmt.Errorf("%w: stream frame: %w", ErrBadMessage, err)})
		}
		return cn.inbound(item{kind: itemFrame, stream: string(id), data: bytes.Clone(data)})
	}
	env := new(protocol.Envelope)
	if err := dec.Decode(msg, env); err != nil {
		return cn.inbound(item{kind: itemError, err: fmt.Errorf("%w: %w", ErrBadMessage, err)})
	}
	if protocol.IsGatewayOnly(env.Kind) && !FromGateway(env) {
		// Our gateway never relays these; a gateway that does must not
		// make a participant's envelope pass for its own.
		return cn.inbound(item{kind: itemError, err: fmt.Errorf("%w: %s from %q", ErrNotFromGateway, env.Kind, env.From)})
	}
	if env.Kind != protocol.KindSystemWelcome && cn.c.seen.repeat(env.ID) {
		return true // replayed by a resume, and seen before the reconnect
	}
	switch env.Kind {
	case protocol.KindSystemWelcome:
		w := new(protocol.Welcome)
		if err := env.DecodePayload(w); err != nil || w.You.ID == "" {
			if err == nil {
				err = errors.New("payload.you.id is missing")
			}
			return cn.inbound(item{kind: itemError, err: fmt.Errorf("%w: system/welcome: %w", ErrBadMessage, err)})
		}
		return cn.welcomed(env, w)
	case protocol.KindSystemError:
		if cn.joined.Load() {
			break
		}
		// Before the welcome, an error is the refusal of the join.
		var se protocol.SystemError
		_ = env.DecodePayload(&se)
		ok := cn.inbound(item{kind: itemEnvelope, env: env})
		cn.shutdown(&RefusedError{Code: se.Error, Message: se.Message}, websocket.StatusNormalClosure, "")
		return ok
	}
	if !cn.inbound(item{kind: itemEnvelope, env: env}) {
		return false // not handed on: a resume asks for it again
	}
	cn.c.seen.add(env.ID)
	return true
}

// inbound queues it, or ends the connection if the handlers are too far
// behind.
func (cn *conn) inbound(it item) bool {
	if cn.r.q.pushInbound(it) {
		return true
	}
	err := fmt.Errorf("%w: %d messages waiting", ErrSlowConsumer, cn.c.opts.InboundQueue)
	cn.c.opts.Logger.Warn("handlers too slow; dropping the connection", "queued", cn.c.opts.InboundQueue)
	cn.shutdown(err, websocket.StatusTryAgainLater, "client handlers too slow")
	return false
}

// welcomed records a welcome and queues it. The first one joins the
// connection: the client's id and Send work from here. A welcome the
// handlers have no room for ends the connection; the first one then counts
// as a failed attempt, not as a join.
func (cn *conn) welcomed(env *protocol.Envelope, w *protocol.Welcome) bool {
	c := cn.c
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.cn != cn {
		return false // cannot happen: c.cn is cleared once the reader has returned
	}
	if !cn.r.q.reserve() {
		// Not shutdown: it waits for the gateway, and c.mu is held.
		cn.fail(fmt.Errorf("%w: %d messages waiting", ErrSlowConsumer, c.opts.InboundQueue))
		return false
	}
	c.welcome = w
	c.id = w.You.ID
	first := !cn.joined.Load()
	if first {
		cn.id = w.You.ID
		cn.joined.Store(true)
		c.setStateLocked(cn.r, Joined) // queued before the welcome itself
	}
	cn.r.q.pushReserved(item{kind: itemEnvelope, env: env, welcome: w, cn: cn})
	if first {
		c.live.Store(cn)
		close(cn.joinedCh)
	}
	return true
}

// write is the writer goroutine.
func (cn *conn) write() {
	defer cn.wg.Done()
	for {
		select {
		case <-cn.ctx.Done():
			return
		case m := <-cn.out:
			err := cn.ws.Write(cn.ctx, m.typ, *m.buf)
			cn.c.putBuf(m.buf)
			if err != nil {
				cn.fail(fmt.Errorf("client: write: %w", err))
				return
			}
		}
	}
}

// heartbeat is the heartbeat goroutine: it pings the gateway every d and
// drops the connection when a pong does not come within d.
func (cn *conn) heartbeat(d time.Duration) {
	defer cn.wg.Done()
	t := time.NewTicker(d)
	defer t.Stop()
	for {
		select {
		case <-cn.ctx.Done():
			return
		case <-t.C:
		}
		ctx, cancel := context.WithTimeout(cn.ctx, d)
		err := cn.ws.Ping(ctx)
		cancel()
		if err != nil {
			if cn.ctx.Err() == nil {
				cn.c.opts.Logger.Warn("heartbeat failed; dropping the connection", "err", err)
				cn.fail(fmt.Errorf("client: heartbeat: no pong within %v: %w", d, err))
			}
			return
		}
	}
}

// send queues a message for the writer.
func (cn *conn) send(ctx context.Context, m outMsg) error {
	if cn.ctx.Err() != nil {
		cn.c.putBuf(m.buf)
		return ErrNotConnected
	}
	select {
	case cn.out <- m:
		return nil
	default:
	}
	select {
	case cn.out <- m:
		return nil
	case <-cn.ctx.Done():
		cn.c.putBuf(m.buf)
		return ErrNotConnected
	case <-ctx.Done():
		cn.c.putBuf(m.buf)
		return fmt.Errorf("client: send: %w", ctx.Err())
	}
}

// getBuf returns an empty buffer for an outbound message.
func (c *Client) getBuf() *[]byte {
	if b, ok := c.bufs.Get().(*[]byte); ok {
		return b
	}
	b := make([]byte, 0, 512)
	return &b
}

// putBuf recycles a buffer the writer is done with.
func (c *Client) putBuf(b *[]byte) {
	if cap(*b) <= 64<<10 {
		*b = (*b)[:0]
		c.bufs.Put(b)
	}
}
