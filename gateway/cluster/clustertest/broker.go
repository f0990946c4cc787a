package clustertest

import (
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/mew-protocol/mew/gateway/cluster"
)

func testBrokerOrder(t *testing.T, f Factory) {
	h := f(t, 3)
	ctx := ctxT(t)
	const perSender = 500
	type got struct {
		mu     sync.Mutex
		seen   map[string][]int // by sender node
		warmed map[string]bool  // by sender node
		n      int
		all    chan struct{}
	}
	recv := make([]*got, len(h.Nodes))
	for i, n := range h.Nodes {
		g := &got{seen: make(map[string][]int), warmed: make(map[string]bool), all: make(chan struct{})}
		recv[i] = g
		want := 2 * perSender // from the two other nodes
		_, err := n.Broker().Subscribe(ctx, "sp", func(m cluster.Message) {
			if string(m.Data) == warm {
				g.mu.Lock()
				g.warmed[m.Node] = true
				g.mu.Unlock()
				return
			}
			var k int
			if _, err := fmt.Sscanf(string(m.Data), "%d", &k); err != nil {
				t.Errorf("node %d: message %q", i, m.Data)
				return
			}
			g.mu.Lock()
			defer g.mu.Unlock()
			g.seen[m.Node] = append(g.seen[m.Node], k)
			g.n++
			if g.n == want {
				close(g.all)
			}
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	warmUp(t, ctx, h, "sp", func(i int, from string) bool {
		recv[i].mu.Lock()
		defer recv[i].mu.Unlock()
		return recv[i].warmed[from]
	})
	var wg sync.WaitGroup
	for _, n := range h.Nodes {
		wg.Go(func() {
			for k := range perSender {
				if err := n.Broker().Publish(ctx, "sp", fmt.Appendf(nil, "%d", k)); err != nil {
					t.Error(err)
					return
				}
			}
		})
	}
	wg.Wait()
	for i, g := range recv {
		select {
		case <-g.all:
		case <-time.After(wait):
			g.mu.Lock()
			t.Fatalf("node %d got %d of %d messages", i, g.n, 2*perSender)
		}
		g.mu.Lock()
		if _, own := g.seen[h.Nodes[i].ID()]; own {
			t.Errorf("node %d got its own messages back", i)
		}
		for from, ks := range g.seen {
			for j, k := range ks {
				if k != j {
					t.Fatalf("node %d: message %d from %s arrived as number %d", i, k, from, j)
				}
			}
		}
		g.mu.Unlock()
	}
	time.Sleep(50 * time.Millisecond)
	for i, g := range recv {
		g.mu.Lock()
		if g.n != 2*perSender {
			t.Errorf("node %d got %d messages, want %d", i, g.n, 2*perSender)
		}
		g.mu.Unlock()
	}
}

func testBrokerSpaces(t *testing.T, f Factory) {
	h := f(t, 2)
	ctx := ctxT(t)
	a, b := h.Nodes[0], h.Nodes[1]
	var mu sync.Mutex
	warmed := map[string]bool{}
	filter := func(space string, ch chan cluster.Message) func(cluster.Message) {
		return func(m cluster.Message) {
			if string(m.Data) == warm {
				mu.Lock()
				warmed[space] = true
				mu.Unlock()
				return
			}
			ch <- m
		}
	}
	const odd = "space.with*odd >chars"
	got := make(chan cluster.Message, 16)
	sub, err := b.Broker().Subscribe(ctx, odd, filter(odd, got))
	if err != nil {
		t.Fatal(err)
	}
	other := make(chan cluster.Message, 16)
	if _, err := b.Broker().Subscribe(ctx, "space", filter("space", other)); err != nil {
		t.Fatal(err)
	}
	for _, sp := range []string{odd, "space"} {
		warmUp(t, ctx, h, sp, func(i int, _ string) bool {
			mu.Lock()
			defer mu.Unlock()
			return i == 0 || warmed[sp] // only b subscribed
		})
	}
	if err := a.Broker().Publish(ctx, odd, []byte("one")); err != nil {
		t.Fatal(err)
	}
	select {
	case m := <-got:
		if string(m.Data) != "one" || m.Node != a.ID() {
			t.Fatalf("got %+v", m)
		}
	case <-time.After(wait):
		t.Fatal("no message")
	}
	if err := sub.Unsubscribe(); err != nil {
		t.Fatal(err)
	}
	if err := a.Broker().Publish(ctx, odd, []byte("two")); err != nil {
		t.Fatal(err)
	}
	if err := a.Broker().Publish(ctx, "space", []byte("three")); err != nil {
		t.Fatal(err)
	}
	select {
	case m := <-other:
		if string(m.Data) != "three" {
			t.Fatalf("other space got %q", m.Data)
		}
	case <-time.After(wait):
		t.Fatal("no message in the other space")
	}
	select {
	case m := <-got:
		t.Fatalf("got %q after Unsubscribe", m.Data)
	case <-time.After(100 * time.Millisecond):
	}
	if err := a.Broker().Publish(ctx, "", []byte("x")); !errors.Is(err, cluster.ErrInvalid) {
		t.Errorf("publish to an empty space name: %v, want ErrInvalid", err)
	}
}
