package gateway

// A space's governed proposals (approvals.go) in the cluster's State. Each
// node keeps the whole approval table and enforces it on its own
// participants; what changes it is stored under keys no node overwrites:
//
//   - approval/D: the proposal, stored by the node that accepted it;
//   - approval/D/vN/A: approver A's approval in phase N, by A's node;
//   - approval/D/eN: the end of phase N, by whichever node stored one
//     first (an approval completing the quorum, a rejection, a withdrawal,
//     the deadline, a fulfilment), so that the nodes agree on it.
//
// (D is a digest of the proposal's id: cluster.ApprovalKey.) Approvals are
// a set, so a node counts one at once, and the others when their watch
// brings it; an end is applied by every node, its own included, only when
// the watch brings the one stored. Each node announces every change to its
// own participants; the announcement of the node that made the change is
// the one in the cluster's history.

import (
	"strings"
	"time"

	"github.com/mew-protocol/mew/gateway/cluster"
	"github.com/mew-protocol/mew/gateway/internal/clusterlink"
	"github.com/mew-protocol/mew/protocol"
)

// approvalTTL is how long the cluster keeps a governed proposal's keys: a
// node started later no longer learns of a proposal older than that.
const approvalTTL = 7 * 24 * time.Hour

// approvalLocked stores a proposal governed here; mu must be held.
func (cl *clusterSpace) approvalLocked(a *approval) {
	createLocked(cl, cluster.ApprovalKey(a.id), cluster.Approval{
		Proposal: a.id, Rule: a.rule.cfg.Name, Proposer: a.proposer, ProposerName: a.proposerM.name,
		Call: string(a.call), To: a.to, Deadline: a.deadline, Node: cl.node.ID(),
	})
}

// approvalVoteLocked stores an approval counted here; mu must be held.
func (cl *clusterSpace) approvalVoteLocked(a *approval, approver string) {
	createLocked(cl, cluster.ApprovalVoteKey(a.id, a.phase, approver), cluster.ApprovalVote{
		Proposal: a.id, Phase: a.phase, Approver: approver, Node: cl.node.ID(),
	})
}

// approvalEndLocked stores an end of a's phase, unless another node stored
// one first: either way it is applied when the watch brings it. mu must be
// held.
func (cl *clusterSpace) approvalEndLocked(a *approval, e approvalEnd) bool {
	createLocked(cl, cluster.ApprovalEndKey(a.id, e.phase), cluster.ApprovalEnd{
		Proposal: a.id, Phase: e.phase, State: e.state, By: e.by, Message: e.msg, Votes: e.votes,
		Deadline: e.deadline, Node: cl.node.ID(),
	})
	return false
}

// createLocked queues the creation of key with v, which no node
// overwrites; mu must be held.
func createLocked[T cluster.Approval | cluster.ApprovalVote | cluster.ApprovalEnd](cl *clusterSpace, key string, v T) {
	b, err := cluster.Encode(v)
	if err != nil {
		cl.sp.srv.opts.Logger.Error("cluster: encode approval", "space", cl.sp.id, "key", key, "err", err)
		return
	}
	cl.w.Enqueue(clusterlink.Op{Key: key, Value: b, Create: true, TTL: approvalTTL})
}

// approvalChangeLocked applies a key of a governed proposal from State;
// mu must be held.
func (cl *clusterSpace) approvalChangeLocked(e cluster.Entry) {
	if e.Op != cluster.OpPut {
		return // expired: the proposal settled long ago
	}
	sp := cl.sp
	d := cluster.ApprovalOf(e.Key)
	rest := strings.TrimPrefix(e.Key, cluster.KeyKind(e.Key)+"/"+d)
	bad := func(err any) {
		if err == nil { // a record that decoded but names another key, or no end its phase may have
			err = "the record does not fit its key"
		}
		sp.srv.opts.Logger.Warn("cluster: bad approval record", "space", sp.id, "key", e.Key, "err", err)
	}
	self := cl.node.ID()
	var known bool
	switch {
	case rest == "":
		rec, err := cluster.DecodeApproval(e.Value)
		if err != nil || cluster.ApprovalKey(rec.Proposal) != e.Key {
			bad(err)
			return
		}
		switch sp.remoteGovernedLocked(rec, rec.Node == self) {
		case proposerUnknown:
			cl.orphanLocked(rec.ProposerName, e) // invited, but the invitation is not here yet
		case governed:
			cl.adoptLocked(approvalOrphan(d))
		}
		return
	case strings.HasPrefix(rest, "/v"):
		v, err := cluster.DecodeApprovalVote(e.Value)
		if err != nil || cluster.ApprovalVoteKey(v.Proposal, v.Phase, v.Approver) != e.Key {
			bad(err)
			return
		}
		known = sp.remoteVoteLocked(v, v.Node == self)
	case strings.HasPrefix(rest, "/e"):
		en, err := cluster.DecodeApprovalEnd(e.Value)
		if err != nil || cluster.ApprovalEndKey(en.Proposal, en.Phase) != e.Key || !endable(en) {
			bad(err)
			return
		}
		known = sp.remoteEndLocked(en, en.Node == self)
	default:
		bad("unknown key")
		return
	}
	if !known {
		cl.orphanLocked(approvalOrphan(d), e) // its proposal's record is not here yet
	}
}

// endable reports whether en is an end its phase may have.
func endable(en cluster.ApprovalEnd) bool {
	switch en.State {
	case protocol.ApprovalApproved, protocol.ApprovalTimedOut:
		return en.Phase < 2
	case protocol.ApprovalEscalated:
		return en.Phase == 0
	case protocol.ApprovalRejected, protocol.ApprovalWithdrawn:
		return true
	case protocol.ApprovalFulfilled:
		return en.Phase == 2
	}
	return false
}

// approvalOrphan names, among the orphans kept by participant, the
// changes waiting for the proposal of digest d: no participant's name
// holds a NUL.
func approvalOrphan(d string) string { return "\x00approval " + d }
