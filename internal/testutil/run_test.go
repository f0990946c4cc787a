package testutil_test

import (
	"context"
	"errors"
	"testing"

	"github.com/mew-protocol/mew/internal/testutil"
)

// Background runs until Stop cancels its context, and Stop hands over what
// it returned.
func TestBackground(t *testing.T) {
	started := make(chan struct{})
	errStopped := errors.New("stopped")
	r := testutil.Background(t, func(ctx context.Context) error {
		close(started)
		<-ctx.Done()
		return errStopped
	})
	<-started
	select {
	case <-r.Done():
		t.Fatal("run returned before its context ended")
	default:
	}
	if err := r.Stop(); !errors.Is(err, errStopped) {
		t.Errorf("Stop: %v, want run's error", err)
	}
	<-r.Done()
	if err := r.Stop(); !errors.Is(err, errStopped) {
		t.Errorf("Stop again: %v", err)
	}
}
