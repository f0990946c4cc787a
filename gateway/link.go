package gateway

import (
	"context"
	"encoding/json"
	"net/http"
	"slices"
	"time"

	"github.com/mew-protocol/mew/gateway/internal/clusterlink"
	"github.com/mew-protocol/mew/protocol"
)

// spaceLink is how a space's copy on this node is joined to its copies on
// the others: the core (space.go, control.go, streams.go, floor.go,
// provenance.go, http.go) makes each change to a space once, on its own
// state, and tells the link, which shares it; the link applies what other
// nodes share through the same core functions. There are two: solo, a
// space that is a cluster of one (every hook in process, and most of them
// nothing), and clusterSpace (shared.go), over a cluster.Node.
//
// The methods named …Locked are called with the space's lock held and must
// not wait: they queue (the cluster's Link writes from goroutines of its
// own) and return. The others are
// called without it.
type spaceLink interface {
	// refusal is why the space takes no change now (its cluster is
	// unavailable or resynchronising), or nil.
	refusal() *refusal
	// deliveredLocked follows the local delivery of d: a node of a cluster
	// appends what it accepted or made to the cluster's history and
	// publishes a participant's envelope to the other nodes.
	deliveredLocked(d delivery)
	// resumeSkew is how far before the envelope a resuming client names the
	// replay starts (see the constant resumeSkew).
	resumeSkew() time.Duration

	// joinLocked, leaveLocked and infoLocked share a connection's presence
	// and what welcomes list of it; aliasLocked binds a runtime id in the
	// whole space.
	joinLocked(s *session)
	leaveLocked(s *session)
	infoLocked(s *session)
	aliasLocked(id string, m *member)
	// connectedElsewhereLocked reports whether m, not connected here, is
	// connected to another node.
	connectedElsewhereLocked(m *member) bool
	// speaksForLocked reports whether this node announces what the gateway
	// does to m on its own (a pause's end): on one node always, in a
	// cluster the node m is connected to.
	speaksForLocked(m *member) bool
	// participantsLocked lists the participants connected to other nodes,
	// for a welcome; participantLocked completes m's entry of GET
	// /participants when m is connected elsewhere.
	participantsLocked() []protocol.ParticipantInfo
	participantLocked(m *member, v *participantView)

	// grantLocked, grantsChangedLocked and grantGoneLocked share m's
	// grants: one added, the list changed from before, one ended.
	grantLocked(m *member, g grant)
	grantsChangedLocked(m *member, before []grant)
	grantGoneLocked(m *member, g grant)
	// controlLocked shares m's control state (pause, shutdown, kick with
	// reason).
	controlLocked(m *member, reason string)
	// shareInvite creates an invitation in the whole space before it is
	// made here: taken reports the id was taken elsewhere, shared that
	// invitedLocked must follow, with lost when it was not made.
	shareInvite(from, id, tok string, caps []json.RawMessage, reason string, now time.Time) (taken, shared bool, err error)
	invitedLocked(id string, lost bool)

	// floorClaim settles a claim of the floor of msg (floor/responding-to).
	floorClaim(o origin, msg string, startedAt int64, now time.Time) (outcome, *refusal)
	// floorClearLocked shares that c, the claim of msg, ended.
	floorClearLocked(msg string, c *claim)

	// poll answers GET /participants/{id}/messages for m from the space's
	// history.
	poll(w http.ResponseWriter, r *http.Request, m *member, after time.Time, cursor string, limit int)

	// remoteMemberLocked is the member id names when it is connected to
	// another node; nil otherwise.
	remoteMemberLocked(id string) *member
	// streamNumber takes the number of a new stream from the space's
	// counter; 0 means the node's own counter (streamTable.last).
	// check, called first where a number is taken, says whether the
	// request would be accepted, so that a refused one takes none.
	streamNumber(check func() *refusal) (uint64, *refusal)
	// streamChangedLocked shares a stream's opening, close, writers (from
	// before) or transfer; streamFrameLocked a frame of it.
	streamChangedLocked(op string, st *stream, before []string, cause string, announce []byte)
	streamFrameLocked(st *stream, writer string, frame []byte)

	// approvalLocked shares a proposal governed here, approvalVoteLocked
	// an approval counted here. approvalEndLocked ends a's phase as e says
	// and reports whether it did now: on one node it does; on a cluster
	// the nodes may ask for different ends of one phase at once (an
	// approval completing the quorum, a rejection, the deadline), the first
	// stored wins, and every node applies it when it arrives.
	approvalLocked(a *approval)
	approvalVoteLocked(a *approval, approver string)
	approvalEndLocked(a *approval, e approvalEnd) bool

	// current reports whether the link's copy of the space's shared state
	// is up to date; close stops its goroutines once what is queued is
	// written (until ctx ends).
	current() bool
	close(ctx context.Context)
}

