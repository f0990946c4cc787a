package clusterhist

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/mew-protocol/mew/gateway/cluster"
)

const (
	// QueueBytes bounds a Writer's queue by size (Options.Max, by count).
	QueueBytes = 64 << 20
	// Batch is the most records one AppendBatch carries.
	Batch = 256
	// Stamp is the size of the time prefix of a history record.
	Stamp = 8
	// opTimeout bounds one append of a batch.
	opTimeout = 10 * time.Second
)

// Options configures a Writer.
type Options struct {
	// Max bounds the queue in records.
	Max int
	// Dropped counts envelopes left out of the history (a full queue, a
	// failed append, a close before they were written); nil: not counted.
	Dropped func(n int)
	// Logger receives a warning about drops, at most every 10 s.
	Logger *slog.Logger
}

// Writer appends a node's envelopes to the cluster's history. When the
// node's Broker is a cluster.Keeper, every record is kept at once, in the
// caller's order, by the message that also publishes a participant's
// envelope to the other nodes (Share); otherwise records wait in a queue
// that run appends a batch at a time.
//
// Goroutine: run, owned by the Writer, started by NewWriter and ended by
// Close (after the queue is written, or when Close's ctx ends). mu is a
// leaf: nothing else is locked while it is held.
type Writer struct {
	node  cluster.Node
	log   cluster.Log
	batch cluster.BatchAppender // nil: the log appends one record at a time
	keep  cluster.Keeper        // nil: records are queued for run
	// settledFn is settle as a func value, made once: Keep takes one per record.
	settledFn func(error)
	hash      string
	opts      Options

	mu       sync.Mutex
	queue    []cluster.Pending // guarded by mu
	bytes    int               // guarded by mu: the size of queue's records
	lastWarn time.Time         // guarded by mu: drops are logged at most every 10 s
	pushed   uint64            // guarded by mu: records queued or kept since the start
	settled  uint64            // guarded by mu: records of those appended or dropped
	progress chan struct{}     // guarded by mu: closed and replaced when settled grows

	wake      chan struct{}
	drain     chan struct{} // closed to ask run to write the queue and return
	done      chan struct{} // closed when run has returned
	ctx       context.Context
	cancel    context.CancelFunc
	closeOnce sync.Once
}

// NewWriter starts the writer of node's share of the history.
func NewWriter(node cluster.Node, o Options) *Writer {
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	ctx, cancel := context.WithCancel(context.Background())
	w := &Writer{
		node: node, log: node.History(), hash: nodeMark(node.ID()), opts: o,
		wake: make(chan struct{}, 1), drain: make(chan struct{}), done: make(chan struct{}),
		ctx: ctx, cancel: cancel, progress: make(chan struct{}),
	}
	w.batch, _ = w.log.(cluster.BatchAppender)
	w.keep, _ = node.Broker().(cluster.Keeper)
	w.settledFn = w.settle
	go w.run()
	return w
}

// Hash is this node's mark in cursors: a hash of its id and a random
// nonce, so that a node restarted under the same id (whose private
// sequence starts again at 0) does not honour the cursors of its past run.
func (w *Writer) Hash() string { return w.hash }

func nodeMark(nodeID string) string {
	var nonce [16]byte
	_, _ = rand.Read(nonce[:]) // never fails (crypto/rand)
	h := sha256.Sum256(append([]byte(nodeID+"\x00"), nonce[:]...))
	return hex.EncodeToString(h[:4])
}

// Fits reports whether an envelope of n bytes fits in a record.
func Fits(n int) bool { return Stamp+n <= cluster.MaxRecordLen }

// Push queues data, an envelope of space accepted or made at at, for the
// history. It never blocks: a full queue drops it, counted.
func (w *Writer) Push(space string, at time.Time, data []byte) {
	if w.keep != nil {
		_ = w.kept(space, at, data, false)
		return
	}
	rec := make([]byte, Stamp+len(data))
	binary.BigEndian.PutUint64(rec, uint64(at.UnixNano()))
	copy(rec[Stamp:], data)
	w.mu.Lock()
	if len(w.queue) >= w.opts.Max || w.bytes+len(rec) > QueueBytes {
		w.droppedLocked(1, "the queue is full")
		w.mu.Unlock()
		return
	}
	w.queue = append(w.queue, cluster.Pending{Space: space, Data: rec})
	w.bytes += len(rec)
	w.pushed++
	w.mu.Unlock()
	select {
	case w.wake <- struct{}{}:
	default:
	}
}

// Share publishes data, a participant's envelope of space accepted at at,
// to the other nodes and keeps it in the history with one message, when
// the node's Broker is a cluster.Keeper; it reports whether it published.
// If not, the caller publishes data and Pushes it. Too many records waiting
// for the history leave this one out of it (counted), published alone.
func (w *Writer) Share(space string, at time.Time, data []byte) (bool, error) {
	if w.keep == nil {
		return false, nil
	}
	if err := w.kept(space, at, data, true); !errors.Is(err, errFull) {
		return true, err
	}
	return true, w.node.Broker().Publish(w.ctx, space, data)
}

