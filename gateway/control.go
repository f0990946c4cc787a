package gateway

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/mew-protocol/mew/capability"
	"github.com/mew-protocol/mew/gateway/cluster"
	"github.com/mew-protocol/mew/gateway/internal/audit"
	"github.com/mew-protocol/mew/internal/clip"
	"github.com/mew-protocol/mew/protocol"
	"github.com/mew-protocol/mew/space"
)

// Error codes of grants, invitations, kicks and participant controls.
const (
	ErrorParticipantNotFound = protocol.ErrorParticipantNotFound // a grant, revoke, kick or control names nobody in the space
	ErrorInvalidRequest      = protocol.ErrorInvalidRequest      // a payload the operation cannot work with
	ErrorPaused              = "paused"                          // the sender is paused
	ErrorShutdown            = "shutdown"                        // the sender was shut down and has not rejoined
	ErrorLimitExceeded       = "limit_exceeded"                  // too many grants or patterns
)

// CloseKicked closes the connection of a participant removed by space/kick.
const CloseKicked = 4001

// Limits on what grants and invitations can pile up.
const (
	maxGrantsPerMember = 256
	maxGrantPatterns   = 64
	maxInvited         = 1024
)

// grant is one capability/grant in force.
type grant struct {
	id      string    // the grant envelope's id
	from    string    // granter's logical name
	at      time.Time // when the gateway accepted it
	expires time.Time // its own end; zero: until revoked
	session bool      // ends when its granter has been gone from the space SessionGrantGrace
	links   []link    // per pattern of caps: what covered it in the granter's capabilities (provenance.go)
	caps    []json.RawMessage
	set     *capability.Set // caps, compiled once
	until   time.Time       // effective end: expires, its parents' ends, its granter's departure; set by settleGrantsLocked
	// waiting: a parent it names is not known here yet (a record from
	// another node that arrived before its parent's); it allows nothing
	// until the parent arrives, and is not ended for it.
	waiting bool
}

// control is a member's pause and shutdown state. The atomics are read on
// every envelope without the space lock; the rest is guarded by
// liveSpace.mu.
type control struct {
	pausedUntil atomic.Int64 // unix nanoseconds; 0: not paused; MaxInt64: until resumed
	shutdown    atomic.Bool
	kicked      bool
	pauseID     string // the pause envelope's id, for the gateway's resume
}

// controlOf is m's control state as a record: what a change to it starts
// from, and what the space's link shares. mu must be held.
func controlOf(m *member) cluster.Control {
	return cluster.Control{
		Participant: m.name, PausedUntil: m.ctl.pausedUntil.Load(), PauseID: m.ctl.pauseID,
		Shutdown: m.ctl.shutdown.Load(), Kicked: m.ctl.kicked,
	}
}

// setControlLocked applies c, m's new control state, whichever node it was
// made on: the one place a pause, resume, shutdown or kick takes effect. A
// pause whose time has passed is none (each node ends pauses itself, see
// expirePauses); a shutdown ends the console codes and sessions made from
// m's token, and lasts until m reconnects (on whichever node: its record
// then says no shutdown); a kick ends m for good. mu must be held.
func (sp *liveSpace) setControlLocked(m *member, c cluster.Control) {
	until := c.PausedUntil
	if until != math.MaxInt64 && until <= sp.srv.now().UnixNano() {
		until = 0
	}
	m.ctl.pausedUntil.Store(until)
	m.ctl.pauseID = c.PauseID
	switch {
	case !c.Shutdown:
		m.ctl.shutdown.Store(false) // it reconnected (on whichever node)
	case m.ctl.shutdown.CompareAndSwap(false, true):
		sp.srv.creds.end(m, standingGood, credCode, credLink, credSession)
	}
	if c.Kicked && !m.ctl.kicked {
		m.ctl.kicked = true
		sp.endParticipantLocked(m, standingKicked, CloseKicked, c.Reason)
	}
}

// whilePaused lists what a paused participant may still send: answers,
// status and cancellations, never new work.
var whilePaused = []string{
	protocol.KindChatAcknowledge, protocol.KindChatCancel, protocol.KindReasoningCancel,
	protocol.KindCapabilityGrantAck, protocol.KindParticipantStatus, protocol.KindMCPWithdraw,
	protocol.KindParticipantCompactDone,
}

