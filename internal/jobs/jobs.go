package jobs

import (
	"context"
	"sync"
)

// Group is a set of goroutines with one owner. Go starts one unless the
// group refuses new work (Refuse); Wait waits for those started; Cancel
// ends the context each was given. The zero value is not usable: use New.
type Group struct {
	ctx    context.Context
	cancel context.CancelCauseFunc

	mu      sync.Mutex // orders Go against Refuse
	refused bool
	wg      sync.WaitGroup
}

// New returns a group whose goroutines get a context of their own, ended
// by Cancel (not by any caller's).
func New() *Group {
	ctx, cancel := context.WithCancelCause(context.Background())
	return &Group{ctx: ctx, cancel: cancel}
}

// Context is the context the group's goroutines get.
func (g *Group) Context() context.Context { return g.ctx }

// Go runs f on a goroutine of the group, and reports false, running
// nothing, once the group refuses new work.
func (g *Group) Go(f func(ctx context.Context)) bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.refused {
		return false
	}
	g.wg.Go(func() { f(g.ctx) })
	return true
}

// Refuse makes every later Go a no-op; the goroutines started go on.
func (g *Group) Refuse() {
	g.mu.Lock()
	g.refused = true
	g.mu.Unlock()
}

// Wait waits for the goroutines started. Call it after Refuse, or more
// may start meanwhile.
func (g *Group) Wait() { g.wg.Wait() }

// Cancel ends the goroutines' context with cause (nil: context.Canceled).
func (g *Group) Cancel(cause error) { g.cancel(cause) }
