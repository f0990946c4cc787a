package client

import (
	"encoding/json"
	"fmt"
	"runtime/debug"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/mew-protocol/mew/protocol"
)

// itemKind says what an item of the dispatch queue is.
type itemKind uint8

const (
	itemEnvelope     itemKind = iota // env (and welcome, for a system/welcome)
	itemFrame                        // stream, data
	itemState                        // state
	itemConnected                    //
	itemDisconnected                 // err
	itemReconnecting                 // attempt, delay
	itemError                        // err
	itemStop                         // the run is over: the dispatcher returns
)

// item is one event for the dispatch goroutine.
type item struct {
	kind    itemKind
	inbound bool // counted against the inbound bound
	state   State
	attempt int
	delay   time.Duration
	err     error
	env     *protocol.Envelope
	welcome *protocol.Welcome // for a system/welcome envelope
	cn      *conn             // the connection a welcome came on
	stream  string
	data    []byte
}

// queue is a run's dispatch queue: every event in the order it happened.
// Messages from the gateway count against a bound; the client's own events
// (state changes and the like, a handful per connection) do not, so they
// are never lost.
type queue struct {
	mu      sync.Mutex
	items   []item
	wake    chan struct{} // one slot: items were added
	inbound atomic.Int64  // inbound items queued or being handled
	limit   int64
}

func newQueue(limit int) *queue {
	return &queue{wake: make(chan struct{}, 1), limit: int64(limit)}
}

// push queues one of the client's own events.
func (q *queue) push(it item) {
	q.mu.Lock()
	q.items = append(q.items, it)
	q.mu.Unlock()
	q.signal()
}

// pushInbound queues a message from the gateway, unless the handlers are
// already limit messages behind.
func (q *queue) pushInbound(it item) bool {
	if !q.reserve() {
		return false
	}
	q.pushReserved(it)
	return true
}

// reserve takes room for one message from the gateway, if there is any,
// for pushReserved.
func (q *queue) reserve() bool {
	if q.inbound.Add(1) > q.limit {
		q.inbound.Add(-1)
		return false
	}
	return true
}

// pushReserved queues a message from the gateway in the room reserve took.
func (q *queue) pushReserved(it item) {
	it.inbound = true
	q.push(it)
}

func (q *queue) signal() {
	select {
	case q.wake <- struct{}{}:
	default:
	}
}

// take returns everything queued and leaves spare, emptied, as the queue's
// buffer, so that two buffers take turns.
func (q *queue) take(spare []item) []item {
	q.mu.Lock()
	defer q.mu.Unlock()
	items := q.items
	q.items = spare[:0]
	return items
}

// dispatch is a run's dispatch goroutine. It starts once the previous run's
// dispatcher has returned, so that two never run at once, and returns at
// the run's itemStop.
func (c *Client) dispatch(r *run, prev <-chan struct{}) {
	defer c.wg.Done()
	defer close(r.dispatched)
	if prev != nil {
		<-prev
	}
	var batch []item
	for {
		<-r.q.wake
		batch = r.q.take(batch)
		for i := range batch {
			it := &batch[i]
			if it.kind == itemStop {
				return
			}
			c.deliver(it)
			if it.inbound {
				r.q.inbound.Add(-1)
			}
			batch[i] = item{} // let go of the envelope
		}
		if cap(batch) > 4096 {
			batch = nil // give a burst's buffer back
		}
	}
}

// deliver runs the handlers for one event.
func (c *Client) deliver(it *item) {
	h := &c.h
	switch it.kind {
	case itemEnvelope:
		for _, e := range snapshot(h, &h.message) {
			call(c, e, "OnMessage", it.env)
		}
		for _, e := range snapshotKey(h, &h.kind, it.env.Kind) {
			call(c, e, "OnKind", it.env)
		}
		if it.welcome != nil {
			for _, e := range snapshot(h, &h.welcome) {
				call(c, e, "OnWelcome", cloneWelcome(it.welcome))
			}
			c.ready(it.cn)
		}
	case itemFrame:
		for _, e := range snapshotKey(h, &h.stream, it.stream) {
			call(c, e, "OnStream", it.data)
		}
	case itemState:
		c.emitState(it.state)
	case itemConnected:
		for _, e := range snapshot(h, &h.connected) {
			call(c, e, "OnConnected", struct{}{})
		}
	case itemDisconnected:
		for _, e := range snapshot(h, &h.disconnected) {
			call(c, e, "OnDisconnected", it.err)
		}
	case itemReconnecting:
		for _, e := range snapshot(h, &h.reconnecting) {
			call(c, e, "OnReconnecting", reconnecting{it.attempt, it.delay})
		}
	case itemError:
		c.emitError(it.err)
	}
}

