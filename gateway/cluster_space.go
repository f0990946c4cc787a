package gateway

import (
	"context"
	"errors"
	"fmt"

	"net/http"
	"slices"
	"sync"
	"sync/atomic"

	"github.com/mew-protocol/mew/gateway/cluster"
	"github.com/mew-protocol/mew/gateway/internal/clusterhist"
	"github.com/mew-protocol/mew/gateway/internal/clusterlink"
)

// This file is the link of a space served by a cluster (Options.Cluster.Node;
// a single node's spaces have the solo link of link.go): fan-out of accepted
// envelopes through the Broker, presence through Presence, runtime grants,
// controls, invitations, aliases, floor claims and governed proposals
// through State, stream changes through the Log.
//
// Enforcement stays local: the space's maps remain what the node enforces.
// A change made here is applied here at once and written to the fabric by
// the space's writer goroutine, in the order it was made; the other nodes
// apply it, through the core's remote…Locked functions, when their watch
// delivers it.

// ErrorClusterUnavailable refuses envelopes of a shared space while the node
// cannot reach the cluster: it would otherwise diverge from the others.
const ErrorClusterUnavailable = "cluster_unavailable"

// clusterSpace is a space's link to the cluster: the core's changes of the
// space go out through w (State, Presence), the Broker (envelopes) and the
// streams' log; the watches, the subscription and the log follower bring
// the other nodes' in, applied through the core's functions. The
// mechanics are gateway/internal/clusterlink's.
//
// Goroutines: the writer, the state watch, the presence watch and the
// confirmer, all owned by the clusterSpace and ended by close; the Broker
// subscription's delivery goroutine is the node's.
//
// Lock order: liveSpace.mu, then the clusterlink types' own locks. The
// watch goroutines take liveSpace.mu to apply a change.
type clusterSpace struct {
	sp   *liveSpace
	node cluster.Node
	ctx  context.Context
	stop context.CancelFunc
	wg   sync.WaitGroup
	w    *clusterlink.Writer
	// watches says whether the space's copy of State and Presence is
	// current after a reconnection (refusal; clusterOutage holds the
	// welcome of the connection's return until it is).
	watches *clusterlink.Watches
	// confirms, when the broker can, confirms what was published.
	confirms *clusterlink.Confirms[published]
	// behind is set from a divergence (the fabric dropped envelopes for
	// this node) until the node has subscribed again; meanwhile the space
	// refuses envelopes, as when the fabric is unreachable.
	behind atomic.Bool

	// Guarded by liveSpace.mu:
	conns  map[*session]cluster.Member // the presence Conn of each local session
	remote clusterlink.Remote          // participants connected on other nodes
	sub    cluster.Subscription        // the current Broker subscription
	subGen uint64                      // counts the subscriptions, so that an old one's messages are dropped
	// held: envelopes from other nodes waiting for a change of State.
	held *clusterlink.Hold[heldEnvelope]
	// inviting holds the invitations of ours being created in State, with
	// the watch's changes of their key meanwhile (applied if ours lost).
	inviting map[string][]cluster.Entry
	// orphans holds the changes naming a participant (or a proposal) not
	// known here yet, replayed when it is.
	orphans clusterlink.Orphans
	// streams is the space's share of the cluster's streams
	// (cluster_streams.go), set before the node serves.
	streams *clusterStreams
	// hist appends the space's envelopes to the cluster's history
	// (cluster_history.go); shared by the node's spaces.
	hist *clusterhist.Writer
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
	srv.outage = clusterlink.NewOutage(node)
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
		conns: make(map[*session]cluster.Member), remote: make(clusterlink.Remote),
		inviting: make(map[string][]cluster.Entry),
	}
	cl.held = clusterlink.NewHold(&sp.mu, clusterlink.HoldLimit, cl.releaseHeld, func(h heldEnvelope) {
		sp.srv.opts.Logger.Warn("cluster: an envelope waited too long for its change of state", "space", sp.id, "id", h.d.id)
	})
	cl.w = clusterlink.NewWriter(ctx, node, sp.id, sp.srv.opts.Logger) // before the watches, which ask it what is ours
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
	cl.watches = clusterlink.NewWatches(node) // after the watches began
	cl.wg.Go(func() { cl.watches.Follow(ctx, clusterlink.StateWatch, sw, cl.stateChange) })
	cl.wg.Go(func() { cl.watches.Follow(ctx, clusterlink.PresenceWatch, pw, cl.presenceChange) })
	if cl.confirms = clusterlink.NewConfirms[published](node.Broker(), cl.watches.Epoch); cl.confirms != nil {
		cl.wg.Go(func() { cl.confirms.Run(ctx, cl.notShared) })
	}
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
	if err := cl.watches.WaitSynced(clusterlink.OpTimeout); err != nil {
		cl.close(context.Background())
		return nil, err
	}
	return cl, nil
}

// close finishes the queued writes (until ctx ends) and stops the
// goroutines.
func (cl *clusterSpace) close(ctx context.Context) {
	cl.w.Drain(ctx)
	cl.closeStreams(ctx) // cluster_streams.go: its queued changes, then its log follower
	cl.stop()
	cl.sp.mu.Lock()
	cl.held.StopLocked()
	sub := cl.sub
	cl.sub = nil
	cl.sp.mu.Unlock()
	if sub != nil {
		_ = sub.Unsubscribe()
	}
	<-cl.w.Done()
	cl.wg.Wait()
}

// refusal is the refusal of envelopes while the node cannot reach the
// cluster, or nil.
func (cl *clusterSpace) refusal() *refusal {
	err := cl.node.Err()
	if err == nil && cl.behind.Load() {
		err = errors.New("it fell behind the space's envelopes and is subscribing again")
	}
	if err == nil && !cl.watches.Current() {
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
// presence is current after a reconnection.
func (cl *clusterSpace) current() bool { return cl.watches.Current() }

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
