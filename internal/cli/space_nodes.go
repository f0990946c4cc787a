package cli

import (
	"context"
	"fmt"
	"io"
	"net"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/mew-protocol/mew/space"
)

const (
	// maxSpaceNodes bounds --nodes: a local cluster to try things on, each node a process.
	maxSpaceNodes = 16
	// nodeProcPrefix starts the supervisor's name of every node but the first, which is
	// "gateway" as in a space of one gateway.
	nodeProcPrefix = "gateway-"
	// spaceNATSPort is where the first node's embedded NATS server listens, or the next free
	// port.
	spaceNATSPort = 4222
	// spaceRoutePort is where the first node's embedded NATS server takes the routes of the
	// others, when every node embeds one (NATS's usual cluster port), or the next free port.
	spaceRoutePort = 6222
	// minReplicatedNodes is the smallest --nodes at which every node embeds a NATS server of one
	// NATS cluster: JetStream's replicas keep a majority, and so take writes, when one of three
	// servers dies; with two, a majority is both, and either death would stop the space.
	minReplicatedNodes = 3
)

// nodeID is the cluster id of node i (from 0) of a space started with --nodes.
func nodeID(i int) string { return "node-" + strconv.Itoa(i+1) }

// nodeProcName is the supervisor's name of the node with id: "gateway" for the first.
func nodeProcName(id string) string {
	if id == nodeID(0) {
		return "gateway"
	}
	return nodeProcPrefix + id
}

// startNodes starts n gateway nodes of the space, one after the other, each once the one
// before answers /health: the first on the launch's port with an embedded NATS server, the
// others on the next free ports, joined to it, all with the space's NATS seed (spaceNATSKey). Each node but the first keeps its audit log
// under .mew/logs/<node id>, so that two nodes never write one file. The nodes are recorded in
// the state as they start.
func (rs *runningSpace) startNodes(ctx context.Context, n int) error {
	if n >= minReplicatedNodes {
		return rs.startReplicatedNodes(ctx, n)
	}
	natsPort, err := pickPort(spaceNATSPort)
	if err != nil {
		return fmt.Errorf("space up: the NATS port: %w", err)
	}
	natsAddr := "127.0.0.1:" + strconv.Itoa(natsPort)
	// Every node, the first (whose embedded server admits it) included,
	// gets the space's NATS seed by its path: never the secret in argv.
	seed, err := spaceNATSKey(rs.cfg.MewDir)
	if err != nil {
		return fmt.Errorf("space up: %w", err)
	}
	port := rs.launch.Port
	for i := range n {
		if i > 0 {
			if port, err = pickPort(port + 1); err != nil {
				return fmt.Errorf("space up: node %d: %w", i+1, err)
			}
		}
		l := rs.launch
		l.Port = port
		g := l.Gateway()
		id := nodeID(i)
		g.Name = nodeProcName(id)
		if i == 0 {
			g.Args = append(g.Args, "--nats", "embedded:"+strconv.Itoa(natsPort))
		} else {
			g.Args = append(g.Args, "--nats", "nats://"+natsAddr, "--log-dir", filepath.Join(rs.cfg.MewDir, "logs", id))
			g.Log = filepath.Join(l.LogDir(), g.Name+".log")
		}
		g.Args = append(g.Args, "--node-id", id, "--nats-nkey", seed)
		rs.mu.Lock()
		rs.state.Nodes = append(rs.state.Nodes, space.RunNode{ID: id, Port: port})
		rs.mu.Unlock()
		if err := rs.sup.Start(g); err != nil {
			return err
		}
		if err := waitHealthy(ctx, port, rs.sup.Done(g.Name)); err != nil {
			return fmt.Errorf("space up: node %s: %w; its log (%s) ends:\n%s", id, err, g.Log, tail(g.Log, 20))
		}
		rs.log.Info("gateway node up", "node", id, "port", port)
	}
	return nil
}

// participant returns the process of the k-th participant the space starts: with several
// nodes, it runs against node k mod n (${PORT} is that node's port) and gets every node's URL,
// its own first, in MEW_GATEWAY, so that the SDK moves to the next node when its node goes.
func (rs *runningSpace) participant(p *space.Participant, token string, k int) (space.Process, bool, error) {
	rs.mu.Lock()
	nodes := append([]space.RunNode(nil), rs.state.Nodes...)
	rs.mu.Unlock()
	if len(nodes) < 2 {
		return rs.launch.Participant(p, token)
	}
	l := rs.launch
	l.Port = nodes[k%len(nodes)].Port
	pr, ok, err := l.Participant(p, token)
	if ok {
		// The last of duplicate variables wins (os/exec), over the one-node URL Participant set.
		pr.Env = append(pr.Env, "MEW_GATEWAY="+strings.Join(rs.nodeURLs(k), ","))
	}
	return pr, ok, err
}

// nodeURLs returns the WebSocket URL of every node of the space, starting with node k mod n and
// going round; with one gateway, its URL.
func (rs *runningSpace) nodeURLs(k int) []string {
	rs.mu.Lock()
	defer rs.mu.Unlock()
	if len(rs.state.Nodes) == 0 {
		return []string{rs.launch.GatewayURL()}
	}
	urls := runNodeURLs(rs.state.Nodes)
	k %= len(urls)
	return append(urls[k:], urls[:k]...)
}

