package gateway

// A session's outbound queue, fair among the senders.

import (
	"slices"
	"sync"
)

// outq is a session's outbound queue: a slice that grows with the backlog
// up to a number of frames and of bytes (an idle connection holds no buffer
// at all), and a one-slot channel that wakes the writer, which then takes
// everything queued at once.
//
// It counts what each sender has queued, so that no sender can take a
// recipient's queue for itself: when it is full, the sender with the most
// queued loses its newest messages to make room for anyone else's. Only when
// no sender holds a large share is a full queue the recipient's fault.
type outq struct {
	mu       sync.Mutex
	items    []frame
	bytes    int
	limit    int // frames
	maxBytes int
	shares   map[*member]share // what each sender has queued
	wake     chan struct{}
	// hurry (capacity 1) is signalled by each push of an addressed frame,
	// to end the writer's gathering.
	hurry chan struct{}
	// eager (capacity 1) is signalled by each push of a frame that is not
	// lazy, to end the writer's wait for company of lazy ones; eagerN
	// counts those queued (guarded by mu).
	eager  chan struct{}
	eagerN int
}

// share is what one sender has in a queue.
type share struct{ n, bytes int }

// push queues f. It returns the sender whose messages were shed to keep the
// queue fair (f's own, when ok is false, or older ones), or ok false and no
// one when the queue is full with no sender to blame.
func (q *outq) push(f frame) (shed *member, ok bool) {
	q.mu.Lock()
	for len(q.items) > 0 && (len(q.items) >= q.limit || q.bytes+len(f.data) > q.maxBytes) {
		top := q.topSender()
		if top == nil || top == f.src {
			q.mu.Unlock()
			return top, false
		}
		q.evictNewest(top)
		shed = top
	}
	q.items = append(q.items, f)
	q.bytes += len(f.data)
	if !f.lazy {
		q.eagerN++
	}
	if f.src != nil {
		if q.shares == nil {
			q.shares = make(map[*member]share)
		}
		sh := q.shares[f.src]
		q.shares[f.src] = share{sh.n + 1, sh.bytes + len(f.data)}
	}
	q.mu.Unlock()
	select {
	case q.wake <- struct{}{}:
	default:
	}
	if !f.lazy {
		select {
		case q.eager <- struct{}{}:
		default:
		}
	}
	if f.addressed {
		select {
		case q.hurry <- struct{}{}:
		default:
		}
	}
	return shed, true
}

// topSender returns the sender with the most bytes queued, when it holds
// enough of the queue (a sixteenth of its frames or bytes) to be the cause
// of its filling. mu must be held.
func (q *outq) topSender() *member {
	var top *member
	most := -1
	for m, sh := range q.shares {
		if (sh.n*16 >= q.limit || sh.bytes*16 >= q.maxBytes) && sh.bytes > most {
			top, most = m, sh.bytes
		}
	}
	return top
}

// evictNewest removes m's most recent frame. mu must be held.
func (q *outq) evictNewest(m *member) {
	for i := len(q.items) - 1; i >= 0; i-- {
		if q.items[i].src == m {
			q.unshare(q.items[i])
			q.items = slices.Delete(q.items, i, i+1)
			return
		}
	}
}

// unshare takes a frame leaving the queue off the counts. mu must be held.
func (q *outq) unshare(f frame) {
	q.bytes -= len(f.data)
	if !f.lazy {
		q.eagerN--
	}
	if f.src == nil {
		return
	}
	sh := q.shares[f.src]
	if sh.n <= 1 {
		delete(q.shares, f.src)
		return
	}
	q.shares[f.src] = share{sh.n - 1, sh.bytes - len(f.data)}
}

// release lets go of the queue's buffer when it is empty, as its writer
// goes idle: take leaves the last batch's buffer in its place, as large as
// the largest backlog, which an idle connection has no use for.
func (q *outq) release() {
	q.mu.Lock()
	defer q.mu.Unlock()
	if len(q.items) == 0 {
		q.items = nil
	}
}

// onlyLazy reports whether the queue holds frames, all of them lazy.
func (q *outq) onlyLazy() bool {
	q.mu.Lock()
	defer q.mu.Unlock()
	return len(q.items) > 0 && q.eagerN == 0
}

// take returns the queued frames and leaves spare, emptied, as the queue's
// new buffer, so that two buffers take turns.
func (q *outq) take(spare []frame) []frame {
	q.mu.Lock()
	defer q.mu.Unlock()
	items := q.items
	q.items = spare[:0]
	for i := range items {
		q.unshare(items[i])
	}
	return items
}

func (q *outq) empty() bool {
	q.mu.Lock()
	defer q.mu.Unlock()
	return len(q.items) == 0
}
