package gateway

// A space's runtime grants, controls and aliases in the cluster's State, and
// the changes other nodes make to them.

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/mew-protocol/mew/gateway/cluster"
	"github.com/mew-protocol/mew/gateway/internal/clusterlink"
)

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
	cl.w.Put(cluster.GrantKey(m.name, g.id), b, grantTTL(g, cl.sp.srv.now()))
}

// grantGoneLocked removes a grant that ended here by its own rule (expiry,
// a broken link): every node settles the same way, and deleting twice is
// harmless. mu must be held.
func (cl *clusterSpace) grantGoneLocked(m *member, g grant) {
	cl.w.Put(cluster.GrantKey(m.name, g.id), nil, 0)
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
			cl.w.Put(cluster.GrantKey(m.name, g.id), nil, 0)
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
	cl.w.Put(cluster.ControlKey(m.name), b, 0)
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
	if !sp.remoteControlLocked(c) {
		cl.orphanLocked(c.Participant, e)
	}
}

// stateChange applies a change of the space's State made by another node.
func (cl *clusterSpace) stateChange(e cluster.Entry) {
	kind := cluster.KeyKind(e.Key)
	if kind != "grant" && kind != "control" && kind != "invite" && kind != "floor" && kind != "alias" && kind != "approval" {
		return // streams have their own watcher
	}
	sp := cl.sp
	sp.mu.Lock()
	defer sp.mu.Unlock()
	if cl.w.Own(e) {
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
		cl.releaseLocked()
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
	case "approval":
		cl.approvalChangeLocked(e) // cluster_approvals.go
		cl.releaseLocked()
		return
	}
	parts := strings.SplitN(e.Key, "/", 3)
	if len(parts) != 3 {
		return
	}
	who, id := parts[1], parts[2]
	var known, applied bool
	if e.Op == cluster.OpDelete {
		known, applied = sp.remoteGrantGoneLocked(who, id)
	} else {
		rec, err := cluster.DecodeGrant(e.Value)
		if err != nil || rec.ID != id || rec.To != who {
			sp.srv.opts.Logger.Warn("cluster: bad grant", "space", sp.id, "key", e.Key, "err", err)
			return
		}
		known, applied = sp.remoteGrantLocked(rec)
	}
	switch {
	case !known:
		cl.orphanLocked(who, e) // invited, but the invitation is not here yet
	case applied:
		cl.releaseLocked()
	}
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
	cl.w.Enqueue(clusterlink.Op{Key: cluster.AliasKey(id), Value: b, Create: true})
}

// aliasChangeLocked applies a runtime id's binding from State, the first
// stored in the cluster (liveSpace.remoteAliasLocked); mu must be held.
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
	if !sp.remoteAliasLocked(a) {
		cl.orphanLocked(a.Participant, e) // invited, but the invitation is not here yet
	}
}