// kindFrame stands for a stream data frame in checkControl: it is no kind,
// and never allowed while paused.
const kindFrame = "#frame"

// checkControl refuses what a paused or shut-down participant may not send:
// an envelope of kind, or a stream frame (kindFrame).
func (sp *liveSpace) checkControl(o origin, kind string, now time.Time) *refusal {
	if rf := sp.link.refusal(); rf != nil {
		return rf
	}
	if st := o.m.standingOf(); st != standingGood {
		return refuse(ErrorUnauthorized, o.m.name+" is "+st.String())
	}
	c := &o.m.ctl
	if c.shutdown.Load() && kind != protocol.KindParticipantStatus {
		return refuse(ErrorShutdown, o.id+" was shut down; reconnect to take part again")
	}
	if until := c.pausedUntil.Load(); until != 0 && now.UnixNano() < until && !slices.Contains(whilePaused, kind) {
		msg := o.id + " is paused until resumed"
		if until != math.MaxInt64 {
			msg = o.id + " is paused until " + protocol.FormatTime(time.Unix(0, until))
		}
		return refuse(ErrorPaused, msg)
	}
	return nil
}

// grant handles capability/grant: the granter may grant only what it may
// delegate (see delegable), to a participant of the space, by logical name
// or runtime id.
func (sp *liveSpace) grant(o origin, env *protocol.Envelope, now time.Time) (outcome, *refusal) {
	var p protocol.Grant
	if err := env.DecodePayload(&p); err != nil || p.Recipient == "" || len(p.Capabilities) == 0 {
		return outcome{}, refuse(ErrorInvalidEnvelope, "capability/grant needs a recipient and a non-empty capabilities list")
	}
	expires, rf := grantExpiry(p, now)
	if rf != nil {
		return outcome{}, rf
	}
	if p.Session && o.s == nil {
		return outcome{}, refuse(ErrorInvalidRequest, "capability/grant: a grant for this session needs a connection to last as long as; send it over your WebSocket")
	}
	caps, set, rf := compactPatterns(p.Capabilities)
	if rf != nil {
		return outcome{}, rf
	}
	chain, rf := sp.delegable(o, caps, set, "grant")
	if rf != nil {
		return outcome{}, rf
	}
	sp.mu.Lock()
	rm := sp.resolveLocked(p.Recipient)
	switch {
	case rm == nil || rm.ctl.kicked:
		sp.mu.Unlock()
		return outcome{}, notFound(p.Recipient)
	case rm == o.m:
		// What one holds, one holds already: a grant to oneself could only
		// outlive the grant it leans on.
		sp.mu.Unlock()
		return outcome{}, refuse(ErrorInvalidRequest, "a participant cannot grant capabilities to itself")
	case len(rm.grants) >= maxGrantsPerMember:
		sp.mu.Unlock()
		return outcome{}, refuse(ErrorLimitExceeded, fmt.Sprintf("%s already holds %d grants", rm.name, maxGrantsPerMember))
	case slices.ContainsFunc(rm.grants, func(g grant) bool { return g.id == env.ID }):
		sp.mu.Unlock()
		return outcome{}, refuse(ErrorInvalidEnvelope, "a grant with id "+env.ID+" is already in force")
	}
	g := grant{id: env.ID, from: o.m.name, at: now, expires: expires, session: p.Session, links: chain, caps: caps, set: set}
	if rf := sp.putGrantLocked(rm, g, now); rf != nil {
		sp.mu.Unlock()
		return outcome{}, rf
	}
	sp.link.grantLocked(rm, rm.grants[len(rm.grants)-1])
	sp.mu.Unlock()

	// The grant chain: for each pattern granted, which of the granter's
	// patterns covered it and, if that one was granted too, by which grant.
	for i, c := range caps {
		meta := append([]byte(`{"source":"capability/grant","granted_by":`), protocol.AppendString(nil, o.m.name)...)
		meta = append(append(meta, `,"recipient":`...), protocol.AppendString(nil, rm.name)...)
		if chain[i].entry {
			meta = append(append(meta, `,"covered_by":"entry_level","entry_pattern":`...), chain[i].pattern...)
		} else {
			meta = append(append(meta, `,"covered_by":`...), chain[i].pattern...)
		}
		if chain[i].grantID != "" {
			meta = append(append(meta, `,"parent_grant":`...), protocol.AppendString(nil, chain[i].grantID)...)
		}
		sp.srv.audit.Decision(audit.DecisionRecord{
			Time: now, EnvelopeID: env.ID, Participant: rm.name, Space: sp.id, Allowed: true,
			Kind: protocol.KindCapabilityGrant, Matched: c, Source: "dynamic", Metadata: append(meta, '}'),
		})
	}
	return relayed, nil
}

