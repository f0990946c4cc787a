package gateway

// Invitations shared through the cluster's State.

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/mew-protocol/mew/gateway/cluster"
	"github.com/mew-protocol/mew/gateway/internal/clusterlink"
)

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
	ctx, cancel := context.WithTimeout(cl.ctx, clusterlink.OpTimeout)
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
	if sp.remoteInviteLocked(inv) {
		cl.adoptLocked(id)
	}
}

// adoptLocked applies the changes kept for who (orphanLocked) now that it
// is known here; mu must be held.
func (cl *clusterSpace) adoptLocked(who string) {
	for _, o := range cl.orphans.Take(who) {
		cl.stateChangeLocked(cluster.KeyKind(o.Key), o)
	}
}

// orphanLocked keeps a grant or control change naming participant, not
// known here yet, until its invitation arrives (or, under a name no
// participant has, a change of a governed proposal not known here yet);
// mu must be held.
func (cl *clusterSpace) orphanLocked(participant string, e cluster.Entry) {
	if _, ok := cl.sp.members[participant]; ok {
		return
	}
	if !cl.orphans.Keep(participant, e) {
		cl.sp.srv.opts.Logger.Warn("cluster: change for an unknown participant dropped", "space", cl.sp.id, "key", e.Key)
	}
}
