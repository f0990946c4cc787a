package clusterlink

// A space's runtime grants, controls, aliases, invitations and governed
// proposals in the cluster's State: shared from here, and applied when
// other nodes change them.

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/mew-protocol/mew/gateway/cluster"
	"github.com/mew-protocol/mew/protocol"
)

// ApprovalTTL is how long the cluster keeps a governed proposal's keys: a
// node started later no longer learns of a proposal older than that.
const ApprovalTTL = 7 * 24 * time.Hour

// share queues the State write of record v under key, made here: tracked
// as the node's own (Writer.Put), or with create a creation no node
// overwrites (the first stored in the cluster wins). A record that does
// not encode is logged and not shared. The lock is held.
func share[T cluster.Grant | cluster.Control | cluster.Alias | cluster.Approval | cluster.ApprovalVote | cluster.ApprovalEnd](l *Link, key string, v T, ttl time.Duration, create bool) {
	b, err := cluster.Encode(v)
	if err != nil {
		l.log.Error("cluster: encode", "space", l.space, "key", key, "err", err)
		return
	}
	if create {
		l.w.Enqueue(Op{Key: key, Value: b, Create: true, TTL: ttl})
		return
	}
	l.w.Put(key, b, ttl)
}

// GrantLocked shares a grant made here (ttl: how long its key lives).
func (l *Link) GrantLocked(rec cluster.Grant, ttl time.Duration) {
	share(l, cluster.GrantKey(rec.To, rec.ID), rec, ttl, false)
}

// GrantGoneLocked shares that participant's grant id ended here: by a
// revoke, or by its own rule (expiry, a broken link), which every node
// settles the same way; deleting twice is harmless.
func (l *Link) GrantGoneLocked(participant, id string) {
	l.w.Put(cluster.GrantKey(participant, id), nil, 0)
}

// ControlLocked shares a participant's pause, shutdown and kick state after
// a change made here.
func (l *Link) ControlLocked(c cluster.Control) {
	share(l, cluster.ControlKey(c.Participant), c, 0, false)
}

// AliasLocked shares the binding of runtime id to participant, made here by
// its first use: in the cluster the first binding stored wins.
func (l *Link) AliasLocked(id, participant string) {
	share(l, cluster.AliasKey(id), cluster.Alias{ID: id, Participant: participant}, 0, true)
}

// ApprovalLocked stores a proposal governed here, ApprovalVoteLocked an
// approval counted here, ApprovalEndLocked an end of a phase asked for
// here: none is overwritten, and an end is applied, here too, when the
// watch brings the one stored first (the node field is this node's).
func (l *Link) ApprovalLocked(rec cluster.Approval) {
	rec.Node = l.node.ID()
	share(l, cluster.ApprovalKey(rec.Proposal), rec, ApprovalTTL, true)
}

// ApprovalVoteLocked: see ApprovalLocked.
func (l *Link) ApprovalVoteLocked(v cluster.ApprovalVote) {
	v.Node = l.node.ID()
	share(l, cluster.ApprovalVoteKey(v.Proposal, v.Phase, v.Approver), v, ApprovalTTL, true)
}

// ApprovalEndLocked: see ApprovalLocked.
func (l *Link) ApprovalEndLocked(e cluster.ApprovalEnd) {
	e.Node = l.node.ID()
	share(l, cluster.ApprovalEndKey(e.Proposal, e.Phase), e, ApprovalTTL, true)
}

// ShareInvite creates rec's invitation in State, unless another node
// created one first (taken). Only the token's hash leaves the node. Not
// called with the lock held: it waits for the fabric. When it started the
// creation (started), the caller then calls InvitedLocked.
func (l *Link) ShareInvite(rec cluster.Invite) (taken, started bool, err error) {
	b, err := cluster.Encode(rec)
	if err != nil {
		return false, false, err
	}
	id := rec.Participant
	l.core.Lock()
	if _, busy := l.inviting[id]; busy {
		l.core.Unlock()
		return true, false, nil // another invitation of id on this node is under way
	}
	l.inviting[id] = nil
	l.core.Unlock()
	if err := l.node.Err(); err != nil {
		return false, true, err
	}
	ctx, cancel := context.WithTimeout(l.ctx, OpTimeout)
	defer cancel()
	_, err = l.node.State().Put(ctx, l.space, cluster.InviteKey(id), b, cluster.PutOptions{IfAbsent: true})
	switch {
	case err == nil:
		return false, true, nil
	case errors.Is(err, cluster.ErrConflict):
		return true, true, nil
	}
	return false, true, err
}

