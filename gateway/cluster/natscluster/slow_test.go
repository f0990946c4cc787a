package natscluster

import (
	"context"
	"testing"
	"time"

	"github.com/mew-protocol/mew/gateway/cluster"
)

// A subscription NATS drops messages for (a slow consumer, here with a
// pending limit of 4 messages and a handler held up) gets one Lost message,
// once, after which the messages still buffered come; the node counts the
// event. Every message carries its publication time.
func TestSlowConsumerLost(t *testing.T) {
	s := startServer(t, ServerOptions{})
	a := newNode(t, s.ClientURL(), "a")
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	b, err := New(ctx, Options{NodeID: "b", URL: s.ClientURL(), PendingMessages: 4})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = b.Close() })

	release := make(chan struct{})
	got := make(chan cluster.Message, 1000)
	first := true
	sub, err := b.Broker().Subscribe(ctx, "sp", func(m cluster.Message) {
		if first {
			first = false
			<-release // held up: what follows piles up in NATS's buffer
		}
		got <- m
	})
	if err != nil {
		t.Fatal(err)
	}
	defer sub.Unsubscribe()
	start := time.Now()
	for range 100 {
		if err := a.Broker().Publish(ctx, "sp", []byte(`{"kind":"chat"}`)); err != nil {
			t.Fatal(err)
		}
	}
	for b.Stats().SlowConsumers == 0 {
		if ctx.Err() != nil {
			t.Fatal("no slow consumer reported")
		}
		time.Sleep(time.Millisecond) // polling the counter, with the context's deadline
	}
	close(release)
	lost, msgs := 0, 0
	timeout := time.After(2 * time.Second)
	for done := false; !done; {
		select {
		case m := <-got:
			if m.Lost {
				lost++
				if m.Node != "" || m.Data != nil {
					t.Fatalf("a Lost message with more: %+v", m)
				}
				continue
			}
			msgs++
			if m.Node != "a" || m.Sent.Before(start) || time.Since(m.Sent) > time.Minute {
				t.Fatalf("message from %q sent %v (test began %v)", m.Node, m.Sent, start)
			}
		case <-timeout:
			done = true
		}
	}
	if lost != 1 || msgs == 0 || msgs >= 100 {
		t.Fatalf("%d Lost notices and %d messages of 100, want 1 and some but not all", lost, msgs)
	}
	if st := b.Stats(); st.SlowConsumers == 0 || st.Reconnects != 0 {
		t.Fatalf("stats %+v", st)
	}
}
