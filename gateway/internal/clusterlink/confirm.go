package clusterlink

import (
	"context"
	"errors"
	"sync"
	"time"

	"github.com/mew-protocol/mew/gateway/cluster"
)

// Bounds of the confirmation of publishes: a batch is confirmed
// ConfirmGather after its first publish (one round trip for many), and at
// most MaxUnconfirmed are tracked at once (beyond, a failure is only
// logged for the rest).
const (
	ConfirmGather  = 20 * time.Millisecond
	MaxUnconfirmed = 1 << 16
)

// Confirms confirms, a batch at a time, what a space published through a
// Broker that can (cluster.Confirmer): when the fabric cannot say it has
// them all (the connection died as they were written, or came back
// meanwhile), the items are handed back, so that the gateway tells their
// senders that an envelope accepted here may not have reached the other
// nodes. T is what the gateway needs to tell them.
type Confirms[T any] struct {
	c     cluster.Confirmer
	epoch func() uint64
	wake  chan struct{}

	mu    sync.Mutex
	list  []T    // guarded by mu
	first uint64 // the epoch at the first of list; guarded by mu
}

// NewConfirms returns the confirmer of what is published through b, or nil
// when b cannot confirm. epoch is the node's reconnection count (Watches.Epoch).
func NewConfirms[T any](b cluster.Broker, epoch func() uint64) *Confirms[T] {
	c, ok := b.(cluster.Confirmer)
	if !ok {
		return nil
	}
	return &Confirms[T]{c: c, epoch: epoch, wake: make(chan struct{}, 1)}
}

// Add records a publish to confirm; it never blocks. A nil Confirms does
// nothing.
func (c *Confirms[T]) Add(item T) {
	if c == nil {
		return
	}
	c.mu.Lock()
	if len(c.list) == 0 {
		c.first = c.epoch()
	}
	if len(c.list) < MaxUnconfirmed {
		c.list = append(c.list, item)
	}
	c.mu.Unlock()
	select {
	case c.wake <- struct{}{}:
	default:
	}
}

// Run confirms batches until ctx ends, calling failed (from this goroutine,
// no lock held) with each batch that may not have reached the fabric. It is
// a goroutine's body.
func (c *Confirms[T]) Run(ctx context.Context, failed func([]T, error)) {
	t := time.NewTimer(ConfirmGather)
	t.Stop()
	defer t.Stop()
	for {
		select {
		case <-c.wake:
		case <-ctx.Done():
			return
		}
		t.Reset(ConfirmGather)
		select {
		case <-t.C:
		case <-ctx.Done():
			return
		}
		c.mu.Lock()
		batch, epoch := c.list, c.first
		c.list = nil
		c.mu.Unlock()
		if len(batch) == 0 {
			continue
		}
		cctx, cancel := context.WithTimeout(ctx, OpTimeout)
		err := c.c.Confirm(cctx)
		cancel()
		if err == nil && c.epoch() != epoch {
			err = errors.New("the node reconnected to the cluster meanwhile")
		}
		if err != nil && ctx.Err() == nil {
			failed(batch, err)
		}
	}
}
