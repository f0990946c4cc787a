package cli

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/url"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/nats-io/nats-server/v2/server"

	"github.com/mew-protocol/mew/gateway/cluster"
	"github.com/mew-protocol/mew/gateway/cluster/natscluster"
	"github.com/mew-protocol/mew/space"
)

const (
	// defaultEmbeddedPort is the client port of --nats embedded without one.
	defaultEmbeddedPort = 4222
	// maxNATSPeers bounds the other servers an embedded server routes to.
	maxNATSPeers = 64
	// maxReplicas is the replication a cluster of embedded servers gets by
	// default when it has that many servers or more: one server may die.
	maxReplicas = 3
	// clusterFormWait bounds how long a node of embedded servers waits for
	// enough of the others to elect JetStream's leaders: they are started
	// together, and the first to come up can do nothing alone.
	clusterFormWait = 90 * time.Second
)

// serverName is what a node id must look like to name an embedded server of
// a NATS cluster: a NATS server name and a directory of its own under the
// space's mew dir (no "." or "..", no separator).
var serverName = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$`)

// embeddedNATS is the NATS server a node runs in its process
// (--nats embedded[:PORT][,URL…]), alone or as one server of a NATS cluster
// of such servers (--nats-route-port, --nats-routes).
type embeddedNATS struct {
	port      int      // client port (0: any free one)
	peers     []string // the other servers' client URLs, where the node's connection fails over
	routePort int      // cluster port; 0: a server of its own
	routes    []string // the other servers' cluster ports, 127.0.0.1:PORT
}

// servers is how many NATS servers the cluster has.
func (e embeddedNATS) servers() int { return 1 + len(e.routes) }

// parseEmbedded reads --nats embedded[:PORT][,nats://127.0.0.1:PORT…] and the
// route flags, and refuses what cannot form a cluster on this machine: every
// embedded server listens on 127.0.0.1, so every address names it, each
// once, and none is this server's own or a port taken twice. ok is false
// when --nats asks for no embedded server.
func parseEmbedded(f gatewayFlags) (e embeddedNATS, ok bool, err error) {
	parts := strings.Split(f.nats, ",")
	for i, p := range parts {
		parts[i] = strings.TrimSpace(p)
		if i > 0 && strings.HasPrefix(parts[i], "embedded") {
			return e, false, fmt.Errorf("--nats: embedded must come first, then the other servers' URLs")
		}
	}
	rest, ok := strings.CutPrefix(parts[0], "embedded")
	if !ok {
		if f.routePort != 0 || len(f.routes) > 0 || f.routeSecret != "" {
			return e, false, errors.New("--nats-route-port, --nats-routes and --nats-route-secret need --nats embedded[:PORT]: they join embedded servers into a NATS cluster")
		}
		return e, false, nil
	}
	e.port = defaultEmbeddedPort
	if rest != "" {
		p, err := strconv.Atoi(strings.TrimPrefix(rest, ":"))
		if err != nil || !strings.HasPrefix(rest, ":") || p < 0 || p > 65535 {
			return e, true, fmt.Errorf("--nats: %q is not embedded or embedded:PORT", parts[0])
		}
		e.port = p
	}
	// Every port named, and what it is, to find one named twice.
	taken := map[int]string{}
	claim := func(port int, what string) error {
		if port == 0 {
			return nil
		}
		if prev, dup := taken[port]; dup {
			return fmt.Errorf("port %d is both %s and %s", port, prev, what)
		}
		taken[port] = what
		return nil
	}
	if err := claim(f.port, "the gateway's --port"); err != nil {
		return e, true, err
	}
	if err := claim(e.port, "this node's NATS client port (--nats embedded:PORT)"); err != nil {
		return e, true, err
	}
	if len(parts)-1 > maxNATSPeers || len(f.routes) > maxNATSPeers {
		return e, true, fmt.Errorf("--nats, --nats-routes: at most %d other servers", maxNATSPeers)
	}
	for _, p := range parts[1:] {
		port, err := peerURL(p)
		if err != nil {
			return e, true, fmt.Errorf("--nats: %w", err)
		}
		if port == e.port {
			return e, true, fmt.Errorf("--nats: %s is this node's own server: list only the others", natscluster.Redact(p))
		}
		if err := claim(port, "a server's client URL in --nats"); err != nil {
			return e, true, fmt.Errorf("--nats: %w", err)
		}
		e.peers = append(e.peers, "nats://127.0.0.1:"+strconv.Itoa(port))
	}
	switch {
	case f.routePort == 0 && len(f.routes) == 0:
		if len(e.peers) > 0 {
			return e, true, errors.New("--nats embedded with other servers' URLs needs --nats-route-port and --nats-routes: servers that do not route to each other are no cluster")
		}
		if f.routeSecret != "" {
			return e, true, errors.New("--nats-route-secret needs --nats-route-port and --nats-routes")
		}
		return e, true, nil
	case f.routePort == 0:
		return e, true, errors.New("--nats-routes needs --nats-route-port: this server's own cluster port, which the others name in theirs")
	case len(f.routes) == 0:
		return e, true, errors.New("--nats-route-port needs --nats-routes: the other servers' cluster ports (a server alone is no cluster)")
	case f.routePort < 1 || f.routePort > 65535:
		return e, true, fmt.Errorf("--nats-route-port: %d is not from 1 to 65535", f.routePort)
	case e.port == 0:
		return e, true, errors.New("--nats embedded:0 cannot be clustered: the other servers must know this one's client port")
	}
	e.routePort = f.routePort
	if err := claim(e.routePort, "this node's NATS cluster port (--nats-route-port)"); err != nil {
		return e, true, err
	}
	for _, r := range f.routes {
		port, err := routeAddr(r)
		if err != nil {
			return e, true, fmt.Errorf("--nats-routes: %w", err)
		}
		if port == e.routePort {
			return e, true, fmt.Errorf("--nats-routes: %s is this server's own cluster port: list only the others", r)
		}
		if err := claim(port, "a cluster port in --nats-routes"); err != nil {
			return e, true, fmt.Errorf("--nats-routes: %w", err)
		}
		e.routes = append(e.routes, "127.0.0.1:"+strconv.Itoa(port))
	}
	return e, true, nil
}

// loopbackPort returns the port of host:port, whose host must be where the
// embedded servers listen.
func loopbackPort(hostport string) (int, error) {
	host, p, err := net.SplitHostPort(hostport)
	if err != nil {
		return 0, fmt.Errorf("%q is not HOST:PORT", hostport)
	}
	if host != "127.0.0.1" && host != "localhost" {
		return 0, fmt.Errorf("%q: embedded servers listen on 127.0.0.1 only", hostport)
	}
	port, err := strconv.Atoi(p)
	if err != nil || port < 1 || port > 65535 {
		return 0, fmt.Errorf("%q: the port is not from 1 to 65535", hostport)
	}
	return port, nil
}

// peerURL checks another embedded server's client URL, nats://127.0.0.1:PORT,
// and returns its port.
func peerURL(s string) (int, error) {
	u, err := url.Parse(s)
	if err != nil || u.Scheme != "nats" || u.Opaque != "" || (u.Path != "" && u.Path != "/") || u.RawQuery != "" || u.Fragment != "" {
		return 0, fmt.Errorf("%s is not nats://127.0.0.1:PORT", natscluster.Redact(s))
	}
	if u.User != nil {
		return 0, fmt.Errorf("%s carries credentials: the embedded servers admit the space's nkey (--nats-nkey)", natscluster.Redact(s))
	}
	return loopbackPort(u.Host)
}

// routeAddr checks another embedded server's cluster address, 127.0.0.1:PORT
// or nats-route://127.0.0.1:PORT, and returns its port.
func routeAddr(s string) (int, error) {
	s = strings.TrimSpace(s)
	if strings.Contains(s, "@") {
		return 0, fmt.Errorf("a route carries credentials: the route secret is a file (--nats-route-secret), never the command line")
	}
	if rest, ok := strings.CutPrefix(s, "nats-route://"); ok {
		s = strings.TrimSuffix(rest, "/")
	}
	return loopbackPort(s)
}

// startEmbedded starts the embedded NATS server of e, which admits the
// nkey pub, and returns it with the URL list the node connects to (its own
// server first). Clustered, the server routes to the others with the route
// secret, and stores under <mew dir>/nats/nodes/<node id>.
func startEmbedded(f gatewayFlags, e embeddedNATS, cfg *space.Config, pub string, logger *slog.Logger) (*server.Server, string, error) {
	so := natscluster.ServerOptions{Port: e.port, StoreDir: filepath.Join(cfg.MewDir, "nats"), Nkeys: []string{pub},
		// The server's own log (to stderr, without secrets) at -l debug:
		// what its routes and JetStream's elections are doing.
		Logs: logger.Enabled(context.Background(), slog.LevelDebug)}
	if len(e.routes) > 0 {
		secretFile := f.routeSecret
		if secretFile == "" {
			var err error
			if secretFile, err = spaceRouteSecretFile(cfg.MewDir); err != nil {
				return nil, "", err
			}
		}
		secret, err := natscluster.EnsureRouteSecret(secretFile)
		if err != nil {
			return nil, "", fmt.Errorf("--nats-route-secret: %w", err)
		}
		so.Name, so.ClusterName = f.nodeID, cmp.Or(f.clusterName, natscluster.DefaultCluster)
		so.StoreDir = filepath.Join(cfg.MewDir, "nats", "nodes", f.nodeID)
		so.ClusterPort, so.RouteSecret = e.routePort, secret
		// The server's own cluster port is among its routes, as in
		// natscluster.StartServers: NATS skips a route to itself, and
		// counts every route when it sizes JetStream's first meta group,
		// whose majority must then be a majority of all the servers.
		for _, r := range append([]string{"127.0.0.1:" + strconv.Itoa(e.routePort)}, e.routes...) {
			so.Routes = append(so.Routes, "nats-route://"+r)
		}
		logger.Info("starting an embedded NATS server of a cluster; JetStream needs a majority of its servers",
			"servers", e.servers(), "route_port", e.routePort, "routes", strings.Join(e.routes, ","), "route_secret_file", secretFile)
	}
	ns, err := natscluster.StartServer(so)
	if err != nil {
		return nil, "", fmt.Errorf("--nats %s: %w", natscluster.Redact(f.nats), err)
	}
	return ns, strings.Join(append([]string{ns.ClientURL()}, e.peers...), ","), nil
}

// spaceRouteSecretFile is the route secret the embedded servers of the
// space's nodes share: <mewDir>/nats-auth/routes.secret, 0600 in the
// 0700 directory that holds the space's nkey seed; made on first use.
func spaceRouteSecretFile(mewDir string) (string, error) {
	return spaceNATSFile(mewDir, "routes.secret", natscluster.EnsureRouteSecret)
}

// checkEmbeddedCluster refuses the node id and replicas a cluster of
// embedded servers cannot run with, and returns the replicas to use: the
// --replicas given, else min(3, servers).
func checkEmbeddedCluster(f gatewayFlags, e embeddedNATS) (int, error) {
	if len(e.routes) == 0 {
		return f.replicas, nil
	}
	if !f.nodeIDSet {
		return 0, errors.New("--nats-routes needs --node-id: it names this node's server in the NATS cluster and its store, which must stay the same across restarts")
	}
	if !serverName.MatchString(f.nodeID) {
		return 0, fmt.Errorf("--node-id %q: a node of embedded NATS servers needs an id of 1 to 64 letters, digits, '.', '_' and '-', not starting with '.', '_' or '-'", f.nodeID)
	}
	if !f.replicasSet {
		return min(maxReplicas, e.servers()), nil
	}
	if f.replicas > e.servers() {
		return 0, fmt.Errorf("--replicas %d: the cluster has %d NATS servers", f.replicas, e.servers())
	}
	return f.replicas, nil
}

// connectEmbeddedCluster makes the node's cluster connection, asking again
// while JetStream has no leaders yet: the servers of a new cluster elect
// them once a majority has met, and a restarted one waits for the others'
// answer. Refused credentials and invalid options end it at once.
func connectEmbeddedCluster(ctx context.Context, o natscluster.Options, logger *slog.Logger) (*natscluster.Node, error) {
	ctx, cancel := context.WithTimeout(ctx, clusterFormWait)
	defer cancel()
	for try := 0; ; try++ {
		actx, acancel := context.WithTimeout(ctx, 30*time.Second)
		node, err := natscluster.New(actx, o)
		acancel()
		if err == nil {
			return node, nil
		}
		if errors.Is(err, natscluster.ErrAuth) || errors.Is(err, cluster.ErrInvalid) {
			return nil, err
		}
		if try == 0 {
			logger.Info("waiting for the other NATS servers of the cluster to elect JetStream's leaders", "err", err)
		} else {
			logger.Debug("JetStream not ready yet", "try", try, "err", err)
		}
		select {
		case <-ctx.Done():
			if context.Cause(ctx) == context.DeadlineExceeded {
				return nil, fmt.Errorf("no JetStream majority within %v (are the other nodes up?): %w", clusterFormWait, err)
			}
			return nil, fmt.Errorf("stopped while waiting for a JetStream majority: %w", err)
		case <-time.After(500 * time.Millisecond):
		}
	}
}
