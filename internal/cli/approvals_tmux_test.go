//go:build unix

package cli

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/mew-protocol/mew/gateway"
	"github.com/mew-protocol/mew/internal/testutil"
	"github.com/mew-protocol/mew/participant"
	"github.com/mew-protocol/mew/protocol"
)

// policyCLISpace: the calculator's add needs two of human and bob; helper,
// an agent, may only propose it.
var policyCLISpace = testutil.SpaceYAML("cli-agents",
	testutil.Member("human", "*"),
	testutil.Member("bob", "chat"),
	testutil.Member("calc", "chat"),
	testutil.Member("helper", "chat", "chat/*", "reasoning/*", "mcp/proposal", "mcp/withdraw", `{kind: mcp/request, payload: {method: tools/list}}`, "participant/*"),
) + `approvals:
  - name: sums
    reason: sums are checked by two people
    match: {to: [calc], payload: {method: tools/call, params: {name: add}}}
    approvers: [human, bob]
    required: 2
`

// TestApprovalPolicyTmux drives the built binary's full-screen UI in tmux
// with `mew agent run` (the offline model) beside it: the agent's sum,
// a proposal under the space's rule, awaits the person with the rule and
// its reason; the person approves (a); bob, from his program, completes
// the quorum; the dialog comes back with Yes, the person carries it out,
// and the agent's run continues to its answer.
func TestApprovalPolicyTmux(t *testing.T) {
	t.Setenv(testutil.ClusterEnv, "") // the flow, not the cluster, is tested here
	g := testutil.StartGateway(t, policyCLISpace, gateway.Options{})
	joinCLI(t, g, "calc-token", participant.Tool{
		Name:        "add",
		Description: "Add two numbers",
		InputSchema: json.RawMessage(`{"type":"object","properties":{"a":{"type":"number"},"b":{"type":"number"}},"required":["a","b"]}`),
		Execute: func(_ context.Context, args json.RawMessage) (any, error) {
			var in struct{ A, B float64 }
			err := json.Unmarshal(args, &in)
			return in.A + in.B, err
		},
	})
	bob := joinCLI(t, g, "bob-token")
	proposals := make(chan string, 4)
	bob.OnProposal(func(pr *participant.Proposal) { proposals <- pr.ID() })
	joined := make(chan struct{})
	bob.Client().OnKind(protocol.KindSystemPresence, func(e *protocol.Envelope) {
		if strings.Contains(string(e.Payload), `"helper"`) && strings.Contains(string(e.Payload), "join") {
			select {
			case <-joined:
			default:
				close(joined)
			}
		}
	})
	env := map[string]string{"MEW_TOKEN": "helper-token", "MEW_AGENT_CONFIG": `{"mockLLM": true, "reasoningEnabled": true}`}
	cmd := startAgentCmd(t, env, "-g", "ws://"+g.Addr, "-s", "cli-agents", "--id", "helper")
	cmd.waitJoined(t, joined)

	tm := startTmux(t, 120, 40)
	tm.run(t.TempDir(), mewBinary(t), "client", "connect", "-g", "ws://"+g.Addr, "-s", "cli-agents", "-t", "human-token")
	tm.wait("the UI", func(s string) bool { return strings.Contains(s, "joined cli-agents as human") })
	tm.typeLine("@helper what is 2 plus 3")
	tm.wait("the dialog under the policy", func(s string) bool {
		return strings.Contains(s, "1 Approve") && strings.Contains(s, "rule sums") && strings.Contains(s, "awaiting 2 more approvals of human, bob") &&
			!strings.Contains(s, "Grant…")
	})
	tm.keys("a")
	tm.wait("the person's approval given", func(s string) bool {
		return strings.Contains(s, "your approval of proposal #1 is given") && !strings.Contains(s, "1 Approve")
	})
	var id string
	select {
	case id = <-proposals:
	case <-time.After(tmplWait):
		t.Fatal("bob saw no proposal")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := bob.Approve(ctx, id); err != nil {
		t.Fatal(err)
	}
	tm.wait("the dialog again, to carry it out", func(s string) bool {
		return strings.Contains(s, "1 Yes") && strings.Contains(s, "approved by human, bob")
	})
	tm.keys("y")
	tm.wait("the agent's answer", func(s string) bool {
		return strings.Contains(s, "helper → human") && strings.Contains(s, "(offline model)")
	})
	tm.keys("C-c")
	tm.waitExit()
}
