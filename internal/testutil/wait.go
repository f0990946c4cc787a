package testutil

import (
	"context"
	"testing"
	"time"
)

// WaitFor polls cond every few milliseconds until it holds, and fails the
// test when it has not held within d.
func WaitFor(t testing.TB, d time.Duration, what string, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(d); !cond(); {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %v waiting until %s", d, what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// Context returns a context that ends after d or when the test ends,
// whichever comes first.
func Context(t testing.TB, d time.Duration) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	t.Cleanup(cancel)
	return ctx
}

// Receive returns the next value from ch, and fails the test when none has
// come within d; what names the value for the failure.
func Receive[T any](t testing.TB, ch <-chan T, d time.Duration, what string) T {
	t.Helper()
	return ReceiveWhere(t, ch, d, what, nil)
}

// ReceiveWhere returns the first value from ch that ok accepts (any, for a
// nil ok), passing over the others, and fails the test when none has come
// within d; what names the value for the failure.
func ReceiveWhere[T any](t testing.TB, ch <-chan T, d time.Duration, what string, ok func(T) bool) T {
	t.Helper()
	timer := time.NewTimer(d)
	defer timer.Stop()
	for {
		select {
		case v := <-ch:
			if ok == nil || ok(v) {
				return v
			}
		case <-timer.C:
			t.Fatalf("timed out after %v waiting for %s", d, what)
			var zero T
			return zero
		}
	}
}