func (c *Client) emitState(s State) {
	for _, e := range snapshot(&c.h, &c.h.state) {
		call(c, e, "OnStateChange", s)
	}
}

// emitError runs the OnError handlers. A panic in one of them is logged
// but not reported again.
func (c *Client) emitError(err error) {
	for _, e := range snapshot(&c.h, &c.h.errs) {
		call(c, e, "OnError", err)
	}
}

// call runs one handler, unless it was removed, and recovers its panic.
func call[A any](c *Client, e *entry[func(A)], name string, a A) {
	if e.removed.Load() {
		return
	}
	defer func() {
		p := recover()
		if p == nil {
			return
		}
		c.opts.Logger.Error("handler panicked", "handler", name, "panic", fmt.Sprint(p), "stack", string(debug.Stack()))
		if name != "OnError" {
			c.emitError(fmt.Errorf("%w: %s: %v", ErrHandlerPanic, name, p))
		}
	}()
	e.f(a)
}

// reconnecting is the argument of the OnReconnecting handlers.
type reconnecting struct {
	attempt int
	delay   time.Duration
}

// entry is one registered handler. removed is set by its remove function,
// so that a handler removed while the dispatcher holds a snapshot that
// includes it is not called again.
type entry[F any] struct {
	f       F
	removed atomic.Bool
}

// handlers holds the registered handlers. The slices are copy-on-write: a
// registration or removal replaces the slice, so the dispatcher can run a
// snapshot without holding mu.
type handlers struct {
	mu           sync.Mutex
	message      []*entry[func(*protocol.Envelope)]
	kind         map[string][]*entry[func(*protocol.Envelope)]
	welcome      []*entry[func(*protocol.Welcome)]
	state        []*entry[func(State)]
	connected    []*entry[func(struct{})]
	disconnected []*entry[func(error)]
	reconnecting []*entry[func(reconnecting)]
	errs         []*entry[func(error)]
	stream       map[string][]*entry[func([]byte)]
}

// snapshot returns the handlers of *list as they are now.
func snapshot[F any](h *handlers, list *[]*entry[F]) []*entry[F] {
	h.mu.Lock()
	defer h.mu.Unlock()
	return *list
}

// snapshotKey returns the handlers registered under key in *m.
func snapshotKey[F any](h *handlers, m *map[string][]*entry[F], key string) []*entry[F] {
	h.mu.Lock()
	defer h.mu.Unlock()
	return (*m)[key]
}

// add registers f in *list and returns its remove function.
func add[F any](h *handlers, list *[]*entry[F], f F) func() {
	e := &entry[F]{f: f}
	h.mu.Lock()
	*list = append(slices.Clip(*list), e)
	h.mu.Unlock()
	return func() {
		if e.removed.Swap(true) {
			return
		}
		h.mu.Lock()
		*list = slices.DeleteFunc(slices.Clone(*list), func(x *entry[F]) bool { return x == e })
		h.mu.Unlock()
	}
}

// addKey registers f under key in *m and returns its remove function.
func addKey[F any](h *handlers, m *map[string][]*entry[F], key string, f F) func() {
	e := &entry[F]{f: f}
	h.mu.Lock()
	if *m == nil {
		*m = make(map[string][]*entry[F])
	}
	(*m)[key] = append(slices.Clip((*m)[key]), e)
	h.mu.Unlock()
	return func() {
		if e.removed.Swap(true) {
			return
		}
		h.mu.Lock()
		list := slices.DeleteFunc(slices.Clone((*m)[key]), func(x *entry[F]) bool { return x == e })
		if len(list) == 0 {
			delete(*m, key)
		} else {
			(*m)[key] = list
		}
		h.mu.Unlock()
	}
}

// cloneWelcome returns a deep copy of w, so that each handler may keep or
// change its own.
func cloneWelcome(w *protocol.Welcome) *protocol.Welcome {
	if w == nil {
		return nil
	}
	cp := &protocol.Welcome{You: cloneInfo(w.You)}
	if w.Participants != nil {
		cp.Participants = make([]protocol.ParticipantInfo, len(w.Participants))
		for i, p := range w.Participants {
			cp.Participants[i] = cloneInfo(p)
		}
	}
	if w.ActiveStreams != nil {
		cp.ActiveStreams = make([]protocol.StreamInfo, len(w.ActiveStreams))
		for i, s := range w.ActiveStreams {
			cp.ActiveStreams[i] = s.Clone()
		}
	}
	return cp
}

func cloneInfo(p protocol.ParticipantInfo) protocol.ParticipantInfo {
	if p.Capabilities != nil {
		caps := make([]json.RawMessage, len(p.Capabilities))
		for i, c := range p.Capabilities {
			caps[i] = slices.Clone(c)
		}
		p.Capabilities = caps
	}
	return p
}
