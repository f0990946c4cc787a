package bench

import (
	"bytes"
	"context"
	"fmt"
	"net"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"github.com/coder/websocket"

	"github.com/mew-protocol/mew/protocol"
)

const (
	// dialConcurrency bounds how many connections a fleet opens at once.
	dialConcurrency = 32
	// joinTimeout bounds one participant's dial and wait for its welcome.
	joinTimeout = 15 * time.Second
	// closeConcurrency bounds how many connections a fleet closes at once.
	closeConcurrency = 64
	// closeGrace bounds the close handshakes: after it the remaining connections are dropped.
	closeGrace = 2 * time.Second
)

// A handler consumes one message that participant i received. It runs on i's reader goroutine
// and must not keep msg, whose buffer is reused for the next message.
type handler func(i int, msg []byte)

// fleet is the client side of one run: a connection per participant, each with a reader
// goroutine that the fleet owns. Methods are called from the run's goroutine only.
type fleet struct {
	ep        *Endpoint
	transport *http.Transport
	client    *http.Client

	readCtx    context.Context // the readers' context
	stopRead   context.CancelFunc
	conns      []*websocket.Conn // by participant index; nil where the dial failed
	readers    sync.WaitGroup
	closing    atomic.Bool   // set before the fleet closes its connections on purpose
	failures   atomic.Uint64 // connections that ended on their own during the run
	errMu      sync.Mutex
	firstError error // the first such failure, for the report
}

// newFleet returns a fleet for ep with its own HTTP transport, so that nothing of the run
// outlives close. ctx bounds the readers.
func newFleet(ctx context.Context, ep *Endpoint) *fleet {
	tr := &http.Transport{
		Proxy: http.ProxyFromEnvironment,
		// A DialContext of our own also keeps HTTP/2 off, which WebSocket needs.
		DialContext:         (&net.Dialer{Timeout: joinTimeout}).DialContext,
		TLSHandshakeTimeout: joinTimeout,
	}
	readCtx, stop := context.WithCancel(ctx)
	return &fleet{
		ep:        ep,
		transport: tr,
		client:    &http.Client{Transport: tr},
		readCtx:   readCtx,
		stopRead:  stop,
	}
}

// connect joins every id (participant i is ids[i]), at most dialConcurrency at a time, and
// starts i's reader, which passes each message after the welcome to handle. It reports progress
// from the calling goroutine. On the first failure it stops dialling and returns the error; the
// connections already made stay in the fleet for close.
func (f *fleet) connect(ctx context.Context, ids []string, handle handler, progress func(string)) error {
	f.conns = make([]*websocket.Conn, len(ids))
	dialCtx, cancel := context.WithCancel(ctx)
	defer cancel()

	type result struct {
		i   int
		c   *websocket.Conn
		err error
	}
	results := make(chan result, len(ids))
	next := make(chan int)
	var workers sync.WaitGroup
	for range min(dialConcurrency, len(ids)) {
		workers.Add(1)
		go func() {
			defer workers.Done()
			for i := range next {
				c, err := f.join(dialCtx, f.ep.urlOf(i), ids[i])
				results <- result{i, c, err}
			}
		}()
	}
	go func() { // the feeder; workers end when it closes next
		defer close(next)
		for i := range ids {
			select {
			case next <- i:
			case <-dialCtx.Done():
				return
			}
		}
	}()

	var err error
	step := max(len(ids)/10, 1)
	done := 0
	for got := 0; got < len(ids); got++ {
		var r result
		select {
		case r = <-results:
		case <-dialCtx.Done():
			// The feeder stopped: collect what the workers still return, then stop.
			workers.Wait()
			close(results)
			for r := range results {
				f.adopt(r.i, r.c, handle)
			}
			if err == nil {
				err = fmt.Errorf("connect: %w", context.Cause(dialCtx))
			}
			return err
		}
		if r.err != nil {
			if err == nil {
				err = fmt.Errorf("connect %d/%d: %w", done, len(ids), r.err)
			}
			cancel()
			continue
		}
		f.adopt(r.i, r.c, handle)
		done++
		if progress != nil && (done%step == 0 || done == len(ids)) {
			progress(fmt.Sprintf("connected %d/%d", done, len(ids)))
		}
	}
	workers.Wait()
	return err
}

