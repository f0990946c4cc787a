package clusterlink

import (
	"context"
	"errors"
	"log/slog"
	"sync"
	"time"

	"github.com/mew-protocol/mew/gateway/cluster"
)

// OpTimeout bounds one write to the fabric.
const OpTimeout = 10 * time.Second

// Op is one write to the fabric, made by a Writer in the order queued.
type Op struct {
	Key   string // State key; "" for a presence op
	Value []byte // nil: delete (State) or leave (presence)
	TTL   time.Duration
	Join  *cluster.Member // a presence join (or refresh)
	Leave [2]string       // a presence leave: participant, conn
	// Rev, with Del: delete the key only at this revision. Del is a
	// conditional delete of a key the node does not track as its own (a
	// floor claim).
	Rev uint64
	Del bool
	// Create stores the key only if absent (the first binding in the
	// cluster wins), not tracked as the node's own either.
	Create bool

	done chan struct{} // a barrier: closed when every write queued before it is made
}

// Writer makes a space's writes to the fabric from one goroutine, in the
// order they were queued, so that every node sees this node's changes in
// the order made. Queueing never blocks: the gateway queues while holding
// its space's lock.
//
// The Writer also knows which State keys hold a write of its own not yet
// acknowledged, or acknowledged at which revision (Own): a watch brings
// those writes back, and they are applied here already.
//
// Lock order: the caller's space lock, then Writer.mu; the writer
// goroutine takes only Writer.mu.
type Writer struct {
	node   cluster.Node
	space  string
	logger *slog.Logger
	ctx    context.Context

	mu      sync.Mutex
	queue   []Op              // guarded by mu
	pending map[string]int    // keys with writes of ours not yet acknowledged; guarded by mu
	ownRev  map[string]uint64 // the revision of our last acknowledged write of a key; guarded by mu
	drain   chan struct{}     // closed to tell the writer to finish the queue and return; under mu
	wake    chan struct{}
	wrote   chan struct{} // closed when the goroutine has returned
}

// NewWriter starts the writer of space's changes on node. It stops when ctx
// ends, or after Drain once its queue is empty.
func NewWriter(ctx context.Context, node cluster.Node, space string, logger *slog.Logger) *Writer {
	w := &Writer{
		node: node, space: space, logger: logger, ctx: ctx,
		pending: make(map[string]int), ownRev: make(map[string]uint64),
		drain: make(chan struct{}), wake: make(chan struct{}, 1), wrote: make(chan struct{}),
	}
	go w.run()
	return w
}

// Enqueue queues op, untracked; it never blocks.
func (w *Writer) Enqueue(op Op) {
	w.mu.Lock()
	w.queue = append(w.queue, op)
	w.mu.Unlock()
	w.poke()
}

// Put queues a State write of the node's own (value nil: a delete). Until it
// is acknowledged, the watch's changes of the key are ours, or lose to ours,
// and Own says so.
func (w *Writer) Put(key string, value []byte, ttl time.Duration) {
	w.mu.Lock()
	w.pending[key]++
	w.queue = append(w.queue, Op{Key: key, Value: value, TTL: ttl})
	w.mu.Unlock()
	w.poke()
}

func (w *Writer) poke() {
	select {
	case w.wake <- struct{}{}:
	default:
	}
}

// Own reports whether the watch's change e is one of the node's own writes
// (already applied here), or one that loses to a write of ours still on its
// way; it forgets the revision once the write has come back.
func (w *Writer) Own(e cluster.Entry) bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.pending[e.Key] > 0 {
		return true
	}
	rev, ok := w.ownRev[e.Key]
	if !ok {
		return false
	}
	if e.Revision >= rev {
		delete(w.ownRev, e.Key)
	}
	return e.Revision <= rev
}

// Flush waits until the writes queued so far are made, ctx ends or the
// writer stops, so that what follows sees them in the fabric. Not to be
// called with the space's lock held.
func (w *Writer) Flush(ctx context.Context) {
	done := make(chan struct{})
	w.Enqueue(Op{done: done})
	select {
	case <-done:
	case <-ctx.Done():
	case <-w.wrote:
	}
}

// Drain tells the writer to make what is queued and return, and waits for
// that until ctx ends.
func (w *Writer) Drain(ctx context.Context) {
	w.mu.Lock()
	select {
	case <-w.drain:
	default:
		close(w.drain)
	}
	w.mu.Unlock()
	select {
	case <-w.wrote:
	case <-ctx.Done():
	}
}

// Done is closed when the writer's goroutine has returned.
func (w *Writer) Done() <-chan struct{} { return w.wrote }

func (w *Writer) run() {
	defer close(w.wrote)
	for {
		w.mu.Lock()
		ops := w.queue
		w.queue = nil
		w.mu.Unlock()
		for _, op := range ops {
			w.write(op)
		}
		if len(ops) > 0 {
			continue
		}
		select {
		case <-w.wake:
		case <-w.drain:
			w.mu.Lock()
			empty := len(w.queue) == 0
			w.mu.Unlock()
			if empty {
				return
			}
		case <-w.ctx.Done():
			return
		}
	}
}

// acked records the end of a tracked write of key, stored at rev (0: not
// stored).
func (w *Writer) acked(key string, rev uint64) {
	w.mu.Lock()
	if w.pending[key]--; w.pending[key] <= 0 {
		delete(w.pending, key)
	}
	if rev > 0 {
		w.ownRev[key] = max(w.ownRev[key], rev)
	}
	w.mu.Unlock()
}

func (w *Writer) write(op Op) {
	if op.done != nil {
		close(op.done)
		return
	}
	ctx, cancel := context.WithTimeout(w.ctx, OpTimeout)
	defer cancel()
	st, pr := w.node.State(), w.node.Presence()
	tracked := op.Key != "" && !op.Del && !op.Create
	err := w.node.Err() // unreachable: fail now rather than wait for the timeout
	switch {
	case err != nil:
		if tracked {
			w.acked(op.Key, 0)
		}
	case op.Join != nil:
		err = pr.Join(ctx, w.space, *op.Join)
	case op.Leave[0] != "":
		err = pr.Leave(ctx, w.space, op.Leave[0], op.Leave[1])
	case op.Create:
		if _, err = st.Put(ctx, w.space, op.Key, op.Value, cluster.PutOptions{IfAbsent: true, TTL: op.TTL}); errors.Is(err, cluster.ErrConflict) {
			err = nil // stored first elsewhere: the watch brings that
		}
	case op.Del:
		if err = st.Delete(ctx, w.space, op.Key, op.Rev); errors.Is(err, cluster.ErrConflict) || errors.Is(err, cluster.ErrNotFound) {
			err = nil // changed or gone meanwhile: nothing of ours to remove
		}
	default:
		var rev uint64
		if op.Value == nil {
			err = st.Delete(ctx, w.space, op.Key, 0)
		} else {
			rev, err = st.Put(ctx, w.space, op.Key, op.Value, cluster.PutOptions{TTL: op.TTL})
		}
		w.acked(op.Key, rev)
	}
	if err != nil {
		// The other nodes miss this change: the node's Err says why, and
		// the space refuses envelopes until it is back.
		w.logger.Error("cluster write failed", "space", w.space, "key", op.Key, "err", err)
	}
}
