package natscluster

import (
	"context"
	"hash/fnv"
	"sync"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/mew-protocol/mew/gateway/cluster"
)

// watcher turns a KV watch of one space into cluster.Entry values. Its
// pump goroutine is owned by the watcher (Stop) and the node (Close).
type watcher struct {
	n  *Node
	kv jetstream.KeyValue
	kw jetstream.KeyWatcher // replaced after a reconnection, by pump only
	// kcancel ends kw's context (and nats.go's goroutine waiting on it)
	kcancel context.CancelFunc
	prefix  string
	out     chan cluster.Entry
	// reconn is the node's reconnection signal as it was before the KV
	// watch began, so that a reconnection from then on restarts it.
	reconn <-chan struct{}
	// moved is the node's signal of a bucket's new leader, as it was
	// before the KV watch began.
	moved <-chan struct{}
	stop  chan struct{}
	once  sync.Once
	done  chan struct{}
}

func (n *Node) watch(ctx context.Context, kv jetstream.KeyValue, space string) (cluster.Watcher, error) {
	if err := cluster.CheckName(space); err != nil {
		return nil, err
	}
	if err := n.Err(); err != nil {
		return nil, err
	}
	prefix := escape(space) + "."
	reconn := n.reconnected() // before the KV watch: see watcher.reconn
	moved := n.leaderMoved()
	// The KV watch lives until the pump ends it (drainOld), not until ctx;
	// nats.go waits on its context in a goroutine of its own, which this
	// cancel ends.
	kctx, kcancel := context.WithCancel(context.WithoutCancel(ctx))
	kw, err := kv.Watch(kctx, prefix+">")
	if err != nil {
		kcancel()
		return nil, n.unavailable(err)
	}
	w := &watcher{n: n, kv: kv, kw: kw, kcancel: kcancel, prefix: prefix, out: make(chan cluster.Entry, 64),
		reconn: reconn, moved: moved, stop: make(chan struct{}), done: make(chan struct{})}
	n.mu.Lock()
	if n.closed {
		n.mu.Unlock()
		_ = kw.Stop()
		return nil, cluster.ErrClosed
	}
	n.watchers[w] = struct{}{}
	n.wg.Add(1)
	n.mu.Unlock()
	go w.pump(ctx)
	return w, nil
}

func (w *watcher) Changes() <-chan cluster.Entry { return w.out }

// Stop ends the watch and waits for its goroutine.
func (w *watcher) Stop() {
	w.once.Do(func() { close(w.stop) })
	<-w.done
}

// seen is what a watcher last handed on for a key: its revision and a
// hash of its value, so that a re-synchronization after a reconnection
// hands on only what changed.
type seen struct {
	rev  uint64
	hash uint64
}

func hashOf(b []byte) uint64 {
	h := fnv.New64a()
	h.Write(b)
	return h.Sum64()
}

// pump hands the KV watch's entries on. After a reconnection it starts a
// new KV watch and re-synchronizes against what it handed on before: the
// keys that changed are handed on again, the ones that disappeared (deleted
// or expired while the node was away, however long, or lost with the
// server's storage) as OpDelete. So the consumer's copy converges whatever
// happened meanwhile, and never sees a second OpSynced; then an OpResynced
// entry carrying the node's epoch as it was when the reconnection was seen
// (cluster.EpochReporter).
func (w *watcher) pump(ctx context.Context) {
	defer w.n.wg.Done()
	defer close(w.done)
	defer close(w.out)
	defer w.release()
	known := make(map[string]seen) // keys present, as handed on
	var resync map[string]bool     // during a re-synchronization: keys in the new snapshot
	var epoch uint64               // the node's epoch the re-synchronization reads
	reconn, moved := w.reconn, w.moved
	synced := false
	send := func(e cluster.Entry) bool {
		select {
		case w.out <- e:
			return true
		case <-w.stop:
		case <-ctx.Done():
		}
		return false
	}
	for {
		var kve jetstream.KeyValueEntry
		select {
		case e, ok := <-w.kw.Updates():
			if !ok {
				return
			}
			kve = e
		case <-reconn:
			// The server may have lost the watch's consumer (a restart):
			// rather than wait for the ordered consumer to notice missing
			// heartbeats, watch again and compare. A reconnection from
			// now on starts this again.
			reconn = w.n.reconnected()
			epoch = w.n.epoch.Load()
			if !w.restart(ctx) {
				return
			}
			resync = make(map[string]bool)
			continue
		case <-moved:
			// The bucket's stream has a new leader: its old server may
			// have taken the watch's consumer with it. Watch again and
			// compare, as after a reconnection; the node's epoch as it is
			// now, since the new watch reads all of it.
			moved = w.n.leaderMoved()
			epoch = w.n.epoch.Load()
			if !w.restart(ctx) {
				return
			}
			resync = make(map[string]bool)
			continue
		case <-w.stop:
			return
		case <-ctx.Done():
			return
		}
		if kve == nil {
			if !synced {
				synced = true
				if !send(cluster.Entry{Op: cluster.OpSynced}) {
					return
				}
			}
			if resync != nil {
				for k := range known {
					if !resync[k] {
						delete(known, k)
						if !send(cluster.Entry{Key: k, Op: cluster.OpDelete}) {
							return
						}
					}
				}
				resync = nil
				if !send(cluster.Entry{Op: cluster.OpResynced, Revision: epoch}) {
					return
				}
			}
			continue
		}
		e, ok := w.convert(kve)
		if !ok {
			continue
		}
		if resync != nil && e.Op == cluster.OpPut {
			resync[e.Key] = true
		}
		switch e.Op {
		case cluster.OpPut:
			s := seen{e.Revision, hashOf(e.Value)}
			if known[e.Key] == s {
				continue // handed on before the reconnection
			}
			known[e.Key] = s
		case cluster.OpDelete:
			if _, ok := known[e.Key]; !ok {
				continue // the marker of a key this watcher never had
			}
			delete(known, e.Key)
		}
		if !send(e) {
			return
		}
	}
}

