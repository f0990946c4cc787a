package participant_test

import (
	"context"
	"errors"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mew-protocol/mew/gateway"
	"github.com/mew-protocol/mew/internal/testutil"
	"github.com/mew-protocol/mew/participant"
	"github.com/mew-protocol/mew/protocol"
)

// approverSpace is sdkSpace with a second approver, boss.
var approverSpace = sdkSpace + testutil.Member("boss", "*")

// settledError returns err's *ProposalSettledError, failing the test when
// it is none.
func settledError(t *testing.T, err error, what string) *participant.ProposalSettledError {
	t.Helper()
	var se *participant.ProposalSettledError
	if !errors.As(err, &se) || !errors.Is(err, participant.ErrProposalSettled) {
		t.Fatalf("%s: err = %v, want a ProposalSettledError", what, err)
	}
	return se
}

// TestProposalDecidedOnce: a rejected proposal cannot be approved after,
// and an approved one is not carried out twice.
func TestProposalDecidedOnce(t *testing.T) {
	sc := newProposalScene(t, participant.Options{})
	human, agent, proposals, calls, ctx := sc.human, sc.agent, sc.proposals, sc.calls, sc.ctx

	// Rejected, then approved: refused, and the tool never runs.
	res := mcpRequestAsync(ctx, agent, "calc", mcpCall("add", map[string]any{"a": 1, "b": 2}))
	pr := mcpNextProposal(t, proposals)
	if open := human.PendingProposals(); len(open) != 1 || open[0] != pr {
		t.Fatalf("PendingProposals = %v", open)
	}
	if err := human.Reject(ctx, pr, protocol.ReasonUnsafe); err != nil {
		t.Fatal(err)
	}
	if o := mcpOutcomeOf(t, res); !errors.As(o.err, new(*participant.RejectedError)) {
		t.Fatalf("proposer got %v, want the rejection", o.err)
	}
	_, err := human.Fulfill(ctx, pr)
	se := settledError(t, err, "Fulfill after Reject")
	if se.Status.Settlement != participant.Rejected || se.Status.By != "human" || se.Status.Reason != "unsafe" {
		t.Errorf("status = %+v", se.Status)
	}
	if want := "was already rejected by human: unsafe"; !strings.Contains(err.Error(), want) {
		t.Errorf("err = %q, want it to say %q", err, want)
	}
	if err := human.Reject(ctx, pr, "again"); !errors.Is(err, participant.ErrProposalSettled) {
		t.Errorf("second Reject = %v", err)
	}
	if len(human.PendingProposals()) != 0 {
		t.Error("a rejected proposal is still pending")
	}

	// Approved, then approved again: runs once.
	res = mcpRequestAsync(ctx, agent, "calc", mcpCall("add", map[string]any{"a": 2, "b": 3}))
	pr = mcpNextProposal(t, proposals)
	if _, err := human.Fulfill(ctx, pr); err != nil {
		t.Fatal(err)
	}
	if o := mcpOutcomeOf(t, res); o.err != nil {
		t.Fatal(o.err)
	}
	_, err = human.Fulfill(ctx, pr)
	if se := settledError(t, err, "second Fulfill"); se.Status.Settlement != participant.Approved || se.Status.By != "human" {
		t.Errorf("status = %+v", se.Status)
	}
	if err := human.Reject(ctx, pr, ""); !errors.Is(err, participant.ErrProposalSettled) {
		t.Errorf("Reject after Fulfill = %v", err)
	}
	if n := calls.Load(); n != 1 {
		t.Errorf("the tool ran %d times, want once", n)
	}
}

