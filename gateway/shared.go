package gateway

// A space shared with the other nodes of a cluster (Options.Cluster.Node):
// clusterSpace is its link (link.go's spaceLink), which turns each change
// the core makes into the record the cluster keeps and hands it to the
// space's clusterlink.Link; spaceCore is the core as that Link sees it (the
// space's lock and the core's remote…Locked functions), through which the
// other nodes' changes are applied. The mechanics — the ordered writer, the
// watches, the held envelopes, the streams' log, the polling history — are
// gateway/internal/clusterlink's and gateway/internal/clusterhist's.

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"time"

	"github.com/coder/websocket"

	"github.com/mew-protocol/mew/gateway/cluster"
	"github.com/mew-protocol/mew/gateway/internal/clusterhist"
	"github.com/mew-protocol/mew/gateway/internal/clusterlink"
	"github.com/mew-protocol/mew/protocol"
)

// ErrorClusterUnavailable refuses envelopes of a shared space while the node
// cannot reach the cluster: it would otherwise diverge from the others.
const ErrorClusterUnavailable = "cluster_unavailable"

// clusterSpace is the link of a space served by a cluster.
type clusterSpace struct {
	sp   *liveSpace
	l    *clusterlink.Link
	hist *clusterhist.Writer // the node's, shared by its spaces
}

// clusterStart links every space to opts.Cluster.Node, if set: each
// subscribes to its envelopes and waits for the watches' snapshots, so that
// the node serves with the cluster's current grants and presence.
func (srv *Server) clusterStart() error {
	node := srv.opts.Cluster.Node
	if node == nil {
		return nil
	}
	srv.metrics.registerCluster(node)
	srv.outage = clusterlink.NewOutage(node)
	hw := clusterhist.NewWriter(node, clusterhist.Options{ // one per node
		Max: srv.opts.Cluster.HistoryQueue, Logger: srv.opts.Logger,
		Dropped: func(n int) { srv.metrics.historyDropped.Add(float64(n)) },
	})
	opts := clusterlink.Options{
		Logger: srv.opts.Logger, Now: srv.now, Hist: hw, HistoryBytes: srv.opts.Limits.HistoryBytes,
		Lag:      func(d time.Duration) { srv.metrics.clusterLag.Observe(d.Seconds()) },
		Diverged: srv.metrics.clusterDiverged.Inc,
	}
	for _, sp := range srv.order {
		l, err := clusterlink.New(spaceCore{sp}, node, sp.id, opts)
		if err != nil {
			srv.clusterStop(context.Background())
			hw.Close(context.Background())
			return fmt.Errorf("gateway: space %s: cluster: %w", sp.id, err)
		}
		sp.link = &clusterSpace{sp: sp, l: l, hist: hw}
	}
	return nil
}

// clusterStop writes what is still queued (presence leaves of the
// connections Close ended) and stops every space's link.
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

// A node cut off from its cluster refuses what its participants send
// (clusterSpace.refusal), but a participant that only listens would not
// learn that envelopes from the other nodes no longer reach it. So the
// watchdog tells them when the connection goes, and sends a fresh welcome
// when it is back (the roster may have changed meanwhile). An outage
// shorter than the watchdog's period is seen through the node's reconnect
// counter (cluster.StatsReporter) and announced afterwards.

// Messages of the notices, sent as system/error cluster_unavailable.
const (
	outageNotice = "this gateway node lost its connection to the cluster: envelopes sent on other nodes do not reach you, " +
		"and this node accepts nothing for the space until the connection is back (a new system/welcome will say so); " +
		"reconnecting to another node ends the wait: "
	blipNotice = "this gateway node was cut off from the cluster for a moment and is back: " +
		"envelopes sent on other nodes meanwhile did not reach you (GET /participants/{id}/messages has them)"
)