// restart replaces the KV watch with a new one, retrying while JetStream
// is not ready again. It reports false when the watcher was stopped
// meanwhile. The old watch is drained aside: stopping it deletes its
// consumer, a request that waits out its timeout (5 s) when the consumer's
// server is gone, and the new watch need not wait for that.
func (w *watcher) restart(ctx context.Context) bool {
	if old, cancel := w.kw, w.kcancel; old != nil {
		w.kw, w.kcancel = nil, nil
		// The pump holds a count of the node's WaitGroup while it runs, so
		// this Go never races Close's Wait from zero.
		w.n.wg.Go(func() { drain(old, cancel) })
	}
	for delay := 50 * time.Millisecond; ; delay = min(2*delay, time.Second) {
		kctx, kcancel := context.WithCancel(context.WithoutCancel(ctx))
		// An attempt that gets no answer within watchAttempt is given up
		// (its context ended) and made again: just after an election, a
		// consumer's creation may go unanswered until the request's
		// timeout (5 s), where the next attempt is answered at once.
		late := time.AfterFunc(watchAttempt, kcancel)
		kw, err := w.kv.Watch(kctx, w.prefix+">")
		if late.Stop() && err == nil {
			w.kw, w.kcancel = kw, kcancel
			return true
		}
		if err == nil { // made, but its context ended as it was: of no use
			w.n.wg.Go(func() { drain(kw, kcancel) })
		}
		kcancel()
		select {
		case <-time.After(delay):
		case <-w.stop:
			return false
		case <-ctx.Done():
			return false
		}
	}
}

// convert maps a KV entry to a cluster one. An entry another node wrote
// wrongly (a key that does not unescape, an oversized value) is skipped:
// it names nothing this node could enforce.
func (w *watcher) convert(kve jetstream.KeyValueEntry) (cluster.Entry, bool) {
	key, err := stateKey(w.prefix, kve.Key())
	if err != nil {
		return cluster.Entry{}, false
	}
	e := cluster.Entry{Key: key, Revision: kve.Revision()}
	switch kve.Operation() {
	case jetstream.KeyValuePut:
		if len(kve.Value()) > cluster.MaxValueLen {
			return cluster.Entry{}, false
		}
		e.Op, e.Value = cluster.OpPut, kve.Value()
	default:
		e.Op = cluster.OpDelete
	}
	return e, true
}

// release stops the KV watch and drains it, so that the NATS delivery
// goroutine, which may be blocked handing over an entry, can end.
func (w *watcher) release() {
	w.n.mu.Lock()
	delete(w.n.watchers, w)
	w.n.mu.Unlock()
	w.drainOld()
}

// watchAttempt bounds one attempt of restart to make a KV watch.
const watchAttempt = 2 * time.Second

// drainOld stops the current KV watch and drains it.
func (w *watcher) drainOld() {
	if w.kw == nil {
		return
	}
	drain(w.kw, w.kcancel)
	w.kw, w.kcancel = nil, nil
}

// drain stops a KV watch, ends its context and reads what it still hands
// over, for up to 5 s, so that nats.go's delivery goroutine can end.
func drain(kw jetstream.KeyWatcher, cancel context.CancelFunc) {
	_ = kw.Stop()
	cancel()
	timeout := time.NewTimer(5 * time.Second)
	defer timeout.Stop()
	for {
		select {
		case _, ok := <-kw.Updates():
			if !ok {
				return
			}
		case <-timeout.C:
			return
		}
	}
}
