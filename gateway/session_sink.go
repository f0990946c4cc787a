package gateway

// Where a session's writer writes: a WebSocket, through a corked socket, or
// an output_log file.

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"

	"github.com/coder/websocket"
)

// wsSink writes to a WebSocket whose network connection is nc.
type wsSink struct {
	conn *websocket.Conn
	nc   *corkConn
}

// write writes a batch corked: the frames leave in as few writes to the
// socket as their size allows, one for most batches.
//
// It passes the library no context: a cancellable one costs a registration
// per message there. A blocked write ends instead when the session's
// context is cancelled, which closes the socket (see serveWS).
func (w wsSink) write(_ context.Context, fs []frame) error {
	w.nc.cork()
	for i := range fs {
		typ := websocket.MessageText
		if fs[i].binary {
			typ = websocket.MessageBinary
		}
		err := w.conn.Write(context.Background(), typ, fs[i].data)
		if err == nil && w.nc.full() {
			err = w.nc.flush()
		}
		if err != nil {
			_ = w.nc.uncork()
			return err
		}
	}
	return w.nc.uncork()
}

func (wsSink) idle() error { return nil }

func (w wsSink) close(code websocket.StatusCode, reason string) {
	if code == 0 {
		code = websocket.StatusNormalClosure
	}
	if err := w.conn.Close(code, reason); err != nil {
		_ = w.conn.CloseNow()
	}
}

// fileSink appends each frame and a newline to an output_log file.
type fileSink struct {
	f *os.File
	w *bufio.Writer
}

func openFileSink(path string) (*fileSink, error) {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return nil, err
	}
	// 0600: a participant's log holds everything it was sent, which may be
	// private; a file made earlier with a looser mode is tightened.
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o600)
	if err != nil {
		return nil, err
	}
	if err := f.Chmod(0o600); err != nil {
		_ = f.Close()
		return nil, err
	}
	return &fileSink{f: f, w: bufio.NewWriterSize(f, 32<<10)}, nil
}

func (s *fileSink) write(_ context.Context, fs []frame) error {
	for _, f := range fs {
		if _, err := s.w.Write(f.data); err != nil {
			return err
		}
		if err := s.w.WriteByte('\n'); err != nil {
			return err
		}
	}
	return nil
}

func (s *fileSink) idle() error { return s.w.Flush() }

func (s *fileSink) close(websocket.StatusCode, string) {
	_ = errors.Join(s.w.Flush(), s.f.Close())
}

// corkConn is the socket under a gateway WebSocket. While the writer has it
// corked, what the library writes is gathered in a pooled buffer and sent in
// one write on flush or uncork, instead of one write per frame; uncorked, it
// writes through. Another goroutine's frames (pings, pongs, close frames)
// are small enough to reach it in one Write from the library's buffered
// writer, so they land between data frames, never inside one. An idle
// connection holds no buffer.
type corkConn struct {
	net.Conn
	mu  sync.Mutex
	buf *[]byte // while corked; nil otherwise

	// The reading side (park.go): fr is used by whoever holds the
	// library's read lock; the reader loop sets parkOK and armedAt.
	fr      frameTracker
	parkOK  atomic.Bool  // the reader waits for a message and may park
	armedAt atomic.Int64 // nanotime when the park deadline was set; 0: none
}

// Read is the library's read of the socket (see readParkable).
func (c *corkConn) Read(p []byte) (int, error) { return c.readParkable(p) }

const (
	corkFlushAt = 64 << 10  // a batch's bytes are sent at least this often
	corkKeepMax = 128 << 10 // larger buffers are not pooled
)

var corkPool sync.Pool // of *[]byte, empty

func (c *corkConn) Write(p []byte) (int, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.buf != nil {
		*c.buf = append(*c.buf, p...)
		return len(p), nil
	}
	return c.Conn.Write(p)
}

// cork starts gathering writes.
func (c *corkConn) cork() {
	b, _ := corkPool.Get().(*[]byte)
	if b == nil {
		b = new([]byte)
	}
	c.mu.Lock()
	c.buf = b
	c.mu.Unlock()
}

// full reports whether enough is gathered to be sent now.
func (c *corkConn) full() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.buf != nil && len(*c.buf) >= corkFlushAt
}

// flush sends what is gathered and stays corked.
func (c *corkConn) flush() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.flushLocked()
}

func (c *corkConn) flushLocked() error {
	if c.buf == nil || len(*c.buf) == 0 {
		return nil
	}
	_, err := c.Conn.Write(*c.buf)
	*c.buf = (*c.buf)[:0]
	return err
}

// uncork sends what is gathered and gives the buffer back.
func (c *corkConn) uncork() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	err := c.flushLocked()
	if b := c.buf; b != nil && cap(*b) <= corkKeepMax {
		*b = (*b)[:0]
		corkPool.Put(b)
	}
	c.buf = nil
	return err
}

// corkHijacker hands websocket.Accept the connection as a corkConn.
type corkHijacker struct {
	http.ResponseWriter
	nc *corkConn // set by Hijack
}

// Hijack hands over the connection as a corkConn. It also gives the library
// smaller buffers than net/http's 4 KiB ones,
// which a connection would hold for as long as it lives: the writer's only
// gathers a frame's header before the cork buffer takes it (control frames,
// at most 127 bytes, still reach corkConn in one Write), and a payload
// larger than the reader's is read past it.
func (h *corkHijacker) Hijack() (net.Conn, *bufio.ReadWriter, error) {
	raw, brw, err := http.NewResponseController(h.ResponseWriter).Hijack()
	if err != nil {
		return nil, nil, fmt.Errorf("hijack: %w", err)
	}
	h.nc = &corkConn{Conn: raw}
	// What the client sent after its upgrade request is already in
	// net/http's reader: it moves to the new one, buffered there, where
	// websocket.Accept looks for it.
	var src io.Reader = raw
	n := brw.Reader.Buffered()
	if n > 0 {
		early, _ := brw.Reader.Peek(n)
		h.nc.fr.feed(early) // the first frames the library reads
		src = io.MultiReader(bytes.NewReader(bytes.Clone(early)), raw)
	}
	br := bufio.NewReaderSize(src, max(wsReadBuffer, n))
	if n > 0 {
		if _, err := br.Peek(n); err != nil {
			return nil, nil, fmt.Errorf("hijack: %w", err)
		}
	}
	return h.nc, bufio.NewReadWriter(br, bufio.NewWriterSize(h.nc, wsWriteBuffer)), nil
}

// The sizes of a gateway WebSocket's buffers (see corkHijacker.Hijack).
const (
	wsReadBuffer  = 1 << 10
	wsWriteBuffer = 256
)
