package clustertest

import (
	"bytes"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/mew-protocol/mew/gateway/cluster"
)

// testKeep checks a Broker that is a cluster.Keeper: a shared keep reaches
// the other node's subscriber as the envelope alone, in order with the
// node's publishes; a keep for the history alone, and a History append,
// reach no subscriber; the history holds prefix+data of both keeps in
// their order; done reports each keep once; a prefix over the bound is
// refused and done never called.
func testKeep(t *testing.T, f Factory) {
	h := f(t, 2)
	a, b := h.Nodes[0], h.Nodes[1]
	kp, ok := a.Broker().(cluster.Keeper)
	if !ok {
		t.Skip("the Broker is not a cluster.Keeper")
	}
	ctx := ctxT(t)
	var mu sync.Mutex
	var got []string
	warmed := false
	if _, err := b.Broker().Subscribe(ctx, "kp", func(m cluster.Message) {
		mu.Lock()
		defer mu.Unlock()
		if string(m.Data) == warm {
			warmed = true
			return
		}
		got = append(got, string(m.Data))
	}); err != nil {
		t.Fatal(err)
	}
	if _, err := a.Broker().Subscribe(ctx, "kp", func(cluster.Message) {}); err != nil {
		t.Fatal(err)
	}
	warmUp(t, ctx, &Harness{Nodes: []cluster.Node{b, a}}, "kp", func(i int, _ string) bool {
		mu.Lock()
		defer mu.Unlock()
		return i == 1 || warmed
	})
	dones := make(chan error, 16)
	done := func(err error) { dones <- err }
	prefix := []byte("\x00\x01stamp\xff")
	if err := a.Broker().Publish(ctx, "kp", []byte("published-1")); err != nil {
		t.Fatal(err)
	}
	if err := kp.Keep(ctx, "kp", prefix, []byte("kept-shared"), true, done); err != nil {
		t.Fatal(err)
	}
	if err := kp.Keep(ctx, "kp", prefix, []byte("kept-alone"), false, done); err != nil {
		t.Fatal(err)
	}
	if _, err := a.History().Append(ctx, "kp", []byte("appended")); err != nil {
		t.Fatal(err)
	}
	if err := a.Broker().Publish(ctx, "kp", []byte("published-2")); err != nil {
		t.Fatal(err)
	}
	big := bytes.Repeat([]byte{'p'}, cluster.MaxKeepPrefix+1)
	if err := kp.Keep(ctx, "kp", big, []byte("x"), true, done); !errors.Is(err, cluster.ErrInvalid) {
		t.Errorf("a prefix of %d bytes: %v, want ErrInvalid", len(big), err)
	}
	for range 2 {
		select {
		case err := <-dones:
			if err != nil {
				t.Errorf("keep not stored: %v", err)
			}
		case <-time.After(wait):
			t.Fatal("a keep was never settled")
		}
	}
	if !eventually(func() bool {
		mu.Lock()
		defer mu.Unlock()
		return len(got) >= 3
	}) {
		t.Fatalf("the subscriber got %q", got)
	}
	time.Sleep(50 * time.Millisecond)
	mu.Lock()
	if want := "[published-1 kept-shared published-2]"; fmt.Sprint(got) != want {
		t.Errorf("the subscriber got %v, want %s", got, want)
	}
	mu.Unlock()
	recs, err := b.History().Read(ctx, "kp", 0, 10)
	if err != nil {
		t.Fatal(err)
	}
	var hist []string
	for _, r := range recs {
		hist = append(hist, string(r.Data))
	}
	p := string(prefix)
	if want := fmt.Sprint([]string{p + "kept-shared", p + "kept-alone", "appended"}); fmt.Sprint(hist) != want {
		t.Errorf("the history holds %q, want %q", hist, want)
	}
	select {
	case err := <-dones:
		t.Errorf("done called again (%v)", err)
	default:
	}
}
