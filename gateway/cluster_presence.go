package gateway

// A space's presence in the cluster: who is connected to which node.

import (
	"encoding/json"
	"slices"

	"github.com/mew-protocol/mew/gateway/cluster"
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
