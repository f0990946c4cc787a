package gateway

import (
	"context"
	"errors"
	"fmt"

	"net/http"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/mew-protocol/mew/gateway/cluster"
	"github.com/mew-protocol/mew/gateway/internal/clusterhist"
)

// This file wires a space to the cluster (Options.Cluster.Node): fan-out of
// accepted envelopes through the Broker, presence through Presence, runtime
// grants through State. On a single node (no cluster) liveSpace.cl is nil
// and none of it runs: each hook in space.go and control.go is one nil
// check.
//
// Enforcement stays local: the space's maps remain what the node enforces.
// A change made here is applied here at once and written to the fabric by
// the space's writer goroutine, in the order it was made; the other nodes
// apply it when their watch delivers it.

// ErrorClusterUnavailable refuses envelopes of a shared space while the node
// cannot reach the cluster: it would otherwise diverge from the others.
const ErrorClusterUnavailable = "cluster_unavailable"

// clusterOpTimeout bounds one write to the fabric.
const clusterOpTimeout = 10 * time.Second

// clusterSpace is a space's link to the cluster.
//
// Goroutines: the writer (write ops in order), the state watch and the
// presence watch, all owned by the clusterSpace and ended by stop; the
// Broker subscription's delivery goroutine is the node's.
//
// Lock order: liveSpace.mu, then clusterSpace.qmu. The watch goroutines take
// liveSpace.mu to apply a change; nothing here is called with qmu held but
// the queue itself.
type clusterSpace struct {
	sp   *liveSpace
	node cluster.Node
	ctx  context.Context
	stop context.CancelFunc
	wg   sync.WaitGroup
	// behind is set from a divergence (the fabric dropped envelopes for
	// this node) until the node has subscribed again; meanwhile the space
	// refuses envelopes, as when the fabric is unreachable.
	behind atomic.Bool

	qmu   sync.Mutex
	queue []clusterOp // guarded by qmu
	wake  chan struct{}
	drain chan struct{} // closed to tell the writer to finish the queue and return
	wrote chan struct{} // closed when the writer has returned

	// Guarded by liveSpace.mu:
	conns   map[*session]cluster.Member // the presence Conn of each local session
	remote  map[string]cluster.Member   // participants connected on other nodes, by logical name
	pending map[string]int              // State keys with writes of ours not yet acknowledged
	ownRev  map[string]uint64           // the revision of our last acknowledged write of a key
	sub     cluster.Subscription        // the current Broker subscription
	subGen  uint64                      // counts the subscriptions, so that an old one's messages are dropped
	held    []heldEnvelope              // envelopes from other nodes waiting for a change of State, in order
	heldGen uint64                      // counts the held envelopes released, so that a stale timer does nothing
	timer   *time.Timer                 // releases the first held envelope after holdLimit
	synced  [2]chan struct{}            // closed when the state and presence watches have delivered the snapshot
	// epochs is the node's reconnection count, if it keeps one; resynced
	// holds, per watch (state, presence), the epoch its copy is current
	// for. Until both have reached the node's epoch, a change made
	// elsewhere during a cut (a revoked grant) may not be applied here yet,
	// and the space refuses (refusal) and holds the welcome of the
	// connection's return (clusterOutage).
	epochs   cluster.EpochReporter
	resynced [2]atomic.Uint64
	// confirmer, when the broker has one, confirms what was published
	// (confirmLoop); unconfirmed lists those publishes, guarded by
	// liveSpace.mu, with the node's epoch at the first of them.
	confirmer        cluster.Confirmer
	unconfirmed      []published
	unconfirmedEpoch uint64
	confirmWake      chan struct{}
	// inviting holds the invitations of ours being created in State, with
	// the watch's changes of their key meanwhile (applied if ours lost).
	inviting map[string][]cluster.Entry
	// orphans holds grant and control changes naming a participant not
	// known here yet (its invitation comes later in a watch's snapshot),
	// replayed when it is invited; at most maxOrphans.
	orphans  map[string][]cluster.Entry
	nOrphans int
	// streams is the space's share of the cluster's streams
	// (cluster_streams.go), set before the node serves.
	streams *clusterStreams
	// hist appends the space's envelopes to the cluster's history
	// (cluster_history.go); shared by the node's spaces.
	hist *clusterhist.Writer
}

// published is a participant's envelope handed to the Broker, whose sender
// is told if it may not have reached the other nodes.
type published struct {
	m  *member
	id string
}

// Bounds of the confirmation of publishes: a batch is confirmed
// confirmGather after its first publish (one round trip for many), and at
// most maxUnconfirmed are tracked at once (beyond, a failure is only
// logged for the rest).
const (
	confirmGather  = 20 * time.Millisecond
	maxUnconfirmed = 1 << 16
)

