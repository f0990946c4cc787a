package cli

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"time"

	"github.com/nats-io/nats-server/v2/server"

	"github.com/mew-protocol/mew/gateway"
	"github.com/mew-protocol/mew/gateway/cluster/natscluster"
	"github.com/mew-protocol/mew/internal/bench"
	"github.com/mew-protocol/mew/space"
)

// maxBenchNodes bounds --nodes: each node is a gateway, a NATS connection and their goroutines
// in this process.
const maxBenchNodes = 16

// benchCluster is a gateway cluster started for one bench run: an embedded NATS server and the
// nodes joined to it, every one serving the same space in this process.
type benchCluster struct {
	ns    *server.Server
	nodes []*natscluster.Node
	gws   []*gateway.Server
	hss   []*http.Server
	serve []chan error
}

// startCluster serves cfg from t.nodes gateway nodes sharing an embedded NATS server (store
// under dir), each on its own 127.0.0.1 port, each connected to the server in process, as a node
// that embeds its cluster's only server is. The endpoint lists every node's URL, so the
// workload spreads its participants round robin over them.
func (t gatewayBench) startCluster(ctx context.Context, cfg *space.Config, dir string, tokens map[string]string, rate float64) (*bench.Endpoint, error) {
	c := &benchCluster{}
	fail := func(err error) (*bench.Endpoint, error) {
		return nil, errors.Join(fmt.Errorf("bench gateway cluster: %w", err), c.close(dir))
	}
	// Even for a bench, the server admits only its nodes: the run's seed
	// lives in dir, removed with it.
	auth, pub, err := natsAuthFlags{}.embeddedAuth(dir)
	if err != nil {
		return fail(err)
	}
	ns, err := natscluster.StartServer(natscluster.ServerOptions{StoreDir: filepath.Join(dir, "nats"), Nkeys: []string{pub}})
	if err != nil {
		return fail(err)
	}
	c.ns = ns
	var urls []string
	for i := range t.nodes {
		id := "bench-node-" + strconv.Itoa(i+1)
		nctx, cancel := context.WithTimeout(ctx, 15*time.Second)
		node, err := natscluster.New(nctx, natscluster.Options{NodeID: id, URL: ns.ClientURL(), Auth: auth, InProcess: ns})
		cancel()
		if err != nil {
			return fail(fmt.Errorf("node %s: %w", id, err))
		}
		c.nodes = append(c.nodes, node)
		opts := t.options(cfg, rate)
		opts.Audit.Dir = filepath.Join(dir, "audit", id) // each node writes its own audit log
		opts.Cluster = gateway.ClusterOptions{Node: node, Name: natscluster.DefaultCluster}
		gw, err := gateway.New(opts)
		if err != nil {
			return fail(fmt.Errorf("node %s: %w", id, err))
		}
		c.gws = append(c.gws, gw)
		ln, err := (&net.ListenConfig{}).Listen(ctx, "tcp", "127.0.0.1:0")
		if err != nil {
			return fail(fmt.Errorf("node %s: %w", id, err))
		}
		hs := gw.HTTPServer()
		served := make(chan error, 1)
		go func() { served <- hs.Serve(gw.Listener(ln)) }()
		c.hss, c.serve = append(c.hss, hs), append(c.serve, served)
		urls = append(urls, "ws://"+ln.Addr().String()+"/ws?space="+cfg.Space.ID)
	}
	return &bench.Endpoint{URL: urls[0], URLs: urls, Tokens: tokens, AuditDir: filepath.Join(dir, "audit"),
		Close: func() error { return c.close(dir) }}, nil
}

// close stops what c started, in the reverse order: the HTTP servers and gateways, then the
// nodes, then NATS, and removes dir.
func (c *benchCluster) close(dir string) error {
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	var errs []error
	for i, hs := range c.hss {
		errs = append(errs, hs.Shutdown(ctx))
		<-c.serve[i]
	}
	for _, gw := range c.gws {
		errs = append(errs, gw.Close(ctx))
	}
	for _, n := range c.nodes {
		errs = append(errs, n.Close())
	}
	if c.ns != nil {
		c.ns.Shutdown()
		c.ns.WaitForShutdown()
	}
	return errors.Join(append(errs, os.RemoveAll(dir))...)
}