// InvitedLocked ends the creation of id's invitation started by
// ShareInvite: if ours lost (lost), the changes the watch delivered
// meanwhile — the winner's invitation — are applied now; if ours won, they
// were its own echo. A no-op when no invitation of id was under way.
func (l *Link) InvitedLocked(id string, lost bool) {
	held, ok := l.inviting[id]
	if !ok {
		return
	}
	delete(l.inviting, id)
	if !lost {
		return
	}
	for _, e := range held {
		l.inviteChangeLocked(e)
	}
}

// stateChange applies a change of the space's State made by another node.
func (l *Link) stateChange(e cluster.Entry) {
	kind := cluster.KeyKind(e.Key)
	if kind != "grant" && kind != "control" && kind != "invite" && kind != "floor" && kind != "alias" && kind != "approval" {
		return // streams have their own watcher
	}
	l.core.Lock()
	defer l.core.Unlock()
	if l.w.Own(e) {
		return
	}
	l.stateChangeLocked(kind, e)
}

// stateChangeLocked applies a change of kind.
func (l *Link) stateChangeLocked(kind string, e cluster.Entry) {
	switch kind {
	case "control":
		l.controlChangeLocked(e)
		l.releaseLocked()
	case "invite":
		l.inviteChangeLocked(e)
	case "floor":
		l.floorChangeLocked(e)
	case "alias":
		l.aliasChangeLocked(e)
	case "approval":
		l.approvalChangeLocked(e)
		l.releaseLocked()
	case "grant":
		l.grantChangeLocked(e)
	}
}

func (l *Link) bad(what string, e cluster.Entry, err any) {
	l.log.Warn("cluster: bad "+what, "space", l.space, "key", e.Key, "err", err)
}

// grantChangeLocked applies a grant made or ended on another node.
func (l *Link) grantChangeLocked(e cluster.Entry) {
	parts := strings.SplitN(e.Key, "/", 3)
	if len(parts) != 3 {
		return
	}
	who, id := parts[1], parts[2]
	var known, applied bool
	if e.Op == cluster.OpDelete {
		known, applied = l.core.RemoteGrantGoneLocked(who, id)
	} else {
		rec, err := cluster.DecodeGrant(e.Value)
		if err != nil || rec.ID != id || rec.To != who {
			l.bad("grant", e, err)
			return
		}
		known, applied = l.core.RemoteGrantLocked(rec)
	}
	switch {
	case !known:
		l.orphanLocked(who, e) // invited, but the invitation is not here yet
	case applied:
		l.releaseLocked()
	}
}

// controlChangeLocked applies a pause, resume, shutdown or kick made on
// another node.
func (l *Link) controlChangeLocked(e cluster.Entry) {
	if e.Op != cluster.OpPut {
		return
	}
	c, err := cluster.DecodeControl(e.Value)
	if err != nil || cluster.ControlKey(c.Participant) != e.Key {
		l.bad("control record", e, err)
		return
	}
	if !l.core.RemoteControlLocked(c) {
		l.orphanLocked(c.Participant, e)
	}
}

// aliasChangeLocked applies a runtime id's binding, the first stored in
// the cluster.
func (l *Link) aliasChangeLocked(e cluster.Entry) {
	if e.Op != cluster.OpPut {
		return // a binding lasts; a cleared key changes nothing until restart
	}
	a, err := cluster.DecodeAlias(e.Value)
	if err == nil && cluster.AliasKey(a.ID) != e.Key {
		err = fmt.Errorf("%w: the key does not name runtime id %q", cluster.ErrInvalid, a.ID)
	}
	if err != nil {
		l.bad("alias", e, err)
		return
	}
	if !l.core.RemoteAliasLocked(a) {
		l.orphanLocked(a.Participant, e) // invited, but the invitation is not here yet
	}
}

