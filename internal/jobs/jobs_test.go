package jobs

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// TestGroup: goroutines run with the group's context until Cancel, Wait
// waits for them, and nothing starts after Refuse.
func TestGroup(t *testing.T) {
	g := New()
	var ran atomic.Int32
	started := make(chan struct{})
	if !g.Go(func(ctx context.Context) {
		close(started)
		<-ctx.Done()
		if !errors.Is(context.Cause(ctx), errStop) {
			t.Errorf("cause %v", context.Cause(ctx))
		}
		ran.Add(1)
	}) {
		t.Fatal("Go refused before Refuse")
	}
	<-started
	g.Refuse()
	if g.Go(func(context.Context) { ran.Add(10) }) {
		t.Error("Go ran after Refuse")
	}
	g.Cancel(errStop)
	g.Wait()
	if n := ran.Load(); n != 1 {
		t.Errorf("ran %d, want the one started before Refuse", n)
	}
	if g.Context().Err() == nil {
		t.Error("the context outlived Cancel")
	}
}

var errStop = errors.New("stop")
