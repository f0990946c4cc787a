package gateway

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/coder/websocket"
	"github.com/mew-protocol/mew/capability"
	"github.com/mew-protocol/mew/gateway/cluster"
	"github.com/mew-protocol/mew/gateway/internal/audit"
	"github.com/mew-protocol/mew/protocol"
)

// This file keeps every runtime grant inside its parent. A grant records,
// for each pattern it gave, what covered that pattern in its granter's
// capabilities when it was made (a link): the granter's static capabilities,
// the space's entry level, or a pattern of one of the granter's own grants
// (its parent). A grant is alive while
//
//   - its own expiry has not passed,
//   - its granter and its holder are in good standing (not kicked, tokens
//     not revoked),
//   - each parent grant is alive and still holds the covering pattern (a
//     revoke by pattern may have taken it), and
//   - for a grant bound to its granter's presence, the granter is connected
//     somewhere, or left less than SessionGrantGrace ago.
//
// So a grant made on the strength of a time-limited grant ends when that
// one ends, and can never be made permanent by granting it again; a chain
// of any depth ends from its first broken link. settleGrantsLocked applies
// the rule: after every change that can break a link (a grant, a revoke, a
// kick, a token revocation, a departure, a change from another node) and
// when a grant's time comes, which is decided when an envelope is judged
// (capView.until), not only by the watchdog's next tick.
//
// Parents are always older than their children (a grant can only lean on
// what existed when it was made), so the links form no cycle.

// earliest returns the earlier of a and b, zero meaning "never".
func earliest(a, b time.Time) time.Time {
	switch {
	case a.IsZero():
		return b
	case b.IsZero() || a.Before(b):
		return a
	}
	return b
}

// grantState is settleGrantsLocked's verdict on one grant.
type grantState struct {
	g       *grant
	holder  *member
	done    bool
	alive   bool
	waiting bool // a parent is not known here yet: it allows nothing, and is kept
	until   time.Time
	why     string // why it ended
}

// maxEnded bounds the ids of ended grants a space remembers.
const maxEnded = 4096

// endedGrants remembers the ids of the grants that ended here (revoked,
// expired, cascaded, deleted by another node), oldest first, so that a
// grant naming a parent that is not here can be told apart: ended, the
// child ends too; never seen, the child waits for it (on a replicated
// fabric a child's record can arrive before its parent's latest one).
type endedGrants struct {
	ids   map[string]bool
	order []string
}

func (e *endedGrants) add(id string) {
	if e.ids == nil {
		e.ids = make(map[string]bool)
	}
	if e.ids[id] {
		return
	}
	e.ids[id] = true
	e.order = append(e.order, id)
	if len(e.order) > maxEnded {
		delete(e.ids, e.order[0])
		e.order = e.order[1:]
	}
}

// endedLocked records the grants of before that are not in after. mu must
// be held.
func (sp *liveSpace) endedLocked(before, after []grant) {
	for _, g := range before {
		if !slices.ContainsFunc(after, func(k grant) bool { return k.id == g.id }) {
			sp.ended.add(g.id)
		}
	}
}

