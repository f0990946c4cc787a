package clusterlink

import (
	"sync"
	"time"
)

// HoldLimit bounds how long an envelope from another node waits for the
// State change it announces (a grant's, a revoke's): past it, it goes out
// anyway, since a write that failed on its node must not stop the space.
const HoldLimit = time.Second

// Hold keeps envelopes from other nodes in arrival order and delivers them
// as their turn comes: each once the change it announces is in force here
// (its ready func), and the ones after it behind it, so that each sender's
// order holds. One waiting longer than its limit goes anyway.
//
// Hold is guarded by its owner's lock (the space's), which every method's
// caller holds and which the limit's timer takes.
type Hold[T any] struct {
	lock    sync.Locker
	limit   time.Duration
	deliver func(T)     // called with lock held
	late    func(T)     // told of one delivered at its limit; lock held
	items   []held[T]   // in arrival order
	gen     uint64      // counts the items released, so that a stale timer does nothing
	timer   *time.Timer // releases the first item at its limit
	stopped bool        // set by StopLocked: the timer does nothing
}

type held[T any] struct {
	item  T
	ready func() bool // nil, or whether item may go; lock held
}

// NewHold returns a Hold delivering through deliver, under lock.
func NewHold[T any](lock sync.Locker, limit time.Duration, deliver, late func(T)) *Hold[T] {
	return &Hold[T]{lock: lock, limit: limit, deliver: deliver, late: late}
}

// AddLocked queues item behind the others and delivers what may go.
func (h *Hold[T]) AddLocked(item T, ready func() bool) {
	h.items = append(h.items, held[T]{item, ready})
	h.ReleaseLocked(false)
}

// ReleaseLocked delivers the items that may go, in order: all up to the
// first not ready (force: that one too). Called again after each change
// that may make one ready.
func (h *Hold[T]) ReleaseLocked(force bool) {
	for len(h.items) > 0 {
		first := h.items[0]
		if first.ready != nil && !force && !first.ready() {
			if h.timer == nil && !h.stopped {
				gen := h.gen
				h.timer = time.AfterFunc(h.limit, func() { h.expire(gen) })
			}
			return
		}
		force = false
		h.items[0] = held[T]{}
		h.items = h.items[1:]
		h.gen++
		h.stopTimer()
		h.deliver(first.item)
	}
}

// expire releases the first item if it is still the one that was first
// when the timer was set.
func (h *Hold[T]) expire(gen uint64) {
	h.lock.Lock()
	defer h.lock.Unlock()
	if gen != h.gen || h.stopped || len(h.items) == 0 {
		return
	}
	h.timer = nil
	h.late(h.items[0].item)
	h.ReleaseLocked(true)
}

func (h *Hold[T]) stopTimer() {
	if h.timer != nil {
		h.timer.Stop()
		h.timer = nil
	}
}

// DropLocked forgets every item (their envelopes will never be delivered).
func (h *Hold[T]) DropLocked() {
	clear(h.items)
	h.items = h.items[:0]
	h.gen++
	h.stopTimer()
}

// StopLocked stops the timer for good; items still held stay undelivered.
func (h *Hold[T]) StopLocked() {
	h.stopped = true
	h.stopTimer()
}
