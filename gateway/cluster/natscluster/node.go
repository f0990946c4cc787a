package natscluster

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/mew-protocol/mew/gateway/cluster"
)

// Defaults of Options.
const (
	DefaultCluster     = "mew"
	DefaultPresenceTTL = 10 * time.Second
	// markerTTL is how long a bucket keeps the marker of an expired or
	// purged key, so that a watch that was briefly disconnected still sees
	// the deletion when it resumes.
	markerTTL = time.Minute
)

// Options configure a Node.
type Options struct {
	// NodeID names the node, unique in the cluster. Required.
	NodeID string
	// Cluster names the cluster: subjects and buckets are derived from it,
	// so clusters with different names share a NATS system without seeing
	// each other. [A-Za-z0-9_-]{1,32}; "" is DefaultCluster.
	Cluster string
	// URL is the NATS server (or comma-separated servers) to connect to,
	// when Conn is nil.
	URL string
	// InOrder makes the connection try URL's servers in the order given,
	// first to last, when it connects and reconnects, rather than in a
	// random order (which spreads nodes over the servers): a node that
	// embeds a server lists its own first, so that it leans on no other
	// process while its own runs.
	InOrder bool
	// Auth is how the node proves itself to the server at URL and checks
	// it (credentials, TLS); New checks it before connecting. It cannot go
	// with Conn, nor with credentials in URL.
	Auth Auth
	// Conn is a connection to use instead of dialing URL. The Node does not
	// close it. It should be made with nats.NoEcho(); otherwise the Node
	// filters its own messages out itself. The Node cannot hook its
	// reconnections: after a server restart its watches resume only when
	// their ordered consumers notice (seconds later), not at once.
	Conn *nats.Conn
	// PresenceTTL is how long a participant's presence outlives its node's
	// last refresh; the node refreshes every third of it. Whole seconds, at
	// least one; 0 is DefaultPresenceTTL.
	PresenceTTL time.Duration
	// Replicas is the JetStream replication of the buckets: 1 for a single
	// NATS server, 3 for a three-server cluster. 0 is 1.
	Replicas int
	// RequestTimeout bounds each JetStream request. 0 is 5s.
	RequestTimeout time.Duration
	// LogRetention is how many records each space's Log keeps. 0 is
	// DefaultLogRetention.
	LogRetention int
	// HistoryRetention is how many records each space's History keeps, and
	// HistoryBytes bounds the history stream of all spaces, in bytes (the
	// oldest records go first). 0 is DefaultHistoryRetention and
	// DefaultHistoryBytes.
	HistoryRetention int
	HistoryBytes     int64
	// PendingMessages and PendingBytes bound what one Broker subscription
	// buffers while the node is behind; past them NATS drops messages
	// for the node (a slow consumer), which the subscription reports with
	// a Lost message. 0 keeps nats.go's defaults (500 000 messages, 64 MiB).
	PendingMessages, PendingBytes int
	// InProcess, when set, is a NATS server in this process (one that
	// StartServer started) to connect to without a socket: the node that
	// embeds the only server of its cluster spares the loopback's system
	// calls on every message. URL must still name it. Not with Conn; a
	// node whose URL lists other servers to fail over to must not set it
	// (an in-process connection never moves to them).
	InProcess nats.InProcessConnProvider
}

// Node is a gateway node of a NATS cluster. See the package doc.
//
// Lock order: Node.mu, then nothing (calls out to NATS are made without it);
// keeps.mu is a leaf too, and Keep's done callbacks run without it.
type Node struct {
	o       Options // with the defaults filled in
	id      string
	cluster string
	nc      *nats.Conn
	ownConn bool
	js      jetstream.JetStream
	keepJS  jetstream.JetStream // Keep's publishes, whose acknowledgements settle keeps
	keeps   keeps
	state   jetstream.KeyValue
	pres    jetstream.KeyValue
	subjPre string
	ttl     time.Duration
	timeout time.Duration

	stop context.CancelFunc // ends the heartbeat loop and the post-reconnection checks
	ctx  context.Context
	hb   sync.WaitGroup // the heartbeat loop
	wg   sync.WaitGroup // the watch pumps and the post-reconnection checks

	mu       sync.Mutex
	ready    bool // New has finished
	closed   bool
	joined   map[joinKey]*joined // presence entries this node keeps alive
	subs     map[*nats.Subscription]*subscription
	watchers map[*watcher]struct{}
	follows  map[*follow]struct{}
	slow     uint64        // slow-consumer events: messages NATS dropped for this node
	reconn   chan struct{} // closed and replaced at each reconnection
	moved    chan struct{} // closed and replaced when a bucket's stream elects a leader
	// leaders hears JetStream's leader elections of the buckets' streams.
	leaders *nats.Subscription

	// streams caches the handles of the log streams (logView.handle), by
	// name: a handle is what asks the stream's leader.
	streams sync.Map

	isClosed atomic.Bool // closed, for Err without the lock
	down     atomic.Bool // the connection the node made is not connected
	// epoch counts the reconnections (cluster.EpochReporter); it grows
	// before reconn is closed and before down is cleared.
	epoch atomic.Uint64
}

