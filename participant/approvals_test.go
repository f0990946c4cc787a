package participant_test

import (
	"context"
	"encoding/json"
	"errors"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/mew-protocol/mew/gateway"
	"github.com/mew-protocol/mew/internal/testutil"
	"github.com/mew-protocol/mew/participant"
	"github.com/mew-protocol/mew/protocol"
)

const approvalSpace = `
space: {id: approvals}
participants:
  agent: {tokens: [agent-token], capabilities: [{kind: mcp/proposal}, {kind: mcp/withdraw}]}
  alice: {tokens: [alice-token], capabilities: [{kind: mcp/request}, {kind: mcp/reject}]}
  bob: {tokens: [bob-token], capabilities: [{kind: mcp/request}]}
  carol: {tokens: [carol-token], capabilities: [{kind: mcp/request}]}
  worker: {tokens: [worker-token], capabilities: [{kind: mcp/response}]}
approvals:
  - name: writes
    match: {payload: {method: tools/call, params: {name: write}}}
    approvers: [alice, bob, carol]
    required: 2
  - name: quick
    match: {payload: {method: tools/call, params: {name: quick}}}
    approvers: [alice]
    within_ms: 300
`

// startApprovalSpace serves approvalSpace (on a node of a cluster when
// MEW_TEST_CLUSTER says so).
func startApprovalSpace(t *testing.T) *testutil.Gateway {
	t.Helper()
	return testutil.StartGateway(t, approvalSpace, gateway.Options{})
}

// approvalRecorder keeps the states a callback was given.
type approvalRecorder struct {
	mu  sync.Mutex
	got []protocol.Approval
}

func (r *approvalRecorder) add(a protocol.Approval) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.got = append(r.got, a)
}

func (r *approvalRecorder) states() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	var s []string
	for _, a := range r.got {
		s = append(s, a.State)
	}
	return s
}

// The proposer sees its proposal's approval states as they come (the
// agent's "waiting for 2 of 3 approvers"), the call returns the result once
// the quorum approved and someone fulfilled it, and every participant sees
// the states through OnApproval and ApprovalOf.
func TestRequestApprovalStates(t *testing.T) {
	g := startApprovalSpace(t)
	worker := testutil.JoinParticipant(t, g, "worker-token", participant.Options{}, participant.Tool{
		Name:    "write",
		Execute: func(context.Context, json.RawMessage) (any, error) { return "written", nil },
	})
	_ = worker
	agent := join(t, g, "agent", participant.Options{})
	alice := join(t, g, "alice", participant.Options{})
	bob := join(t, g, "bob", participant.Options{})
	var mine, seen approvalRecorder
	remove := alice.OnApproval(seen.add)
	defer remove()
	proposals := make(chan *participant.Proposal, 1)
	alice.OnProposal(func(pr *participant.Proposal) { proposals <- pr })

	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	type answer struct {
		res json.RawMessage
		err error
	}
	done := make(chan answer, 1)
	go func() {
		res, err := agent.RequestWith(ctx, "worker", map[string]any{"method": "tools/call", "params": map[string]any{"name": "write", "arguments": map[string]any{}}},
			participant.RequestOptions{OnApproval: mine.add})
		done <- answer{res, err}
	}()
	pr := <-proposals
	testutil.WaitFor(t, 5*time.Second, "the awaiting state", func() bool { return slices.Contains(mine.states(), protocol.ApprovalAwaiting) })
	if a, ok := agent.ApprovalOf(pr.ID()); !ok || a.Remaining != 2 || a.Required != 2 || a.Rule != "writes" {
		t.Fatalf("ApprovalOf: %+v %v", a, ok)
	}
	// A fulfilment before the quorum is refused by the gateway.
	if _, err := alice.Fulfill(ctx, pr); err == nil {
		t.Fatal("a fulfilment before the quorum went through")
	}
	if err := alice.Approve(ctx, ""); err == nil {
		t.Fatal("an approval of no proposal was sent")
	}
	for _, p := range []*participant.Participant{alice, bob} {
		if err := p.Approve(ctx, pr.ID()); err != nil {
			t.Fatal(err)
		}
	}
	testutil.WaitFor(t, 5*time.Second, "approved", func() bool { return slices.Contains(mine.states(), protocol.ApprovalApproved) })
	if _, err := bob.Fulfill(ctx, pr); err != nil {
		t.Fatalf("bob fulfilling the approved proposal: %v", err)
	}
	a := <-done
	if a.err != nil || !json.Valid(a.res) {
		t.Fatalf("the proposer's call: %s %v", a.res, a.err)
	}
	testutil.WaitFor(t, 5*time.Second, "alice seeing it fulfilled", func() bool { return slices.Contains(seen.states(), protocol.ApprovalFulfilled) })
	if got := mine.states(); got[0] != protocol.ApprovalAwaiting || !slices.Contains(got, protocol.ApprovalApproved) {
		t.Errorf("the proposer saw %v", got)
	}
}

// A proposal the policy times out ends the proposer's call at once with an
// *ApprovalError that is ErrProposalTimedOut, not at the call's own
// timeout.
func TestRequestApprovalTimedOut(t *testing.T) {
	g := startApprovalSpace(t)
	testutil.JoinParticipant(t, g, "worker-token", participant.Options{}, participant.Tool{
		Name:    "quick",
		Execute: func(context.Context, json.RawMessage) (any, error) { return "done", nil },
	})
	agent := join(t, g, "agent", participant.Options{ProposalTimeout: time.Minute})
	start := time.Now()
	_, err := agent.RequestWith(context.Background(), "worker", map[string]any{"method": "tools/call", "params": map[string]any{"name": "quick", "arguments": map[string]any{}}}, participant.RequestOptions{})
	var ae *participant.ApprovalError
	if !errors.As(err, &ae) || !errors.Is(err, participant.ErrProposalTimedOut) || ae.Approval.Rule != "quick" {
		t.Fatalf("err = %v", err)
	}
	if took := time.Since(start); took > 10*time.Second {
		t.Errorf("the call ended after %v, not when the policy timed it out", took)
	}
}

// Only the gateway speaks for the policy: a system/approval from anyone
// else is refused by the gateway and, should one arrive, ignored.
func TestApprovalSpoofIgnored(t *testing.T) {
	g := startApprovalSpace(t)
	alice := join(t, g, "alice", participant.Options{})
	var seen approvalRecorder
	alice.OnApproval(seen.add)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	err := alice.Send(ctx, &protocol.Envelope{Kind: protocol.KindSystemApproval, Payload: json.RawMessage(`{"proposal":"x","state":"approved"}`)})
	if err == nil {
		// Sent: the gateway answers with a system/error; nothing reaches
		// the handlers.
		time.Sleep(200 * time.Millisecond)
	}
	if len(seen.states()) != 0 {
		t.Fatalf("a spoofed system/approval reached OnApproval: %v", seen.states())
	}
}