// settleGrantsLocked removes every grant whose chain to the space's
// configuration is broken or whose time has come, sets the effective end
// (until) of the others, and tells each holder whose capabilities changed:
// those are returned. mu must be held.
func (sp *liveSpace) settleGrantsLocked(now time.Time) map[*member]bool {
	byID := make(map[string]*grantState)
	var states []*grantState
	for _, m := range sp.order {
		for i := range m.grants {
			st := &grantState{g: &m.grants[i], holder: m}
			byID[st.g.id] = st
			states = append(states, st)
		}
	}
	if len(states) == 0 {
		sp.grantsDue, sp.sessionGrants = time.Time{}, 0
		return nil
	}
	grace := sp.srv.opts.Timing.SessionGrantGrace
	var eval func(st *grantState)
	eval = func(st *grantState) {
		if st.done {
			return
		}
		st.done = true // set first: a cycle, were there one, ends dead
		g := st.g
		granter := sp.members[g.from]
		st.until = g.expires
		switch {
		case granter == nil:
			st.why = "its granter " + g.from + " is unknown here"
			return
		case granter.standingOf() != standingGood:
			st.why = "its granter " + g.from + " is " + granter.standingOf().String()
			return
		case st.holder.standingOf() != standingGood:
			st.why = "its holder is " + st.holder.standingOf().String()
			return
		}
		if g.session && !granter.away.IsZero() {
			st.until = earliest(st.until, granter.away.Add(grace))
		}
		for _, l := range g.links {
			if l.grantID == "" {
				continue // static or entry level: lives as long as its granter's standing
			}
			p := byID[l.grantID]
			if p == nil && !sp.ended.ids[l.grantID] {
				st.waiting = true // not here yet: wait for it
				return
			}
			if p == nil || p.holder != granter || !slices.ContainsFunc(p.g.caps, func(c json.RawMessage) bool { return bytes.Equal(c, l.pattern) }) {
				st.why = "its parent grant " + l.grantID + " ended"
				return
			}
			eval(p)
			if p.waiting {
				st.waiting = true
				return
			}
			if !p.alive {
				st.why = "its parent grant " + l.grantID + " ended"
				return
			}
			st.until = earliest(st.until, p.until)
		}
		if !st.until.IsZero() && !now.Before(st.until) {
			switch {
			case !g.expires.IsZero() && !now.Before(g.expires):
				st.why = "expired"
			case g.session && !granter.away.IsZero() && !now.Before(granter.away.Add(grace)):
				st.why = "its granter " + g.from + " left"
			default:
				st.why = "its parent grant expired"
			}
			return
		}
		st.alive = true
	}
	var due time.Time
	sessions := 0
	for _, st := range states {
		eval(st)
		if st.alive {
			due = earliest(due, st.until)
			if st.g.session {
				sessions++
			}
		}
	}
	sp.grantsDue, sp.sessionGrants = due, sessions
	var updated map[*member]bool
	// Apply per holder: a new slice, so that whoever holds the old one
	// (the cluster's change detection) keeps a consistent copy.
	for _, m := range sp.order {
		if len(m.grants) == 0 {
			continue
		}
		changed := false
		kept := make([]grant, 0, len(m.grants))
		var gone []*grantState
		for i := range m.grants {
			st := byID[m.grants[i].id]
			g := m.grants[i]
			if g.waiting != st.waiting {
				g.waiting = st.waiting
				changed = true
			}
			if !st.alive && !st.waiting {
				gone = append(gone, st)
				changed = true
				continue
			}
			if !g.until.Equal(st.until) {
				g.until = st.until
				changed = true
			}
			kept = append(kept, g)
		}
		if !changed {
			continue
		}
		m.grants = kept
		if updated == nil {
			updated = make(map[*member]bool)
		}
		updated[m] = true
		if err := m.rebuildCaps(); err != nil {
			// Fewer compiled sets than before cannot fail to join; keep going.
			sp.srv.opts.Logger.Error("settling grants", "space", sp.id, "participant", m.name, "err", err)
		}
		sp.welcomeUpdateLocked(m)
		for _, st := range gone {
			sp.ended.add(st.g.id)
			sp.grantEndedLocked(m, *st.g, st.why, now)
		}
	}
	return updated
}

// changedLocked settles the grants after a change to m's, and sends m its
// new capabilities unless settling did (one welcome per change). m's view
// must have been rebuilt. mu must be held.
func (sp *liveSpace) changedLocked(m *member, now time.Time) {
	if !sp.settleGrantsLocked(now)[m] {
		sp.welcomeUpdateLocked(m)
	}
}

