package clusterlink

// A space's presence in the cluster: who is connected to which node.

import (
	"time"

	"github.com/mew-protocol/mew/gateway/cluster"
	"github.com/mew-protocol/mew/protocol"
)

// JoinLocked records a connection of participant to this node (runtimeID:
// the id it connected as; info: what welcomes list of it) in the cluster's
// presence, and returns the connection's name for LeaveLocked and
// RefreshLocked.
func (l *Link) JoinLocked(participant, runtimeID string, info []byte, now time.Time) (conn string) {
	m := cluster.Member{
		Participant: participant, Node: l.node.ID(), Conn: l.node.ID() + ":" + protocol.NewID(),
		RuntimeID: runtimeID, Since: now.Round(0), Info: info,
	}
	l.conns[m.Conn] = m
	delete(l.remote, participant)
	l.w.Enqueue(Op{Join: &m})
	return m.Conn
}

// LeaveLocked removes connection conn from the cluster's presence, if its
// entry is still this node's.
func (l *Link) LeaveLocked(conn string) {
	m, ok := l.conns[conn]
	if !ok {
		return
	}
	delete(l.conns, conn)
	l.w.Enqueue(Op{Leave: [2]string{m.Participant, m.Conn}})
}

// RefreshLocked writes conn's presence again with new info (its
// capabilities changed).
func (l *Link) RefreshLocked(conn string, info []byte) {
	m, ok := l.conns[conn]
	if !ok {
		return
	}
	m.Info = info
	l.conns[conn] = m
	l.w.Enqueue(Op{Join: &m})
}

// RemoteLocked is participant's entry when it is connected to another node.
func (l *Link) RemoteLocked(participant string) (cluster.Member, bool) {
	m, ok := l.remote[participant]
	return m, ok
}

// RemoteByIDLocked names the participant connected to another node under
// id, its logical name or its runtime id there.
func (l *Link) RemoteByIDLocked(id string) (participant string, ok bool) {
	if r, ok := l.remote[id]; ok {
		return r.Participant, true
	}
	for _, r := range l.remote {
		if r.RuntimeID == id {
			return r.Participant, true
		}
	}
	return "", false
}

// ParticipantsLocked lists those connected to other nodes, for a welcome.
func (l *Link) ParticipantsLocked() []protocol.ParticipantInfo {
	return l.remote.Infos(l.core.ConnectedLocked) // connected here meanwhile: its entry is on its way
}

// presenceChange applies a change of the space's presence: a participant
// connected to another node (replacing its connection here, if any), or
// gone from it.
func (l *Link) presenceChange(e cluster.Entry) {
	l.core.Lock()
	defer l.core.Unlock()
	if e.Op == cluster.OpDelete {
		m, ok := l.remote[e.Key]
		if !ok {
			return
		}
		delete(l.remote, e.Key)
		l.core.RemoteLeftLocked(m.Participant, m.RuntimeID, Info(m).ID, l.streams != nil)
		return
	}
	m, err := cluster.DecodeMember(e.Value)
	if err != nil {
		l.bad("presence entry", e, err)
		return
	}
	if m.Node == l.node.ID() {
		delete(l.remote, m.Participant)
		return
	}
	if conn, ok := l.core.HereLocked(m.Participant); ok {
		// One logical participant, one connection in the cluster: the one
		// made later replaces the other. Two connections made at once on
		// two nodes may land their entries in either order; both nodes
		// compare the same two entries, so exactly one connection stays.
		if mine, ok := l.conns[conn]; ok && Newer(mine, m) {
			l.w.Enqueue(Op{Join: &mine}) // ours is the later one: put it back
			return
		}
		delete(l.conns, conn) // its entry is already the other node's
		l.core.ReplacedLocked(m.Participant)
	}
	prev, had := l.remote[m.Participant]
	l.remote[m.Participant] = m
	l.core.RemoteJoinedLocked(m.Participant, Info(m), !had || prev.Conn != m.Conn)
}