// revoke handles capability/revoke, by grant id or by pattern. The pipeline
// has already checked that the sender holds capability/revoke, which is all
// revoking takes: it only ever removes grants, never a participant's static
// capabilities from the space config. By pattern, it removes every granted
// pattern that one of the given patterns covers, or that is identical to one.
func (sp *liveSpace) revoke(o origin, env *protocol.Envelope, now time.Time) (outcome, *refusal) {
	var p protocol.Revoke
	if err := env.DecodePayload(&p); err != nil || p.Recipient == "" || (p.GrantID == "" && len(p.Capabilities) == 0) {
		return outcome{}, refuse(ErrorInvalidEnvelope, "capability/revoke needs a recipient and a grant_id or capabilities")
	}
	patterns, rset, rf := compactPatterns(p.Capabilities)
	if rf != nil {
		return outcome{}, rf
	}
	sp.mu.Lock()
	defer sp.mu.Unlock()
	rm := sp.resolveLocked(p.Recipient)
	if rm == nil {
		return outcome{}, notFound(p.Recipient)
	}
	kept := make([]grant, 0, len(rm.grants))
	found := false
	for _, g := range rm.grants {
		if p.GrantID != "" && g.id == p.GrantID {
			found = true
			continue
		}
		if len(patterns) > 0 {
			var left []int
			for i, c := range g.caps {
				revoked := slices.ContainsFunc(patterns, func(pat json.RawMessage) bool { return bytes.Equal(pat, c) })
				if !revoked {
					j, _ := rset.Covering(g.set, i)
					revoked = j >= 0
				}
				if !revoked {
					left = append(left, i)
				}
			}
			if len(left) == 0 {
				continue
			}
			if len(left) < len(g.caps) {
				caps := make([]json.RawMessage, len(left))
				links := make([]link, len(left))
				for k, i := range left {
					caps[k], links[k] = g.caps[i], g.links[i]
				}
				g.caps, g.links, g.set = caps, links, g.set.Select(left)
			}
		}
		kept = append(kept, g)
	}
	if p.GrantID != "" && !found {
		return outcome{}, refuse(ErrorInvalidRequest, fmt.Sprintf("%s holds no grant %s", rm.name, p.GrantID))
	}
	old := rm.grants
	if rf := sp.setGrantsLocked(rm, kept, now); rf != nil { // what leaned on the revoked patterns goes with them
		return outcome{}, rf
	}
	sp.link.grantsChangedLocked(rm, old)
	return relayed, nil
}

// maxGrantTTL bounds how far ahead a grant may be set to expire; past it a
// grant is as good as permanent, and a far date is more likely a mistake.
const maxGrantTTL = 366 * 24 * time.Hour

// grantExpiry reads when a grant ends: expires_at (RFC 3339) or
// ttl_seconds, not both; the zero time when neither is given.
func grantExpiry(p protocol.Grant, now time.Time) (time.Time, *refusal) {
	switch {
	case p.ExpiresAt != "" && p.TTLSeconds != 0:
		return time.Time{}, refuse(ErrorInvalidEnvelope, "capability/grant: give expires_at or ttl_seconds, not both")
	case p.TTLSeconds < 0 || time.Duration(p.TTLSeconds)*time.Second > maxGrantTTL:
		return time.Time{}, refuse(ErrorInvalidEnvelope, "capability/grant: ttl_seconds must be from 1 to "+strconv.Itoa(int(maxGrantTTL/time.Second)))
	case p.TTLSeconds > 0:
		return now.Add(time.Duration(p.TTLSeconds) * time.Second), nil
	case p.ExpiresAt != "":
		t, err := time.Parse(time.RFC3339Nano, p.ExpiresAt)
		if err != nil || !t.After(now) || t.Sub(now) > maxGrantTTL {
			return time.Time{}, refuse(ErrorInvalidEnvelope, "capability/grant: expires_at must be an RFC 3339 time in the coming year")
		}
		return t, nil
	}
	return time.Time{}, nil
}