// inviteChangeLocked applies an invitation made on another node. An
// invitation is never withdrawn (a deleted key changes nothing; a kick is
// the way out).
func (l *Link) inviteChangeLocked(e cluster.Entry) {
	if e.Op != cluster.OpPut {
		return
	}
	inv, err := cluster.DecodeInvite(e.Value)
	if err == nil && cluster.InviteKey(inv.Participant) != e.Key {
		err = fmt.Errorf("%w: the key does not name participant %q", cluster.ErrInvalid, inv.Participant)
	}
	if err != nil {
		l.bad("invitation", e, err)
		return
	}
	id := inv.Participant
	if held, busy := l.inviting[id]; busy {
		l.inviting[id] = append(held, e) // ours is being created: decided when it is
		return
	}
	if l.core.RemoteInviteLocked(inv) {
		l.adoptLocked(id)
	}
}

// approvalChangeLocked applies a key of a governed proposal: the proposal
// (approval/D), an approval (approval/D/vN/A) or the end of a phase
// (approval/D/eN).
func (l *Link) approvalChangeLocked(e cluster.Entry) {
	if e.Op != cluster.OpPut {
		return // expired: the proposal settled long ago
	}
	d := cluster.ApprovalOf(e.Key)
	rest := strings.TrimPrefix(e.Key, cluster.KeyKind(e.Key)+"/"+d)
	const misfit = "the record does not fit its key" // decoded, but names another key, or no end its phase may have
	self := l.node.ID()
	var known bool
	switch {
	case rest == "":
		rec, err := cluster.DecodeApproval(e.Value)
		if err != nil || cluster.ApprovalKey(rec.Proposal) != e.Key {
			l.bad("approval record", e, cmpErr(err, misfit))
			return
		}
		switch l.core.RemoteGovernedLocked(rec, rec.Node == self) {
		case ProposerUnknown:
			l.orphanLocked(rec.ProposerName, e) // invited, but the invitation is not here yet
		case GovernedNow:
			l.adoptLocked(approvalOrphan(d))
		}
		return
	case strings.HasPrefix(rest, "/v"):
		v, err := cluster.DecodeApprovalVote(e.Value)
		if err != nil || cluster.ApprovalVoteKey(v.Proposal, v.Phase, v.Approver) != e.Key {
			l.bad("approval record", e, cmpErr(err, misfit))
			return
		}
		known = l.core.RemoteVoteLocked(v, v.Node == self)
	case strings.HasPrefix(rest, "/e"):
		en, err := cluster.DecodeApprovalEnd(e.Value)
		if err != nil || cluster.ApprovalEndKey(en.Proposal, en.Phase) != e.Key || !Endable(en) {
			l.bad("approval record", e, cmpErr(err, misfit))
			return
		}
		known = l.core.RemoteEndLocked(en, en.Node == self)
	default:
		l.bad("approval record", e, "unknown key")
		return
	}
	if !known {
		l.orphanLocked(approvalOrphan(d), e) // its proposal's record is not here yet
	}
}

func cmpErr(err error, otherwise string) any {
	if err != nil {
		return err
	}
	return otherwise
}

// Endable reports whether en is an end its phase may have.
func Endable(en cluster.ApprovalEnd) bool {
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

// approvalOrphan names, among the orphans, the changes waiting for the
// proposal of digest d: no participant's name holds a NUL.
func approvalOrphan(d string) string { return "\x00approval " + d }

// adoptLocked applies the changes kept for who now that it is known here.
func (l *Link) adoptLocked(who string) {
	for _, o := range l.orphans.Take(who) {
		l.stateChangeLocked(cluster.KeyKind(o.Key), o)
	}
}

// orphanLocked keeps a change naming participant, not known here yet,
// until it is (or, under a name no participant has, a change of a
// governed proposal not known here yet).
func (l *Link) orphanLocked(participant string, e cluster.Entry) {
	if l.core.KnownLocked(participant) {
		return
	}
	if !l.orphans.Keep(participant, e) {
		l.log.Warn("cluster: change for an unknown participant dropped", "space", l.space, "key", e.Key)
	}
}
