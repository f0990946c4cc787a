package memory

import "sync"

// queue is an unbounded FIFO drained by one goroutine, so that the side
// that pushes (a State write, a Publish) never blocks on the side that
// reads. It is owned by the watch or subscription that created it; close
// ends the goroutine after what was pushed before it has been handed on,
// unless stop was called, which drops the rest.
type queue[T any] struct {
	mu      sync.Mutex
	cond    *sync.Cond
	items   []T
	closed  bool
	stopped bool
	done    chan struct{}
}

func newQueue[T any](deliver func(T), finish func()) *queue[T] {
	q := &queue[T]{done: make(chan struct{})}
	q.cond = sync.NewCond(&q.mu)
	go q.run(deliver, finish)
	return q
}

func (q *queue[T]) push(v T) {
	q.mu.Lock()
	if !q.closed {
		q.items = append(q.items, v)
		q.cond.Signal()
	}
	q.mu.Unlock()
}

// close ends the queue; with drop, what is still queued is dropped.
func (q *queue[T]) close(drop bool) {
	q.mu.Lock()
	q.closed = true
	if drop {
		q.stopped = true
		q.items = nil
	}
	q.cond.Signal()
	q.mu.Unlock()
}

func (q *queue[T]) wait() { <-q.done }

func (q *queue[T]) run(deliver func(T), finish func()) {
	defer close(q.done)
	defer finish()
	for {
		q.mu.Lock()
		for len(q.items) == 0 && !q.closed {
			q.cond.Wait()
		}
		if len(q.items) == 0 || q.stopped {
			q.mu.Unlock()
			return
		}
		batch := q.items
		q.items = nil
		q.mu.Unlock()
		for _, v := range batch {
			q.mu.Lock()
			stopped := q.stopped
			q.mu.Unlock()
			if stopped {
				return
			}
			deliver(v)
		}
	}
}