// clusterOutage compares the node's connection with the last look and tells
// the participants of every space what changed.
func (srv *Server) clusterOutage() {
	node := srv.opts.Cluster.Node
	if node == nil {
		return
	}
	err := node.Err()
	if errors.Is(err, cluster.ErrClosed) {
		return // the server is closing: its connections end anyway
	}
	if err == nil && !srv.clusterCurrent() {
		// Back, but a space has not re-read the state yet: the welcome
		// of the return waits (the spaces refuse meanwhile), and so does
		// this look, which comes again within a second.
		return
	}
	switch srv.outage.Look(err, clusterlink.Reconnects(node)) {
	case clusterlink.Lost:
		srv.opts.Logger.Warn("cluster: connection lost; refusing envelopes of the shared spaces until it is back", "err", err)
		srv.tellLocal(refuse(ErrorClusterUnavailable, outageNotice+err.Error()), false)
	case clusterlink.Back:
		srv.opts.Logger.Info("cluster: connection back")
		srv.tellLocal(nil, true)
	case clusterlink.Blip:
		srv.opts.Logger.Info("cluster: reconnected after a short outage")
		srv.tellLocal(refuse(ErrorClusterUnavailable, blipNotice), true)
	}
}

// tellLocal sends every participant connected to this node, in every
// space, the notice (if any) and then, with welcome, a fresh system/welcome.
func (srv *Server) tellLocal(notice *refusal, welcome bool) {
	for _, sp := range srv.order {
		sp.mu.Lock()
		for _, s := range sp.roster {
			if notice != nil {
				sp.unicastLocked(s, sp.errorEnvelope(s.id, notice))
			}
			if welcome {
				sp.unicastLocked(s, sp.welcomeLocked(s))
			}
		}
		sp.mu.Unlock()
	}
}

// clusterCurrent reports whether every space's copy of the cluster's state
// is current (clusterSpace.current).
func (srv *Server) clusterCurrent() bool {
	for _, sp := range srv.order {
		if !sp.link.current() {
			return false
		}
	}
	return true
}

// --- the link: the core's changes as the cluster's records ---

// refusal is the refusal of envelopes while the node cannot reach the
// cluster (or its copy of the space is not current), or nil.
func (cl *clusterSpace) refusal() *refusal {
	if err := cl.l.Refusal(); err != nil {
		r := refuse(ErrorClusterUnavailable, "this gateway node cannot reach its cluster, so it accepts nothing for this space: "+err.Error())
		r.status = http.StatusServiceUnavailable
		return r
	}
	return nil
}

func (cl *clusterSpace) current() bool             { return cl.l.Current() }
func (cl *clusterSpace) close(ctx context.Context) { cl.l.Close(ctx) }

// resumeSkew: envelopes accepted on different nodes may have been
// delivered in another order on the node a resuming client left.
func (cl *clusterSpace) resumeSkew() time.Duration { return resumeSkew }

// speaksForLocked: the node m is connected to announces what the gateway
// does to it.
func (cl *clusterSpace) speaksForLocked(m *member) bool { return m.sess != nil }

func (cl *clusterSpace) deliveredLocked(d delivery) {
	var sender string
	if d.src != nil {
		sender = d.src.name
	}
	cl.l.DeliveredLocked(d.data, d.id, d.at, d.remote, sender)
}

// presenceInfo is what welcomes list of s.
func presenceInfo(s *session) []byte {
	info, _ := json.Marshal(protocol.ParticipantInfo{ID: s.id, Capabilities: s.m.view().list})
	return info
}

func (cl *clusterSpace) joinLocked(s *session) {
	if s.transport == transportVirtual {
		return // an output_log participant is each node's own
	}
	s.linkConn = cl.l.JoinLocked(s.m.name, s.id, presenceInfo(s), cl.sp.srv.now())
}

func (cl *clusterSpace) leaveLocked(s *session) {
	if s.linkConn != "" {
		cl.l.LeaveLocked(s.linkConn)
	}
}

func (cl *clusterSpace) infoLocked(s *session) {
	if s.linkConn != "" {
		cl.l.RefreshLocked(s.linkConn, presenceInfo(s))
	}
}

func (cl *clusterSpace) aliasLocked(id string, m *member) { cl.l.AliasLocked(id, m.name) }

func (cl *clusterSpace) connectedElsewhereLocked(m *member) bool {
	_, ok := cl.l.RemoteLocked(m.name)
	return ok
}

func (cl *clusterSpace) participantsLocked() []protocol.ParticipantInfo {
	return cl.l.ParticipantsLocked()
}