// errFull: too many keeps wait for their acknowledgement.
var errFull = errors.New("clusterhist: too many records wait for the history")

// kept keeps data with the Keeper, sharing it if share; the record counts
// as pushed until its acknowledgement settles it. Failures to keep are
// counted as drops; a failed share is returned.
func (w *Writer) kept(space string, at time.Time, data []byte, share bool) error {
	var stamp [Stamp]byte
	binary.BigEndian.PutUint64(stamp[:], uint64(at.UnixNano()))
	w.mu.Lock()
	if w.pushed-w.settled >= uint64(w.opts.Max) {
		w.droppedLocked(1, "the queue is full")
		w.mu.Unlock()
		return errFull
	}
	w.pushed++
	w.mu.Unlock()
	err := w.keep.Keep(w.ctx, space, stamp[:], data, share, w.settledFn)
	if err != nil {
		w.settle(err) // Keep will not call it
	}
	return err
}

// settle counts one keep acknowledged (err nil) or lost.
func (w *Writer) settle(err error) {
	w.mu.Lock()
	if err != nil {
		w.droppedLocked(1, err.Error())
	}
	w.settledLocked(1)
	w.mu.Unlock()
}

// settledLocked counts n records appended or dropped and wakes Settle's
// waiters; mu must be held.
func (w *Writer) settledLocked(n int) {
	w.settled += uint64(n)
	close(w.progress)
	w.progress = make(chan struct{})
}

// Queued is how many records wait to be appended (or, with a Keeper, for
// their acknowledgement).
func (w *Writer) Queued() int {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.keep != nil {
		return int(w.pushed - w.settled)
	}
	return len(w.queue)
}

// droppedLocked counts n envelopes lost to the history; mu must be held.
func (w *Writer) droppedLocked(n int, why string) {
	if w.opts.Dropped != nil {
		w.opts.Dropped(n)
	}
	if now := time.Now(); now.Sub(w.lastWarn) >= 10*time.Second {
		w.lastWarn = now
		w.opts.Logger.Warn("cluster: envelopes left out of the polling history", "count", n, "why", why)
	}
}

func (w *Writer) dropped(n int, why string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.droppedLocked(n, why)
}

// run appends the queue in order, a batch at a time, until asked to drain
// and the queue is empty, or cancelled.
func (w *Writer) run() {
	defer close(w.done)
	for {
		w.mu.Lock()
		if w.ctx.Err() != nil {
			// Closed before the queue was written: what is left is lost.
			if len(w.queue) > 0 {
				w.droppedLocked(len(w.queue), "the gateway closed")
			}
			w.queue, w.bytes = nil, 0
			w.mu.Unlock()
			return
		}
		n := min(len(w.queue), Batch)
		recs := w.queue[:n:n]
		w.queue = w.queue[n:]
		if len(w.queue) == 0 {
			w.queue = nil // let the backing array go
		}
		for _, r := range recs {
			w.bytes -= len(r.Data)
		}
		w.mu.Unlock()
		if n > 0 {
			w.write(recs)
			w.mu.Lock()
			w.settledLocked(n)
			w.mu.Unlock()
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

func (w *Writer) write(recs []cluster.Pending) {
	if err := w.node.Err(); err != nil {
		w.dropped(len(recs), err.Error()) // cut off: waiting for timeouts would only delay the rest
		return
	}
	ctx, cancel := context.WithTimeout(w.ctx, opTimeout)
	defer cancel()
	if w.batch != nil {
		if failed, err := w.batch.AppendBatch(ctx, recs); failed > 0 {
			w.dropped(failed, fmt.Sprint(err))
		}
		return
	}
	for i, r := range recs {
		if _, err := w.log.Append(ctx, r.Space, r.Data); err != nil {
			if errors.Is(err, cluster.ErrUnavailable) || errors.Is(err, cluster.ErrClosed) || ctx.Err() != nil {
				w.dropped(len(recs)-i, err.Error())
				return
			}
			w.dropped(1, err.Error())
		}
	}
}

// Settle waits until every record queued before it was called has been
// appended (or dropped), or ctx ends: a poll then reads everything this
// node accepted before it.
func (w *Writer) Settle(ctx context.Context) {
	w.mu.Lock()
	target := w.pushed
	for w.settled < target {
		ch := w.progress
		w.mu.Unlock()
		select {
		case <-ch:
		case <-ctx.Done():
			return
		case <-w.done:
			return
		}
		w.mu.Lock()
	}
	w.mu.Unlock()
}

// Close writes what is queued and waits for the keeps' acknowledgements
// (until ctx ends), and stops run. It is safe to call more than once.
func (w *Writer) Close(ctx context.Context) {
	w.Settle(ctx)
	w.closeOnce.Do(func() { close(w.drain) })
	select {
	case <-w.done:
	case <-ctx.Done():
		w.cancel()
		<-w.done
	}
	w.cancel()
}