// TestProposalSettledByAnother: a decision by another participant of the
// space settles the proposal here too.
func TestProposalSettledByAnother(t *testing.T) {
	g := startSpace(t, approverSpace, gateway.Options{})
	_, calls := mcpCalc(t, g)
	human := mcpJoin(t, g, "human", participant.Options{})
	boss := mcpJoin(t, g, "boss", participant.Options{})
	agent := mcpJoin(t, g, "agent", participant.Options{})
	proposals, bossProposals := mcpProposals(human), mcpProposals(boss)
	rejects, requests := mcpWatch(human, protocol.KindMCPReject), mcpWatch(human, protocol.KindMCPRequest)
	ctx := mcpCtx(t)

	// boss rejects.
	res := mcpRequestAsync(ctx, agent, "calc", mcpCall("add", map[string]any{"a": 1, "b": 1}))
	pr, bpr := mcpNextProposal(t, proposals), mcpNextProposal(t, bossProposals)
	if err := boss.Reject(ctx, bpr, protocol.ReasonPolicy); err != nil {
		t.Fatal(err)
	}
	mcpOutcomeOf(t, res)
	// The participant's own handler runs before the test's, registered later.
	mcpWait(t, rejects, "boss's rejection", func(e *protocol.Envelope) bool { return e.CorrelatesWith(pr.ID()) })
	_, err := human.Fulfill(ctx, pr)
	if se := settledError(t, err, "Fulfill of a proposal boss rejected"); se.Status.Settlement != participant.Rejected || se.Status.By != "boss" || se.Status.Reason != "policy" {
		t.Errorf("status = %+v", se.Status)
	}

	// boss approves.
	res = mcpRequestAsync(ctx, agent, "calc", mcpCall("add", map[string]any{"a": 2, "b": 2}))
	pr, bpr = mcpNextProposal(t, proposals), mcpNextProposal(t, bossProposals)
	if _, err := boss.Fulfill(ctx, bpr); err != nil {
		t.Fatal(err)
	}
	mcpOutcomeOf(t, res)
	mcpWait(t, requests, "boss's fulfilment", func(e *protocol.Envelope) bool { return e.CorrelatesWith(pr.ID()) })
	_, err = human.Fulfill(ctx, pr)
	if se := settledError(t, err, "Fulfill of a proposal boss approved"); se.Status.Settlement != participant.Approved || se.Status.By != "boss" {
		t.Errorf("status = %+v", se.Status)
	}
	if n := calls.Load(); n != 1 {
		t.Errorf("the tool ran %d times, want once", n)
	}
}

// TestProposalWithdrawnOrExpired: a withdrawn proposal and one nobody
// decided in time are settled, and say so.
func TestProposalWithdrawnOrExpired(t *testing.T) {
	sc := newProposalScene(t, participant.Options{ProposalTimeout: 200 * time.Millisecond})
	human, agent, proposals, ctx := sc.human, sc.agent, sc.proposals, sc.ctx

	cctx, cancel := context.WithCancel(ctx)
	res := mcpRequestAsync(cctx, agent, "calc", mcpCall("add", map[string]any{"a": 1, "b": 1}))
	pr := mcpNextProposal(t, proposals)
	cancel()
	mcpOutcomeOf(t, res)
	select {
	case <-pr.Withdrawn():
	case <-time.After(5 * time.Second):
		t.Fatal("the withdrawal never arrived")
	}
	_, err := human.Fulfill(ctx, pr)
	if se := settledError(t, err, "Fulfill of a withdrawn proposal"); se.Status.Settlement != participant.Withdrawn || se.Status.By != "agent" || se.Status.Reason != "cancelled" {
		t.Errorf("status = %+v", se.Status)
	}
	if !errors.Is(err, participant.ErrProposalWithdrawn) {
		t.Errorf("err = %v, want ErrProposalWithdrawn too", err)
	}

	// Nobody decides: after ProposalTimeout it has timed out.
	cctx, cancel = context.WithCancel(ctx)
	defer cancel()
	res = mcpRequestAsync(cctx, agent, "calc", mcpCall("add", map[string]any{"a": 1, "b": 1}))
	pr = mcpNextProposal(t, proposals)
	waitUntil(t, "the proposal times out", func() bool { return pr.Status().Settlement != participant.Open })
	if err := human.Reject(ctx, pr, ""); !errors.Is(err, participant.ErrProposalSettled) || !strings.Contains(err.Error(), "timed out") {
		t.Errorf("Reject of a timed-out proposal = %v", err)
	}
	if len(human.PendingProposals()) != 0 {
		t.Error("a timed-out proposal is still pending")
	}
	cancel()
	mcpOutcomeOf(t, res)
}

// proposalScene is a space where calc offers add, agent may only propose,
// and human approves: what the proposal tests start from.
type proposalScene struct {
	human, agent *participant.Participant
	proposals    <-chan *participant.Proposal // human's
	calls        *atomic.Int32                // add's calls
	ctx          context.Context
}

func newProposalScene(t *testing.T, human participant.Options) *proposalScene {
	t.Helper()
	g := startSpace(t, "", gateway.Options{})
	sc := &proposalScene{ctx: mcpCtx(t)}
	_, sc.calls = mcpCalc(t, g)
	sc.human = mcpJoin(t, g, "human", human)
	sc.agent = mcpJoin(t, g, "agent", participant.Options{})
	sc.proposals = mcpProposals(sc.human)
	return sc
}