// maxOrphans bounds the changes kept for participants not known yet, so that
// garbage in State cannot grow a node's memory without limit.
const maxOrphans = 4096

// clusterOp is one write to the fabric, made by the writer in order.
type clusterOp struct {
	key   string // State key; "" for presence ops
	value []byte // nil: delete (State) or leave (presence)
	ttl   time.Duration
	join  *cluster.Member // presence join
	leave [2]string       // presence leave: participant, conn
	rev   uint64          // with del: delete the key only at this revision
	del   bool            // a conditional delete of a key the node does not track as its own (a floor claim)
	// create: create the key only if absent (an alias: the first binding in
	// the cluster wins), not tracked as the node's own either.
	create bool
	done   chan struct{} // a barrier: closed when every write queued before it is made
}

// clusterStart links every space to opts.Cluster.Node, if set: it subscribes to
// each space's envelopes and waits for the watches' snapshots, so that the
// node serves with the cluster's current grants and presence.
func (srv *Server) clusterStart() error {
	node := srv.opts.Cluster.Node
	if node == nil {
		return nil
	}
	srv.metrics.registerCluster(node)
	srv.outage.reconnects = clusterReconnects(node)
	hw := clusterhist.NewWriter(node, clusterhist.Options{ // cluster_history.go: one per node
		Max: srv.opts.Cluster.HistoryQueue, Logger: srv.opts.Logger,
		Dropped: func(n int) { srv.metrics.historyDropped.Add(float64(n)) },
	})
	for _, sp := range srv.order {
		cl, err := newClusterSpace(sp, node, hw)
		if err != nil {
			srv.clusterStop(context.Background())
			hw.Close(context.Background())
			return fmt.Errorf("gateway: space %s: cluster: %w", sp.id, err)
		}
		sp.link = cl
	}
	return nil
}

// clusterStop writes what is still queued (presence leaves of the
// connections Close ended) and stops every space's cluster goroutines.
func (srv *Server) clusterStop(ctx context.Context) {
	var hw *clusterhist.Writer
	for _, sp := range srv.order {
		sp.link.close(ctx)
		if cl, ok := sp.link.(*clusterSpace); ok {
			hw = cl.hist
		}
	}
	if hw != nil {
		hw.Close(ctx) // after the spaces: what their closing broadcast is appended too
	}
}

func newClusterSpace(sp *liveSpace, node cluster.Node, hw *clusterhist.Writer) (*clusterSpace, error) {
	ctx, cancel := context.WithCancel(context.Background())
	cl := &clusterSpace{
		sp: sp, node: node, ctx: ctx, stop: cancel, hist: hw,
		wake: make(chan struct{}, 1), drain: make(chan struct{}), wrote: make(chan struct{}),
		conns: make(map[*session]cluster.Member), remote: make(map[string]cluster.Member),
		pending: make(map[string]int), ownRev: make(map[string]uint64),
		inviting: make(map[string][]cluster.Entry), orphans: make(map[string][]cluster.Entry),
		synced: [2]chan struct{}{make(chan struct{}), make(chan struct{})},
	}
	sw, err := node.State().Watch(ctx, sp.id)
	if err != nil {
		cancel()
		return nil, fmt.Errorf("watch state: %w", err)
	}
	pw, err := node.Presence().Watch(ctx, sp.id)
	if err != nil {
		sw.Stop()
		cancel()
		return nil, fmt.Errorf("watch presence: %w", err)
	}
	if ep, ok := node.(cluster.EpochReporter); ok {
		// Read after the watches began: a reconnection before is in
		// their snapshots, one after makes them report OpResynced.
		cl.epochs = ep
		e := ep.Epoch()
		cl.resynced[0].Store(e)
		cl.resynced[1].Store(e)
	}
	cl.wg.Add(2)
	go cl.watch(sw, cl.synced[0], &cl.resynced[0], cl.stateChange)
	go cl.watch(pw, cl.synced[1], &cl.resynced[1], cl.presenceChange)
	if c, ok := node.Broker().(cluster.Confirmer); ok {
		cl.confirmer, cl.confirmWake = c, make(chan struct{}, 1)
		cl.wg.Add(1)
		go cl.confirmLoop()
	}
	go cl.writer()
	// Subscribe before serving: a node that serves a space must receive its
	// envelopes from the first one on.
	if err := cl.subscribe(); err != nil {
		cl.close(context.Background())
		return nil, fmt.Errorf("subscribe: %w", err)
	}
	if err := cl.startStreams(); err != nil { // cluster_streams.go
		cl.close(context.Background())
		return nil, fmt.Errorf("streams: %w", err)
	}
	t := time.NewTimer(clusterOpTimeout)
	defer t.Stop()
	for _, ch := range cl.synced {
		select {
		case <-ch:
		case <-t.C:
			cl.close(context.Background())
			return nil, errors.New("the state and presence of the space did not arrive in time")
		}
	}
	return cl, nil
}

