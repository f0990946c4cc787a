package memory

import (
	"context"
	"fmt"
	"sort"
	"sync"
	"time"

	"github.com/mew-protocol/mew/gateway/cluster"
)

// DefaultLogRetention is how many records a space's log keeps when Options
// leave it 0.
const DefaultLogRetention = 10000

// spaceLogs is every space's log. Sequence numbers are counted across
// spaces, as a JetStream stream does, so they increase along each log
// without being contiguous.
//
// Lock order: spaceLogs.mu, then queue.mu (push).
type spaceLogs struct {
	mu     sync.Mutex
	keep   int
	seq    uint64
	spaces map[string]*spaceLog
}

type spaceLog struct {
	recs      []cluster.Record // oldest first, at most keep
	followers map[*follower]struct{}
}

type follower struct {
	n     *Node
	logs  *spaceLogs
	space string
	q     *queue[cluster.Record]
	once  sync.Once
}

func (l *spaceLogs) space(name string) *spaceLog {
	sl := l.spaces[name]
	if sl == nil {
		sl = &spaceLog{followers: make(map[*follower]struct{})}
		l.spaces[name] = sl
	}
	return sl
}

type logView struct{ n *Node }

var _ cluster.Log = logView{}

func (v logView) Append(_ context.Context, space string, data []byte) (uint64, error) {
	if err := cluster.CheckName(space); err != nil {
		return 0, err
	}
	if len(data) > cluster.MaxRecordLen {
		return 0, fmt.Errorf("memory: record of %d bytes: %w", len(data), cluster.ErrInvalid)
	}
	if err := v.n.Err(); err != nil {
		return 0, err
	}
	l := v.n.c.logs
	l.mu.Lock()
	defer l.mu.Unlock()
	l.seq++
	r := cluster.Record{Seq: l.seq, Node: v.n.id, At: time.Now(), Data: clone(data)}
	sl := l.space(space)
	if len(sl.recs) >= l.keep {
		sl.recs = append(sl.recs[:0:0], sl.recs[len(sl.recs)-l.keep+1:]...)
	}
	sl.recs = append(sl.recs, r)
	for f := range sl.followers {
		f.q.push(r)
	}
	return r.Seq, nil
}

// after returns the records of sl with Seq > seq. l.mu must be held.
func (sl *spaceLog) after(seq uint64) []cluster.Record {
	i := sort.Search(len(sl.recs), func(i int) bool { return sl.recs[i].Seq > seq })
	return sl.recs[i:]
}

func (v logView) Read(_ context.Context, space string, after uint64, limit int) ([]cluster.Record, error) {
	if err := cluster.CheckName(space); err != nil {
		return nil, err
	}
	if err := v.n.Err(); err != nil {
		return nil, err
	}
	limit = min(max(limit, 0), cluster.MaxReadLen)
	l := v.n.c.logs
	l.mu.Lock()
	defer l.mu.Unlock()
	sl := l.spaces[space]
	if sl == nil {
		return nil, nil
	}
	recs := sl.after(after)
	recs = recs[:min(limit, len(recs))]
	out := make([]cluster.Record, len(recs))
	for i, r := range recs {
		r.Data = clone(r.Data)
		out[i] = r
	}
	return out, nil
}

func (v logView) Follow(ctx context.Context, space string, after uint64, h func(cluster.Record)) (cluster.Subscription, error) {
	if err := cluster.CheckName(space); err != nil {
		return nil, err
	}
	n := v.n
	l := n.c.logs
	f := &follower{n: n, logs: l, space: space}
	f.q = newQueue(func(r cluster.Record) {
		r.Data = clone(r.Data)
		h(r)
	}, func() {})
	n.mu.Lock()
	if n.closed {
		n.mu.Unlock()
		f.q.close(true)
		f.q.wait()
		return nil, cluster.ErrClosed
	}
	n.followers = append(n.followers, f)
	n.mu.Unlock()
	l.mu.Lock()
	sl := l.space(space)
	for _, r := range sl.after(after) {
		f.q.push(r)
	}
	sl.followers[f] = struct{}{}
	l.mu.Unlock()
	context.AfterFunc(ctx, func() { _ = f.Unsubscribe() })
	return f, nil
}

// Unsubscribe ends the follow; records already queued are dropped.
func (f *follower) Unsubscribe() error {
	f.once.Do(func() {
		f.logs.mu.Lock()
		if sl := f.logs.spaces[f.space]; sl != nil {
			delete(sl.followers, f)
		}
		f.logs.mu.Unlock()
		f.q.close(true)
	})
	f.q.wait()
	return nil
}
