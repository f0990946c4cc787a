package gateway

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"net/http"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/coder/websocket"

	"github.com/mew-protocol/mew/gateway/cluster"
	"github.com/mew-protocol/mew/gateway/internal/clusterhist"
	"github.com/mew-protocol/mew/protocol"
	"github.com/mew-protocol/mew/space"
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
	for _, sp := range srv.order {
		if len(sp.cfg.Approvals) > 0 {
			// Not shared between nodes yet: a policy each node kept on
			// its own could be satisfied twice, or not at all.
			return fmt.Errorf("gateway: space %s: approval rules are enforced on one gateway node only, not yet on a cluster", sp.id)
		}
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
		if _, err = cl.node.State().Put(ctx, sp.id, op.key, op.value, cluster.PutOptions{IfAbsent: true}); errors.Is(err, cluster.ErrConflict) {
			err = nil // bound first elsewhere: the watch brings that binding
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

// --- fan-out ---

// deliveredLocked puts d, delivered here, in the cluster's history when
// this node accepted or made it (cluster_history.go: once in the whole
// cluster), and sends a participant's envelope to the other nodes.
func (cl *clusterSpace) deliveredLocked(d delivery) {
	if !d.remote {
		cl.historyLocked(d)
	}
	if d.src != nil {
		cl.publishLocked(d)
	}
}

// resumeSkew: envelopes accepted on different nodes may have been
// delivered in another order on the node a resuming client left.
func (cl *clusterSpace) resumeSkew() time.Duration { return resumeSkew }

// speaksForLocked: the node m is connected to announces what the gateway
// does to it.
func (cl *clusterSpace) speaksForLocked(m *member) bool { return m.sess != nil }

// publishLocked sends an accepted envelope to the other nodes; mu must be
// held, so that the space's order of this node's senders is the order
// published.
func (cl *clusterSpace) publishLocked(d delivery) {
	if err := cl.node.Broker().Publish(cl.ctx, cl.sp.id, d.data); err != nil {
		cl.sp.srv.opts.Logger.Warn("cluster publish failed", "space", cl.sp.id, "id", d.id, "err", err)
		cl.notSharedLocked([]published{{d.src, d.id}}, err)
		return
	}
	if cl.confirmer == nil {
		return
	}
	if len(cl.unconfirmed) == 0 {
		cl.unconfirmedEpoch = cl.epoch()
	}
	if len(cl.unconfirmed) < maxUnconfirmed {
		cl.unconfirmed = append(cl.unconfirmed, published{d.src, d.id})
	}
	select {
	case cl.confirmWake <- struct{}{}:
	default:
	}
}

// epoch is the node's reconnection count, 0 when it keeps none.
func (cl *clusterSpace) epoch() uint64 {
	if cl.epochs == nil {
		return 0
	}
	return cl.epochs.Epoch()
}

// confirmLoop confirms what the space published, a batch at a time: when
// the fabric cannot say it has them all (the connection died as they were
// written, or came back meanwhile), their senders are told, so that an
// envelope accepted here either reaches every node or its sender knows it
// may not have. It runs until the clusterSpace stops.
func (cl *clusterSpace) confirmLoop() {
	defer cl.wg.Done()
	t := time.NewTimer(confirmGather)
	t.Stop()
	defer t.Stop()
	for {
		select {
		case <-cl.confirmWake:
		case <-cl.ctx.Done():
			return
		}
		t.Reset(confirmGather)
		select {
		case <-t.C:
		case <-cl.ctx.Done():
			return
		}
		sp := cl.sp
		sp.mu.Lock()
		batch, epoch := cl.unconfirmed, cl.unconfirmedEpoch
		cl.unconfirmed = nil
		sp.mu.Unlock()
		if len(batch) == 0 {
			continue
		}
		ctx, cancel := context.WithTimeout(cl.ctx, clusterOpTimeout)
		err := cl.confirmer.Confirm(ctx)
		cancel()
		if err == nil && cl.epoch() != epoch {
			err = errors.New("the node reconnected to the cluster meanwhile")
		}
		if err != nil && cl.ctx.Err() == nil {
			sp.srv.opts.Logger.Warn("cluster: publishes not confirmed; telling their senders", "space", sp.id, "envelopes", len(batch), "err", err)
			sp.mu.Lock()
			cl.notSharedLocked(batch, err)
			sp.mu.Unlock()
		}
	}
}

// notSharedLocked tells the senders of envelopes accepted and delivered
// here that they may not have reached the other nodes (a system/error
// cluster_unavailable correlated to each). mu must be held.
func (cl *clusterSpace) notSharedLocked(list []published, err error) {
	sp := cl.sp
	for _, p := range list {
		s := p.m.sess
		if s == nil || sp.sessions[s.id] != s {
			continue // gone: nobody to tell
		}
		r := refuse(ErrorClusterUnavailable, "accepted and delivered on this gateway node, but it may not have reached the other nodes of the cluster: "+err.Error())
		r.ref = p.id
		sp.unicastLocked(s, sp.errorEnvelope(s.id, r))
	}
}

// holdLimit bounds how long an envelope from another node waits for the
// State change it announces (a grant's, a revoke's): past it, it goes out
// anyway, since a write that failed on its node must not stop the space.
const holdLimit = time.Second

// heldEnvelope is an envelope from another node not yet delivered here.
type heldEnvelope struct {
	d     delivery
	sent  time.Time   // when its node published it, for the latency metric
	ready func() bool // nil, or whether what it announces is in force here; mu held
}

// subscribe subscribes to the space's envelopes from the other nodes. Each
// subscription has its own decoder (its messages come one at a time) and
// generation: once replaced, its messages still in flight are dropped.
func (cl *clusterSpace) subscribe() error {
	sp := cl.sp
	sp.mu.Lock()
	cl.subGen++
	gen := cl.subGen
	sp.mu.Unlock()
	var dec protocol.Decoder
	sub, err := cl.node.Broker().Subscribe(cl.ctx, sp.id, func(msg cluster.Message) { cl.remoteEnvelope(&dec, gen, msg) })
	if err != nil {
		return err
	}
	sp.mu.Lock()
	defer sp.mu.Unlock()
	if gen != cl.subGen || cl.ctx.Err() != nil {
		_ = sub.Unsubscribe() // replaced or closed meanwhile
		return nil
	}
	cl.sub = sub
	return nil
}

// diverged handles the fabric's notice that it dropped envelopes of the
// space for this node (a NATS slow consumer): its participants missed
// what the others delivered, which no later envelope repairs. So the node
// closes their connections with 1013 (try again later) and a reason, for
// them to reconnect — through the load balancer, likely to another node —
// and rejoin a consistent space; it drops the envelopes it held, leaves
// the space's fan-out (ending the subscription, and NATS's backlog with
// it), and subscribes again, refusing envelopes of the space until then.
func (cl *clusterSpace) diverged(gen uint64) {
	sp := cl.sp
	sp.mu.Lock()
	if gen != cl.subGen || cl.ctx.Err() != nil {
		sp.mu.Unlock()
		return
	}
	cl.behind.Store(true)
	cl.subGen++ // the old subscription's messages in flight are dropped
	old := cl.sub
	cl.sub = nil
	clear(cl.held)
	cl.held = cl.held[:0]
	cl.heldGen++
	if cl.timer != nil {
		cl.timer.Stop()
		cl.timer = nil
	}
	sp.srv.metrics.clusterDiverged.Inc()
	sp.srv.opts.Logger.Warn("cluster: this node fell behind the space's envelopes (NATS dropped some); closing its connections to the space",
		"space", sp.id, "connections", len(sp.roster))
	for _, s := range slices.Clone(sp.roster) {
		if s.transport == transportVirtual {
			continue // an output_log file: nowhere else to go
		}
		s.kill(websocket.StatusTryAgainLater, "this gateway node fell behind the cluster and missed envelopes: reconnect")
		sp.detachLocked(s)
	}
	sp.mu.Unlock()
	cl.wg.Go(func() {
		if old != nil {
			_ = old.Unsubscribe()
		}
		for cl.ctx.Err() == nil {
			err := cl.subscribe()
			if err == nil {
				cl.behind.Store(false)
				return
			}
			sp.srv.opts.Logger.Warn("cluster: subscribing again after falling behind", "space", sp.id, "err", err)
			select {
			case <-time.After(time.Second):
			case <-cl.ctx.Done():
			}
		}
	})
}

// remoteEnvelope delivers an envelope accepted by another node to the local
// participants, as the broadcast of a local one. It runs on the
// subscription's goroutine, one message at a time.
//
// A capability/grant or capability/revoke waits until this node's watch has
// applied the change it announces, and the envelopes after it wait behind
// it: as on one node, the grantee has its new capabilities before anyone
// reads the grant, and each sender's order is kept.
func (cl *clusterSpace) remoteEnvelope(dec *protocol.Decoder, gen uint64, msg cluster.Message) {
	if msg.Lost {
		cl.diverged(gen)
		return
	}
	if isClusterFrame(msg.Data) { // a stream's frame: cluster_streams.go
		cl.remoteFrame(msg)
		return
	}
	var env protocol.Envelope
	if err := dec.Decode(msg.Data, &env); err != nil {
		cl.sp.srv.opts.Logger.Warn("cluster: bad envelope from node", "space", cl.sp.id, "node", msg.Node, "err", err)
		return
	}
	sp := cl.sp
	h := heldEnvelope{d: delivery{data: msg.Data, id: env.ID, kind: env.Kind, at: sp.srv.now(), to: env.To, remote: true}, sent: msg.Sent, ready: cl.readyFunc(&env)}
	sp.mu.Lock()
	defer sp.mu.Unlock()
	if gen != cl.subGen {
		return // from a subscription given up after a divergence
	}
	if env.Kind == protocol.KindChat && sp.floorEnabled() {
		// Known addressed or not, so that a claim made here on it is
		// judged as on its node.
		sp.floor.note(env.ID, len(env.To) > 0)
	}
	cl.held = append(cl.held, h)
	cl.releaseLocked(false)
}

// readyFunc returns what a grant, a revoke by grant id, a kick, a pause or a
// resume waits for, or nil.
func (cl *clusterSpace) readyFunc(env *protocol.Envelope) func() bool {
	sp := cl.sp
	has := func(who, id string) bool {
		m := sp.resolveLocked(who)
		return m != nil && slices.ContainsFunc(m.grants, func(g grant) bool { return g.id == id })
	}
	switch env.Kind {
	case protocol.KindCapabilityGrant:
		var p protocol.Grant
		if env.DecodePayload(&p) != nil || p.Recipient == "" {
			return nil
		}
		id := env.ID
		return func() bool { return sp.resolveLocked(p.Recipient) == nil || has(p.Recipient, id) }
	case protocol.KindCapabilityRevoke:
		var p protocol.Revoke
		if env.DecodePayload(&p) != nil || p.GrantID == "" {
			return nil // by pattern: nothing precise to wait for
		}
		return func() bool { return !has(p.Recipient, p.GrantID) }
	case protocol.KindSpaceKick:
		var p protocol.Kick
		if env.DecodePayload(&p) != nil || p.ParticipantID == "" {
			return nil
		}
		return func() bool { m := sp.resolveLocked(p.ParticipantID); return m == nil || m.ctl.kicked }
	case protocol.KindStreamRequest, protocol.KindStreamClose:
		return cl.streamReady(env) // cluster_streams.go
	case protocol.KindParticipantPause, protocol.KindParticipantResume, protocol.KindParticipantShutdown:
		to, id, kind := slices.Clone(env.To), env.ID, env.Kind
		return func() bool {
			for _, who := range to {
				m := sp.resolveLocked(who)
				if m == nil {
					continue
				}
				switch {
				case kind == protocol.KindParticipantPause && m.ctl.pauseID != id,
					kind == protocol.KindParticipantResume && m.ctl.pausedUntil.Load() != 0,
					kind == protocol.KindParticipantShutdown && !m.ctl.shutdown.Load():
					return false
				}
			}
			return true
		}
	}
	return nil
}

// releaseLocked delivers the held envelopes that may go, in order: all up
// to the first whose change is not applied here yet (force: that one too);
// mu must be held.
func (cl *clusterSpace) releaseLocked(force bool) {
	for len(cl.held) > 0 {
		h := cl.held[0]
		if h.ready != nil && !force && !h.ready() {
			if cl.timer == nil {
				gen := cl.heldGen
				cl.timer = time.AfterFunc(holdLimit, func() { cl.expireHeld(gen) })
			}
			return
		}
		force = false
		cl.held[0] = heldEnvelope{}
		cl.held = cl.held[1:]
		cl.heldGen++
		if cl.timer != nil {
			cl.timer.Stop()
			cl.timer = nil
		}
		cl.sp.broadcastLocked(h.d, nil) // src is nil: never published again
		if !h.sent.IsZero() {
			cl.sp.srv.metrics.clusterLag.Observe(max(time.Since(h.sent), 0).Seconds())
		}
	}
}

// expireHeld releases the first held envelope if it is still the one that
// was first when the timer was set.
func (cl *clusterSpace) expireHeld(gen uint64) {
	sp := cl.sp
	sp.mu.Lock()
	defer sp.mu.Unlock()
	if gen != cl.heldGen || cl.ctx.Err() != nil {
		return
	}
	cl.timer = nil
	sp.srv.opts.Logger.Warn("cluster: an envelope waited too long for its change of state", "space", sp.id, "id", cl.held[0].d.id)
	cl.releaseLocked(true)
}

// --- presence ---

// joinLocked records s in the cluster's presence; mu must be held.
func (cl *clusterSpace) joinLocked(s *session) {
	if s.transport == transportVirtual {
		return // an output_log participant is each node's own (phase 2: one writer)
	}
	info, _ := json.Marshal(protocol.ParticipantInfo{ID: s.id, Capabilities: s.m.view().list})
	m := cluster.Member{
		Participant: s.m.name, Node: cl.node.ID(), Conn: cl.node.ID() + ":" + protocol.NewID(),
		RuntimeID: s.id, Since: cl.sp.srv.now().Round(0), Info: info,
	}
	cl.conns[s] = m
	delete(cl.remote, s.m.name)
	cl.enqueue(clusterOp{join: &m})
}

// newer reports whether connection a was made after b: the later Since, a
// tie broken by the greater Conn. Every node decides the same way between
// two entries, whichever order their writes landed in.
func newer(a, b cluster.Member) bool {
	return a.Since.After(b.Since) || (a.Since.Equal(b.Since) && a.Conn > b.Conn)
}

// leaveLocked removes s from the cluster's presence, if its entry is still
// s's; mu must be held.
func (cl *clusterSpace) leaveLocked(s *session) {
	m, ok := cl.conns[s]
	if !ok {
		return
	}
	delete(cl.conns, s)
	cl.enqueue(clusterOp{leave: [2]string{s.m.name, m.Conn}})
}

// infoLocked writes s's presence again with its current capabilities, after
// a grant or revoke; mu must be held.
func (cl *clusterSpace) infoLocked(s *session) {
	m, ok := cl.conns[s]
	if !ok {
		return
	}
	m.Info, _ = json.Marshal(protocol.ParticipantInfo{ID: s.id, Capabilities: s.m.view().list})
	cl.conns[s] = m
	cl.enqueue(clusterOp{join: &m})
}

// participantLocked fills in GET /participants' view of a member connected
// on another node; mu must be held.
func (cl *clusterSpace) participantLocked(m *member, v *participantView) {
	r, ok := cl.remote[m.name]
	if !ok {
		return
	}
	v.Connected, v.Node = true, r.Node
	if r.RuntimeID != "" && r.RuntimeID != m.name {
		v.ID, v.Name = r.RuntimeID, m.name
	}
}

// participantsLocked lists those connected on other nodes, for a welcome;
// mu must be held.
func (cl *clusterSpace) participantsLocked() []protocol.ParticipantInfo {
	var list []protocol.ParticipantInfo
	names := make([]string, 0, len(cl.remote))
	for name := range cl.remote {
		names = append(names, name)
	}
	slices.Sort(names)
	for _, name := range names {
		if m := cl.sp.members[name]; m != nil && m.sess != nil {
			continue // connected here meanwhile; its entry is on its way
		}
		list = append(list, remoteInfo(cl.remote[name]))
	}
	return list
}

func remoteInfo(m cluster.Member) protocol.ParticipantInfo {
	var info protocol.ParticipantInfo
	if json.Unmarshal(m.Info, &info) != nil || info.ID == "" {
		info = protocol.ParticipantInfo{ID: cmpOr(m.RuntimeID, m.Participant)}
	}
	return info
}

func cmpOr(a, b string) string {
	if a != "" {
		return a
	}
	return b
}

// presenceChange applies a change of the space's presence: a participant
// connected on another node (replacing its connection here, if any), or
// gone from it.
func (cl *clusterSpace) presenceChange(e cluster.Entry) {
	sp := cl.sp
	sp.mu.Lock()
	defer sp.mu.Unlock()
	if e.Op == cluster.OpDelete {
		m, ok := cl.remote[e.Key]
		if !ok {
			return
		}
		delete(cl.remote, e.Key)
		if lm := sp.members[e.Key]; lm != nil && lm.sess == nil {
			sp.presenceChangedLocked(lm, false, sp.srv.now())
		}
		cl.streamsGoneLocked(m) // cluster_streams.go: as when a connection here ends
		sp.broadcastLocked(remote(sp.presenceEnvelope(protocol.PresenceLeave, protocol.ParticipantInfo{ID: remoteInfo(m).ID})), nil)
		return
	}
	m, err := cluster.DecodeMember(e.Value)
	if err != nil {
		sp.srv.opts.Logger.Warn("cluster: bad presence entry", "space", sp.id, "key", e.Key, "err", err)
		return
	}
	if m.Node == cl.node.ID() {
		delete(cl.remote, m.Participant)
		return
	}
	if lm := sp.members[m.Participant]; lm != nil && lm.sess != nil && lm.sess.transport != transportVirtual {
		// One logical participant, one connection in the cluster: the one
		// made later replaces the other. Two connections made at once on
		// two nodes may land their entries in either order; both nodes
		// compare the same two entries, so exactly one connection stays.
		old := lm.sess
		if mine, ok := cl.conns[old]; ok && newer(mine, m) {
			cl.enqueue(clusterOp{join: &mine}) // ours is the later one: put it back
			return
		}
		delete(cl.conns, old) // its entry is already the other node's
		old.kill(CloseReplaced, "replaced by a new connection of the same participant on another node")
		sp.detachLocked(old)
	}
	prev, had := cl.remote[m.Participant]
	cl.remote[m.Participant] = m
	if lm := sp.members[m.Participant]; lm != nil {
		sp.presenceChangedLocked(lm, true, sp.srv.now())
	}
	if had && prev.Conn == m.Conn {
		return // a refresh
	}
	sp.broadcastLocked(remote(sp.presenceEnvelope(protocol.PresenceJoin, remoteInfo(m))), nil)
}

// --- runtime grants ---

// grantTTL is how long a grant's key lives: past its expiry (each node
// expires it itself, on time), so that the key does not outlive it long.
func grantTTL(g grant, now time.Time) time.Duration {
	if g.expires.IsZero() {
		return 0
	}
	return max(g.expires.Sub(now), 0) + time.Second
}

// grantLocked shares a grant made here; mu must be held.
func (cl *clusterSpace) grantLocked(m *member, g grant) {
	links := make([]cluster.GrantLink, len(g.links))
	for i, l := range g.links {
		links[i] = cluster.GrantLink{Pattern: l.pattern, Grant: l.grantID, Entry: l.entry}
	}
	b, err := cluster.Encode(cluster.Grant{ID: g.id, To: m.name, From: g.from, At: g.at, Expires: g.expires, Capabilities: g.caps, Session: g.session, Links: links})
	if err != nil {
		cl.sp.srv.opts.Logger.Error("cluster: encode grant", "space", cl.sp.id, "grant", g.id, "err", err)
		return
	}
	cl.putLocked(cluster.GrantKey(m.name, g.id), b, grantTTL(g, cl.sp.srv.now()))
}

// grantGoneLocked removes a grant that ended here by its own rule (expiry,
// a broken link): every node settles the same way, and deleting twice is
// harmless. mu must be held.
func (cl *clusterSpace) grantGoneLocked(m *member, g grant) {
	cl.putLocked(cluster.GrantKey(m.name, g.id), nil, 0)
}

// connectedElsewhereLocked reports whether m is connected on another node;
// mu must be held.
func (cl *clusterSpace) connectedElsewhereLocked(m *member) bool {
	_, ok := cl.remote[m.name]
	return ok
}

// grantsChangedLocked shares a revoke made here: grants gone are deleted,
// grants that lost patterns are written again; mu must be held.
func (cl *clusterSpace) grantsChangedLocked(m *member, before []grant) {
	for _, g := range before {
		i := slices.IndexFunc(m.grants, func(k grant) bool { return k.id == g.id })
		switch {
		case i < 0:
			cl.putLocked(cluster.GrantKey(m.name, g.id), nil, 0)
		case len(m.grants[i].caps) != len(g.caps):
			cl.grantLocked(m, m.grants[i])
		}
	}
}

// controlLocked shares m's pause, shutdown and kick state after a change
// made here (reason: the kick's); mu must be held.
func (cl *clusterSpace) controlLocked(m *member, reason string) {
	c := controlOf(m)
	c.Reason = reason
	b, err := cluster.Encode(c)
	if err != nil {
		cl.sp.srv.opts.Logger.Error("cluster: encode control", "space", cl.sp.id, "participant", m.name, "err", err)
		return
	}
	cl.putLocked(cluster.ControlKey(m.name), b, 0)
}

// controlChange applies a pause, resume, shutdown or kick made on another
// node. A kick closes the participant's connection here, if any, and its
// tokens stop working here too. A shutdown applies to the connection here,
// if any (reconnecting ends it, as on one node). A pause whose time has
// passed is no pause: each node ends pauses itself (expirePauses), telling
// its own participants.
func (cl *clusterSpace) controlChange(e cluster.Entry) {
	if e.Op != cluster.OpPut {
		return
	}
	sp := cl.sp
	c, err := cluster.DecodeControl(e.Value)
	if err != nil || cluster.ControlKey(c.Participant) != e.Key {
		sp.srv.opts.Logger.Warn("cluster: bad control record", "space", sp.id, "key", e.Key, "err", err)
		return
	}
	m := sp.members[c.Participant]
	if m == nil {
		cl.orphanLocked(c.Participant, e)
		return
	}
	sp.setControlLocked(m, c) // as on the node that made the change
}

// stateChange applies a change of the space's State made by another node.
func (cl *clusterSpace) stateChange(e cluster.Entry) {
	kind := cluster.KeyKind(e.Key)
	if kind != "grant" && kind != "control" && kind != "invite" && kind != "floor" && kind != "alias" {
		return // streams have their own watcher
	}
	sp := cl.sp
	sp.mu.Lock()
	defer sp.mu.Unlock()
	if cl.ownLocked(e) {
		return
	}
	cl.stateChangeLocked(kind, e)
}

// stateChangeLocked applies a grant, control or invite change; mu must be
// held.
func (cl *clusterSpace) stateChangeLocked(kind string, e cluster.Entry) {
	sp := cl.sp
	switch kind {
	case "control":
		cl.controlChange(e)
		cl.releaseLocked(false)
		return
	case "invite":
		cl.inviteChangeLocked(e)
		return
	case "floor":
		cl.floorChangeLocked(e)
		return
	case "alias":
		cl.aliasChangeLocked(e)
		return
	}
	parts := strings.SplitN(e.Key, "/", 3)
	if len(parts) != 3 {
		return
	}
	m := sp.members[parts[1]]
	if m == nil {
		cl.orphanLocked(parts[1], e) // invited, but the invitation is not here yet
		return
	}
	id := parts[2]
	now := sp.srv.now()
	var rf *refusal
	if e.Op == cluster.OpDelete {
		i := slices.IndexFunc(m.grants, func(g grant) bool { return g.id == id })
		if i < 0 {
			return
		}
		rf = sp.setGrantsLocked(m, slices.Delete(slices.Clone(m.grants), i, i+1), now)
	} else {
		rec, err := cluster.DecodeGrant(e.Value)
		if err != nil || rec.ID != id || rec.To != m.name {
			sp.srv.opts.Logger.Warn("cluster: bad grant", "space", sp.id, "key", e.Key, "err", err)
			return
		}
		if !rec.Expires.IsZero() && !now.Before(rec.Expires) {
			return
		}
		caps, set, bad := compactPatterns(rec.Capabilities)
		if bad != nil {
			sp.srv.opts.Logger.Warn("cluster: bad grant", "space", sp.id, "key", e.Key, "err", bad.message)
			return
		}
		links, err := sp.checkLinksLocked(rec, set)
		if err != nil {
			// Whoever wrote it, it is not a grant this node would have
			// accepted: refused, never enforced.
			sp.srv.opts.Logger.Warn("cluster: grant refused", "space", sp.id, "key", e.Key, "err", err)
			return
		}
		g := grant{id: id, from: rec.From, at: rec.At, expires: rec.Expires, session: rec.Session, links: links, caps: caps, set: set}
		rf = sp.putGrantLocked(m, g, now) // as on the node that made it
	}
	if rf != nil {
		sp.srv.opts.Logger.Warn("cluster: grant does not compile", "space", sp.id, "key", e.Key, "err", rf.message)
		return
	}
	cl.releaseLocked(false)
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

// --- invitations ---

// shareInvite creates the invitation of participant id in State, unless
// another node created one first (taken). Only the token's SHA-256 leaves
// the node. Not called with mu held: it waits for the fabric. When it
// started the creation (started), the caller then calls invitedLocked.
func (cl *clusterSpace) shareInvite(from, id, tok string, caps []json.RawMessage, reason string, now time.Time) (taken, started bool, err error) {
	sp := cl.sp
	h := tokenKey([]byte(tok))
	b, err := cluster.Encode(cluster.Invite{
		Participant: id, From: from, At: now.Round(0), TokenHash: h[:], Capabilities: caps, Reason: reason,
	})
	if err != nil {
		return false, false, err
	}
	sp.mu.Lock()
	if _, busy := cl.inviting[id]; busy {
		sp.mu.Unlock()
		return true, false, nil // another invitation of id on this node is under way
	}
	cl.inviting[id] = nil
	sp.mu.Unlock()
	if err := cl.node.Err(); err != nil {
		return false, true, err
	}
	ctx, cancel := context.WithTimeout(cl.ctx, clusterOpTimeout)
	defer cancel()
	_, err = cl.node.State().Put(ctx, sp.id, cluster.InviteKey(id), b, cluster.PutOptions{IfAbsent: true})
	switch {
	case err == nil:
		return false, true, nil
	case errors.Is(err, cluster.ErrConflict):
		return true, true, nil
	}
	return false, true, err
}

// invitedLocked ends the creation of id's invitation started by
// shareInvite: if ours lost (lost), the changes the watch delivered
// meanwhile — the winner's invitation — are applied now; if ours won, they
// were its own echo. mu must be held. A no-op when no invitation of id was
// under way.
func (cl *clusterSpace) invitedLocked(id string, lost bool) {
	held, ok := cl.inviting[id]
	if !ok {
		return
	}
	delete(cl.inviting, id)
	if !lost {
		return
	}
	for _, e := range held {
		cl.inviteChangeLocked(e)
	}
}

// inviteChangeLocked applies an invitation made on another node: the
// participant exists here from now on, known by its token's hash, with the
// capabilities it was invited with, and this node's participants see it
// invited. An invitation is never withdrawn (a deleted key changes
// nothing; a kick is the way out). mu must be held.
func (cl *clusterSpace) inviteChangeLocked(e cluster.Entry) {
	if e.Op != cluster.OpPut {
		return
	}
	sp := cl.sp
	inv, err := cluster.DecodeInvite(e.Value)
	if err == nil && cluster.InviteKey(inv.Participant) != e.Key {
		err = fmt.Errorf("%w: the key does not name participant %q", cluster.ErrInvalid, inv.Participant)
	}
	if err != nil {
		sp.srv.opts.Logger.Warn("cluster: bad invitation", "space", sp.id, "key", e.Key, "err", err)
		return
	}
	id := inv.Participant
	if held, busy := cl.inviting[id]; busy {
		cl.inviting[id] = append(held, e) // ours is being created: decided when it is
		return
	}
	if sp.resolveLocked(id) != nil || id == protocol.GatewayID {
		return // ours (its echo), or a name this node already serves
	}
	if space.ValidParticipantID(id) != nil || strings.ContainsAny(id, ":#") {
		sp.srv.opts.Logger.Warn("cluster: bad invitation", "space", sp.id, "key", e.Key, "err", "participant id")
		return
	}
	if len(sp.order)-len(sp.cfg.Participants) >= maxInvited {
		sp.srv.opts.Logger.Warn("cluster: invitation over the limit of invited participants", "space", sp.id, "participant", id)
		return
	}
	caps, _, rf := compactPatterns(inv.Capabilities)
	if rf != nil {
		sp.srv.opts.Logger.Warn("cluster: bad invitation", "space", sp.id, "key", e.Key, "err", rf.message)
		return
	}
	m := &member{name: id, hashes: [][32]byte{[32]byte(inv.TokenHash)}}
	if rf := sp.admitLocked(m, caps); rf != nil { // as on the node that invited it
		sp.srv.opts.Logger.Warn("cluster: invitation not admitted", "space", sp.id, "key", e.Key, "err", rf.message)
		return
	}
	sp.broadcastLocked(remote(sp.invitedEnvelope(m, inv.From, inv.Reason)), nil)
	orphans := cl.orphans[id]
	delete(cl.orphans, id)
	cl.nOrphans -= len(orphans)
	for _, o := range orphans {
		cl.stateChangeLocked(cluster.KeyKind(o.Key), o)
	}
}

// orphanLocked keeps a grant or control change naming participant, not
// known here yet, until its invitation arrives; mu must be held.
func (cl *clusterSpace) orphanLocked(participant string, e cluster.Entry) {
	if _, ok := cl.sp.members[participant]; ok {
		return
	}
	list := cl.orphans[participant]
	for i, o := range list {
		if o.Key == e.Key { // the last change of a key is what counts
			list[i] = e
			return
		}
	}
	if cl.nOrphans >= maxOrphans {
		cl.sp.srv.opts.Logger.Warn("cluster: change for an unknown participant dropped", "space", cl.sp.id, "key", e.Key)
		return
	}
	cl.orphans[participant] = append(list, e)
	cl.nOrphans++
}

// --- runtime aliases ---

// aliasLocked shares the binding of runtime id to m, made here by its first
// use; mu must be held. In the cluster the first binding stored wins
// (aliasChangeLocked).
func (cl *clusterSpace) aliasLocked(id string, m *member) {
	b, err := cluster.Encode(cluster.Alias{ID: id, Participant: m.name})
	if err != nil {
		cl.sp.srv.opts.Logger.Error("cluster: encode alias", "space", cl.sp.id, "id", id, "err", err)
		return
	}
	cl.enqueue(clusterOp{key: cluster.AliasKey(id), value: b, create: true})
}

// aliasChangeLocked applies a runtime id's binding from State: from now on
// the id names that participant here too (a grant, a pause or a kick naming
// it, envelopes addressed to it), and no one else may join under it. Two
// nodes that bound one id to two participants at once both end with the
// binding stored first; the other participant's connection under that id,
// if here, is closed. mu must be held.
func (cl *clusterSpace) aliasChangeLocked(e cluster.Entry) {
	if e.Op != cluster.OpPut {
		return // a binding lasts; a cleared key changes nothing until restart
	}
	sp := cl.sp
	a, err := cluster.DecodeAlias(e.Value)
	if err == nil && cluster.AliasKey(a.ID) != e.Key {
		err = fmt.Errorf("%w: the key does not name runtime id %q", cluster.ErrInvalid, a.ID)
	}
	if err != nil {
		sp.srv.opts.Logger.Warn("cluster: bad alias", "space", sp.id, "key", e.Key, "err", err)
		return
	}
	m := sp.members[a.Participant]
	if m == nil {
		cl.orphanLocked(a.Participant, e) // invited, but the invitation is not here yet
		return
	}
	if _, logical := sp.members[a.ID]; logical {
		return // a logical name is nobody's alias
	}
	cur, bound := sp.aliases[a.ID]
	switch {
	case cur == m:
		return
	case m.aliases >= maxAliasesPerMember:
		sp.srv.opts.Logger.Warn("cluster: alias over the limit", "space", sp.id, "id", a.ID, "participant", m.name)
		return
	case bound:
		cur.aliases--
		if s := sp.sessions[a.ID]; s != nil && s.m == cur {
			s.kill(websocket.StatusPolicyViolation, fmt.Sprintf("participant id %q was used by another participant on another gateway node first", a.ID))
			sp.detachLocked(s)
		}
	}
	sp.aliases[a.ID] = m
	m.aliases++
}
