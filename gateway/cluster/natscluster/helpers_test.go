package natscluster

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"go.uber.org/goleak"

	"github.com/mew-protocol/mew/gateway/cluster/clustertest"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m, natsShutdownRace...) }

// natsShutdownRace ignores the two goroutines an embedded NATS server
// (v2.15) leaves behind when a JetStream store is created while the server
// shuts down, as a clustered server may do while it applies an assignment:
// the store's flush loop and the process-wide access-time ticker it
// registered. They are the server's, and they end with the process; every
// goroutine of ours is still checked. (gateway's TestMain ignores the same.)
var natsShutdownRace = []goleak.Option{
	goleak.IgnoreTopFunction("github.com/nats-io/nats-server/v2/server/ats.Register.func1"),
	goleak.IgnoreTopFunction("github.com/nats-io/nats-server/v2/server.(*fileStore).flushStreamStateLoop"),
}

// startServer starts an embedded NATS server on a random port of 127.0.0.1
// with a temporary store, stopped when the test ends.
func startServer(t testing.TB, o ServerOptions) *server.Server {
	t.Helper()
	if o.StoreDir == "" {
		o.StoreDir = t.TempDir()
	}
	s, err := StartServer(o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		s.Shutdown()
		s.WaitForShutdown()
	})
	return s
}

// newNode connects a node to url, closed when the test ends.
func newNode(t testing.TB, url, id string) *Node {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	n, err := New(ctx, Options{NodeID: id, URL: url, PresenceTTL: clustertest.PresenceTTL, RequestTimeout: 3 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = n.Close() })
	return n
}

// singleServer makes n nodes with separate connections to one server.
func singleServer(t *testing.T, n int) *clustertest.Harness {
	s := startServer(t, ServerOptions{})
	h := &clustertest.Harness{}
	var nodes []*Node
	for i := range n {
		node := newNode(t, s.ClientURL(), fmt.Sprintf("n%d", i))
		nodes = append(nodes, node)
		h.Nodes = append(h.Nodes, node)
	}
	h.Crash = func(i int) { nodes[i].crash() }
	return h
}