// participantLocked fills in GET /participants' view of a member connected
// to another node.
func (cl *clusterSpace) participantLocked(m *member, v *participantView) {
	r, ok := cl.l.RemoteLocked(m.name)
	if !ok {
		return
	}
	v.Connected, v.Node = true, r.Node
	if r.RuntimeID != "" && r.RuntimeID != m.name {
		v.ID, v.Name = r.RuntimeID, m.name
	}
}

func (cl *clusterSpace) remoteMemberLocked(id string) *member {
	if p, ok := cl.l.RemoteByIDLocked(id); ok {
		return cl.sp.members[p]
	}
	return nil
}

// grantTTL is how long a grant's key lives: past its expiry (each node
// expires it itself, on time), so that the key does not outlive it long.
func grantTTL(g grant, now time.Time) time.Duration {
	if g.expires.IsZero() {
		return 0
	}
	return max(g.expires.Sub(now), 0) + time.Second
}

func (cl *clusterSpace) grantLocked(m *member, g grant) {
	links := make([]cluster.GrantLink, len(g.links))
	for i, l := range g.links {
		links[i] = cluster.GrantLink{Pattern: l.pattern, Grant: l.grantID, Entry: l.entry}
	}
	rec := cluster.Grant{ID: g.id, To: m.name, From: g.from, At: g.at, Expires: g.expires, Capabilities: g.caps, Session: g.session, Links: links}
	cl.l.GrantLocked(rec, grantTTL(g, cl.sp.srv.now()))
}

func (cl *clusterSpace) grantGoneLocked(m *member, g grant) { cl.l.GrantGoneLocked(m.name, g.id) }

// grantsChangedLocked shares a revoke made here: grants gone are deleted,
// grants that lost patterns are written again.
func (cl *clusterSpace) grantsChangedLocked(m *member, before []grant) {
	for _, g := range before {
		i := slices.IndexFunc(m.grants, func(k grant) bool { return k.id == g.id })
		switch {
		case i < 0:
			cl.l.GrantGoneLocked(m.name, g.id)
		case len(m.grants[i].caps) != len(g.caps):
			cl.grantLocked(m, m.grants[i])
		}
	}
}

// controlLocked shares m's pause, shutdown and kick state (reason: the
// kick's).
func (cl *clusterSpace) controlLocked(m *member, reason string) {
	c := controlOf(m)
	c.Reason = reason
	cl.l.ControlLocked(c)
}

// shareInvite creates the invitation of participant id in the cluster;
// only the token's SHA-256 leaves the node. Not called with mu held.
func (cl *clusterSpace) shareInvite(from, id, tok string, caps []json.RawMessage, reason string, now time.Time) (taken, started bool, err error) {
	h := tokenKey([]byte(tok))
	return cl.l.ShareInvite(cluster.Invite{
		Participant: id, From: from, At: now.Round(0), TokenHash: h[:], Capabilities: caps, Reason: reason,
	})
}

func (cl *clusterSpace) invitedLocked(id string, lost bool) { cl.l.InvitedLocked(id, lost) }

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
	c := cluster.Claim{Holder: o.m.name, ID: o.id, StartedAt: startedAt}
	return outcome{relay: true, then: func() { cl.l.Arbitrate(msg, c, sp.floorTTL(), now) }}, nil
}

func (cl *clusterSpace) floorClearLocked(msg string, c *claim) { cl.l.ClaimGoneLocked(msg, c.rev) }

// poll answers GET /participants/{id}/messages from the cluster's history
// and this node's private answers.
func (cl *clusterSpace) poll(w http.ResponseWriter, r *http.Request, m *member, after time.Time, cursor string, limit int) {
	msgs, next, err := cl.l.Poll(r.Context(), m.name, cursor, after, limit)
	switch {
	case errors.Is(err, clusterlink.ErrBadCursor):
		writeError(w, http.StatusBadRequest, "invalid_request", err.Error())
	case err != nil:
		writeError(w, http.StatusServiceUnavailable, ErrorClusterUnavailable, err.Error())
	default:
		writeJSON(w, http.StatusOK, struct {
			Messages []json.RawMessage `json:"messages"`
			Cursor   string            `json:"cursor"`
		}{msgs, next})
	}
}