// Epoch implements cluster.EpochReporter: how many times the node's
// connection to NATS came back. Every watch reports it in an OpResynced
// entry once it has re-read its keys after that reconnection.
func (n *Node) Epoch() uint64 { return n.epoch.Load() }

// leaderMoved returns a channel closed when the stream of the state or the
// presence bucket next elects a leader.
func (n *Node) leaderMoved() <-chan struct{} {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.moved
}

// onLeaderElected hears JetStream's advisories of leader elections. When
// the stream of a bucket elects a leader, the server of the old one may
// have died (a server of a NATS cluster killed), and with it the ordered
// consumers of the watches, which nats.go would notice only after missing
// three 5 s heartbeats: the watches start again at once instead.
func (n *Node) onLeaderElected(m *nats.Msg) {
	stream := m.Subject[strings.LastIndexByte(m.Subject, '.')+1:]
	if stream != "KV_"+stateBucket(n.cluster) && stream != "KV_"+presenceBucket(n.cluster) {
		return
	}
	n.mu.Lock()
	defer n.mu.Unlock()
	close(n.moved)
	n.moved = make(chan struct{})
}

// leaderElected is the subject of JetStream's advisories of leader
// elections; the stream's name follows.
const leaderElected = "$JS.EVENT.ADVISORY.STREAM.LEADER_ELECTED."

// reconnected returns a channel closed at the next reconnection to NATS.
func (n *Node) reconnected() <-chan struct{} {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.reconn
}

func (n *Node) onReconnect(*nats.Conn) {
	n.mu.Lock()
	defer n.mu.Unlock()
	// The epoch first, then the watches' signal, then Err's answer: a
	// gateway that sees the node up sees the new epoch, and refuses until
	// every watch has reported it (OpResynced).
	n.epoch.Add(1)
	close(n.reconn)
	n.reconn = make(chan struct{})
	n.down.Store(false)
	if n.closed || !n.ready {
		return
	}
	// The server may have come back without our streams (a fresh server,
	// lost storage): make sure they exist, or the watches would retry
	// forever. The handles stay valid: they are names.
	n.wg.Go(func() {
		ctx, cancel := context.WithTimeout(n.ctx, 2*n.timeout)
		defer cancel()
		_, _, _ = n.ensure(ctx)
	})
}

// ensure creates the buckets and the log stream, or updates them to this
// node's options (every node of a cluster must use the same ones).
func (n *Node) ensure(ctx context.Context) (state, pres jetstream.KeyValue, err error) {
	o := n.o
	state, err = createAnswered(ctx, func(ctx context.Context) (jetstream.KeyValue, error) {
		return n.js.CreateOrUpdateKeyValue(ctx, jetstream.KeyValueConfig{
			Bucket: stateBucket(o.Cluster), Description: "mew: the shared state of spaces",
			History: 1, MaxValueSize: cluster.MaxValueLen, Replicas: o.Replicas,
			Storage: jetstream.FileStorage, LimitMarkerTTL: markerTTL,
		})
	})
	if err != nil {
		return nil, nil, fmt.Errorf("natscluster: state bucket: %w", n.unavailable(err))
	}
	pres, err = createAnswered(ctx, func(ctx context.Context) (jetstream.KeyValue, error) {
		return n.js.CreateOrUpdateKeyValue(ctx, jetstream.KeyValueConfig{
			Bucket: presenceBucket(o.Cluster), Description: "mew: who is connected where",
			History: 1, MaxValueSize: cluster.MaxValueLen, Replicas: o.Replicas, TTL: n.ttl,
			// File storage, though presence is short-lived: a bucket in
			// memory would vanish with a restart of a single server, and
			// every node's refreshes and watches with it.
			Storage: jetstream.FileStorage, LimitMarkerTTL: markerTTL,
		})
	})
	if err != nil {
		return nil, nil, fmt.Errorf("natscluster: presence bucket: %w", n.unavailable(err))
	}
	if err := n.createLog(ctx, o); err != nil {
		return nil, nil, fmt.Errorf("natscluster: log streams: %w", n.unavailable(err))
	}
	return state, pres, nil
}

