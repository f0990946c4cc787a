package gateway

import (
	"context"
	"strings"
	"time"

	"github.com/mew-protocol/mew/gateway/cluster"
	"github.com/mew-protocol/mew/gateway/internal/clusterlink"
)

// Floor control across nodes (floor.go holds the rule and the node's copy).
//
// In a cluster the claim of each message is one State key, arbitrated by
// compare-and-swap (cluster.ClaimFloor) with the same rule. floorTable.claims
// is then the node's copy of those keys, kept by its own claims and by the
// state watch. A claimant that loses is told to yield by the node it claimed
// on; a holder displaced by a claim made on another node is told by its own
// node, when the watch shows the key changing to a claim that is not its.

// floorClaim has a claim arbitrated with the whole cluster once it is
// relayed. The arbitration takes a few round trips to the fabric; relayed
// first, the claim reaches the agents on other nodes at once, and they
// give way to an earlier one themselves (the agents' side of the rule)
// before any yield could reach them.
func (cl *clusterSpace) floorClaim(o origin, msg string, startedAt int64, now time.Time) (outcome, *refusal) {
	sp := cl.sp
	sp.mu.Lock()
	sp.floor.ensure()
	addressed := sp.floor.addressed[msg]
	sp.mu.Unlock()
	if addressed {
		return relayed, nil
	}
	sp.srv.metrics.floor.WithLabelValues("claims").Inc()
	return outcome{relay: true, then: func() { cl.arbitrate(o, msg, startedAt, now) }}, nil
}

// arbitrate settles a claim by compare-and-swap and tells the loser, if
// here, to yield. Not called with mu held: it waits for the fabric.
func (cl *clusterSpace) arbitrate(o origin, msg string, startedAt int64, now time.Time) {
	sp := cl.sp
	ctx, cancel := context.WithTimeout(cl.ctx, clusterlink.OpTimeout)
	defer cancel()
	// This node's earlier changes first: a claim its holder answered or
	// left here is gone from the fabric before this one is judged.
	cl.w.Flush(ctx)
	w, _, err := cluster.ClaimFloor(ctx, cl.node.State(), sp.id, msg,
		cluster.Claim{Holder: o.m.name, ID: o.id, StartedAt: startedAt}, sp.floorTTL(), now)
	if err != nil {
		// Advisory: the claim is relayed all the same, but no one is told
		// to yield. The node's Err, if set, refuses what comes next.
		sp.srv.opts.Logger.Warn("cluster: floor claim not arbitrated", "space", sp.id, "message", msg, "err", err)
		return
	}
	sp.mu.Lock()
	defer sp.mu.Unlock()
	if w.Holder != o.m.name {
		sp.yieldLocked(&claim{holder: o.m, id: o.id, startedAt: startedAt}, &claim{id: w.ID, startedAt: w.StartedAt}, msg)
	}
	sp.floorSetLocked(msg, w)
}

// floorChangeLocked applies a change of a floor key seen by the state
// watch; mu must be held.
func (cl *clusterSpace) floorChangeLocked(e cluster.Entry) {
	msg, ok := strings.CutPrefix(e.Key, cluster.FloorKey(""))
	if !ok || msg == "" {
		return
	}
	sp := cl.sp
	if e.Op == cluster.OpDelete {
		sp.floorGoneLocked(msg, e.Revision)
		return
	}
	c, err := cluster.DecodeClaim(e.Value)
	if err != nil {
		sp.srv.opts.Logger.Warn("cluster: bad floor claim", "space", sp.id, "key", e.Key, "err", err)
		return
	}
	if !sp.srv.now().Before(c.Expires) {
		return
	}
	c.Revision = e.Revision
	sp.floorSetLocked(msg, c)
}

// floorClearLocked removes c, answered or left by its holder here, from the
// cluster: a delete conditioned on the revision the watch saw, so that a
// newer claim stays. mu must be held.
func (cl *clusterSpace) floorClearLocked(msg string, c *claim) {
	if c.rev == 0 {
		return // not seen by the watch yet: it expires with its TTL
	}
	cl.w.Enqueue(clusterlink.Op{Key: cluster.FloorKey(msg), Rev: c.rev, Del: true})
}
