package agent

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"time"

	"github.com/mew-protocol/mew/protocol"
)

// Defaults of FloorControl.
const (
	DefaultFloorMinDelay = 2 * time.Second
	DefaultFloorMaxDelay = 8 * time.Second
)

// maxClaims bounds the claims of others the agent remembers; claimMemory is
// how long it remembers one.
const (
	maxClaims   = 1024
	claimMemory = 2 * time.Minute
)

// FloorControl configures how the agent takes the floor for broadcast chats
// that do not address it (floor/responding-to and floor/yield, see the
// package documentation).
type FloorControl struct {
	// Disabled answers without claiming the floor.
	Disabled bool
	// MinDelay and MaxDelay bound the random wait before claiming (zero
	// both: 2 s and 8 s). MaxDelay below MinDelay means MinDelay.
	MinDelay, MaxDelay time.Duration
	// Operators are participants whose chats are exempt: the agent answers
	// them (when the response policy says so) without waiting or claiming.
	Operators []string
}

// withDefaults fills the delays.
func (f FloorControl) withDefaults() FloorControl {
	if f.MinDelay == 0 && f.MaxDelay == 0 {
		f.MinDelay, f.MaxDelay = DefaultFloorMinDelay, DefaultFloorMaxDelay
	}
	f.MinDelay = max(f.MinDelay, 0)
	f.MaxDelay = max(f.MaxDelay, f.MinDelay)
	return f
}

// claim is another participant's floor/responding-to.
type claim struct {
	from      string
	startedAt int64 // unix ms, as claimed
	seen      time.Time
}

// earlier reports whether claim (from, at) beats (otherFrom, otherAt):
// the earlier start wins, ties go to the smaller id, as the gateway decides.
func earlier(from string, at int64, otherFrom string, otherAt int64) bool {
	return at < otherAt || at == otherAt && from < otherFrom
}

// yieldedError is the cause of a run stopped because another participant
// has the floor.
type yieldedError struct{ winner string }

func (e *yieldedError) Error() string { return "agent: yielded the floor to " + e.winner }

// needsFloor reports whether answering a chat takes the floor: a broadcast
// that neither addresses nor mentions the agent (verdict classify), not from
// an operator.
func (a *Agent) needsFloor(env *protocol.Envelope, v verdict) bool {
	return v == classify && !a.cfg.FloorControl.Disabled && !slices.Contains(a.cfg.FloorControl.Operators, env.From)
}

// floorDelay draws the random wait before claiming.
func (a *Agent) floorDelay() time.Duration {
	f := a.cfg.FloorControl
	if f.MaxDelay <= f.MinDelay {
		return f.MinDelay
	}
	return f.MinDelay + rand.N(f.MaxDelay-f.MinDelay)
}

// onRespondingTo records another participant's claim, and stops the answer
// under way when the claim beats the agent's own.
func (a *Agent) onRespondingTo(env *protocol.Envelope) {
	if env.From == a.p.ID() || len(env.CorrelationID) == 0 {
		return
	}
	var rt protocol.RespondingTo
	if err := env.DecodePayload(&rt); err != nil {
		return
	}
	msg := env.CorrelationID[0]
	now := time.Now()
	a.mu.Lock()
	defer a.mu.Unlock()
	if old, ok := a.claims[msg]; !ok || earlier(env.From, rt.StartedAt, old.from, old.startedAt) {
		if len(a.claims) >= maxClaims {
			a.pruneClaimsLocked(now)
		}
		a.claims[msg] = claim{from: env.From, startedAt: rt.StartedAt, seen: now}
	}
	if r := a.active; r != nil && r.question == msg && r.startedAt != 0 && earlier(env.From, rt.StartedAt, a.p.ID(), r.startedAt) {
		r.cancel(&yieldedError{winner: env.From})
	}
}

// pruneClaimsLocked forgets old claims, and the oldest half when all are
// recent.
func (a *Agent) pruneClaimsLocked(now time.Time) {
	for id, c := range a.claims {
		if now.Sub(c.seen) > claimMemory {
			delete(a.claims, id)
		}
	}
	if len(a.claims) < maxClaims {
		return
	}
	ids := make([]string, 0, len(a.claims))
	for id := range a.claims {
		ids = append(ids, id)
	}
	slices.SortFunc(ids, func(x, y string) int { return a.claims[x].seen.Compare(a.claims[y].seen) })
	for _, id := range ids[:len(ids)/2] {
		delete(a.claims, id)
	}
}

// onYield stops the answer the gateway told the agent to yield.
func (a *Agent) onYield(env *protocol.Envelope) {
	if env.From != protocol.GatewayID || !env.AddressedTo(a.p.ID()) {
		return
	}
	var y protocol.Yield
	_ = env.DecodePayload(&y)
	a.mu.Lock()
	defer a.mu.Unlock()
	if r := a.active; r != nil && r.startedAt != 0 && env.CorrelatesWith(r.question) {
		r.cancel(&yieldedError{winner: y.Winner})
	}
}

// claimedBy returns who else claimed msg, "" when no one did.
func (a *Agent) claimedBy(msg string) string {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.claims[msg].from
}

// awaitFloor waits for the item's turn and reports whether the floor is
// still free; a chat someone else claimed is counted as suppressed.
func (a *Agent) awaitFloor(ctx context.Context, it *item) bool {
	if wait := time.Until(it.notBefore); wait > 0 {
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return false
		case <-t.C:
		}
	}
	if who := a.claimedBy(it.env.ID); who != "" {
		a.suppressed(it, who)
		return false
	}
	return true
}

// suppressed counts a chat left to another participant.
func (a *Agent) suppressed(it *item, winner string) {
	a.mu.Lock()
	a.floorSuppressed++
	n := a.floorSuppressed
	a.mu.Unlock()
	a.log.Info("agent: another participant has the floor; not answering", "chat", it.env.ID, "winner", winner)
	if err := a.p.SetStatusField("answers_suppressed", n); err != nil {
		a.log.Warn("agent: status field", "err", err)
	}
}

// claimFloor sends floor/responding-to for the run's question, with the
// time the inference starts.
func (a *Agent) claimFloor(ctx context.Context, r *run) {
	started := a.now().UnixMilli()
	a.mu.Lock()
	r.startedAt = started
	a.mu.Unlock()
	env := &protocol.Envelope{CorrelationID: []string{r.question}}
	if err := a.send(ctx, env, protocol.KindFloorRespondingTo, protocol.RespondingTo{StartedAt: started}); err != nil {
		a.log.Warn("agent: floor/responding-to not sent", "chat", r.question, "err", err)
	}
}

// yielded ends a run that lost the floor: no answer; observers of its
// reasoning get a reasoning/cancel.
func (a *Agent) yielded(r *run, y *yieldedError) {
	a.mu.Lock()
	a.floorYields++
	n := a.floorYields
	a.mu.Unlock()
	a.log.Info("agent: yielded the floor; answer dropped", "chat", r.question, "winner", y.winner)
	if err := a.p.SetStatusField("floor_yields", n); err != nil {
		a.log.Warn("agent: status field", "err", err)
	}
	if r.reasoning == "" {
		return
	}
	r.trace.close(a.ctx, "cancelled")
	env := &protocol.Envelope{Context: r.reasoning}
	if err := a.send(a.ctx, env, protocol.KindReasoningCancel, protocol.ReasoningCancel{Reason: fmt.Sprintf("yielded the floor to %s", y.winner)}); err != nil {
		a.log.Warn("agent: reasoning/cancel not sent", "err", err)
	}
}
