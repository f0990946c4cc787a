package cli

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/spf13/cobra"

	"github.com/mew-protocol/mew/gateway"
	"github.com/mew-protocol/mew/gateway/cluster"
	"github.com/mew-protocol/mew/gateway/cluster/natscluster"
	"github.com/mew-protocol/mew/space"
)

func newGatewayCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "gateway",
		Short: "Run a MEW gateway",
	}
	cmd.AddCommand(newGatewayStartCmd())
	return cmd
}

type gatewayFlags struct {
	port              int
	host              string
	spaceConfig       string
	logLevel          string
	logDir            string
	noAutoStart       bool
	maxMessageSize    int64
	rate              float64
	burst             int
	sendQueue         int
	writeCoalesce     time.Duration
	noAudit           bool
	auditReceivedOnly bool
	auditMaxSize      int64
	auditMaxFiles     int
	auditFormat       string
	byteRate          int
	historyBytes      int
	maxConnections    int
	maxPending        int
	maxPendingPerAddr int
	noConsole         bool
	allowOrigins      []string
	allowedHosts      []string
	nats              string // "" (a single node), nats://… or embedded[:PORT]
	nodeID            string
	clusterName       string
	replicas          int           // JetStream replicas of the cluster's buckets and streams
	presenceTTL       time.Duration // how long a dead node's participants stay listed
	logRetention      int           // records kept per space in the cluster's ordered log
	historyRetention  int           // envelopes kept per space in the cluster's polling history
	historyMiB        int64         // MiB the cluster's polling history keeps for all spaces
	natsAuth          natsAuthFlags // the node's NATS credentials and TLS files
	routePort         int           // the embedded NATS server's cluster port (gateway_embedded.go)
	routes            []string      // the other embedded servers' cluster ports
	routeSecret       string        // the file of the routes' shared password
	nodeIDSet         bool          // --node-id was given
	replicasSet       bool          // --replicas was given
}