// createAttempt bounds one attempt of createAnswered.
const createAttempt = time.Second

// createAnswered runs create (a CreateOrUpdate of one bucket or stream) and
// asks again, while ctx lasts, when an attempt gets no answer within
// createAttempt. On a NATS cluster, creates of one replicated stream made
// at once through different servers (nodes started together) may all go
// unanswered though the stream is made (nats-server 2.15: measured, three
// at once waited 20 s with no answer, one alone took 60 ms); the next
// attempt finds it and updates it, which is answered.
func createAnswered[T any](ctx context.Context, create func(context.Context) (T, error)) (T, error) {
	for {
		actx, cancel := context.WithTimeout(ctx, createAttempt)
		v, err := create(actx)
		cancel()
		if err == nil || ctx.Err() != nil || !errors.Is(err, context.DeadlineExceeded) {
			return v, err
		}
	}
}

// leaderWait bounds how long a write asks again while no JetStream server
// takes it: a replicated stream whose leader's server died has none until
// the others elect one (measured: 1 to 7 s after a SIGKILL, nats-server
// 2.15, three servers).
const leaderWait = 15 * time.Second

// writeAgain calls write until it answers something other than "no
// responders", while ctx lasts and the node's connection is up, for up to
// leaderWait. No responders means that no server took the write (a stream
// without a leader answers nothing), so nothing was stored and sending it
// again is safe, a compare-and-swap included. A write that timed out is
// never sent again: it may have been stored.
func writeAgain[T any](ctx context.Context, n *Node, write func() (T, error)) (T, error) {
	wait := 25 * time.Millisecond
	deadline := time.Now().Add(leaderWait)
	for {
		got, err := write()
		if !noResponders(err) || n.Err() != nil || time.Now().Add(wait).After(deadline) {
			return got, err
		}
		select {
		case <-ctx.Done():
			return got, err
		case <-time.After(wait):
		}
		wait = min(2*wait, 500*time.Millisecond)
	}
}

// noResponders reports whether err says that no server answered a request.
func noResponders(err error) bool {
	return errors.Is(err, nats.ErrNoResponders) || errors.Is(err, jetstream.ErrNoStreamResponse)
}

type joinKey struct{ space, participant string }

type joined struct {
	value []byte
	conn  string
	rev   uint64
}

var _ cluster.Node = (*Node)(nil)

