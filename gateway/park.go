package gateway

// Parking idle connections. A joined WebSocket's reader goroutine spends
// nearly all of an idle connection's life blocked on the socket, and its
// stack (4 KiB at least, often 8) is most of what the connection costs.
// Once a connection has sent nothing for parkAfter, its reader returns at a
// frame boundary, outside any message and with nothing buffered, and the
// socket is handed to the server's poller (park_linux.go), one goroutine
// for all of them; when the socket becomes readable, or the session ends, a
// new reader goroutine takes over where the old one stopped. Elsewhere than
// on Linux, and on a socket that is not a plain file descriptor (TLS, pipes
// in tests), the reader never parks.

import (
	"context"
	"errors"
	"net"
	"os"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/coder/websocket"

	"github.com/mew-protocol/mew/protocol"
)

// parkAfter is how long a connection reads nothing before its reader parks
// (between half of it and all of it: see armPark).
// A connection that sends a message every few hundred milliseconds keeps
// its goroutine; one that sends less often pays a goroutine start and two
// system calls per message, small beside routing it.
const parkAfter = 500 * time.Millisecond

// errPark is what corkConn.Read gives the WebSocket library when the reader
// is to park: the library passes it up unchanged from a frame header's
// first byte, and keeps the connection open.
var errPark = errors.New("gateway: idle connection parked")

// Reader states of a joinedConn.
const (
	readerRunning int32 = iota
	readerParked
)

// joinedConn is a joined WebSocket connection and what reading it needs
// from one reader goroutine to the next.
//
// Ownership: one goroutine reads it at a time (run), or none while it is
// parked; resume, called by the poller and when the session ends, starts
// the next (a parking reader may still be finishing park meanwhile, see
// there). The running goroutine, or the parked connection, holds the
// connection's slot of srv.wg.
type joinedConn struct {
	srv         *Server
	conn        *websocket.Conn
	s           *session
	nc          *corkConn       // what the library reads through
	rc          syscall.RawConn // nil: this connection never parks; set once
	stopClosing func() bool

	state  atomic.Int32 // readerRunning or readerParked
	noPark atomic.Bool  // parking failed once: read without it
	poller atomic.Pointer[poller]

	// Owned by the poller, under its lock.
	pollID  uint64 // 0 until first parked
	watched bool   // the socket is in the poller's set
}

func newJoinedConn(srv *Server, conn *websocket.Conn, s *session, nc *corkConn) *joinedConn {
	jc := &joinedConn{srv: srv, conn: conn, s: s, nc: nc}
	if canPark {
		jc.rc = rawConnOf(nc.Conn)
	}
	return jc
}

// rawConnOf returns the file descriptor of a plain socket, or nil.
func rawConnOf(c net.Conn) syscall.RawConn {
	if cc, ok := c.(*countedConn); ok {
		c = cc.Conn
	}
	sc, ok := c.(syscall.Conn)
	if !ok {
		return nil
	}
	rc, err := sc.SyscallConn()
	if err != nil {
		return nil
	}
	return rc
}

// run is a reader goroutine: it reads until the connection parks or ends,
// and when it ends removes the session from its space.
func (jc *joinedConn) run() {
	if jc.read() {
		return // parked: resume starts the next reader
	}
	srv, s := jc.srv, jc.s
	defer srv.wg.Done()
	defer jc.conn.CloseNow()
	defer jc.stopClosing()
	if p := jc.poller.Load(); p != nil {
		p.forget(jc)
	}
	s.kill(websocket.StatusNormalClosure, "")
	s.sp.detach(s)
	<-s.finished
	srv.opts.Logger.Info("participant left", "space", s.sp.id, "participant", s.id, "reason", s.closeReason)
}

// resume starts a reader for a parked connection; for one that is not
// parked it does nothing.
func (jc *joinedConn) resume() {
	if jc.state.CompareAndSwap(readerParked, readerRunning) {
		jc.srv.metrics.parked.Dec()
		go jc.run()
	}
}

// park hands the idle connection to the poller. It reports false when it
// could not, or when the session ended meanwhile: the caller reads on.
//
// Once the state says parked, another reader may start at any moment (the
// poller, the session's end), so from there on park touches only the
// poller, under its lock, and atomics, until a swap gives it the
// connection back.
func (jc *joinedConn) park() bool {
	p := jc.srv.parking()
	if p == nil {
		jc.noPark.Store(true) // the server is closing, or there is no poller
		return false
	}
	// Counted before the state says so: whoever swaps it back uncounts it.
	jc.srv.metrics.parked.Inc()
	jc.state.Store(readerParked)
	if err := p.watch(jc); err != nil {
		if !jc.state.CompareAndSwap(readerParked, readerRunning) {
			return true // resumed meanwhile: that reader reads on
		}
		jc.srv.metrics.parked.Dec()
		jc.noPark.Store(true)
		jc.srv.opts.Logger.Debug("connection not parked", "participant", jc.s.id, "err", err)
		return false
	}
	// A session that ended before the state was parked found nothing to
	// resume (see serveWS): whoever wins the swap reads on.
	if jc.s.ctx.Err() != nil && jc.state.CompareAndSwap(readerParked, readerRunning) {
		jc.srv.metrics.parked.Dec()
		return false
	}
	return true
}