// solo is the link of a space on one node: nothing to share, and what a
// cluster settles among nodes (a floor claim, a poll) settled here.
type solo struct{ sp *liveSpace }

func (solo) refusal() *refusal                               { return nil }
func (solo) deliveredLocked(delivery)                        {}
func (solo) resumeSkew() time.Duration                       { return 0 }
func (solo) joinLocked(*session)                             {}
func (solo) leaveLocked(*session)                            {}
func (solo) infoLocked(*session)                             {}
func (solo) aliasLocked(string, *member)                     {}
func (solo) connectedElsewhereLocked(*member) bool           { return false }
func (solo) speaksForLocked(*member) bool                    { return true }
func (solo) participantsLocked() []protocol.ParticipantInfo  { return nil }
func (solo) participantLocked(*member, *participantView)     {}
func (solo) grantLocked(*member, grant)                      {}
func (solo) grantsChangedLocked(*member, []grant)            {}
func (solo) grantGoneLocked(*member, grant)                  {}
func (solo) controlLocked(*member, string)                   {}
func (solo) invitedLocked(string, bool)                      {}
func (solo) floorClearLocked(string, *claim)                 {}
func (solo) remoteMemberLocked(string) *member               { return nil }
func (solo) streamNumber(func() *refusal) (uint64, *refusal) { return 0, nil }
func (solo) streamChangedLocked(string, *stream, []string, string, []byte) {
}
func (solo) streamFrameLocked(*stream, string, []byte) {}
func (solo) approvalLocked(*approval)                  {}
func (solo) approvalVoteLocked(*approval, string)      {}
func (solo) current() bool                             { return true }
func (solo) close(context.Context)                     {}

func (solo) shareInvite(string, string, string, []json.RawMessage, string, time.Time) (bool, bool, error) {
	return false, false, nil
}

func (f solo) floorClaim(o origin, msg string, startedAt int64, now time.Time) (outcome, *refusal) {
	return f.sp.floorClaimHere(o, msg, startedAt, now)
}

func (f solo) poll(w http.ResponseWriter, _ *http.Request, m *member, after time.Time, cursor string, limit int) {
	f.sp.pollHere(w, m, after, cursor, limit)
}

func (f solo) approvalEndLocked(a *approval, e approvalEnd) bool {
	f.sp.applyEndLocked(a, e)
	return true
}

