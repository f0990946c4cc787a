package gateway

import (
	"slices"
	"time"

	"github.com/mew-protocol/mew/gateway/cluster"

	"github.com/mew-protocol/mew/protocol"
)

// Floor control (spec/responding-to.md as DESIGN.md maps it onto MEW): an
// agent about to answer a broadcast message claims it with
// floor/responding-to {started_at}; the gateway keeps one claim per message,
// the earliest started_at winning (ties to the smaller participant id), and
// tells every loser, new or old, to yield with a private floor/yield
// {winner, winner_started_at}. It is advisory: nothing is ever held back.

// recentMessages bounds the index of recent message ids the gateway keeps
// to know whether a claimed message was addressed.
const recentMessages = 4096

// claim is the floor of one message.
type claim struct {
	holder    *member
	id        string // the holder's runtime id when it claimed
	startedAt int64  // unix milliseconds, as the claimant said
	expires   time.Time
	rev       uint64 // in a cluster: the revision of the claim's key, once the watch has seen it
}

// floorTable is a space's claims and its index of recent messages. It is
// the state a cluster of gateways will share; here it lives in memory,
// guarded by liveSpace.mu.
type floorTable struct {
	claims    map[string]*claim // by message id
	addressed map[string]bool   // recent message id → it had a to
	ring      []string          // the ids of addressed, oldest first, at most recentMessages
}

// note records a relayed envelope's id in the recent-message index. mu must
// be held.
func (f *floorTable) note(id string, addressed bool) {
	f.ensure()
	if _, seen := f.addressed[id]; seen {
		return
	}
	if len(f.ring) >= recentMessages {
		delete(f.addressed, f.ring[0])
		f.ring = f.ring[1:]
	}
	f.ring = append(f.ring, id)
	f.addressed[id] = addressed
}

func (f *floorTable) ensure() {
	if f.addressed == nil {
		f.addressed = make(map[string]bool)
		f.claims = make(map[string]*claim)
	}
}

// floorEnabled reports whether the space runs floor control.
func (sp *liveSpace) floorEnabled() bool { return sp.cfg.FloorControl.Enabled }

// floorTTL is how long an unanswered claim lasts.
func (sp *liveSpace) floorTTL() time.Duration {
	if ttl := sp.cfg.FloorControl.TTL; ttl > 0 {
		return ttl
	}
	return 45 * time.Second
}

// floorNote indexes a chat for floor control and clears the claims it
// answers: a holder's chat correlated to the message it claimed.
func (sp *liveSpace) floorNote(o origin, env *protocol.Envelope) {
	if !sp.floorEnabled() {
		return
	}
	sp.mu.Lock()
	defer sp.mu.Unlock()
	f := &sp.floor
	f.note(env.ID, len(env.To) > 0)
	for _, msg := range env.CorrelationID {
		c := f.claims[msg]
		if c == nil {
			continue
		}
		if c.holder == o.m {
			delete(f.claims, msg)
			sp.link.floorClearLocked(msg, c)
		} else if o.m.yielded(msg) {
			// An agent told to yield answered anyway: advisory, so it is
			// delivered, but counted.
			sp.srv.metrics.floor.WithLabelValues("ignored_yield").Inc()
		}
	}
}

// floorClaim handles floor/responding-to.
func (sp *liveSpace) floorClaim(o origin, env *protocol.Envelope, now time.Time) (outcome, *refusal) {
	if !sp.floorEnabled() {
		return relayed, nil
	}
	var p protocol.RespondingTo
	if err := env.DecodePayload(&p); err != nil {
		return outcome{}, refuse(ErrorInvalidEnvelope, "floor/responding-to: "+err.Error())
	}
	msg := env.CorrelationID[0]
	return sp.link.floorClaim(o, msg, p.StartedAt, now)
}

// floorClaimHere settles a claim of the floor of msg on this node alone
// (the solo link's floorClaim).
func (sp *liveSpace) floorClaimHere(o origin, msg string, startedAt int64, now time.Time) (outcome, *refusal) {
	sp.mu.Lock()
	defer sp.mu.Unlock()
	f := &sp.floor
	f.ensure()
	if f.addressed[msg] {
		return relayed, nil // addressed messages have their responder already
	}
	sp.srv.metrics.floor.WithLabelValues("claims").Inc()
	mine := &claim{holder: o.m, id: o.id, startedAt: startedAt, expires: now.Add(sp.floorTTL())}
	cur := f.claims[msg]
	if cur != nil && !now.Before(cur.expires) {
		sp.srv.metrics.floor.WithLabelValues("expiries").Inc()
		cur = nil
	}
	switch {
	case cur == nil:
		f.claims[msg] = mine
	case cur.holder == o.m:
		// A repeated claim by the holder keeps the earlier start.
		cur.startedAt = min(cur.startedAt, mine.startedAt)
		cur.expires = mine.expires
	case mine.startedAt < cur.startedAt || (mine.startedAt == cur.startedAt && o.id < cur.id):
		f.claims[msg] = mine
		sp.yieldLocked(cur, mine, msg)
	default:
		sp.yieldLocked(mine, cur, msg)
	}
	return relayed, nil
}

