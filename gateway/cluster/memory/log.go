package memory

import (
	"context"
	"fmt"
	"sort"
	"sync"
	"time"

	"github.com/mew-protocol/mew/gateway/cluster"
)

// Defaults of Options.
const (
	// DefaultLogRetention is how many records a space's log keeps.
	DefaultLogRetention = 10000
	// DefaultHistoryRetention and DefaultHistoryBytes bound a space's
	// history log: as many records as a gateway keeps for polling by
	// default, and at most that many bytes.
	DefaultHistoryRetention = 1024
	DefaultHistoryBytes     = 32 << 20
)

// spaceLogs is every space's log. Sequence numbers are counted across
// spaces, as a JetStream stream does, so they increase along each log
// without being contiguous.
//
// Lock order: spaceLogs.mu, then queue.mu (push).
type spaceLogs struct {
	mu       sync.Mutex
	keep     int
	maxBytes int // 0: no bound but keep
	seq      uint64
	spaces   map[string]*spaceLog
}

func newSpaceLogs(keep, maxBytes int) *spaceLogs {
	return &spaceLogs{keep: keep, maxBytes: maxBytes, spaces: make(map[string]*spaceLog)}
}

type spaceLog struct {
	recs      []cluster.Record // oldest first, at most keep
	bytes     int              // the size of recs' data
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

// logView is a node's view of one of the Cluster's logs: the stream
// changes' (Log) or the polling history's (History).
type logView struct {
	n *Node
	l *spaceLogs
}

var (
	_ cluster.Log           = logView{}
	_ cluster.BatchAppender = logView{}
)

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
	l := v.l
	l.mu.Lock()
	defer l.mu.Unlock()
	l.seq++
	r := cluster.Record{Seq: l.seq, Node: v.n.id, At: time.Now(), Data: clone(data)}
	sl := l.space(space)
	drop := max(len(sl.recs)+1-l.keep, 0)
	if l.maxBytes > 0 {
		for b := sl.bytes + len(data); drop < len(sl.recs) && b > l.maxBytes; drop++ {
			b -= len(sl.recs[drop].Data)
		}
	}
	if drop > 0 {
		for _, old := range sl.recs[:drop] {
			sl.bytes -= len(old.Data)
		}
		sl.recs = append(sl.recs[:0:0], sl.recs[drop:]...)
	}
	sl.recs = append(sl.recs, r)
	sl.bytes += len(data)
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
	l := v.l
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
	l := v.l
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

// AppendBatch implements cluster.BatchAppender: one Append after the other,
// as they cost no round trip here.
func (v logView) AppendBatch(ctx context.Context, recs []cluster.Pending) (int, error) {
	failed := 0
	var first error
	for _, r := range recs {
		if _, err := v.Append(ctx, r.Space, r.Data); err != nil {
			failed++
			if first == nil {
				first = err
			}
		}
	}
	return failed, first
}
