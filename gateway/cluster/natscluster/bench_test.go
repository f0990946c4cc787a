package natscluster

import (
	"testing"

	"github.com/mew-protocol/mew/gateway/cluster/clustertest"
)

// BenchmarkStatePropagation measures how long a State write on node A takes
// to reach a watch on node B, one change at a time: the bound within which
// a grant or a revoke made on one node is enforced on another. Run it with
// -benchtime=1000x for the p50/p99 over a thousand changes.
func BenchmarkStatePropagation(b *testing.B) {
	s := startServer(b, ServerOptions{})
	clustertest.BenchStatePropagation(b, newNode(b, s.ClientURL(), "a"), newNode(b, s.ClientURL(), "b"))
}

// BenchmarkStatePropagationThreeServers is BenchmarkStatePropagation on a
// three-server NATS cluster with replicas 3, the nodes on different
// servers: a write is acknowledged once a majority stored it.
func BenchmarkStatePropagationThreeServers(b *testing.B) {
	urls := threeServers(b)
	clustertest.BenchStatePropagation(b, newReplicatedNode(b, urls[0], "bench", "a"), newReplicatedNode(b, urls[2], "bench", "b"))
}

// BenchmarkBrokerFanOut measures the Broker's throughput: node A publishes
// 256-byte envelopes to a space two other nodes subscribe to; the time runs
// until both have received them all.
func BenchmarkBrokerFanOut(b *testing.B) {
	s := startServer(b, ServerOptions{})
	clustertest.BenchBrokerFanOut(b, newNode(b, s.ClientURL(), "a"), newNode(b, s.ClientURL(), "b"), newNode(b, s.ClientURL(), "c"))
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
