package testutil

import (
	"context"
	"fmt"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/mew-protocol/mew/gateway"
	"github.com/mew-protocol/mew/gateway/cluster"
	"github.com/mew-protocol/mew/gateway/cluster/memory"
	"github.com/mew-protocol/mew/gateway/cluster/natscluster"
)

// ClusterEnv names the environment variable that puts every gateway a test
// starts (Serve, StartGateway) through a cluster implementation, so that the
// single-node suites also run over the shared-state path: "nats" gives each
// gateway its own embedded NATS server with JetStream, "memory" a
// memory.Cluster; unset or "" leaves gateways alone. A test that sets
// Options.Cluster itself keeps its own.
const ClusterEnv = "MEW_TEST_CLUSTER"

// ClusterMode returns the value of ClusterEnv.
func ClusterMode() string { return os.Getenv(ClusterEnv) }

// fabric is the cluster node (and embedded server) under one test gateway.
type fabric struct {
	once  sync.Once
	node  cluster.Node
	mem   *memory.Cluster
	ns    *server.Server
	store string
}

// clusterFromEnv sets opts.Cluster as ClusterEnv asks. It returns nil when
// it asks for nothing.
func clusterFromEnv(opts *gateway.Options) (*fabric, error) {
	mode := ClusterMode()
	if mode == "" || opts.Cluster.Node != nil {
		return nil, nil
	}
	f := &fabric{}
	var err error
	switch mode {
	case "memory":
		f.mem = memory.New(memory.Options{PresenceTTL: 2 * time.Second})
		f.node, err = f.mem.Node("n1")
	case "nats":
		if f.store, err = os.MkdirTemp("", "mew-test-nats-"); err != nil {
			return nil, err
		}
		if f.ns, err = natscluster.StartServer(natscluster.ServerOptions{StoreDir: f.store}); err != nil {
			f.close()
			return nil, err
		}
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		f.node, err = natscluster.New(ctx, natscluster.Options{NodeID: "n1", Cluster: "test", URL: f.ns.ClientURL(), PresenceTTL: 2 * time.Second})
		cancel()
	default:
		return nil, fmt.Errorf("testutil: %s=%q: want nats, memory or nothing", ClusterEnv, mode)
	}
	if err != nil {
		f.close()
		return nil, fmt.Errorf("testutil: %s=%s: %w", ClusterEnv, mode, err)
	}
	opts.Cluster.Node, opts.Cluster.Name = f.node, "test"
	return f, nil
}

// close ends the node, then its server. It is safe on nil and more than once.
func (f *fabric) close() {
	if f == nil {
		return
	}
	f.once.Do(func() {
		if f.node != nil {
			_ = f.node.Close()
		}
		if f.mem != nil {
			_ = f.mem.Close()
		}
		if f.ns != nil {
			f.ns.Shutdown()
			f.ns.WaitForShutdown()
		}
		if f.store != "" {
			_ = os.RemoveAll(f.store)
		}
	})
}

// StartCluster starts n gateway nodes serving spaceYAML as one cluster, on
// an embedded NATS server of their own (presence TTL 2 s), each as
// StartGateway starts one; all of it stops when the test ends.
func StartCluster(t testing.TB, n int, spaceYAML string, opts gateway.Options) []*Gateway {
	t.Helper()
	ns, err := natscluster.StartServer(natscluster.ServerOptions{StoreDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ns.Shutdown(); ns.WaitForShutdown() }) // last: after the nodes and gateways
	var gs []*Gateway
	for i := range n {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		node, err := natscluster.New(ctx, natscluster.Options{NodeID: fmt.Sprintf("n%d", i+1), Cluster: "test", URL: ns.ClientURL(), PresenceTTL: 2 * time.Second})
		cancel()
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = node.Close() })
		o := opts
		o.Cluster.Node, o.Cluster.Name = node, "test"
		gs = append(gs, StartGateway(t, spaceYAML, o))
	}
	return gs
}

// JetStream connects to the NATS server at url, for a test that reads what
// the nodes stored with a client of its own (opts: its credentials); the
// connection closes when the test ends.
func JetStream(t testing.TB, url string, opts ...nats.Option) jetstream.JetStream {
	t.Helper()
	nc, err := nats.Connect(url, opts...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(nc.Close)
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	return js
}