// New connects a node to the cluster and makes sure the buckets exist.
func New(ctx context.Context, o Options) (*Node, error) {
	if err := cluster.CheckName(o.NodeID); err != nil {
		return nil, fmt.Errorf("natscluster: node id: %w", err)
	}
	if o.Cluster == "" {
		o.Cluster = DefaultCluster
	}
	if !clusterName.MatchString(o.Cluster) {
		return nil, fmt.Errorf("natscluster: cluster name %q: %w", o.Cluster, cluster.ErrInvalid)
	}
	ttl := o.PresenceTTL
	if ttl == 0 {
		ttl = DefaultPresenceTTL
	}
	if ttl < time.Second || ttl%time.Second != 0 {
		return nil, fmt.Errorf("natscluster: presence TTL %v is not whole seconds: %w", ttl, cluster.ErrInvalid)
	}
	if o.Replicas == 0 {
		o.Replicas = 1
	}
	if o.RequestTimeout == 0 {
		o.RequestTimeout = 5 * time.Second
	}
	n := &Node{
		id: o.NodeID, cluster: o.Cluster, subjPre: subjectPrefix(o.Cluster), ttl: ttl, timeout: o.RequestTimeout,
		joined: make(map[joinKey]*joined), subs: make(map[*nats.Subscription]*subscription),
		watchers: make(map[*watcher]struct{}), follows: make(map[*follow]struct{}), reconn: make(chan struct{}),
		moved: make(chan struct{}),
	}
	if o.Conn != nil && !o.Auth.IsZero() {
		return nil, fmt.Errorf("natscluster: Auth applies to the connection New makes, not to Conn: %w", cluster.ErrInvalid)
	}
	n.o = o
	n.ctx, n.stop = context.WithCancel(context.Background())
	n.nc = o.Conn
	if n.nc == nil {
		auth, err := o.Auth.options()
		if err != nil {
			n.stop()
			return nil, err
		}
		if len(o.Auth.identities()) > 0 && URLHasCredentials(o.URL) {
			n.stop()
			return nil, fmt.Errorf("natscluster: %s carries credentials and Auth gives others: give one: %w", Redact(o.URL), cluster.ErrInvalid)
		}
		if o.InOrder {
			auth = append(auth, nats.DontRandomize())
		}
		if o.InProcess != nil {
			auth = append(auth, nats.InProcessServer(o.InProcess))
		}
		nc, err := nats.Connect(o.URL, append(auth,
			nats.Name("mew-gateway "+o.NodeID), nats.NoEcho(),
			nats.MaxReconnects(-1), nats.ReconnectWait(250*time.Millisecond),
			// A silent partition (no reset from the peer) is noticed by
			// missed pings: 2 s apart, 2 outstanding, so within ~6 s
			// rather than the default 4 minutes.
			nats.PingInterval(2*time.Second), nats.MaxPingsOutstanding(2),
			nats.ErrorHandler(n.asyncError), nats.ReconnectHandler(n.onReconnect),
			nats.DisconnectErrHandler(func(*nats.Conn, error) { n.down.Store(true) }),
			nats.ClosedHandler(func(*nats.Conn) { n.down.Store(true) }))...)
		if err != nil {
			n.stop()
			if refused(err) {
				return nil, fmt.Errorf("natscluster: connect %s: %w: %w", Redact(o.URL), ErrAuth, err)
			}
			return nil, fmt.Errorf("natscluster: connect %s: %w: %w", Redact(o.URL), cluster.ErrUnavailable, err)
		}
		n.nc, n.ownConn = nc, true
	}
	fail := func(err error) (*Node, error) {
		n.stop()
		if n.ownConn {
			n.nc.Close()
		}
		return nil, err
	}
	if mp := n.nc.MaxPayload(); mp < MinMaxPayload {
		return fail(fmt.Errorf("natscluster: the NATS server's max_payload is %d bytes, below the %d a record needs (set max_payload: 2MB): %w",
			mp, MinMaxPayload, cluster.ErrInvalid))
	}
	// Async publishes (History's AppendBatch) time out as requests do, so
	// that an ack that never comes does not stay pending.
	js, err := jetstream.New(n.nc, jetstream.WithDefaultTimeout(o.RequestTimeout), jetstream.WithPublishAsyncTimeout(o.RequestTimeout))
	if err != nil {
		return fail(fmt.Errorf("natscluster: jetstream: %w", err))
	}
	n.js = js
	if n.keepJS, err = n.keepJetStream(); err != nil {
		return fail(fmt.Errorf("natscluster: jetstream: %w", err))
	}
	if n.state, n.pres, err = n.ensure(ctx); err != nil {
		return fail(err)
	}
	if n.leaders, err = n.nc.Subscribe(leaderElected+"*", n.onLeaderElected); err != nil {
		return fail(fmt.Errorf("natscluster: leader advisories: %w", n.unavailable(err)))
	}
	n.hb.Go(n.heartbeat)
	n.mu.Lock()
	n.ready = true
	n.mu.Unlock()
	return n, nil
}

// asyncError counts what NATS reports asynchronously. A slow consumer means
// messages were dropped for this node: counted, and, on a Broker
// subscription, reported to its handler as a Lost message.
func (n *Node) asyncError(_ *nats.Conn, sub *nats.Subscription, err error) {
	if !errors.Is(err, nats.ErrSlowConsumer) {
		return
	}
	n.mu.Lock()
	n.slow++
	s := n.subs[sub]
	n.mu.Unlock()
	if s != nil {
		s.lose()
	}
}

// Stats implements cluster.StatsReporter.
func (n *Node) Stats() cluster.Stats {
	n.mu.Lock()
	slow := n.slow
	n.mu.Unlock()
	return cluster.Stats{Reconnects: n.nc.Stats().Reconnects, SlowConsumers: slow}
}

// ID implements cluster.Node.
func (n *Node) ID() string { return n.id }

// Broker implements cluster.Node.
func (n *Node) Broker() cluster.Broker { return broker{n} }

// State implements cluster.Node.
func (n *Node) State() cluster.State { return state{n} }