// close finishes the queued writes (until ctx ends) and stops the
// goroutines.
func (cl *clusterSpace) close(ctx context.Context) {
	cl.qmu.Lock()
	select {
	case <-cl.drain:
	default:
		close(cl.drain)
	}
	cl.qmu.Unlock()
	select {
	case <-cl.wrote:
	case <-ctx.Done():
	}
	cl.closeStreams(ctx) // cluster_streams.go: its queued changes, then its log follower
	cl.stop()
	cl.sp.mu.Lock()
	sub := cl.sub
	cl.sub = nil
	cl.sp.mu.Unlock()
	if sub != nil {
		_ = sub.Unsubscribe()
	}
	<-cl.wrote
	cl.wg.Wait()
	cl.sp.mu.Lock()
	if cl.timer != nil {
		cl.timer.Stop()
		cl.timer = nil
	}
	cl.sp.mu.Unlock()
}

// watch applies a watcher's changes until it ends, and records in resynced
// the epoch of each OpResynced: every change before it has been applied.
func (cl *clusterSpace) watch(w cluster.Watcher, synced chan struct{}, resynced *atomic.Uint64, apply func(cluster.Entry)) {
	defer cl.wg.Done()
	defer w.Stop()
	closed := false
	for {
		select {
		case e, ok := <-w.Changes():
			if !ok {
				return
			}
			switch e.Op {
			case cluster.OpSynced:
				if !closed {
					close(synced)
					closed = true
				}
				continue
			case cluster.OpResynced:
				if e.Revision > resynced.Load() {
					resynced.Store(e.Revision)
				}
				continue
			}
			apply(e)
		case <-cl.ctx.Done():
			return
		}
	}
}

// enqueue adds op to the writer's queue; it never blocks, so it may be
// called with liveSpace.mu held.
func (cl *clusterSpace) enqueue(op clusterOp) {
	cl.qmu.Lock()
	cl.queue = append(cl.queue, op)
	cl.qmu.Unlock()
	select {
	case cl.wake <- struct{}{}:
	default:
	}
}

// writer makes the queued writes in order. Asked to drain, it finishes the
// queue, then returns.
func (cl *clusterSpace) writer() {
	defer close(cl.wrote)
	for {
		cl.qmu.Lock()
		ops := cl.queue
		cl.queue = nil
		cl.qmu.Unlock()
		for _, op := range ops {
			cl.write(op)
		}
		if len(ops) > 0 {
			continue
		}
		select {
		case <-cl.wake:
		case <-cl.drain:
			cl.qmu.Lock()
			empty := len(cl.queue) == 0
			cl.qmu.Unlock()
			if empty {
				return
			}
		case <-cl.ctx.Done():
			return
		}
	}
}

func (cl *clusterSpace) write(op clusterOp) {
	if op.done != nil {
		close(op.done)
		return
	}
	ctx, cancel := context.WithTimeout(cl.ctx, clusterOpTimeout)
	defer cancel()
	sp := cl.sp
	err := cl.node.Err() // unreachable: fail now rather than wait for the timeout
	switch {
	case err != nil:
		if op.key != "" && !op.del && !op.create {
			sp.mu.Lock()
			if cl.pending[op.key]--; cl.pending[op.key] <= 0 {
				delete(cl.pending, op.key)
			}
			sp.mu.Unlock()
		}
	case op.join != nil:
		err = cl.node.Presence().Join(ctx, sp.id, *op.join)
	case op.leave[0] != "":
		err = cl.node.Presence().Leave(ctx, sp.id, op.leave[0], op.leave[1])
	case op.create:
		if _, err = cl.node.State().Put(ctx, sp.id, op.key, op.value, cluster.PutOptions{IfAbsent: true, TTL: op.ttl}); errors.Is(err, cluster.ErrConflict) {
			err = nil // stored first elsewhere: the watch brings that
		}
	case op.del:
		if err = cl.node.State().Delete(ctx, sp.id, op.key, op.rev); errors.Is(err, cluster.ErrConflict) || errors.Is(err, cluster.ErrNotFound) {
			err = nil // changed or gone meanwhile: nothing of ours to remove
		}
	default:
		var rev uint64
		if op.value == nil {
			err = cl.node.State().Delete(ctx, sp.id, op.key, 0)
		} else {
			rev, err = cl.node.State().Put(ctx, sp.id, op.key, op.value, cluster.PutOptions{TTL: op.ttl})
		}
		sp.mu.Lock()
		if cl.pending[op.key]--; cl.pending[op.key] <= 0 {
			delete(cl.pending, op.key)
		}
		cl.ownRev[op.key] = max(cl.ownRev[op.key], rev)
		sp.mu.Unlock()
	}
	if err != nil {
		// The other nodes miss this change: the node's Err says why, and
		// envelopes of the space are refused until it is back (checkControl).
		sp.srv.opts.Logger.Error("cluster write failed", "space", sp.id, "key", op.key, "err", err)
	}
}

