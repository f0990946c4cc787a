package clustertest

import (
	"context"
	"fmt"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mew-protocol/mew/gateway/cluster"
)

// BenchStatePropagation measures how long a State write on node a takes to
// reach a watch on node c, one change at a time: the bound within which a
// grant or a revoke made on one node is enforced on another. It reports the
// p50, p99 and largest latency. Each implementation runs it, so that memory
// gives the floor a networked one is compared with.
func BenchStatePropagation(b *testing.B, a, c cluster.Node) {
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

// BenchBrokerFanOut measures the Broker's throughput: node a publishes
// 256-byte envelopes to a space every node of subs subscribes to; the time
// runs until all of them have received them all.
func BenchBrokerFanOut(b *testing.B, a cluster.Node, subs ...cluster.Node) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var got atomic.Int64
	done := make(chan struct{}, 1)
	want := int64(len(subs) * b.N)
	for _, n := range subs {
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
