package gateway_test

import (
	"context"
	"fmt"
	"os"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"go.uber.org/goleak"

	"github.com/mew-protocol/mew/gateway/cluster"
	"github.com/mew-protocol/mew/gateway/cluster/memory"
	"github.com/mew-protocol/mew/gateway/cluster/natscluster"
)

// backend is what the nodes of a test cluster share.
type backend string

const (
	// onNATS: one embedded NATS server of the test's own.
	onNATS backend = "nats"
	// onNATSCluster: three NATS servers in one NATS cluster, JetStream
	// replicas 3, node i on server i%3; one for the package's tests, each
	// test with its own cluster name.
	onNATSCluster backend = "nats-3servers"
	// onMemory: one memory.Cluster.
	onMemory backend = "memory"
)

// backends are those the multi-node tests run on.
var backends = []backend{onNATS, onNATSCluster, onMemory}

// testPresenceTTL is the presence TTL of every test cluster.
const testPresenceTTL = 2 * time.Second

// fabric is one test cluster's shared part, from which its nodes are made.
type fabric struct {
	b     backend
	name  string          // the cluster's name: its buckets and streams are mew_<name>_…
	urls  []string        // the NATS servers' client URLs
	ns    *server.Server  // the test's own server (onNATS)
	store string          // its store directory
	mc    *memory.Cluster // onMemory
}

func newFabric(t *testing.T, b backend) *fabric {
	t.Helper()
	f := &fabric{b: b, name: "test", store: t.TempDir()}
	switch b {
	case onMemory:
		f.mc = memory.New(memory.Options{PresenceTTL: testPresenceTTL})
		t.Cleanup(func() { _ = f.mc.Close() })
	case onNATS:
		var err error
		if f.ns, err = natscluster.StartServer(natscluster.ServerOptions{StoreDir: f.store}); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { f.ns.Shutdown(); f.ns.WaitForShutdown() })
		f.urls = []string{f.ns.ClientURL()}
	case onNATSCluster:
		f.urls = sharedNATS.get(t)
		f.name = fmt.Sprintf("t%d", sharedNATS.names.Add(1))
	default:
		t.Fatalf("backend %q", b)
	}
	return f
}

// node makes the cluster node id (the i-th of the cluster), closed when
// the test ends; tune, if set, adjusts a NATS node's options.
func (f *fabric) node(t *testing.T, i int, id string, tune func(*natscluster.Options)) cluster.Node {
	t.Helper()
	var node cluster.Node
	var err error
	if f.mc != nil {
		node, err = f.mc.Node(id)
	} else {
		o := natscluster.Options{NodeID: id, Cluster: f.name, URL: f.urls[i%len(f.urls)], PresenceTTL: testPresenceTTL}
		if f.b == onNATSCluster {
			o.Replicas, o.RequestTimeout = 3, 3*time.Second
		}
		if tune != nil {
			tune(&o)
		}
		node, err = f.connect(o)
	}
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = node.Close() }) // after the gateway's own cleanup
	return node
}

// connect makes a NATS node, retrying for a while on a cluster of servers
// whose JetStream may still be electing its leaders.
func (f *fabric) connect(o natscluster.Options) (cluster.Node, error) {
	deadline := time.Now().Add(30 * time.Second)
	for {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		node, err := natscluster.New(ctx, o)
		cancel()
		if err == nil || f.b != onNATSCluster || time.Now().After(deadline) {
			return node, err
		}
		time.Sleep(250 * time.Millisecond) // the JetStream cluster is still forming
	}
}

// sharedNATS is the NATS cluster of onNATSCluster: started by the first test
// that asks, stopped by TestMain.
var sharedNATS natsServers

type natsServers struct {
	once    sync.Once
	servers []*server.Server
	dir     string
	err     error
	names   atomic.Int64 // numbers the tests' cluster names
}

func (s *natsServers) get(t *testing.T) []string {
	t.Helper()
	s.once.Do(func() {
		if s.dir, s.err = os.MkdirTemp("", "mew-gateway-nats-"); s.err != nil {
			return
		}
		s.servers, s.err = natscluster.StartServers(3, natscluster.ServerOptions{StoreDir: s.dir})
	})
	if s.err != nil {
		t.Fatalf("three NATS servers: %v", s.err)
	}
	var urls []string
	for _, srv := range s.servers {
		urls = append(urls, srv.ClientURL())
	}
	return urls
}

func (s *natsServers) stop() {
	for _, srv := range s.servers {
		srv.Shutdown()
		srv.WaitForShutdown()
	}
	if s.dir != "" {
		_ = os.RemoveAll(s.dir)
	}
}

// TestMain checks for leaked goroutines once the shared NATS servers, which
// outlive every test, are stopped. It ignores two goroutines of the NATS
// server's own, which it can leave behind when a clustered server creates a
// JetStream store while it shuts down (the store's flush loop and the
// access-time ticker it registered); every goroutine of ours is checked.
func TestMain(m *testing.M) {
	code := m.Run()
	sharedNATS.stop()
	if code == 0 {
		if err := goleak.Find(
			goleak.IgnoreTopFunction("github.com/nats-io/nats-server/v2/server/ats.Register.func1"),
			goleak.IgnoreTopFunction("github.com/nats-io/nats-server/v2/server.(*fileStore).flushStreamStateLoop"),
		); err != nil {
			fmt.Fprintf(os.Stderr, "goleak: errors on successful test run: %v\n", err)
			code = 1
		}
	}
	os.Exit(code)
}