// grantEndedLocked logs and audits the end of a grant (not by a revoke,
// which is audited as the envelope it is) and removes it from the
// cluster's State. mu must be held.
func (sp *liveSpace) grantEndedLocked(m *member, g grant, why string, now time.Time) {
	msg, source := "grant ended", "cascade"
	if why == "expired" {
		msg, source = "grant expired", "expiry"
	}
	sp.srv.opts.Logger.Info(msg, "space", sp.id, "participant", m.name, "grant", g.id, "why", why)
	meta := protocol.AppendString([]byte(`{"source":"`+source+`","grant_id":`), g.id)
	meta = protocol.AppendString(append(meta, `,"reason":`...), why)
	sp.srv.audit.Decision(audit.DecisionRecord{
		Time: now, EnvelopeID: g.id, Participant: m.name, Space: sp.id, Allowed: false,
		Kind: protocol.KindCapabilityRevoke, Source: "dynamic", Metadata: append(meta, '}'),
	})
	sp.link.grantGoneLocked(m, g)
}

// viewAt is m's capabilities as they stand at now: when one of its grants'
// time has come, the grants are settled first, so that an expired grant
// allows nothing even before the watchdog's next tick.
func (sp *liveSpace) viewAt(m *member, now time.Time) *capView {
	v := m.view()
	if v.until.IsZero() || now.Before(v.until) {
		return v
	}
	sp.mu.Lock()
	sp.settleGrantsLocked(now)
	sp.mu.Unlock()
	return m.view()
}

// settleDue settles the space's grants when one's time has come. The
// watchdog calls it.
func (sp *liveSpace) settleDue(now time.Time) {
	sp.mu.Lock()
	defer sp.mu.Unlock()
	if !sp.grantsDue.IsZero() && !now.Before(sp.grantsDue) {
		sp.settleGrantsLocked(now)
	}
}

// presenceChangedLocked records that m is connected somewhere (here or on
// another node) or not, for the grants bound to its presence. mu must be
// held.
func (sp *liveSpace) presenceChangedLocked(m *member, present bool, now time.Time) {
	switch {
	case present && !m.away.IsZero():
		m.away = time.Time{}
	case !present && m.away.IsZero():
		m.away = now
	default:
		return
	}
	if sp.sessionGrants > 0 {
		sp.settleGrantsLocked(now)
	}
}

// errBadLink is a grant record from another node whose provenance does not
// hold.
var errBadLink = errors.New("provenance does not hold")

// checkLinksLocked checks the provenance of a grant record read from the
// cluster: one link per capability; each link's pattern covers its
// capability; a static link names one of the granter's static patterns, an
// entry link one of the space's entry level. Links to parent grants are
// checked by settleGrantsLocked, like any other. mu must be held.
func (sp *liveSpace) checkLinksLocked(rec cluster.Grant, set *capability.Set) ([]link, error) {
	granter := sp.members[rec.From]
	if granter == nil {
		return nil, fmt.Errorf("%w: unknown granter %s", errBadLink, rec.From)
	}
	if len(rec.Links) != set.Len() {
		return nil, fmt.Errorf("%w: %d links for %d capabilities", errBadLink, len(rec.Links), set.Len())
	}
	var entry *capability.Set
	links := make([]link, len(rec.Links))
	for i, l := range rec.Links {
		var buf bytes.Buffer
		if err := json.Compact(&buf, l.Pattern); err != nil {
			return nil, fmt.Errorf("%w: link %d: %v", errBadLink, i, err)
		}
		pat := json.RawMessage(buf.Bytes())
		switch {
		case l.Entry:
			if entry == nil {
				entry = sp.entryLevel()
			}
			if !slices.ContainsFunc(entry.Patterns(), func(p json.RawMessage) bool {
				var c bytes.Buffer
				return json.Compact(&c, p) == nil && bytes.Equal(c.Bytes(), pat)
			}) {
				return nil, fmt.Errorf("%w: link %d: %s is not of the entry level", errBadLink, i, pat)
			}
		case l.Grant == "":
			if !slices.ContainsFunc(granter.static, func(p json.RawMessage) bool { return bytes.Equal(p, pat) }) {
				return nil, fmt.Errorf("%w: link %d: %s holds no %s", errBadLink, i, rec.From, pat)
			}
		}
		lset, err := capability.Compile([]json.RawMessage{pat})
		if err != nil {
			return nil, fmt.Errorf("%w: link %d: %v", errBadLink, i, err)
		}
		if j, why := lset.Covering(set, i); j < 0 {
			return nil, fmt.Errorf("%w: link %d: %s", errBadLink, i, why)
		}
		links[i] = link{pattern: pat, grantID: l.Grant, entry: l.Entry}
	}
	return links, nil
}

