package agent_test

import (
	"context"
	"encoding/json"
	"strings"
	"sync"
	"testing"

	"github.com/mew-protocol/mew/agent"
	"github.com/mew-protocol/mew/gateway"
	"github.com/mew-protocol/mew/internal/testutil"
	"github.com/mew-protocol/mew/participant"
	"github.com/mew-protocol/mew/protocol"
)

// policySpace is agentSpace with two more approvers and a rule: the
// calculator's add needs two of human, alice and bob.
var policySpace = agentSpace + `
  alice:
    tokens: [alice-token]
    capabilities: [{kind: chat}]
  bob:
    tokens: [bob-token]
    capabilities: [{kind: chat}]
approvals:
  - name: sums
    reason: sums are checked by two people
    match: {to: [calc], payload: {method: tools/call, params: {name: add}}}
    approvers: [human, alice, bob]
    required: 2
`

// TestProposalUnderPolicy: an agent whose tool call needs two approvals
// says so in its reasoning ("Waiting for 2 of 3 approvers"), then that it
// was approved; the human's fulfilment before the quorum is refused, the
// one after it goes, and the agent's run continues to its answer.
func TestProposalUnderPolicy(t *testing.T) {
	g := testutil.StartGateway(t, policySpace, gateway.Options{})
	llmSrv := addingModel(t, "It is 9.")
	human := join(t, g, "human")
	alice := join(t, g, "alice")
	bob := join(t, g, "bob")
	join(t, g, "calc", addTool)
	proposals := make(chan *participant.Proposal, 1)
	human.OnProposal(func(pr *participant.Proposal) { proposals <- pr })
	startAgent(t, g, "proposer", openAI(t, llmSrv), agent.Config{ReasoningEnabled: true})
	rec := record(t, human)
	q := sendChat(t, human, "add 4 and 5", "proposer")

	pr := <-proposals
	waiting := rec.wait(t, "the agent saying whom it waits for", func(e *protocol.Envelope) bool {
		return e.Kind == protocol.KindReasoningThought && e.From == "proposer" && strings.Contains(string(e.Payload), "Waiting for 2 of 3 approvers")
	})
	if !strings.Contains(string(waiting.Payload), "human, alice, bob") || !strings.Contains(string(waiting.Payload), "sums are checked by two people") {
		t.Errorf("the waiting thought: %s", waiting.Payload)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	if _, err := human.Fulfill(ctx, pr); err == nil {
		t.Fatal("the human's fulfilment before the quorum went through")
	}
	var wg sync.WaitGroup
	for _, p := range []*participant.Participant{alice, bob} {
		sendEnv(t, p, &protocol.Envelope{Kind: protocol.KindApprovalApprove, CorrelationID: []string{pr.ID()}, Payload: json.RawMessage(`{}`)})
	}
	// The two approvals reach the gateway in either order.
	rec.wait(t, "the agent saying it was approved", func(e *protocol.Envelope) bool {
		p := string(e.Payload)
		return e.Kind == protocol.KindReasoningThought && e.From == "proposer" &&
			(strings.Contains(p, "Approved by alice, bob") || strings.Contains(p, "Approved by bob, alice"))
	})
	wg.Add(1)
	go func() {
		defer wg.Done()
		if _, err := human.Fulfill(ctx, pr); err != nil && ctx.Err() == nil {
			t.Errorf("the fulfilment after the quorum: %v", err)
		}
	}()
	defer wg.Wait()
	answer := rec.wait(t, "the answer", answerTo("proposer", q))
	if got := chatText(answer); got != "It is 9." {
		t.Errorf("answer %q", got)
	}
}
