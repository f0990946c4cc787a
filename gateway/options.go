package gateway

import (
	"log/slog"
	"path/filepath"
	"time"

	"github.com/mew-protocol/mew/gateway/cluster"
	"github.com/mew-protocol/mew/space"
)

// Options configures a Server. The zero value of every field but Spaces
// means its documented default. Related settings are grouped: Limits (sizes,
// queues, rates), Timing (timeouts and intervals), Audit, Console and Cluster.
type Options struct {
	// Spaces are the spaces this server hosts, one per config. A token
	// identifies one participant of one space.
	Spaces []*space.Config

	// TokenStore returns the token store of a space; nil means
	// space.TokenStore{Dir: <MewDir>/tokens}.
	TokenStore func(*space.Config) space.TokenStore

	// Logger receives the gateway's diagnostics; nil discards them.
	// Tokens never reach it.
	Logger *slog.Logger

	// OriginPatterns lists the browser origins, besides the gateway's own
	// host, allowed to open WebSockets (see websocket.AcceptOptions).
	OriginPatterns []string
	// AllowedHosts lists the host names a request may name in its Host
	// header, besides those always served: "localhost" and the loopback
	// addresses, the address the connection reached, and any IP address
	// when a listener given to Server.Listener listens on every address
	// (0.0.0.0, ::). A name matches in any case and with any port;
	// "*.example.com" matches the names under example.com (not
	// example.com itself); "*" turns the check off. Other requests, WebSocket
	// upgrades included, are answered 421 Misdirected Request: a page of
	// another site that reaches the gateway by DNS rebinding names its own
	// host (see docs/security.md). Behind a reverse proxy, list the name
	// the proxy passes on. An entry that is none of these fails New.
	AllowedHosts []string

	// KeepFreeMemory leaves the process's free memory to the Go runtime.
	// By default, once at least 64 joins and leaves have been followed by a
	// second without any, the gateway runs a garbage collection and returns
	// the free memory to the operating system (debug.FreeOSMemory), at most
	// every 30 s: the heap grown for a burst of joins is otherwise kept for
	// good. A program that embeds the gateway and manages memory itself
	// sets this.
	KeepFreeMemory bool

	// Now returns the current time; nil means time.Now.
	Now func() time.Time

	Limits  Limits
	Timing  Timing
	Audit   AuditOptions
	Console ConsoleOptions
	Cluster ClusterOptions
}

// Limits bound what a participant and the server may use: message sizes,
// queues, rates, the polling history and connections.
type Limits struct {
	// MaxMessageSize bounds one inbound envelope or frame in bytes
	// (default 1 MiB). Larger messages are refused with too_large and the
	// connection stays open.
	MaxMessageSize int64
	// MaxDiscardSize bounds a message the gateway will read and discard after
	// refusing it as too large (default 64 MiB); past it the connection is
	// closed with 1009.
	MaxDiscardSize int64

	// SendQueue is the length of each connection's outbound queue
	// (default 1024 envelopes). A reader that lets it fill is disconnected
	// with 1013 "slow consumer".
	SendQueue int
	// SendQueueBytes bounds the same queue in bytes (default 16 MiB, and
	// never less than twice MaxMessageSize); an output_log participant's
	// queue holds four times as much.
	SendQueueBytes int
	// VirtualQueue is the queue length of output_log participants
	// (default 65536), which are written to files.
	VirtualQueue int

	// Rate is each participant's sustained rate limit in envelopes per
	// second (default 500); Burst is the bucket size (default 1000). A
	// negative Rate disables rate limiting.
	Rate  float64
	Burst int
	// ByteRate and ByteBurst are the same budget in bytes (defaults 8 MiB
	// per second and 16 MiB, and never a burst below MaxMessageSize).
	// Envelopes and stream frames on all of a participant's streams count
	// against both.
	ByteRate  int
	ByteBurst int

	// HistorySize is the number of envelopes kept per space for HTTP
	// polling (default 1024).
	HistorySize int
	// HistoryBytes bounds the same history by the total size of the
	// envelopes kept (default 32 MiB); the oldest go first.
	HistoryBytes int

	// MaxConnections caps the open TCP connections of Serve's listener
	// (see Server.Listener), WebSockets and HTTP alike (default: the
	// process's file-descriptor limit less 64, at most 65536). Past it a
	// connection is answered 503 and closed.
	MaxConnections int
	// ConnectionHeadroom is the part of MaxConnections kept for WebSocket
	// joins (default a tenth): within it, plain HTTP requests are answered
	// 503 and idle keep-alive connections are closed.
	ConnectionHeadroom int
	// MaxPending caps the WebSocket connections waiting for their join
	// message (default 256), and MaxPendingPerAddr those from one remote
	// address (default 64). Past either, an upgrade without a bearer header
	// is answered 503.
	MaxPending        int
	MaxPendingPerAddr int
	// MaxJoinSize bounds the join message of a connection without a bearer
	// header (default 16 KiB): before it authenticates, a client may not
	// make the gateway hold a large message.
	MaxJoinSize int64

	// LineageRate is how many lineage requests (GET
	// /participants/{id}/lineage/… and GET /console/lineage/…) each
	// participant may make per second (default 4; negative: no limit), and
	// LineageBurst how many in a row after a pause (default 8).
	// LineageConcurrency is how many the gateway answers at once, all
	// participants together (default 2). Past either limit a request is
	// answered 429 with Retry-After. Burst and concurrency are at least 1.
	LineageRate        float64
	LineageBurst       int
	LineageConcurrency int
}