// --- grants, controls and aliases made on other nodes of a cluster ---
//
// The space's clusterlink.Link decodes what another node stored and checks that it
// fits its key; these apply it as that node did, through the same core
// functions. Each reports known false when the participant it names is
// not known here yet (its invitation comes later), for the link to keep
// the change until it is. mu must be held.

// remoteGrantLocked applies a grant made on another node, checked as this
// node checks its own: one it would not have accepted is refused, never
// enforced. applied reports that it is in force here now.
func (sp *liveSpace) remoteGrantLocked(rec cluster.Grant) (known, applied bool) {
	m := sp.members[rec.To]
	if m == nil {
		return false, false
	}
	now := sp.srv.now()
	if !rec.Expires.IsZero() && !now.Before(rec.Expires) {
		return true, false
	}
	log := sp.srv.opts.Logger.With("space", sp.id, "participant", rec.To, "grant", rec.ID)
	caps, set, bad := compactPatterns(rec.Capabilities)
	if bad != nil {
		log.Warn("cluster: bad grant", "err", bad.message)
		return true, false
	}
	links, err := sp.checkLinksLocked(rec, set)
	if err != nil {
		log.Warn("cluster: grant refused", "err", err)
		return true, false
	}
	g := grant{id: rec.ID, from: rec.From, at: rec.At, expires: rec.Expires, session: rec.Session, links: links, caps: caps, set: set}
	if rf := sp.putGrantLocked(m, g, now); rf != nil {
		log.Warn("cluster: grant does not compile", "err", rf.message)
		return true, false
	}
	return true, true
}

// remoteGrantGoneLocked applies the end of participant's grant id on
// another node.
func (sp *liveSpace) remoteGrantGoneLocked(participant, id string) (known, applied bool) {
	m := sp.members[participant]
	if m == nil {
		return false, false
	}
	i := slices.IndexFunc(m.grants, func(g grant) bool { return g.id == id })
	if i < 0 {
		return true, false
	}
	if rf := sp.setGrantsLocked(m, slices.Delete(slices.Clone(m.grants), i, i+1), sp.srv.now()); rf != nil {
		sp.srv.opts.Logger.Warn("cluster: grants do not compile", "space", sp.id, "participant", participant, "grant", id, "err", rf.message)
		return true, false
	}
	return true, true
}

// remoteControlLocked applies a pause, resume, shutdown or kick made on
// another node, as that node did (setControlLocked).
func (sp *liveSpace) remoteControlLocked(c cluster.Control) (known bool) {
	m := sp.members[c.Participant]
	if m == nil {
		return false
	}
	sp.setControlLocked(m, c)
	return true
}

// remoteAliasLocked applies runtime id a.ID's binding to a.Participant,
// stored first in the cluster: from now on the id names that participant
// here too (a grant, a pause or a kick naming it, envelopes addressed to
// it), and no one else may join under it. Two nodes that bound one id to
// two participants at once both end with the binding stored first; the
// other participant's connection under that id, if here, is closed.
func (sp *liveSpace) remoteAliasLocked(a cluster.Alias) (known bool) {
	m := sp.members[a.Participant]
	if m == nil {
		return false
	}
	if _, logical := sp.members[a.ID]; logical {
		return true // a logical name is nobody's alias
	}
	cur, bound := sp.aliases[a.ID]
	switch {
	case cur == m:
		return true
	case m.aliases >= maxAliasesPerMember:
		sp.srv.opts.Logger.Warn("cluster: alias over the limit", "space", sp.id, "id", a.ID, "participant", m.name)
		return true
	case bound:
		cur.aliases--
		if s := sp.sessions[a.ID]; s != nil && s.m == cur {
			s.kill(websocket.StatusPolicyViolation, fmt.Sprintf("participant id %q was used by another participant on another gateway node first", a.ID))
			sp.detachLocked(s)
		}
	}
	sp.aliases[a.ID] = m
	m.aliases++
	return true
}
