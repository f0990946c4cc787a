package gateway

import (
	"context"
	"fmt"
	"log/slog"
	"testing"
	"time"

	"github.com/mew-protocol/mew/gateway/cluster"
	"github.com/mew-protocol/mew/gateway/cluster/memory"
	"github.com/mew-protocol/mew/gateway/cluster/natscluster"
)

// BenchmarkClusterHistoryAppend measures how many envelopes a second one
// node's history writer appends: the rate past which its queue fills and
// it drops. The producer waits while the queue is near full, so nothing is
// dropped and the rate is the writer's.
func BenchmarkClusterHistoryAppend(b *testing.B) {
	for _, backend := range []string{"nats", "memory"} {
		b.Run(backend, func(b *testing.B) {
			var node cluster.Node
			var err error
			if backend == "memory" {
				mc := memory.New(memory.Options{})
				b.Cleanup(func() { _ = mc.Close() })
				node, err = mc.Node("n1")
			} else {
				ns, serr := natscluster.StartServer(natscluster.ServerOptions{StoreDir: b.TempDir()})
				if serr != nil {
					b.Fatal(serr)
				}
				b.Cleanup(func() { ns.Shutdown(); ns.WaitForShutdown() })
				ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
				node, err = natscluster.New(ctx, natscluster.Options{NodeID: "n1", Cluster: "bench", URL: ns.ClientURL()})
				cancel()
			}
			if err != nil {
				b.Fatal(err)
			}
			b.Cleanup(func() { _ = node.Close() })
			srv := &Server{metrics: newMetrics(), opts: Options{Logger: slog.New(slog.DiscardHandler)}.withDefaults()}
			srv.metrics.registerCluster(node)
			hw := newHistoryWriter(srv, node)
			defer hw.close(context.Background())
			env := fmt.Appendf(nil, `{"protocol":"mew/v0.4","id":"%040d","ts":"2026-01-01T00:00:00.000Z","from":"alice","kind":"chat","payload":{"text":"%0200d"}}`, 0, 0)
			now := time.Now()
			b.SetBytes(int64(len(env)))
			b.ResetTimer()
			start := time.Now()
			for range b.N {
				for {
					hw.mu.Lock()
					full := len(hw.queue) >= hw.max-historyBatch
					hw.mu.Unlock()
					if !full {
						break
					}
					time.Sleep(50 * time.Microsecond)
				}
				hw.push("sp", now, env)
			}
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			hw.settle(ctx)
			cancel()
			b.ReportMetric(float64(b.N)/time.Since(start).Seconds(), "envelopes/s")
			mfs, err := srv.metrics.reg.Gather()
			if err != nil {
				b.Fatal(err)
			}
			for _, mf := range mfs {
				if mf.GetName() == "mew_gateway_cluster_history_dropped_total" {
					if d := mf.GetMetric()[0].GetCounter().GetValue(); d != 0 {
						b.Fatalf("%v dropped", d)
					}
				}
			}
		})
	}
}

// FuzzClusterCursor: any cursor a poller sends is parsed or refused, never
// a panic, and what parses in the three-part form prints as a cursor that
// parses the same (leading zeros aside).
func FuzzClusterCursor(f *testing.F) {
	for _, s := range []string{"", "0", "12", "12.3.abcdef01", "-1", "1.2.ABCDEF01", "18446744073709551616", "1..", "1.2.3.4"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		c, private, err := parseClusterCursor(s)
		if err != nil {
			return
		}
		if len(s) > maxCursorLen {
			t.Fatalf("%q parsed though longer than %d bytes", s, maxCursorLen)
		}
		if c.hash != "" {
			if again, _, err := parseClusterCursor(c.String()); err != nil || again != c {
				t.Fatalf("%q parsed as %+v, which prints as %q and parses back as %+v, %v", s, c, c.String(), again, err)
			}
		}
		if c.hash == "" && private && s != "" && s != "0" {
			t.Fatalf("%q: private entries honoured without a node mark", s)
		}
	})
}