// admitLocked adds m, invited with caps, to the space, whichever node the
// invitation was made on. mu must be held.
func (sp *liveSpace) admitLocked(m *member, caps []json.RawMessage) *refusal {
	if err := m.setCapabilities(caps, sp.cfg.Defaults.Capabilities); err != nil {
		return refuse(ErrorInvalidEnvelope, err.Error())
	}
	if sp.srv.opts.Limits.Rate > 0 {
		m.limiter = newLimiter(sp.srv.opts)
	}
	if err := sp.srv.creds.addTokens(sp, m); err != nil {
		return refuse(ErrorInvalidRequest, "could not register the new participant")
	}
	sp.members[m.name] = m
	sp.order = append(sp.order, m)
	return nil
}

// invitedEnvelope announces m, invited by by for reason.
func (sp *liveSpace) invitedEnvelope(m *member, by, reason string) delivery {
	return sp.systemEnvelope(protocol.KindSystemPresence, nil, protocol.Presence{
		Event: protocol.PresenceInvited, Participant: protocol.ParticipantInfo{ID: m.name, Capabilities: m.view().list},
		InvitedBy: by, Reason: reason,
	})
}

// setGrantsLocked gives m the list grants, whichever node the change was
// made on: the one place a grant is added, replaced or removed. m's
// capabilities are rebuilt (on failure it keeps what it held), the grants it
// no longer holds are marked ended for their children, and what leaned on
// what changed is settled, which gives a new grant its effective end (no
// later than its parents'). mu must be held.
func (sp *liveSpace) setGrantsLocked(m *member, grants []grant, now time.Time) *refusal {
	before := m.grants
	m.grants = grants
	if err := m.rebuildCaps(); err != nil {
		m.grants = before
		return refuse(ErrorInvalidEnvelope, err.Error())
	}
	sp.endedLocked(before, grants)
	sp.changedLocked(m, now)
	return nil
}

// putGrantLocked adds g to m's grants, or replaces the one with its id.
// mu must be held.
func (sp *liveSpace) putGrantLocked(m *member, g grant, now time.Time) *refusal {
	grants := slices.Clone(m.grants)
	if i := slices.IndexFunc(grants, func(k grant) bool { return k.id == g.id }); i >= 0 {
		grants[i] = g
	} else {
		grants = append(grants, g)
	}
	return sp.setGrantsLocked(m, grants, now)
}

// welcomeUpdateLocked sends m's connection, if any, a welcome with its new
// capabilities. mu must be held.
func (sp *liveSpace) welcomeUpdateLocked(m *member) {
	if s := m.sess; s != nil {
		sp.unicastLocked(s, sp.welcomeLocked(s))
		sp.link.infoLocked(s) // what other nodes' welcomes list of it
	}
}