// printNodes writes a line per node when the space has several.
func (rs *runningSpace) printNodes(w io.Writer) {
	rs.mu.Lock()
	defer rs.mu.Unlock()
	printRunNodes(w, rs.state.Nodes)
}

// runNodeURLs returns the WebSocket URLs of nodes, in order.
func runNodeURLs(nodes []space.RunNode) []string {
	urls := make([]string, len(nodes))
	for i, n := range nodes {
		urls[i] = "ws://127.0.0.1:" + strconv.Itoa(n.Port)
	}
	return urls
}

// printRunNodes writes one line per node, with its id, WebSocket URL and health URL, when there
// are several.
func printRunNodes(w io.Writer, nodes []space.RunNode) {
	if len(nodes) < 2 {
		return
	}
	for _, n := range nodes {
		fmt.Fprintf(w, "node %s: ws://127.0.0.1:%d  health http://127.0.0.1:%d/health\n", n.ID, n.Port, n.Port)
	}
}

// startReplicatedNodes starts n gateway nodes of the space that each embed a NATS server, the n
// servers one NATS cluster (routes between them on 127.0.0.1, locked with the space's route
// secret) whose buckets and streams have min(3, n) replicas: any one node may die and the others
// go on. They are started together — the servers elect JetStream's leaders once a majority has
// met, so none is ready alone — and each is waited for. Each node's connection lists its own
// server first, then the others'. Every secret goes by its path: the space's NATS seed
// (spaceNATSKey) and route secret (spaceRouteSecretFile).
func (rs *runningSpace) startReplicatedNodes(ctx context.Context, n int) error {
	seed, err := spaceNATSKey(rs.cfg.MewDir)
	if err != nil {
		return fmt.Errorf("space up: %w", err)
	}
	secret, err := spaceRouteSecretFile(rs.cfg.MewDir)
	if err != nil {
		return fmt.Errorf("space up: %w", err)
	}
	taken := map[int]bool{rs.launch.Port: true}
	ports := []int{rs.launch.Port}
	for i := 1; i < n; i++ {
		p, err := pickFreePort(ports[i-1]+1, taken)
		if err != nil {
			return fmt.Errorf("space up: node %d: %w", i+1, err)
		}
		ports = append(ports, p)
	}
	client, route := make([]int, n), make([]int, n)
	for i := range n {
		if client[i], err = pickFreePort(max(spaceNATSPort, client[max(i-1, 0)]+1), taken); err != nil {
			return fmt.Errorf("space up: a NATS port: %w", err)
		}
		if route[i], err = pickFreePort(max(spaceRoutePort, route[max(i-1, 0)]+1), taken); err != nil {
			return fmt.Errorf("space up: a NATS cluster port: %w", err)
		}
	}
	var procs []space.Process
	for i := range n {
		l := rs.launch
		l.Port = ports[i]
		g := l.Gateway()
		id := nodeID(i)
		g.Name = nodeProcName(id)
		if i > 0 {
			g.Args = append(g.Args, "--log-dir", filepath.Join(rs.cfg.MewDir, "logs", id))
			g.Log = filepath.Join(l.LogDir(), g.Name+".log")
		}
		g.Args = append(g.Args, embeddedNodeArgs(i, client, route)...)
		g.Args = append(g.Args, "--nats-route-secret", secret, "--node-id", id, "--nats-nkey", seed)
		rs.mu.Lock()
		rs.state.Nodes = append(rs.state.Nodes, space.RunNode{ID: id, Port: ports[i]})
		rs.mu.Unlock()
		if err := rs.sup.Start(g); err != nil {
			return err
		}
		procs = append(procs, g)
	}
	for i, g := range procs {
		if err := waitHealthyFor(ctx, ports[i], rs.sup.Done(g.Name), clusterFormWait+healthWait); err != nil {
			return fmt.Errorf("space up: node %s: %w; its log (%s) ends:\n%s", nodeID(i), err, g.Log, tail(g.Log, 20))
		}
		rs.log.Info("gateway node up", "node", nodeID(i), "port", ports[i], "nats", client[i], "nats_cluster", route[i])
	}
	return nil
}

// embeddedNodeArgs returns the NATS flags of node i of the nodes whose embedded servers listen
// for clients on client and for routes on route: its own server and the others' URLs, its
// cluster port and the others'.
func embeddedNodeArgs(i int, client, route []int) []string {
	nats := "embedded:" + strconv.Itoa(client[i])
	var routes []string
	for j := range client {
		if j != i {
			nats += ",nats://127.0.0.1:" + strconv.Itoa(client[j])
			routes = append(routes, "127.0.0.1:"+strconv.Itoa(route[j]))
		}
	}
	return []string{"--nats", nats, "--nats-route-port", strconv.Itoa(route[i]), "--nats-routes", strings.Join(routes, ",")}
}

// pickFreePort returns the first port from start up that is free and not in taken, and adds
// it to taken: the ports a space's nodes are given are picked before any node binds them.
func pickFreePort(start int, taken map[int]bool) (int, error) {
	for p := start; p <= min(start+100, 65535); p++ {
		if taken[p] {
			continue
		}
		ln, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(p)))
		if err != nil {
			continue
		}
		_ = ln.Close()
		taken[p] = true
		return p, nil
	}
	return 0, fmt.Errorf("no free port from %d to %d", start, min(start+100, 65535))
}