// Log implements cluster.Node.
func (n *Node) Log() cluster.Log {
	return logView{n: n, stream: logStream(n.cluster), prefix: "mew." + n.cluster + ".log."}
}

// History implements cluster.Node.
func (n *Node) History() cluster.Log {
	return logView{n: n, stream: historyStream(n.cluster), prefix: n.subjPre, suffix: suffixKept, only: true}
}

// Presence implements cluster.Node.
func (n *Node) Presence() cluster.Presence { return presence{n} }

// Err implements cluster.Node: nil while the connection to NATS is up.
//
// The gateway asks before every envelope of a shared space, so on a
// connection the node made the answer is two atomic loads, kept by the
// connection's disconnect and reconnect handlers (which run microseconds
// after the connection's state changes); on a Conn given in Options it asks
// the connection, and its Epoch never advances (the node has no handler
// on that connection to count its returns).
func (n *Node) Err() error {
	if n.isClosed.Load() {
		return cluster.ErrClosed
	}
	if n.ownConn {
		// The answer never asks the connection: its status waits on the
		// lock its reconnect loop holds while it dials (seconds, during a
		// cut), and /health and refusals must answer at once. The node is
		// down until onReconnect has run, even when the connection is
		// CONNECTED already: the epoch it advances must be seen first
		// (cluster.EpochReporter), or a gateway would act on watches that
		// have not re-read the state.
		if !n.down.Load() {
			return nil
		}
		return fmt.Errorf("natscluster: node %s: NATS connection lost: %w", n.id, cluster.ErrUnavailable)
	}
	if st := n.nc.Status(); st != nats.CONNECTED {
		return fmt.Errorf("natscluster: node %s: NATS connection %s: %w", n.id, st, cluster.ErrUnavailable)
	}
	return nil
}

// SlowConsumerEvents is how many times NATS dropped messages for this node
// because it did not read them fast enough (for /metrics).
func (n *Node) SlowConsumerEvents() uint64 {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.slow
}

// unavailable marks err as ErrUnavailable when the connection is down,
// so that callers can tell "NATS is away" from "the request was wrong".
func (n *Node) unavailable(err error) error {
	if err == nil {
		return nil
	}
	if n.nc.Status() != nats.CONNECTED || errors.Is(err, nats.ErrTimeout) || errors.Is(err, context.DeadlineExceeded) ||
		errors.Is(err, nats.ErrNoResponders) || errors.Is(err, jetstream.ErrNoStreamResponse) || errors.Is(err, nats.ErrConnectionClosed) {
		return fmt.Errorf("%w: %w", cluster.ErrUnavailable, err)
	}
	return err
}

// Close implements cluster.Node: it removes the node's presence entries
// (the others see its participants leave at once), ends its subscriptions
// and watches, stops its goroutines, and closes the connection it made.
func (n *Node) Close() error {
	n.mu.Lock()
	if n.closed {
		n.mu.Unlock()
		return nil
	}
	n.closed = true
	n.isClosed.Store(true)
	joined := n.joined
	n.joined = nil
	subs, ws, fs := n.subs, n.watchers, n.follows
	n.subs, n.watchers, n.follows = nil, nil, nil
	n.mu.Unlock()

	// The heartbeat stops first, so that no refresh races the leaves.
	n.stop()
	n.hb.Wait()
	if n.nc.IsConnected() {
		ctx, cancel := context.WithTimeout(context.Background(), n.timeout)
		for k, j := range joined {
			_ = n.leave(ctx, k.space, k.participant, j.conn, j.rev)
		}
		cancel()
	}
	for _, s := range subs {
		_ = s.Unsubscribe()
	}
	_ = n.leaders.Unsubscribe()
	for w := range ws {
		w.Stop()
	}
	for f := range fs {
		_ = f.Unsubscribe()
	}
	n.wg.Wait()
	if n.ownConn {
		n.nc.Close()
	}
	n.keeps.failAll(cluster.ErrClosed) // their acknowledgements will not come now
	return nil
}

// crash stops the node as a SIGKILL would, for tests of failure: no
// presence entry is removed, the refreshes stop, the connection closes.
func (n *Node) crash() {
	n.mu.Lock()
	n.joined = make(map[joinKey]*joined)
	n.mu.Unlock()
	n.stop()
	n.hb.Wait()
	if n.ownConn {
		n.nc.Close()
	}
	_ = n.Close()
}