// invite handles space/invite: a new participant with its own token and the
// initial capabilities the inviter may delegate. The token goes to the
// inviter alone; the others see a presence "invited" without it.
func (sp *liveSpace) invite(o origin, env *protocol.Envelope, now time.Time) (outcome, *refusal) {
	var p protocol.Invite
	if err := env.DecodePayload(&p); err != nil || p.ParticipantID == "" {
		return outcome{}, refuse(ErrorInvalidRequest, "space/invite requires participant_id in payload")
	}
	if err := space.ValidParticipantID(p.ParticipantID); err != nil || strings.ContainsAny(p.ParticipantID, ":#") {
		return outcome{}, refuse(ErrorInvalidRequest, "participant_id contains invalid characters")
	}
	caps, set, rf := compactPatterns(p.InitialCapabilities)
	if rf != nil {
		return outcome{}, rf
	}
	if _, rf := sp.delegable(o, caps, set, "invite with"); rf != nil {
		return outcome{}, rf
	}
	id := p.ParticipantID
	sp.mu.Lock()
	exists := sp.resolveLocked(id) != nil || id == protocol.GatewayID
	full := len(sp.order)-len(sp.cfg.Participants) >= maxInvited
	sp.mu.Unlock()
	if !exists && full {
		return outcome{}, refuse(ErrorLimitExceeded, fmt.Sprintf("this space already has %d invited participants", maxInvited))
	}
	var tok string
	if !exists {
		// The token file is written without the space lock held, so that
		// the disk never holds up delivery. Generate refuses an existing
		// file, so of two invitations of one id only one gets a token.
		var err error
		tok, err = sp.srv.opts.TokenStore(sp.cfg).Generate(id)
		if err != nil {
			// A token file from an earlier run: the id is taken.
			exists = true
			sp.srv.opts.Logger.Info("invite: no new token", "space", sp.id, "participant", id, "err", err)
		}
	}
	var clusterErr error
	shared := false
	if !exists {
		// Created in the cluster's State first, by create-if-absent: of two
		// invitations of one id made on two nodes at once, one wins.
		exists, shared, clusterErr = sp.link.shareInvite(o.id, id, tok, caps, p.Reason, now)
	}
	sp.mu.Lock()
	defer sp.mu.Unlock()
	if shared {
		sp.link.invitedLocked(id, exists || clusterErr != nil)
	}
	if clusterErr != nil {
		r := refuse(ErrorClusterUnavailable, "the invitation could not be shared with the other gateway nodes: "+clusterErr.Error())
		r.status = http.StatusServiceUnavailable
		return outcome{}, r
	}
	if exists {
		ack := sp.inviteAck(o, env, protocol.InviteAck{
			Status: protocol.InviteAlreadyExists, ParticipantID: id,
			Error: "Participant " + id + " already exists in this space",
		})
		if o.s != nil {
			sp.unicastLocked(o.s, ack)
		}
		return outcome{status: http.StatusConflict, body: map[string]string{
			"status": protocol.InviteAlreadyExists, "participant_id": id, "message": "Participant " + id + " already exists",
		}}, nil
	}
	m := &member{name: id, tokens: [][]byte{[]byte(tok)}, tokenFile: true, fileToken: tok}
	if rf := sp.admitLocked(m, caps); rf != nil {
		return outcome{}, rf
	}
	ack := sp.inviteAck(o, env, protocol.InviteAck{Status: protocol.InviteCreated, ParticipantID: id, Token: tok})
	if o.s != nil {
		sp.unicastLocked(o.s, ack)
	}
	sp.broadcastLocked(sp.invitedEnvelope(m, o.id, p.Reason), o.s)
	return outcome{status: http.StatusOK, body: map[string]string{
		"id": ack.id, "status": protocol.InviteCreated, "participant_id": id, "token": tok,
	}}, nil
}

// inviteAck encodes the answer to an invitation. What the audit log records
// has the token blanked out.
func (sp *liveSpace) inviteAck(o origin, env *protocol.Envelope, ack protocol.InviteAck) delivery {
	d := sp.systemEnvelope(protocol.KindSpaceInviteAck, []string{o.id}, ack, env.ID)
	if ack.Token != "" {
		redacted := ack
		redacted.Token = "[redacted]"
		d.logged = sp.systemEnvelope(protocol.KindSpaceInviteAck, []string{o.id}, redacted, env.ID).data
	}
	return d
}

// kick handles space/kick: the participant is disconnected (close 4001),
// the others see it leave, and its tokens stop working for the rest of this
// run, so it cannot come back to kick in return.
func (sp *liveSpace) kick(o origin, env *protocol.Envelope, _ time.Time) (outcome, *refusal) {
	var p protocol.Kick
	if err := env.DecodePayload(&p); err != nil || p.ParticipantID == "" {
		return outcome{}, refuse(ErrorInvalidRequest, "space/kick requires participant_id in payload")
	}
	sp.mu.Lock()
	defer sp.mu.Unlock()
	km := sp.resolveLocked(p.ParticipantID)
	switch {
	case km == nil || km.ctl.kicked:
		return outcome{}, notFound(p.ParticipantID)
	case km == o.m:
		return outcome{}, refuse(ErrorInvalidRequest, "a participant cannot kick itself")
	}
	c := controlOf(km)
	c.Kicked, c.Reason = true, "kicked by "+o.id
	if p.Reason != "" {
		c.Reason += ": " + p.Reason
	}
	sp.setControlLocked(km, c)
	sp.link.controlLocked(km, c.Reason)
	return relayed, nil
}