// yieldLocked tells loser that winner has the floor of msg. mu must be held.
func (sp *liveSpace) yieldLocked(loser, winner *claim, msg string) {
	sp.srv.metrics.floor.WithLabelValues("yields").Inc()
	loser.holder.noteYield(msg)
	s := loser.holder.sess
	if s == nil {
		return
	}
	sp.unicastLocked(s, sp.systemEnvelope(protocol.KindFloorYield, []string{s.id},
		protocol.Yield{Winner: winner.id, WinnerStartedAt: winner.startedAt}, msg))
}

// floorLeaveLocked clears the claims of a participant that leaves. mu must
// be held.
func (sp *liveSpace) floorLeaveLocked(s *session) {
	for msg, c := range sp.floor.claims {
		if c.holder == s.m {
			delete(sp.floor.claims, msg)
			sp.link.floorClearLocked(msg, c)
		}
	}
}

// expireClaims drops claims past their TTL. The watchdog calls it.
func (sp *liveSpace) expireClaims(now time.Time) {
	sp.mu.Lock()
	defer sp.mu.Unlock()
	for msg, c := range sp.floor.claims {
		if !now.Before(c.expires) {
			delete(sp.floor.claims, msg)
			sp.srv.metrics.floor.WithLabelValues("expiries").Inc()
		}
	}
}

// noteYield remembers, for a while, that m was told to yield msg, so that an
// answer it sends anyway can be counted. Guarded by liveSpace.mu.
func (m *member) noteYield(msg string) {
	if len(m.yields) >= 64 {
		m.yields = m.yields[1:]
	}
	m.yields = append(m.yields, msg)
}

func (m *member) yielded(msg string) bool {
	for _, y := range m.yields {
		if y == msg {
			return true
		}
	}
	return false
}

// --- claims across the nodes of a cluster (clusterlink.Link arbitrates) ---

// floorSetLocked records that c holds the floor of msg in the cluster, as
// of its key's revision c.Revision (0: not known). A participant of this
// node that held it before and is not c's holder is told to yield, once.
// A change older than the one recorded (a watch delivers its changes after
// the node's own claim may have read a newer one) is no change, but its
// holder, if here, has lost and is told so. mu must be held.
func (sp *liveSpace) floorSetLocked(msg string, c cluster.Claim) {
	f := &sp.floor
	f.ensure()
	next := &claim{holder: sp.members[c.Holder], id: c.ID, startedAt: c.StartedAt, expires: c.Expires, rev: c.Revision}
	prev := f.claims[msg]
	switch {
	case prev != nil && prev.holder == next.holder && next.holder != nil:
		if next.rev >= prev.rev {
			prev.startedAt, prev.id, prev.expires, prev.rev = next.startedAt, next.id, next.expires, next.rev
		}
		return
	case prev != nil && next.rev != 0 && next.rev < prev.rev:
		sp.yieldOnceLocked(next, prev, msg) // displaced already
		return
	case prev == nil && len(f.claims) >= recentMessages:
		return // a bounded copy: the oldest claims expire on their own
	}
	f.claims[msg] = next
	if next.holder != nil {
		next.holder.yields = slices.DeleteFunc(next.holder.yields, func(y string) bool { return y == msg })
	}
	if prev != nil {
		sp.yieldOnceLocked(prev, next, msg)
	}
}

// yieldOnceLocked tells loser's holder, if connected here, that winner has
// the floor of msg, unless it was told already. mu must be held.
func (sp *liveSpace) yieldOnceLocked(loser, winner *claim, msg string) {
	if h := loser.holder; h != nil && h.sess != nil && h != winner.holder && !h.yielded(msg) {
		sp.yieldLocked(loser, winner, msg)
	}
}

// floorGoneLocked forgets the claim of msg whose key was deleted at rev,
// unless the claim recorded is newer. mu must be held.
func (sp *liveSpace) floorGoneLocked(msg string, rev uint64) {
	if c := sp.floor.claims[msg]; c != nil && c.rev <= rev {
		delete(sp.floor.claims, msg)
	}
}