func newGatewayStartCmd() *cobra.Command {
	var f gatewayFlags
	cmd := &cobra.Command{
		Use:   "start",
		Short: "Start a gateway for a space",
		Long: `Start a gateway for the space described by a space.yaml.

The gateway listens for WebSocket connections at / and /ws and serves the HTTP
API (/health, /participants, /participants/{id}/messages, /metrics). Once it
listens it prints one line "listening on HOST:PORT" on standard output.
SIGINT or SIGTERM closes every connection with 1001, flushes the logs and
exits with status 0.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			f.nodeIDSet, f.replicasSet = cmd.Flags().Changed("node-id"), cmd.Flags().Changed("replicas")
			return runGateway(cmd.Context(), cmd, f, cmd.Flags().Changed("space-config"))
		},
	}
	fl := cmd.Flags()
	fl.IntVarP(&f.port, "port", "p", 8080, "port to listen on (0 picks a free one)")
	fl.StringVar(&f.host, "host", "127.0.0.1", "address to listen on")
	fl.StringVarP(&f.spaceConfig, "space-config", "s", "./space.yaml", "space configuration file (default: .mew/space.yaml, else ./space.yaml)")
	fl.StringVarP(&f.logLevel, "log-level", "l", "info", "log level: debug, info, warn or error")
	fl.StringVar(&f.logDir, "log-dir", "", "directory of the audit logs (default <space dir>/.mew/logs)")
	fl.BoolVar(&f.noAutoStart, "no-auto-start", false, "accepted for compatibility: the gateway never starts participants; mew space up does")
	fl.Int64Var(&f.maxMessageSize, "max-message-size", 1<<20, "largest envelope or frame accepted, in bytes")
	fl.Float64Var(&f.rate, "rate", 500, "per-participant rate limit in envelopes per second (negative: none)")
	fl.IntVar(&f.burst, "burst", 1000, "per-participant burst size of the rate limit")
	fl.IntVar(&f.sendQueue, "send-queue", 1024, "outbound queue length per connection; a reader that lets it fill is disconnected")
	fl.DurationVar(&f.writeCoalesce, "write-coalesce", 2*time.Millisecond, "how long a connection's writer, having written, gathers what comes next (0: off; at most 100ms): fewer writes under load for that much latency")
	fl.BoolVar(&f.noAudit, "no-audit", false, "do not write the audit logs")
	fl.BoolVar(&f.auditReceivedOnly, "audit-received-only", false, "write only received lines, not one delivered line per recipient")
	fl.Int64Var(&f.auditMaxSize, "audit-max-size", 256<<20, "size in bytes at which an audit log file is rotated (negative: never)")
	fl.IntVar(&f.auditMaxFiles, "audit-max-files", 10, "rotated audit log files kept per log (negative: all)")
	fl.StringVar(&f.auditFormat, "audit-format", "compact", `envelope-history layout: "compact" (each body once) or "reference" (the body on every delivered line)`)
	fl.IntVar(&f.byteRate, "byte-rate", 8<<20, "per-participant limit in bytes per second, envelopes and stream frames together")
	fl.IntVar(&f.historyBytes, "history-bytes", 32<<20, "bytes of recent envelopes kept per space for HTTP polling")
	fl.IntVar(&f.maxConnections, "max-connections", 0, "open connections at most (default: the file-descriptor limit less 64)")
	fl.IntVar(&f.maxPending, "max-pending", 256, "connections waiting for their join message, at most")
	fl.IntVar(&f.maxPendingPerAddr, "max-pending-per-addr", 64, "connections waiting for their join message from one address, at most")
	fl.BoolVar(&f.noConsole, "no-console", false, "do not serve the web console at /console/ (see docs/console.md)")
	fl.StringSliceVar(&f.allowOrigins, "allow-origin", nil, "browser origins (host[:port] patterns) besides the gateway's own allowed to open WebSockets")
	fl.StringSliceVar(&f.allowedHosts, "allowed-host", nil, "a host name requests may name in their Host header besides localhost and the listen address (repeatable; *.example.com for the names under it; also $MEW_ALLOWED_HOSTS, comma-separated); others are answered 421 (see docs/security.md)")
	fl.StringVar(&f.nats, "nats", "", "join a cluster of gateway nodes through NATS: nats://host:4222[,…], or embedded[:PORT] to run a NATS server in this process, followed by the other embedded servers' nats://127.0.0.1:PORT when it is one of a cluster (see docs/cluster.md)")
	fl.IntVar(&f.routePort, "nats-route-port", 0, "with --nats embedded: the cluster port (on 127.0.0.1) where the other embedded servers route to this one")
	fl.StringSliceVar(&f.routes, "nats-routes", nil, "with --nats embedded and --nats-route-port: the other embedded servers' cluster ports, 127.0.0.1:PORT,… (JetStream replicas need 3 servers)")
	fl.StringVar(&f.routeSecret, "nats-route-secret", "", "file (mode 0600) of the password the embedded servers ask of each other's routes, the same for all (default <mew dir>/nats-auth/routes.secret, made on first use)")
	fl.StringVar(&f.nodeID, "node-id", "", "this node's id in the cluster (default: host name and process id)")
	fl.StringVar(&f.clusterName, "cluster", "", `the cluster's name, shared by its nodes (default "mew")`)
	fl.IntVar(&f.replicas, "replicas", 1, "JetStream replicas of the cluster's buckets and streams, 1 to 5 (3 for a 3-server NATS cluster; with --nats-routes the default is min(3, servers)); the same on every node")
	fl.DurationVar(&f.presenceTTL, "presence-ttl", natscluster.DefaultPresenceTTL, "how long the participants of a node that died stay listed, whole seconds from 1s to 1h")
	fl.IntVar(&f.logRetention, "log-retention", natscluster.DefaultLogRetention, "records each space's cluster log keeps (stream changes), 100 to 1000000")
	fl.IntVar(&f.historyRetention, "history-retention", natscluster.DefaultHistoryRetention, "envelopes each space's polling history keeps in the cluster, 16 to 1000000; the same on every node")
	fl.Int64Var(&f.historyMiB, "history-mb", natscluster.DefaultHistoryBytes>>20, "MiB the cluster's polling history keeps for all spaces together (the oldest go first), 1 to 1048576; the same on every node")
	addNATSAuthFlags(fl, &f.natsAuth)
	return cmd
}

// floorFromEnv applies MEW_RESPOND_ENABLED and MEW_RESPOND_TTL_MS (or the
// floor control spec's AGENTCHAT_RESPOND_* names) over the space config.
func floorFromEnv(fc *space.FloorControl, getenv func(string) string) error {
	get := func(name string) (string, string) {
		for _, prefix := range []string{"MEW_", "AGENTCHAT_"} {
			if v := strings.TrimSpace(getenv(prefix + name)); v != "" {
				return prefix + name, v
			}
		}
		return "", ""
	}
	if name, v := get("RESPOND_ENABLED"); v != "" {
		on, err := strconv.ParseBool(v)
		if err != nil {
			return fmt.Errorf("%s: %q is not a boolean", name, v)
		}
		fc.Enabled = on
	}
	if name, v := get("RESPOND_TTL_MS"); v != "" {
		ms, err := strconv.ParseInt(v, 10, 64)
		if err != nil || ms <= 0 || ms > 86_400_000 {
			return fmt.Errorf("%s: %q is not a number of milliseconds from 1 to 86400000", name, v)
		}
		fc.TTL = time.Duration(ms) * time.Millisecond
	}
	return nil
}

// allowedHosts is what the gateway serves besides localhost and the
// addresses: --allowed-host, MEW_ALLOWED_HOSTS (which reaches the gateway
// that mew space up starts), and the name --host gives, if it is one.
func allowedHosts(f gatewayFlags, getenv func(string) string) []string {
	hosts := append([]string(nil), f.allowedHosts...)
	for h := range strings.SplitSeq(getenv("MEW_ALLOWED_HOSTS"), ",") {
		if h = strings.TrimSpace(h); h != "" {
			hosts = append(hosts, h)
		}
	}
	if f.host != "" && net.ParseIP(f.host) == nil {
		hosts = append(hosts, f.host)
	}
	return hosts
}

func parseLevel(s string) (slog.Level, error) {
	switch strings.ToLower(s) {
	case "debug":
		return slog.LevelDebug, nil
	case "info", "":
		return slog.LevelInfo, nil
	case "warn", "warning":
		return slog.LevelWarn, nil
	case "error":
		return slog.LevelError, nil
	}
	return 0, fmt.Errorf("--log-level: %q is not one of debug, info, warn, error", s)
}

func (f gatewayFlags) check() error {
	switch {
	case f.port < 0 || f.port > 65535:
		return fmt.Errorf("--port: %d is not a port number (0-65535)", f.port)
	case f.maxMessageSize < 256:
		return fmt.Errorf("--max-message-size: %d is too small (at least 256 bytes)", f.maxMessageSize)
	case f.burst < 1:
		return fmt.Errorf("--burst: must be at least 1")
	case f.sendQueue < 1:
		return fmt.Errorf("--send-queue: must be at least 1")
	case f.writeCoalesce < 0 || f.writeCoalesce > 100*time.Millisecond:
		return fmt.Errorf("--write-coalesce: %v is not from 0 (off) to 100ms", f.writeCoalesce)
	case f.rate == 0:
		return fmt.Errorf("--rate: 0 would refuse everything; use a negative rate for no limit")
	}
	return nil
}

func runGateway(ctx context.Context, cmd *cobra.Command, f gatewayFlags, explicitConfig bool) error {
	if err := f.check(); err != nil {
		return err
	}
	level, err := parseLevel(f.logLevel)
	if err != nil {
		return err
	}
	logger := slog.New(slog.NewTextHandler(cmd.ErrOrStderr(), &slog.HandlerOptions{Level: level}))

	path := f.spaceConfig
	if !explicitConfig {
		if path, err = space.FindConfig("."); err != nil {
			return err
		}
	}
	cfg, err := space.Load(path)
	if err != nil {
		return err
	}
	// A misspelt key would otherwise be ignored without a word.
	for _, k := range cfg.Unknown {
		logger.Warn("unknown key in the space configuration ignored", "file", cfg.Path, "key", k, "did_you_mean", cfg.DidYouMean[k])
	}
	if err := floorFromEnv(&cfg.FloorControl, os.Getenv); err != nil {
		return err
	}
	node, leave, err := joinCluster(ctx, f, cfg, logger)
	if err != nil {
		return err
	}
	defer leave() // after the gateway's Close below
	gw, err := gateway.New(gateway.Options{
		Spaces:         []*space.Config{cfg},
		Logger:         logger,
		OriginPatterns: f.allowOrigins,
		AllowedHosts:   allowedHosts(f, os.Getenv),
		Limits: gateway.Limits{
			MaxMessageSize:    f.maxMessageSize,
			Rate:              f.rate,
			Burst:             f.burst,
			SendQueue:         f.sendQueue,
			ByteRate:          f.byteRate,
			HistoryBytes:      f.historyBytes,
			MaxConnections:    f.maxConnections,
			MaxPending:        f.maxPending,
			MaxPendingPerAddr: f.maxPendingPerAddr,
		},
		Timing: gateway.Timing{
			WriteCoalesce: cmp.Or(f.writeCoalesce, -1), // the flag's 0 is off
		},
		Audit: gateway.AuditOptions{
			Dir:          f.logDir,
			Off:          f.noAudit,
			ReceivedOnly: f.auditReceivedOnly,
			MaxFileSize:  f.auditMaxSize,
			MaxFiles:     f.auditMaxFiles,
			Format:       f.auditFormat,
		},
		Console: gateway.ConsoleOptions{Off: f.noConsole},
		Cluster: gateway.ClusterOptions{
			Node: node,
			Name: f.clusterName,
		},
	})
	if err != nil {
		return err
	}
	ln, err := net.Listen("tcp", net.JoinHostPort(f.host, strconv.Itoa(f.port)))
	if err != nil {
		_ = gw.Close(context.Background())
		return fmt.Errorf("listen: %w", err)
	}
	hs := gw.HTTPServer()
	served := make(chan error, 1)
	go func() { served <- hs.Serve(gw.Listener(ln)) }()
	fmt.Fprintf(cmd.OutOrStdout(), "listening on %s\n", ln.Addr())
	logger.Info("gateway started", "space", cfg.Space.ID, "config", cfg.Path, "participants", len(cfg.Participants))

	select {
	case <-ctx.Done():
	case err = <-served:
		_ = gw.Close(context.Background())
		return fmt.Errorf("serve: %w", err)
	}
	logger.Info("shutting down")
	sctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	herr := hs.Shutdown(sctx)
	gerr := gw.Close(sctx)
	<-served
	if err := errors.Join(herr, gerr); err != nil {
		return fmt.Errorf("shutdown: %w", err)
	}
	return nil
}

// clusterTuned reports whether a cluster tuning flag differs from its default.
func (f gatewayFlags) clusterTuned() bool {
	return f.replicas != 1 || f.presenceTTL != natscluster.DefaultPresenceTTL || f.logRetention != natscluster.DefaultLogRetention ||
		f.historyRetention != natscluster.DefaultHistoryRetention || f.historyMiB != natscluster.DefaultHistoryBytes>>20
}

// checkClusterTuning refuses tuning values the cluster cannot honour, before
// anything connects: JetStream replicates 1 to 5 times, presence entries
// expire in whole seconds, a log needs room for a space's stream changes, and
// a history for a page of polls.
func (f gatewayFlags) checkClusterTuning() error {
	if f.replicas < 1 || f.replicas > 5 {
		return fmt.Errorf("--replicas: %d is not from 1 to 5", f.replicas)
	}
	if f.presenceTTL < time.Second || f.presenceTTL > time.Hour || f.presenceTTL%time.Second != 0 {
		return fmt.Errorf("--presence-ttl: %v is not whole seconds from 1s to 1h", f.presenceTTL)
	}
	if f.logRetention < 100 || f.logRetention > 1_000_000 {
		return fmt.Errorf("--log-retention: %d is not from 100 to 1000000", f.logRetention)
	}
	if f.historyRetention < 16 || f.historyRetention > 1_000_000 {
		return fmt.Errorf("--history-retention: %d is not from 16 to 1000000", f.historyRetention)
	}
	if f.historyMiB < 1 || f.historyMiB > 1<<20 {
		return fmt.Errorf("--history-mb: %d is not from 1 to 1048576", f.historyMiB)
	}
	return nil
}

// joinCluster connects this node to its cluster when --nats is given, first
// starting the embedded NATS server of --nats embedded[:PORT] (its store
// under <space>/.mew/nats; one of a cluster of embedded servers with
// --nats-routes, see gateway_embedded.go). leave closes the node, then the
// server.
func joinCluster(ctx context.Context, f gatewayFlags, cfg *space.Config, logger *slog.Logger) (cluster.Node, func(), error) {
	if f.nats == "" {
		if f.nodeID != "" || f.clusterName != "" || f.clusterTuned() {
			return nil, nil, errors.New("--node-id, --cluster, --replicas, --presence-ttl, --log-retention, --history-retention and --history-mb need --nats")
		}
		if (f.natsAuth != natsAuthFlags{}) {
			return nil, nil, errNATSAuthAlone
		}
		if f.routePort != 0 || len(f.routes) > 0 || f.routeSecret != "" {
			return nil, nil, errors.New("--nats-route-port, --nats-routes and --nats-route-secret need --nats embedded[:PORT]")
		}
		return nil, func() {}, nil
	}
	if err := f.checkClusterTuning(); err != nil {
		return nil, nil, err
	}
	url, auth := f.nats, f.natsAuth.auth()
	replicas := f.replicas
	var ns *server.Server
	emb, embedded, err := parseEmbedded(f)
	if err != nil {
		return nil, nil, err
	}
	if embedded {
		if replicas, err = checkEmbeddedCluster(f, emb); err != nil {
			return nil, nil, err
		}
		// The server admits only the nodes holding the space's seed: any
		// local process could otherwise write grants every node enforces.
		var pub string
		if auth, pub, err = f.natsAuth.embeddedAuth(cfg.MewDir); err != nil {
			return nil, nil, err
		}
		if ns, url, err = startEmbedded(f, emb, cfg, pub, logger); err != nil {
			return nil, nil, err
		}
		logger.Info("embedded NATS server started; other nodes join with --nats URL --nats-nkey NKEY_FILE", "url", ns.ClientURL(), "nkey_file", auth.NkeyFile)
	} else if err := auth.Check(); err != nil {
		return nil, nil, err
	} else if natscluster.URLHasCredentials(f.nats) {
		logger.Warn("the --nats URL carries a password or token, which other local users can read in the process list: prefer --nats-user with --nats-password-file, --nats-nkey or --nats-creds")
	}
	stopServer := func() {
		if ns != nil {
			ns.Shutdown()
			ns.WaitForShutdown()
		}
	}
	id := f.nodeID
	if id == "" {
		host, _ := os.Hostname()
		id = cmp.Or(host, "node") + "-" + strconv.Itoa(os.Getpid())
	}
	o := natscluster.Options{
		NodeID: id, Cluster: f.clusterName, URL: url, Auth: auth, InOrder: embedded,
		Replicas: replicas, PresenceTTL: f.presenceTTL, LogRetention: f.logRetention,
		HistoryRetention: f.historyRetention, HistoryBytes: f.historyMiB << 20,
	}
	if ns != nil && len(emb.routes) == 0 && len(emb.peers) == 0 {
		o.InProcess = ns // the cluster's only server, in this process: no socket to it
	}
	var node *natscluster.Node
	if len(emb.routes) > 0 {
		node, err = connectEmbeddedCluster(ctx, o, logger)
	} else {
		cctx, cancel := context.WithTimeout(ctx, 15*time.Second)
		node, err = natscluster.New(cctx, o)
		cancel()
	}
	if err != nil {
		stopServer()
		if errors.Is(err, natscluster.ErrAuth) {
			err = fmt.Errorf("%w; give the node's credentials with --nats-nkey, --nats-creds or --nats-user and --nats-password-file (a node of another node's --nats embedded: --nats-nkey <its mew dir>/nats-auth/nodes.nk)", err)
		}
		return nil, nil, fmt.Errorf("--nats %s: %w", natscluster.Redact(f.nats), err)
	}
	logger.Info("joined the cluster", "node", id, "cluster", cmp.Or(f.clusterName, natscluster.DefaultCluster), "nats", natscluster.Redact(url), "replicas", replicas)
	return node, func() {
		if err := node.Close(); err != nil {
			logger.Warn("cluster node close", "err", err)
		}
		stopServer()
	}, nil
}