// adopt keeps connection c of participant i and starts its reader.
func (f *fleet) adopt(i int, c *websocket.Conn, handle handler) {
	if c == nil {
		return
	}
	f.conns[i] = c
	f.readers.Add(1)
	go f.read(i, c, handle)
}

// join dials url as participant id and waits for its system/welcome.
func (f *fleet) join(ctx context.Context, url, id string) (*websocket.Conn, error) {
	ctx, cancel := context.WithTimeout(ctx, joinTimeout)
	defer cancel()
	c, _, err := websocket.Dial(ctx, url, &websocket.DialOptions{
		HTTPClient: f.client,
		HTTPHeader: http.Header{"Authorization": {"Bearer " + f.ep.Tokens[id]}},
	})
	if err != nil {
		return nil, fmt.Errorf("%s: %w", id, err)
	}
	c.SetReadLimit(readLimit)
	for {
		_, msg, err := c.Read(ctx)
		if err != nil {
			_ = c.CloseNow()
			return nil, fmt.Errorf("%s: waiting for system/welcome: %w", id, err)
		}
		env, err := protocol.Decode(msg)
		if err != nil {
			continue // not an envelope (a stream frame, say): not the welcome either
		}
		switch env.Kind {
		case protocol.KindSystemWelcome:
			return c, nil
		case protocol.KindSystemError:
			_ = c.CloseNow()
			return nil, fmt.Errorf("%s: refused: %s", id, env.Payload)
		}
	}
}

// read passes participant i's messages to handle until the connection ends.
func (f *fleet) read(i int, c *websocket.Conn, handle handler) {
	defer f.readers.Done()
	// A context of its own: the library registers a callback on it for every message, which on
	// the shared parent would make all readers contend for its lock.
	ctx, cancel := context.WithCancel(f.readCtx)
	defer cancel()
	var buf bytes.Buffer
	for {
		_, r, err := c.Reader(ctx)
		if err == nil {
			buf.Reset()
			_, err = buf.ReadFrom(r)
		}
		if err != nil {
			if !f.closing.Load() && f.readCtx.Err() == nil {
				f.fail(fmt.Errorf("participant %d: %w", i, err))
			}
			return
		}
		handle(i, buf.Bytes())
	}
}

// fail counts a connection that failed during the run.
func (f *fleet) fail(err error) {
	f.failures.Add(1)
	f.errMu.Lock()
	defer f.errMu.Unlock()
	if f.firstError == nil {
		f.firstError = err
	}
}

// firstErr returns the first connection failure of the run, or nil.
func (f *fleet) firstErr() error {
	f.errMu.Lock()
	defer f.errMu.Unlock()
	return f.firstError
}

// close closes every connection, with a close handshake unless ctx is done, and waits for the
// readers. Handshakes that take longer than closeGrace in all (a server that stopped answering)
// give way to dropping the connections. Calls after the first do nothing.
func (f *fleet) close(ctx context.Context) {
	if f.closing.Swap(true) {
		return
	}
	graceful := ctx.Err() == nil
	// Cancelling the readers' context makes the library drop their connections, which ends a
	// handshake in progress too.
	drop := time.AfterFunc(closeGrace, f.stopRead)
	defer drop.Stop()
	sem := make(chan struct{}, closeConcurrency)
	var wg sync.WaitGroup
	for _, c := range f.conns {
		if c == nil {
			continue
		}
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			if graceful {
				_ = c.Close(websocket.StatusNormalClosure, "bench done")
			} else {
				_ = c.CloseNow()
			}
		}()
	}
	wg.Wait()
	f.stopRead()
	f.readers.Wait()
	f.transport.CloseIdleConnections()
}

// write sends msg as participant i. A failed write closes the connection, so i's reader counts
// the failure. Each writing goroutine should pass a context of its own (see read).
func (f *fleet) write(ctx context.Context, i int, msg []byte) bool {
	return f.conns[i].Write(ctx, websocket.MessageText, msg) == nil
}