// closeReason fits a reason into a close frame (123 bytes of UTF-8).
func closeReason(s string) string {
	if len(s) <= 123 {
		return s
	}
	return clip.Bytes(s, 120) + "..."
}

// control handles participant/pause, participant/resume and
// participant/shutdown for the participants in to: the gateway enforces
// them (see checkControl) besides relaying them.
func (sp *liveSpace) control(o origin, env *protocol.Envelope, now time.Time) (outcome, *refusal) {
	if len(env.To) == 0 {
		return outcome{}, refuse(ErrorInvalidRequest, env.Kind+" needs to: the participants it applies to")
	}
	var pause protocol.Pause
	if env.Kind == protocol.KindParticipantPause {
		if err := env.DecodePayload(&pause); err != nil || pause.TimeoutSeconds < 0 {
			return outcome{}, refuse(ErrorInvalidEnvelope, "participant/pause: timeout_seconds must be a non-negative integer")
		}
	}
	sp.mu.Lock()
	defer sp.mu.Unlock()
	targets := make([]*member, 0, len(env.To))
	for _, id := range env.To {
		m := sp.resolveLocked(id)
		if m == nil {
			return outcome{}, notFound(id)
		}
		targets = append(targets, m)
	}
	for _, m := range targets {
		c := controlOf(m)
		switch env.Kind {
		case protocol.KindParticipantPause:
			c.PausedUntil = math.MaxInt64
			// Past a century a timeout means "until resumed" (and a bigger
			// one would overflow a Duration).
			if pause.TimeoutSeconds > 0 && pause.TimeoutSeconds < 100*365*24*3600 {
				c.PausedUntil = now.Add(time.Duration(pause.TimeoutSeconds) * time.Second).UnixNano()
			}
			c.PauseID = env.ID
		case protocol.KindParticipantResume:
			c.PausedUntil = 0
		case protocol.KindParticipantShutdown:
			c.Shutdown = true
		}
		sp.setControlLocked(m, c)
		sp.link.controlLocked(m, "")
	}
	return relayed, nil
}

// expirePauses ends the pauses whose timeout has passed and announces each
// with a participant/resume from the gateway. The watchdog calls it.
func (sp *liveSpace) expirePauses(now time.Time) {
	sp.mu.Lock()
	defer sp.mu.Unlock()
	for _, m := range sp.order {
		until := m.ctl.pausedUntil.Load()
		if until == 0 || until == math.MaxInt64 || now.UnixNano() < until || !m.ctl.pausedUntil.CompareAndSwap(until, 0) {
			continue
		}
		to := m.name
		if m.sess != nil {
			to = m.sess.id
		}
		var corr []string
		if m.ctl.pauseID != "" {
			corr = []string{m.ctl.pauseID}
		}
		d := sp.systemEnvelope(protocol.KindParticipantResume, []string{to}, protocol.Resume{Reason: "timeout"}, corr...)
		if !sp.link.speaksForLocked(m) {
			// Every node of a cluster ends the pause for its own
			// participants; the node the paused participant is on puts the
			// resume in the cluster's history, once.
			d = remote(d)
		}
		sp.broadcastLocked(d, nil)
	}
}

func notFound(id string) *refusal {
	return refuse(ErrorParticipantNotFound, "no participant "+id+" in this space")
}

// compactPatterns compacts and compiles capability patterns from a payload.
// The compiled set is what every later decision uses; the compacted bytes
// are only shown and stored.
func compactPatterns(list []json.RawMessage) ([]json.RawMessage, *capability.Set, *refusal) {
	if len(list) > maxGrantPatterns {
		return nil, nil, refuse(ErrorLimitExceeded, fmt.Sprintf("at most %d capability patterns at once", maxGrantPatterns))
	}
	out := make([]json.RawMessage, len(list))
	for i, c := range list {
		var buf bytes.Buffer
		if err := json.Compact(&buf, c); err != nil {
			return nil, nil, refuse(ErrorInvalidEnvelope, "capability pattern: "+err.Error())
		}
		out[i] = buf.Bytes()
	}
	set, err := capability.Compile(out)
	if err != nil {
		return nil, nil, refuse(ErrorInvalidEnvelope, err.Error())
	}
	return out, set, nil
}