// armPark lets corkConn.Read park the reader once nothing has come for
// parkAfter. The deadline is set again only when half of it has passed,
// so that a busy connection does not reset a timer per message.
func (jc *joinedConn) armPark() {
	if jc.rc == nil || jc.noPark.Load() {
		return
	}
	c := jc.nc
	now := max(nanotime(), 1)
	if at := c.armedAt.Load(); at == 0 || now-at >= int64(parkAfter/2) {
		if c.Conn.SetReadDeadline(time.Now().Add(parkAfter)) != nil {
			return
		}
		c.armedAt.Store(now)
	}
	c.parkOK.Store(true)
}

// read is the reader loop of a joined connection. It reports true when it
// parked the connection, false when the connection has ended.
func (jc *joinedConn) read() bool {
	srv, s := jc.srv, jc.s
	sp := s.sp
	o := origin{m: s.m, id: s.id, s: s, transport: transportWebSocket}
	st := &inState{}
	var buf []byte
	for {
		jc.armPark()
		_, rd, err := jc.conn.Reader(context.Background())
		jc.nc.parkOK.Store(false)
		if err != nil {
			if errors.Is(err, errPark) {
				if jc.park() {
					return true
				}
				continue
			}
			return false
		}
		var over bool
		buf, over, err = readMessage(rd, buf[:0], srv.opts.Limits.MaxMessageSize)
		if err != nil {
			return false
		}
		s.lastSeen.Store(srv.now().UnixNano())
		switch {
		case over:
			// Correlated when the id can be read from the message's
			// beginning, so that the sender's request fails at once.
			rf := tooLarge(srv.opts.Limits.MaxMessageSize)
			rf.ref = protocol.PeekIDPrefix(buf[:min(len(buf), maxPeek)])
			sp.answer(o, rf)
		case protocol.IsFrame(buf):
			sp.streamFrame(o, buf)
		default:
			// Back-pressure from the audit log falls here, on the sender,
			// holding no lock; stream frames, which it does not record,
			// never wait for it.
			if srv.audit.WaitRoom(s.ctx) != nil {
				return false
			}
			if _, rf := sp.inbound(o, buf, st); rf != nil {
				sp.answer(o, rf)
			}
		}
		if s.flooding.Load() > 0 {
			sp.tellFlooder(o)
		}
		if cap(buf) > 64<<10 {
			buf = nil // don't keep a big message's buffer for an idle connection
		}
	}
}

// readParkable is corkConn.Read: it reads the socket for the WebSocket
// library and follows the frames read, and when the park deadline passes
// while the reader waits for a frame outside any message, it returns
// errPark having consumed nothing. Another deadline passing, or this one in
// the middle of a frame, is not an error: the read goes on.
func (c *corkConn) readParkable(p []byte) (int, error) {
	for {
		n, err := c.Conn.Read(p)
		c.fr.feed(p[:n])
		if err == nil || c.armedAt.Load() == 0 || !errors.Is(err, os.ErrDeadlineExceeded) {
			return n, err
		}
		c.armedAt.Store(0)
		if derr := c.Conn.SetReadDeadline(time.Time{}); derr != nil {
			return n, derr
		}
		if n > 0 {
			return n, nil
		}
		if c.parkOK.Load() && c.fr.boundary() {
			return 0, errPark
		}
	}
}

// frameTracker follows the WebSocket frames in a stream of bytes (RFC 6455
// 5.2), enough to tell whether the stream so far ends at a frame boundary
// outside any fragmented message. It reads only frame headers and counts
// payloads; a header the library will refuse is counted like any other.
type frameTracker struct {
	hdr   [14]byte // the current frame's header, as far as it has come
	nhdr  uint8
	left  uint64 // payload bytes of the current frame still to come
	inMsg bool   // a data message's final frame has not come yet
}

func (t *frameTracker) feed(b []byte) {
	for len(b) > 0 {
		if t.left > 0 {
			k := min(uint64(len(b)), t.left)
			b, t.left = b[k:], t.left-k
			continue
		}
		t.hdr[t.nhdr] = b[0]
		t.nhdr++
		b = b[1:]
		if t.nhdr < 2 || t.nhdr < headerLen(t.hdr[1]) {
			continue
		}
		h := t.hdr[:t.nhdr]
		switch l := h[1] & 0x7f; l {
		case 126:
			t.left = uint64(h[2])<<8 | uint64(h[3])
		case 127:
			for _, x := range h[2:10] {
				t.left = t.left<<8 | uint64(x)
			}
		default:
			t.left = uint64(l)
		}
		if op := h[0] & 0x0f; op < 0x8 { // a data frame: continuation, text, binary or reserved
			t.inMsg = h[0]&0x80 == 0
		}
		t.nhdr = 0
	}
}

// headerLen is the length of a frame header whose second byte is b1.
func headerLen(b1 byte) uint8 {
	n := uint8(2)
	switch b1 & 0x7f {
	case 126:
		n += 2
	case 127:
		n += 8
	}
	if b1&0x80 != 0 {
		n += 4 // the mask
	}
	return n
}

// boundary reports whether the stream so far ends between frames, outside
// any message.
func (t *frameTracker) boundary() bool {
	return t.nhdr == 0 && t.left == 0 && !t.inMsg
}