// remoteReady returns what an envelope accepted on another node of a
// cluster waits for before it is delivered here, or nil: the change it
// announces in force here, so that, as on one node, the grantee has its new
// capabilities before anyone reads the grant, a kicked or paused
// participant is so before the announcement, and a participant who reads a
// proposal or an approval may act on it at once. applied reports whether
// the change to a stream made by an envelope is applied here. It is called
// without mu; what it returns is called with mu held.
func (sp *liveSpace) remoteReady(env *protocol.Envelope, applied func(id string) bool) func() bool {
	has := func(who, id string) bool {
		m := sp.resolveLocked(who)
		return m != nil && slices.ContainsFunc(m.grants, func(g grant) bool { return g.id == id })
	}
	switch env.Kind {
	case protocol.KindCapabilityGrant:
		var p protocol.Grant
		if env.DecodePayload(&p) != nil || p.Recipient == "" {
			return nil
		}
		id := env.ID
		return func() bool { return sp.resolveLocked(p.Recipient) == nil || has(p.Recipient, id) }
	case protocol.KindCapabilityRevoke:
		var p protocol.Revoke
		if env.DecodePayload(&p) != nil || p.GrantID == "" {
			return nil // by pattern: nothing precise to wait for
		}
		return func() bool { return !has(p.Recipient, p.GrantID) }
	case protocol.KindSpaceKick:
		var p protocol.Kick
		if env.DecodePayload(&p) != nil || p.ParticipantID == "" {
			return nil
		}
		return func() bool { m := sp.resolveLocked(p.ParticipantID); return m == nil || m.ctl.kicked }
	case protocol.KindStreamRequest, protocol.KindStreamClose:
		return sp.streamReady(env, applied)
	case protocol.KindMCPProposal, protocol.KindApprovalApprove:
		return sp.approvalReady(env)
	case protocol.KindParticipantPause, protocol.KindParticipantResume, protocol.KindParticipantShutdown:
		to, id, kind := slices.Clone(env.To), env.ID, env.Kind
		return func() bool {
			for _, who := range to {
				m := sp.resolveLocked(who)
				if m == nil {
					continue
				}
				switch {
				case kind == protocol.KindParticipantPause && m.ctl.pauseID != id,
					kind == protocol.KindParticipantResume && m.ctl.pausedUntil.Load() != 0,
					kind == protocol.KindParticipantShutdown && !m.ctl.shutdown.Load():
					return false
				}
			}
			return true
		}
	}
	return nil
}

// streamReady returns what another node's stream/request or stream/close
// waits for before it is delivered here: the change it made, applied here
// (so everyone sees the stream/open before the request, and a close after
// the frames before it). A close by correlation_id that names no stream
// open here was relayed without a change and waits for nothing. It is
// called without mu; what it returns is called with mu held.
func (sp *liveSpace) streamReady(env *protocol.Envelope, applied func(id string) bool) func() bool {
	id, corr := env.ID, slices.Clone(env.CorrelationID)
	byCorrelation := false
	if env.Kind == protocol.KindStreamClose {
		var p protocol.StreamClose
		if env.DecodePayload(&p) != nil {
			return nil
		}
		byCorrelation = p.StreamID == ""
	}
	return func() bool {
		if applied(id) {
			return true
		}
		if byCorrelation {
			for _, s := range sp.streams.byID {
				if slices.Contains(corr, s.requestID) || slices.Contains(corr, s.openID) {
					return false
				}
			}
			return true
		}
		return false
	}
}

// approvalReady returns what a proposal or an approval from another node
// waits for before it is delivered here: its proposal governed here, its
// approval counted, so that a participant who reads it may act on it at
// once (approve the proposal, fulfil it). nil when it waits for nothing.
func (sp *liveSpace) approvalReady(env *protocol.Envelope) func() bool {
	t := &sp.approvals
	switch {
	case len(t.rules) == 0:
		return nil
	case env.Kind == protocol.KindMCPProposal:
		if t.ruleFor(env) == nil {
			return nil
		}
		id := env.ID
		return func() bool { return t.byID[id] != nil }
	case env.Kind == protocol.KindApprovalApprove && len(env.CorrelationID) == 1:
		id, from := env.CorrelationID[0], env.From
		return func() bool {
			a, m := t.byID[id], sp.resolveLocked(from)
			return a != nil && (m == nil || !a.open() || slices.Contains(a.votes, m.name))
		}
	}
	return nil
}

// notSharedLocked tells the senders of envelopes accepted and delivered
// here that they may not have reached the other nodes (a system/error
// cluster_unavailable correlated to each). mu must be held.
func (sp *liveSpace) notSharedLocked(list []clusterlink.Published, err error) {
	for _, p := range list {
		m := sp.members[p.Participant]
		if m == nil || m.sess == nil || sp.sessions[m.sess.id] != m.sess {
			continue // gone: nobody to tell
		}
		s := m.sess
		r := refuse(ErrorClusterUnavailable, "accepted and delivered on this gateway node, but it may not have reached the other nodes of the cluster: "+err.Error())
		r.ref = p.ID
		sp.unicastLocked(s, sp.errorEnvelope(s.id, r))
	}
}
