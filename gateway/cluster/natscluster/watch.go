package natscluster

import (
	"context"
	"sync"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/mew-protocol/mew/gateway/cluster"
)

// watcher turns a KV watch of one space into cluster.Entry values. Its
// pump goroutine is owned by the watcher (Stop) and the node (Close).
type watcher struct {
	n      *Node
	kv     jetstream.KeyValue
	kw     jetstream.KeyWatcher // replaced after a reconnection, by pump only
	prefix string
	out    chan cluster.Entry
	stop   chan struct{}
	once   sync.Once
	done   chan struct{}
}

func (n *Node) watch(ctx context.Context, kv jetstream.KeyValue, space string) (cluster.Watcher, error) {
	if err := cluster.CheckName(space); err != nil {
		return nil, err
	}
	if err := n.Err(); err != nil {
		return nil, err
	}
	prefix := escape(space) + "."
	// The KV watch lives until Stop, not until ctx: the pump ends it.
	kw, err := kv.Watch(context.WithoutCancel(ctx), prefix+">")
	if err != nil {
		return nil, n.unavailable(err)
	}
	w := &watcher{n: n, kv: kv, kw: kw, prefix: prefix, out: make(chan cluster.Entry, 64),
		stop: make(chan struct{}), done: make(chan struct{})}
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

func (w *watcher) pump(ctx context.Context) {
	defer w.n.wg.Done()
	defer close(w.done)
	defer close(w.out)
	defer w.release()
	var last uint64 // the last revision handed on
	synced := false
	for {
		var kve jetstream.KeyValueEntry
		select {
		case e, ok := <-w.kw.Updates():
			if !ok {
				return
			}
			kve = e
		case <-w.n.reconnected():
			// The server may have lost the watch's consumer (a restart):
			// rather than wait for the ordered consumer to notice missing
			// heartbeats, start again after the last revision handed on.
			if !w.resume(ctx, last) {
				return
			}
			continue
		case <-w.stop:
			return
		case <-ctx.Done():
			return
		}
		if kve == nil {
			if synced {
				continue // a resumed watch's marker: the consumer has had one
			}
			synced = true
		} else {
			if kve.Revision() <= last {
				continue // already handed on before a resumption
			}
			last = kve.Revision()
		}
		e, ok := w.convert(kve)
		if !ok {
			continue
		}
		select {
		case w.out <- e:
		case <-w.stop:
			return
		case <-ctx.Done():
			return
		}
	}
}

// resume replaces the KV watch with one that starts after revision last,
// retrying while JetStream is not ready again. It reports false when the
// watcher was stopped meanwhile.
func (w *watcher) resume(ctx context.Context, last uint64) bool {
	w.drainOld()
	for delay := 50 * time.Millisecond; ; delay = min(2*delay, time.Second) {
		rctx, cancel := context.WithTimeout(ctx, w.n.timeout)
		kw, err := w.kv.Watch(context.WithoutCancel(rctx), w.prefix+">",
			jetstream.IncludeHistory(), jetstream.ResumeFromRevision(last+1))
		cancel()
		if err == nil {
			w.kw = kw
			return true
		}
		select {
		case <-time.After(delay):
		case <-w.stop:
			w.kw = nil
			return false
		case <-ctx.Done():
			w.kw = nil
			return false
		}
	}
}

// convert maps a KV entry to a cluster one. An entry another node wrote
// wrongly (a key that does not unescape, an oversized value) is skipped:
// it names nothing this node could enforce.
func (w *watcher) convert(kve jetstream.KeyValueEntry) (cluster.Entry, bool) {
	if kve == nil {
		return cluster.Entry{Op: cluster.OpSynced}, true
	}
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

// drainOld stops the current KV watch and drains it.
func (w *watcher) drainOld() {
	if w.kw == nil {
		return
	}
	defer func() { w.kw = nil }()
	_ = w.kw.Stop()
	timeout := time.NewTimer(5 * time.Second)
	defer timeout.Stop()
	for {
		select {
		case _, ok := <-w.kw.Updates():
			if !ok {
				return
			}
		case <-timeout.C:
			return
		}
	}
}
