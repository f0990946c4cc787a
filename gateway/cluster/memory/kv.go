package memory

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/mew-protocol/mew/gateway/cluster"
)

// kv is the versioned keys of every space, for State or for Presence. It
// is shared by the nodes of a Cluster.
//
// Lock order: kv.mu, then queue.mu (push). Nothing is called out while
// kv.mu is held but queue pushes and timer stops.
type kv struct {
	mu     sync.Mutex
	spaces map[string]*spaceKV
	closed bool
}

type spaceKV struct {
	rev      uint64
	keys     map[string]*item
	watchers map[*watcher]struct{}
}

type item struct {
	value []byte
	rev   uint64
	timer *time.Timer // non-nil while a TTL runs
	owner string      // for presence: the node keeping it alive
}

func newKV() *kv { return &kv{spaces: make(map[string]*spaceKV)} }

func (s *kv) space(name string) *spaceKV {
	sp := s.spaces[name]
	if sp == nil {
		sp = &spaceKV{keys: make(map[string]*item), watchers: make(map[*watcher]struct{})}
		s.spaces[name] = sp
	}
	return sp
}

func (s *kv) get(space, key string) (cluster.Entry, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if sp := s.spaces[space]; sp != nil {
		if it := sp.keys[key]; it != nil {
			return cluster.Entry{Key: key, Value: clone(it.value), Revision: it.rev, Op: cluster.OpPut}, nil
		}
	}
	return cluster.Entry{}, fmt.Errorf("memory: %s %s: %w", space, key, cluster.ErrNotFound)
}

func clone(b []byte) []byte { return append([]byte(nil), b...) }

// put writes under s.mu; owner tags presence entries with their node.
func (s *kv) put(space, key string, value []byte, o cluster.PutOptions, owner string) (uint64, error) {
	if len(value) > cluster.MaxValueLen {
		return 0, fmt.Errorf("memory: value of %d bytes: %w", len(value), cluster.ErrInvalid)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return 0, cluster.ErrClosed
	}
	sp := s.space(space)
	cur := sp.keys[key]
	if o.IfAbsent && cur != nil {
		return 0, fmt.Errorf("memory: %s %s exists: %w", space, key, cluster.ErrConflict)
	}
	if o.IfRevision != 0 && (cur == nil || cur.rev != o.IfRevision) {
		return 0, fmt.Errorf("memory: %s %s is not at revision %d: %w", space, key, o.IfRevision, cluster.ErrConflict)
	}
	if cur != nil && cur.timer != nil {
		cur.timer.Stop()
	}
	sp.rev++
	it := &item{value: clone(value), rev: sp.rev, owner: owner}
	sp.keys[key] = it
	if o.TTL > 0 {
		s.expireLocked(sp, key, it, ttlRound(o.TTL))
	}
	sp.notifyLocked(cluster.Entry{Key: key, Value: it.value, Revision: it.rev, Op: cluster.OpPut})
	return it.rev, nil
}

// ttlRound rounds a TTL up to whole seconds, as NATS does, so that both
// implementations expire at the same moments.
func ttlRound(d time.Duration) time.Duration {
	return (d + time.Second - 1).Truncate(time.Second)
}

// expireLocked deletes key after d, unless it was written since.
func (s *kv) expireLocked(sp *spaceKV, key string, it *item, d time.Duration) {
	it.timer = time.AfterFunc(d, func() {
		s.mu.Lock()
		defer s.mu.Unlock()
		if s.closed || sp.keys[key] != it {
			return
		}
		s.deleteLocked(sp, key)
	})
}

func (s *kv) deleteLocked(sp *spaceKV, key string) {
	if it := sp.keys[key]; it != nil && it.timer != nil {
		it.timer.Stop()
	}
	delete(sp.keys, key)
	sp.rev++
	sp.notifyLocked(cluster.Entry{Key: key, Revision: sp.rev, Op: cluster.OpDelete})
}

func (s *kv) delete(space, key string, ifRevision uint64, ifOwner func(*item) bool) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return cluster.ErrClosed
	}
	sp := s.spaces[space]
	if sp == nil {
		return nil
	}
	cur := sp.keys[key]
	if ifRevision != 0 && (cur == nil || cur.rev != ifRevision) {
		return fmt.Errorf("memory: %s %s is not at revision %d: %w", space, key, ifRevision, cluster.ErrConflict)
	}
	if cur == nil || (ifOwner != nil && !ifOwner(cur)) {
		return nil
	}
	s.deleteLocked(sp, key)
	return nil
}

func (sp *spaceKV) notifyLocked(e cluster.Entry) {
	for w := range sp.watchers {
		w.q.push(e)
	}
}

// watch starts a watcher of space: the current keys, the synced marker,
// then the changes, all pushed under s.mu so nothing is missed or repeated.
func (s *kv) watch(ctx context.Context, space string) (cluster.Watcher, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return nil, cluster.ErrClosed
	}
	sp := s.space(space)
	w := &watcher{ch: make(chan cluster.Entry, 64), stop: make(chan struct{})}
	w.q = newQueue(w.deliver, func() { close(w.ch) })
	w.leave = func() {
		s.mu.Lock()
		delete(sp.watchers, w)
		s.mu.Unlock()
	}
	sp.watchers[w] = struct{}{}
	// The snapshot in revision order, as a JetStream watch delivers it.
	snap := make([]cluster.Entry, 0, len(sp.keys))
	for k, it := range sp.keys {
		snap = append(snap, cluster.Entry{Key: k, Value: it.value, Revision: it.rev, Op: cluster.OpPut})
	}
	slices.SortFunc(snap, func(a, b cluster.Entry) int { return cmp.Compare(a.Revision, b.Revision) })
	for _, e := range snap {
		w.q.push(e)
	}
	w.q.push(cluster.Entry{Op: cluster.OpSynced, Revision: sp.rev})
	unhook := context.AfterFunc(ctx, w.Stop)
	w.mu.Lock()
	w.unhook = unhook
	w.mu.Unlock()
	return w, nil
}

// closeAll ends every watch and timer: the Cluster is closed.
func (s *kv) closeAll() {
	s.mu.Lock()
	s.closed = true
	var ws []*watcher
	for _, sp := range s.spaces {
		for w := range sp.watchers {
			ws = append(ws, w)
		}
		for _, it := range sp.keys {
			if it.timer != nil {
				it.timer.Stop()
			}
		}
	}
	s.mu.Unlock()
	for _, w := range ws {
		w.Stop()
	}
}

type watcher struct {
	q     *queue[cluster.Entry]
	ch    chan cluster.Entry
	stop  chan struct{}
	once  sync.Once
	leave func()

	mu     sync.Mutex
	unhook func() bool // releases the context hook
}

func (w *watcher) deliver(e cluster.Entry) {
	// Values are shared between watchers and never modified, but a
	// consumer may modify what it got: hand each its own copy.
	if e.Value != nil {
		e.Value = clone(e.Value)
	}
	select {
	case w.ch <- e:
	case <-w.stop:
	}
}

func (w *watcher) Changes() <-chan cluster.Entry { return w.ch }

// Stop ends the watch and waits for its goroutine.
func (w *watcher) Stop() {
	w.once.Do(func() {
		w.leave()
		close(w.stop)
		w.q.close(true)
		w.mu.Lock()
		unhook := w.unhook
		w.mu.Unlock()
		if unhook != nil {
			unhook()
		}
	})
	w.q.wait()
}