// streamNumber takes the next stream number of the space in the cluster,
// once check passes.
func (cl *clusterSpace) streamNumber(check func() *refusal) (uint64, *refusal) {
	if rf := check(); rf != nil {
		return 0, rf
	}
	n, err := cl.l.StreamNumber()
	if err != nil {
		r := refuse(ErrorClusterUnavailable, "cannot number the stream in the cluster: "+err.Error())
		r.status = http.StatusServiceUnavailable
		return 0, r
	}
	return n, nil
}

// streamChangedLocked shares a change of st made here: op, the writers
// before it (for writers and transfer), the id of the participant's
// envelope that made it (cause), and the gateway's announcement of it.
func (cl *clusterSpace) streamChangedLocked(op string, st *stream, before []string, cause string, announce []byte) {
	c := cluster.StreamChange{Op: op, Stream: streamRecord(op, st), Cause: cause, Announce: announce}
	if op == cluster.StreamOpWriters || op == cluster.StreamOpTransfer {
		for _, w := range before {
			if !slices.Contains(st.writers, w) {
				c.Remove = append(c.Remove, w)
			}
		}
		for _, w := range st.writers {
			if !slices.Contains(before, w) {
				c.Add = append(c.Add, w)
			}
		}
	}
	cl.l.StreamChangedLocked(c)
}

func (cl *clusterSpace) streamFrameLocked(st *stream, writer string, frame []byte) {
	cl.l.StreamFrameLocked(st.id, writer, frame)
}

func (cl *clusterSpace) approvalLocked(a *approval) {
	cl.l.ApprovalLocked(cluster.Approval{
		Proposal: a.id, Rule: a.rule.cfg.Name, Proposer: a.proposer, ProposerName: a.proposerM.name,
		Call: string(a.call), To: a.to, Deadline: a.deadline,
	})
}

func (cl *clusterSpace) approvalVoteLocked(a *approval, approver string) {
	cl.l.ApprovalVoteLocked(cluster.ApprovalVote{Proposal: a.id, Phase: a.phase, Approver: approver})
}

// approvalEndLocked asks the cluster for an end of a's phase: the first
// stored wins, and every node, this one too, applies it when the watch
// brings it.
func (cl *clusterSpace) approvalEndLocked(a *approval, e approvalEnd) bool {
	cl.l.ApprovalEndLocked(cluster.ApprovalEnd{
		Proposal: a.id, Phase: e.phase, State: e.state, By: e.by, Message: e.msg, Votes: e.votes, Deadline: e.deadline,
	})
	return false
}

// --- the core as the link sees it ---

// spaceCore is a space's core as its clusterlink.Link sees it: the
// space's lock and the functions that apply what other nodes share.
type spaceCore struct{ sp *liveSpace }

func (c spaceCore) Lock()   { c.sp.mu.Lock() }
func (c spaceCore) Unlock() { c.sp.mu.Unlock() }

func (c spaceCore) KnownLocked(participant string) bool {
	_, ok := c.sp.members[participant]
	return ok
}

func (c spaceCore) HereLocked(participant string) (string, bool) {
	if s := c.sp.connectedHereLocked(participant); s != nil {
		return s.linkConn, true
	}
	return "", false
}

func (c spaceCore) ConnectedLocked(participant string) bool {
	m := c.sp.members[participant]
	return m != nil && m.sess != nil
}

func (c spaceCore) ReplacedLocked(participant string) {
	if s := c.sp.connectedHereLocked(participant); s != nil {
		c.sp.replacedLocked(s)
	}
}

func (c spaceCore) RemoteJoinedLocked(participant string, info protocol.ParticipantInfo, announce bool) {
	c.sp.remoteJoinedLocked(participant, info, announce)
}

func (c spaceCore) RemoteLeftLocked(participant, runtimeID, id string, streams bool) {
	c.sp.remoteLeftLocked(participant, runtimeID, id, streams)
}

func (c spaceCore) RemoteGrantLocked(rec cluster.Grant) (bool, bool) {
	return c.sp.remoteGrantLocked(rec)
}

