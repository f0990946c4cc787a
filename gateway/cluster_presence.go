package gateway

// A space's presence in the cluster: who is connected to which node.

import (
	"encoding/json"

	"github.com/mew-protocol/mew/gateway/cluster"
	"github.com/mew-protocol/mew/gateway/internal/clusterlink"
	"github.com/mew-protocol/mew/protocol"
)

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
	cl.w.Enqueue(clusterlink.Op{Join: &m})
}

// leaveLocked removes s from the cluster's presence, if its entry is still
// s's; mu must be held.
func (cl *clusterSpace) leaveLocked(s *session) {
	m, ok := cl.conns[s]
	if !ok {
		return
	}
	delete(cl.conns, s)
	cl.w.Enqueue(clusterlink.Op{Leave: [2]string{s.m.name, m.Conn}})
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
	cl.w.Enqueue(clusterlink.Op{Join: &m})
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
	return cl.remote.Infos(func(name string) bool {
		m := cl.sp.members[name]
		return m != nil && m.sess != nil // connected here meanwhile; its entry is on its way
	})
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
		sp.remoteLeftLocked(m.Participant, m.RuntimeID, clusterlink.Info(m).ID, cl.streams != nil)
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
	if old := sp.connectedHereLocked(m.Participant); old != nil {
		// One logical participant, one connection in the cluster: the one
		// made later replaces the other. Two connections made at once on
		// two nodes may land their entries in either order; both nodes
		// compare the same two entries, so exactly one connection stays.
		if mine, ok := cl.conns[old]; ok && clusterlink.Newer(mine, m) {
			cl.w.Enqueue(clusterlink.Op{Join: &mine}) // ours is the later one: put it back
			return
		}
		delete(cl.conns, old) // its entry is already the other node's
		sp.replacedLocked(old)
	}
	prev, had := cl.remote[m.Participant]
	cl.remote[m.Participant] = m
	sp.remoteJoinedLocked(m.Participant, clusterlink.Info(m), !had || prev.Conn != m.Conn)
}