// Timing holds the server's timeouts and intervals.
type Timing struct {
	// PingInterval is how often a silent peer is pinged (default 30 s);
	// PongTimeout is how long it has to answer (default 15 s).
	PingInterval time.Duration
	PongTimeout  time.Duration
	// WriteTimeout bounds one write to a peer (default 10 s).
	WriteTimeout time.Duration
	// WriteCoalesce is how long a connection's writer, having written,
	// gathers what comes next before it writes again (default 2 ms;
	// negative: never). A frame to a connection that was sent nothing for
	// that long leaves at once, and so does one addressed to the participant
	// (in the envelope's to, or a private answer); under steady traffic the
	// rest leave in fewer, fuller writes, which is most of what a delivery
	// costs. A deployment that counts every millisecond of latency turns it
	// off.
	WriteCoalesce time.Duration
	// JoinTimeout is how long a connection without a bearer header has to
	// send its join message (default 5 s).
	JoinTimeout time.Duration

	// SessionGrantGrace is how long a grant bound to its granter's
	// presence (capability/grant with "session": true) outlives the
	// granter's last connection, so that a reconnect keeps it (default
	// 10 s).
	SessionGrantGrace time.Duration
	// RequestTimeout bounds reading and answering one plain HTTP request
	// (default 30 s); IdleTimeout closes a keep-alive connection that sends
	// nothing (default 60 s). Neither applies to an upgraded WebSocket.
	RequestTimeout time.Duration
	IdleTimeout    time.Duration
}

// AuditOptions configures the audit log (see docs/audit.md).
type AuditOptions struct {
	// Dir is where the audit log goes; "" means <MewDir>/logs of the
	// first space.
	Dir string
	// Off turns the audit log off (the space config's gateway_logging
	// switches can also turn parts of it off).
	Off bool
	// ReceivedOnly skips the audit log's per-recipient "delivered" lines,
	// for large spaces where they would dominate the log.
	ReceivedOnly bool
	// MaxFileSize is the size in bytes at which an audit log file is
	// rotated (default 256 MiB; negative: never), and MaxFiles how many
	// rotated files of each log are kept (default 10; negative: all). A
	// write that fails (a full disk) loses its line, which is counted in
	// mew_gateway_audit_lost_lines_total; routing goes on.
	MaxFileSize int64
	MaxFiles    int
	// Format is the layout of envelope-history.jsonl: "compact" (also
	// "", the default) writes each envelope's body once and delivered lines
	// without it; "reference" writes the body on every line, as the
	// reference gateway does. See docs/audit.md.
	Format string
	// QueueSize is how many records may wait for the audit log's
	// writer (default 65536) before the gateway stops taking in
	// participants' envelopes and joins until it catches up (a disk slower
	// than the traffic). Delivery never waits for it: what was taken in is
	// delivered at once, stream frames flow on, and nothing is lost.
	QueueSize int
}

// ConsoleOptions configures the web console at /console/ (see
// docs/console.md).
type ConsoleOptions struct {
	// Off turns the web console at /console/ off, with its one-time
	// links and sessions (see docs/console.md). LinkTTL is how long a
	// one-time link may wait for its exchange (default 2 min), and
	// SessionTTL how long the session it opens lets the page join
	// (default 12 h).
	Off        bool
	LinkTTL    time.Duration
	SessionTTL time.Duration
}

// ClusterOptions makes the server a node of a cluster (see
// docs/cluster.md).
type ClusterOptions struct {
	// Node, when set, makes this server one node of a cluster of gateways
	// serving the same spaces (see docs/cluster.md): accepted envelopes, presence
	// and runtime grants are shared through it. nil is a single node, with
	// nothing shared. The caller owns the node and closes it after the
	// server. Name is what /health reports as the cluster's name.
	Node cluster.Node
	Name string
	// HistoryQueue bounds the envelopes a node of a cluster has
	// accepted and not yet appended to the cluster's polling history
	// (default 8192, and 64 MiB); past it they are delivered but left out
	// of the history, and counted.
	HistoryQueue int
}

