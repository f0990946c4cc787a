package clusterlink

// Floor control across nodes. The claim of each message is one State key,
// arbitrated by compare-and-swap (cluster.ClaimFloor) with the floor's
// rule; the core's table of claims is then the node's copy of those keys,
// kept by its own claims and by the state watch. A claimant that loses is
// told to yield by the node it claimed on; a holder displaced by a claim
// made on another node is told by its own node, when the watch shows the
// key changing to a claim that is not its.

import (
	"context"
	"strings"
	"time"

	"github.com/mew-protocol/mew/gateway/cluster"
)

// Arbitrate settles claim c of the floor of msg (its key lives ttl) by
// compare-and-swap and tells its holder, if it lost, to yield. Not called
// with the lock held: it waits for the fabric.
func (l *Link) Arbitrate(msg string, c cluster.Claim, ttl time.Duration, now time.Time) {
	ctx, cancel := context.WithTimeout(l.ctx, OpTimeout)
	defer cancel()
	// This node's earlier changes first: a claim its holder answered or
	// left here is gone from the fabric before this one is judged.
	l.w.Flush(ctx)
	w, _, err := cluster.ClaimFloor(ctx, l.node.State(), l.space, msg, c, ttl, now)
	if err != nil {
		// Advisory: the claim is relayed all the same, but no one is told
		// to yield. The node's Err, if set, refuses what comes next.
		l.log.Warn("cluster: floor claim not arbitrated", "space", l.space, "message", msg, "err", err)
		return
	}
	l.core.Lock()
	defer l.core.Unlock()
	if w.Holder != c.Holder {
		l.core.YieldLocked(msg, c, w)
	}
	l.core.FloorSetLocked(msg, w)
}

// ClaimGoneLocked removes the claim of msg, answered or left by its holder
// here, from the cluster: a delete conditioned on rev, the revision the
// watch saw, so that a newer claim stays. rev 0 (not seen yet): the claim
// expires with its TTL.
func (l *Link) ClaimGoneLocked(msg string, rev uint64) {
	if rev == 0 {
		return
	}
	l.w.Enqueue(Op{Key: cluster.FloorKey(msg), Rev: rev, Del: true})
}

// floorChangeLocked applies a change of a floor key seen by the state
// watch.
func (l *Link) floorChangeLocked(e cluster.Entry) {
	msg, ok := strings.CutPrefix(e.Key, cluster.FloorKey(""))
	if !ok || msg == "" {
		return
	}
	if e.Op == cluster.OpDelete {
		l.core.FloorGoneLocked(msg, e.Revision)
		return
	}
	c, err := cluster.DecodeClaim(e.Value)
	if err != nil {
		l.bad("floor claim", e, err)
		return
	}
	if !l.opts.Now().Before(c.Expires) {
		return
	}
	c.Revision = e.Revision
	l.core.FloorSetLocked(msg, c)
}
