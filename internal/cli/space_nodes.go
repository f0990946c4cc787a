package cli

import (
	"context"
	"fmt"
	"io"
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