const (
	defaultMaxMessageSize      = 1 << 20
	defaultMaxDiscardSize      = 64 << 20
	defaultSendQueue           = 1024
	defaultVirtualQueue        = 1 << 16
	defaultSendQueueBytes      = 16 << 20
	defaultRate                = 500
	defaultBurst               = 1000
	defaultByteRate            = 8 << 20
	defaultByteBurst           = 16 << 20
	defaultPingInterval        = 30 * time.Second
	defaultPongTimeout         = 15 * time.Second
	defaultWriteTimeout        = 10 * time.Second
	defaultWriteCoalesce       = 2 * time.Millisecond
	defaultJoinTimeout         = 5 * time.Second
	defaultHistorySize         = 1024
	defaultHistoryBytes        = 32 << 20
	defaultClusterHistoryQueue = 8192
	defaultMaxPending          = 256
	defaultPendingPerAddr      = 64
	defaultMaxJoinSize         = 16 << 10
	defaultRequestTimeout      = 30 * time.Second
	defaultIdleTimeout         = 60 * time.Second
	defaultLineageRate         = 4
	defaultLineageBurst        = 8
	defaultLineageConcurrency  = 2
)

// withDefaults returns o with every zero field set to its default.
func (o Options) withDefaults() Options {
	setDefault(&o.Limits.MaxMessageSize, defaultMaxMessageSize)
	setDefault(&o.Limits.MaxDiscardSize, defaultMaxDiscardSize)
	if o.Limits.MaxDiscardSize < o.Limits.MaxMessageSize {
		o.Limits.MaxDiscardSize = o.Limits.MaxMessageSize
	}
	setDefault(&o.Limits.SendQueue, defaultSendQueue)
	setDefault(&o.Limits.VirtualQueue, defaultVirtualQueue)
	setDefault(&o.Limits.SendQueueBytes, defaultSendQueueBytes)
	o.Limits.SendQueueBytes = max(o.Limits.SendQueueBytes, 2*int(o.Limits.MaxMessageSize))
	setDefault(&o.Limits.Rate, defaultRate)
	setDefault(&o.Limits.Burst, defaultBurst)
	setDefault(&o.Limits.ByteRate, defaultByteRate)
	setDefault(&o.Limits.ByteBurst, defaultByteBurst)
	o.Limits.ByteBurst = max(o.Limits.ByteBurst, int(o.Limits.MaxMessageSize))
	setDefault(&o.Timing.PingInterval, defaultPingInterval)
	setDefault(&o.Timing.PongTimeout, defaultPongTimeout)
	setDefault(&o.Timing.WriteTimeout, defaultWriteTimeout)
	setDefault(&o.Timing.WriteCoalesce, defaultWriteCoalesce)
	setDefault(&o.Timing.JoinTimeout, defaultJoinTimeout)
	setDefault(&o.Limits.HistorySize, defaultHistorySize)
	setDefault(&o.Limits.HistoryBytes, defaultHistoryBytes)
	setDefault(&o.Cluster.HistoryQueue, defaultClusterHistoryQueue)
	setDefault(&o.Limits.MaxConnections, defaultMaxConnections())
	setDefault(&o.Limits.ConnectionHeadroom, max(o.Limits.MaxConnections/10, 1))
	o.Limits.ConnectionHeadroom = min(o.Limits.ConnectionHeadroom, o.Limits.MaxConnections-1)
	setDefault(&o.Limits.MaxPending, defaultMaxPending)
	setDefault(&o.Limits.MaxPendingPerAddr, defaultPendingPerAddr)
	setDefault(&o.Limits.MaxJoinSize, defaultMaxJoinSize)
	setDefault(&o.Timing.RequestTimeout, defaultRequestTimeout)
	setDefault(&o.Timing.IdleTimeout, defaultIdleTimeout)
	setDefault(&o.Limits.LineageRate, defaultLineageRate)
	setDefault(&o.Limits.LineageBurst, defaultLineageBurst)
	setDefault(&o.Limits.LineageConcurrency, defaultLineageConcurrency)
	o.Limits.LineageBurst, o.Limits.LineageConcurrency = max(o.Limits.LineageBurst, 1), max(o.Limits.LineageConcurrency, 1)
	setDefault(&o.Console.LinkTTL, 2*time.Minute)
	setDefault(&o.Console.SessionTTL, 12*time.Hour)
	setDefault(&o.Timing.SessionGrantGrace, 10*time.Second)
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.TokenStore == nil {
		o.TokenStore = func(c *space.Config) space.TokenStore {
			return space.TokenStore{Dir: filepath.Join(c.MewDir, "tokens")}
		}
	}
	return o
}

func setDefault[T int | int64 | float64 | time.Duration](v *T, def T) {
	if *v == 0 {
		*v = def
	}
}
