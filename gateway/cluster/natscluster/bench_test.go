package natscluster

import (
	"context"
	"fmt"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mew-protocol/mew/gateway/cluster"
)

// BenchmarkStatePropagation measures how long a State write on node A takes
// to reach a watch on node B, one change at a time: the bound within which
// a grant or a revoke made on one node is enforced on another. Run it with
// -benchtime=1000x for the p50/p99 over a thousand changes.
func BenchmarkStatePropagation(b *testing.B) {
	s := startServer(b, ServerOptions{})
	benchPropagation(b, newNode(b, s.ClientURL(), "a"), newNode(b, s.ClientURL(), "b"))
}

// BenchmarkStatePropagationThreeServers is BenchmarkStatePropagation on a
// three-server NATS cluster with replicas 3, the nodes on different
// servers: a write is acknowledged once a majority stored it.
func BenchmarkStatePropagationThreeServers(b *testing.B) {
	urls := threeServers(b)
	benchPropagation(b, newReplicatedNode(b, urls[0], "bench", "a"), newReplicatedNode(b, urls[2], "bench", "b"))
}

func benchPropagation(b *testing.B, a, c *Node) {
	ctx := context.Background()
	w, err := c.State().Watch(ctx, "bench")
	if err != nil {
		b.Fatal(err)
	}
	defer w.Stop()
	for e := range w.Changes() {
		if e.Op == cluster.OpSynced {
			break
		}
	}
	val := []byte(`{"id":"g","to":"agent","from":"human","at":"2026-01-01T00:00:00Z","capabilities":[{"kind":"mcp/request"}]}`)
	lat := make([]time.Duration, 0, b.N)
	b.ResetTimer()
	for i := range b.N {
		key := cluster.GrantKey("agent", fmt.Sprint(i%64))
		start := time.Now()
		rev, err := a.State().Put(ctx, "bench", key, val, cluster.PutOptions{})
		if err != nil {
			b.Fatal(err)
		}
		for e := range w.Changes() {
			if e.Revision >= rev {
				break
			}
		}
		lat = append(lat, time.Since(start))
	}
	b.StopTimer()
	slices.Sort(lat)
	ms := func(q float64) float64 { return float64(lat[int(q*float64(len(lat)-1))]) / 1e6 }
	b.ReportMetric(ms(0.5), "p50-ms")
	b.ReportMetric(ms(0.99), "p99-ms")
	b.ReportMetric(ms(1), "max-ms")
}

// BenchmarkBrokerFanOut measures the Broker's throughput: node A publishes
// 256-byte envelopes to a space two other nodes subscribe to; the time runs
// until both have received them all.
func BenchmarkBrokerFanOut(b *testing.B) {
	s := startServer(b, ServerOptions{})
	a := newNode(b, s.ClientURL(), "a")
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var got atomic.Int64
	done := make(chan struct{}, 2)
	want := int64(2 * b.N)
	for _, id := range []string{"b", "c"} {
		n := newNode(b, s.ClientURL(), id)
		if _, err := n.Broker().Subscribe(ctx, "bench", func(cluster.Message) {
			if got.Add(1) == want {
				done <- struct{}{}
			}
		}); err != nil {
			b.Fatal(err)
		}
	}
	data := make([]byte, 256)
	b.SetBytes(int64(len(data)))
	b.ResetTimer()
	for range b.N {
		if err := a.Broker().Publish(ctx, "bench", data); err != nil {
			b.Fatal(err)
		}
	}
	select {
	case <-done:
	case <-time.After(60 * time.Second):
		b.Fatalf("received %d of %d", got.Load(), want)
	}
	b.StopTimer()
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "envelopes/s")
}

// BenchmarkErr is the cost of the check the gateway makes before accepting
// each envelope for a shared space, from every connection at once.
func BenchmarkErr(b *testing.B) {
	s := startServer(b, ServerOptions{})
	n := newNode(b, s.ClientURL(), "a")
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			if n.Err() != nil {
				b.Fatal("unavailable")
			}
		}
	})
}