func (c spaceCore) RemoteGrantGoneLocked(participant, id string) (bool, bool) {
	return c.sp.remoteGrantGoneLocked(participant, id)
}

func (c spaceCore) RemoteControlLocked(ctl cluster.Control) bool {
	return c.sp.remoteControlLocked(ctl)
}
func (c spaceCore) RemoteAliasLocked(a cluster.Alias) bool     { return c.sp.remoteAliasLocked(a) }
func (c spaceCore) RemoteInviteLocked(inv cluster.Invite) bool { return c.sp.remoteInviteLocked(inv) }

func (c spaceCore) RemoteGovernedLocked(rec cluster.Approval, self bool) clusterlink.Governed {
	return c.sp.remoteGovernedLocked(rec, self)
}

func (c spaceCore) RemoteVoteLocked(v cluster.ApprovalVote, self bool) bool {
	return c.sp.remoteVoteLocked(v, self)
}

func (c spaceCore) RemoteEndLocked(en cluster.ApprovalEnd, self bool) bool {
	return c.sp.remoteEndLocked(en, self)
}

func (c spaceCore) FloorSetLocked(msg string, cl cluster.Claim) { c.sp.floorSetLocked(msg, cl) }
func (c spaceCore) FloorGoneLocked(msg string, rev uint64)      { c.sp.floorGoneLocked(msg, rev) }

// YieldLocked tells the holder of lost, a claim made here, that winner has
// the floor of msg.
func (c spaceCore) YieldLocked(msg string, lost, winner cluster.Claim) {
	m := c.sp.members[lost.Holder]
	if m == nil {
		return
	}
	c.sp.yieldLocked(&claim{holder: m, id: lost.ID, startedAt: lost.StartedAt}, &claim{id: winner.ID, startedAt: winner.StartedAt}, msg)
}

// NoteChatLocked records, addressed or not, another node's chat message,
// so that a claim made here on it is judged as on its node.
func (c spaceCore) NoteChatLocked(env *protocol.Envelope) {
	if c.sp.floorEnabled() {
		c.sp.floor.note(env.ID, len(env.To) > 0)
	}
}

func (c spaceCore) ApplyStreamChangeLocked(ch cluster.StreamChange, announce bool) (bool, bool) {
	return c.sp.applyStreamChangeLocked(ch, announce)
}

// DeliverFrameLocked queues another node's frame for the local connections
// the stream's frames go to. A frame of a stream not open here is dropped:
// its close is applied, or it never existed.
func (c spaceCore) DeliverFrameLocked(id, writer string, data []byte) {
	sp := c.sp
	st := sp.streams.byID[id]
	if st == nil {
		sp.srv.opts.Logger.Debug("cluster: frame of a stream not open here; dropped", "space", sp.id, "stream", id)
		return
	}
	sp.deliverFrameLocked(st, frame{data: data, binary: true, src: sp.members[writer]})
}

func (c spaceCore) Ready(env *protocol.Envelope, applied func(string) bool) func() bool {
	return c.sp.remoteReady(env, applied)
}

func (c spaceCore) DeliverRemoteLocked(data []byte, env *protocol.Envelope, at time.Time) {
	c.sp.broadcastLocked(delivery{data: data, id: env.ID, kind: env.Kind, at: at, to: env.To, remote: true}, nil) // src nil: never published again
}

func (c spaceCore) NotSharedLocked(list []clusterlink.Published, err error) {
	c.sp.notSharedLocked(list, err)
}

func (c spaceCore) SendAwayLocked(code websocket.StatusCode, reason string) {
	c.sp.sendAwayLocked(code, reason)
}

func (c spaceCore) PrivateLocked(participant string, after time.Time, from uint64, limit int) ([]clusterhist.Entry, uint64) {
	h := c.sp.history
	if from == clusterlink.FromNext {
		return nil, h.next
	}
	priv := h.privateSince(after, from, limit, c.sp.members[participant])
	out := make([]clusterhist.Entry, len(priv))
	for i, e := range priv {
		out[i] = clusterhist.Entry{Seq: e.seq, At: e.at, Data: e.data}
	}
	return out, h.next
}
