package jobs

import (
	"context"
	"time"
)

// Sleep waits d or until ctx ends, and reports whether d passed (for d <=
// 0: whether ctx is still live): the pause of a retry loop that must stop
// when its owner does.
func Sleep(ctx context.Context, d time.Duration) bool {
	if d <= 0 {
		return ctx.Err() == nil
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-ctx.Done():
		return false
	}
}