// flush waits until the writes queued so far are made (or ctx ends, or the
// writer stops), so that what follows sees them in the fabric. Not called
// with mu held.
func (cl *clusterSpace) flush(ctx context.Context) {
	done := make(chan struct{})
	cl.enqueue(clusterOp{done: done})
	select {
	case <-done:
	case <-ctx.Done():
	case <-cl.wrote:
	}
}

// putLocked queues a State write made by this node; mu must be held. Until
// it is acknowledged, the watch's changes of the key are ours (or lose to
// ours) and are not applied over the local state, which already holds it.
func (cl *clusterSpace) putLocked(key string, value []byte, ttl time.Duration) {
	cl.pending[key]++
	cl.enqueue(clusterOp{key: key, value: value, ttl: ttl})
}

// ownLocked reports whether the watch's change e is one of our own writes
// (already applied here), and forgets the revision once it has come back.
func (cl *clusterSpace) ownLocked(e cluster.Entry) bool {
	if cl.pending[e.Key] > 0 {
		return true
	}
	rev, ok := cl.ownRev[e.Key]
	if !ok {
		return false
	}
	if e.Revision >= rev {
		delete(cl.ownRev, e.Key)
	}
	return e.Revision <= rev
}

// refusal is the refusal of envelopes while the node cannot reach the
// cluster, or nil.
func (cl *clusterSpace) refusal() *refusal {
	err := cl.node.Err()
	if err == nil && cl.behind.Load() {
		err = errors.New("it fell behind the space's envelopes and is subscribing again")
	}
	if err == nil && !cl.current() {
		err = errors.New("it is reading the space's state again after a reconnection")
	}
	if err != nil {
		r := refuse(ErrorClusterUnavailable, "this gateway node cannot reach its cluster, so it accepts nothing for this space: "+err.Error())
		r.status = http.StatusServiceUnavailable
		return r
	}
	return nil
}

// current reports whether the space's copy of the cluster's state and
// presence is current: both watches have reported the node's epoch (see
// clusterSpace.epochs).
func (cl *clusterSpace) current() bool {
	if cl.epochs == nil {
		return true
	}
	e := cl.epochs.Epoch()
	return cl.resynced[0].Load() >= e && cl.resynced[1].Load() >= e
}

// clusterHealth is what /health says of the cluster, inlined in its
// answer: nothing on a single node.
type clusterHealth struct {
	Node    string `json:"node,omitempty"`
	Cluster string `json:"cluster,omitempty"`
	NATS    string `json:"nats,omitempty"`          // "connected", or why not
	Shared  bool   `json:"shared,omitempty"`        // the spaces are shared with the other nodes
	Error   string `json:"cluster_error,omitempty"` // the node's Err, when set
}

func (srv *Server) clusterHealth() clusterHealth {
	node := srv.opts.Cluster.Node
	if node == nil {
		return clusterHealth{}
	}
	h := clusterHealth{Node: node.ID(), Cluster: srv.opts.Cluster.Name, NATS: "connected", Shared: true}
	switch err := node.Err(); {
	case err == nil && !srv.clusterCurrent():
		// Back, and refusing until its copy of the state is current.
		h.NATS, h.Error = "resyncing", "connected again, reading the spaces' state again before it accepts envelopes"
	case err == nil:
	case errors.Is(err, cluster.ErrClosed):
		h.NATS, h.Error = "closed", err.Error()
	default:
		h.NATS, h.Error = "unavailable", err.Error()
	}
	return h
}

// tokenKeys returns the keys of srv.tokens naming m: its tokens' hashes,
// and the hashes it is known by alone.
func (m *member) tokenKeys() [][32]byte {
	keys := slices.Clone(m.hashes)
	for _, t := range m.tokens {
		keys = append(keys, tokenKey(t))
	}
	return keys
}