// entryKinds is the part of every space's entry level that is not in its
// config: talking, proposing, withdrawing a proposal and answering. None of
// it makes anyone do anything, so whoever may grant or invite may hand it on.
var entryKinds = capability.MustCompile(`{"kind":"chat"}`, `{"kind":"mcp/proposal"}`, `{"kind":"mcp/withdraw"}`, `{"kind":"mcp/response"}`)

// entryLevel returns the space's entry level: its defaults.capabilities and
// entryKinds.
func (sp *liveSpace) entryLevel() *capability.Set {
	defaults, err := capability.Compile(sp.cfg.Defaults.Capabilities)
	if err != nil {
		// The config was compiled when it was loaded; should it not
		// compile now, its defaults delegate nothing.
		defaults = nil
	}
	return capability.Join(defaults, entryKinds)
}

// link is how one delegated pattern is covered.
type link struct {
	pattern json.RawMessage // the covering pattern
	grantID string          // set when the covering pattern was itself granted
	entry   bool            // covered by the space's entry level, not the delegator's own
}

// delegable checks that the sender may hand on every pattern of set (whose
// compacted bytes are caps): each must be covered by one of the sender's own
// compiled patterns, or by the space's entry level. It returns how each is
// covered, in order, or a refusal that says why one is not, undecidable
// cases included.
func (sp *liveSpace) delegable(o origin, caps []json.RawMessage, set *capability.Set, verb string) ([]link, *refusal) {
	v := sp.viewAt(o.m, sp.srv.now())
	chain := make([]link, set.Len())
	var entry *capability.Set
	for i := range chain {
		j, why := v.set.Covering(set, i)
		if j >= 0 {
			_, gid := v.source(j)
			chain[i] = link{pattern: v.list[j], grantID: gid}
			continue
		}
		if entry == nil {
			entry = sp.entryLevel()
		}
		if k, _ := entry.Covering(set, i); k >= 0 {
			chain[i] = link{pattern: entry.Pattern(k), entry: true}
			continue
		}
		r := refuse(ErrorCapabilityViolation, fmt.Sprintf("you cannot %s %s: %s", verb, caps[i], why))
		arr := v.array
		r.fields = func(dst []byte) []byte { return append(append(dst, `,"your_capabilities":`...), arr...) }
		return nil, r
	}
	return chain, nil
}

// remoteInviteLocked applies an invitation made on another node of a
// cluster, checked as this node checks its own: the participant exists
// here from now on, known by its token's hash, with the capabilities it was
// invited with, and this node's participants see it invited. It reports
// whether the participant was admitted now (false: known already, or
// refused and logged). An invitation is never withdrawn (a kick is the way
// out). mu must be held.
func (sp *liveSpace) remoteInviteLocked(inv cluster.Invite) bool {
	id := inv.Participant
	if sp.resolveLocked(id) != nil || id == protocol.GatewayID {
		return false // ours (its echo), or a name this node already serves
	}
	if space.ValidParticipantID(id) != nil || strings.ContainsAny(id, ":#") {
		sp.srv.opts.Logger.Warn("cluster: bad invitation", "space", sp.id, "participant", id, "err", "participant id")
		return false
	}
	if len(sp.order)-len(sp.cfg.Participants) >= maxInvited {
		sp.srv.opts.Logger.Warn("cluster: invitation over the limit of invited participants", "space", sp.id, "participant", id)
		return false
	}
	caps, _, rf := compactPatterns(inv.Capabilities)
	if rf != nil {
		sp.srv.opts.Logger.Warn("cluster: bad invitation", "space", sp.id, "participant", id, "err", rf.message)
		return false
	}
	m := &member{name: id, hashes: [][32]byte{[32]byte(inv.TokenHash)}}
	if rf := sp.admitLocked(m, caps); rf != nil { // as on the node that invited it
		sp.srv.opts.Logger.Warn("cluster: invitation not admitted", "space", sp.id, "participant", id, "err", rf.message)
		return false
	}
	sp.broadcastLocked(remote(sp.invitedEnvelope(m, inv.From, inv.Reason)), nil)
	return true
}
