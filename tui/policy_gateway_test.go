package tui

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/mew-protocol/mew/gateway"
	"github.com/mew-protocol/mew/internal/testutil"
	"github.com/mew-protocol/mew/participant"
)

// policySpace: the calculator's add needs two of you and bob.
var policySpace = testutil.SpaceYAML("tui",
	testutil.Member("you", "*"),
	testutil.Member("bob", "chat"),
	testutil.Member("assistant", "chat", "mcp/proposal", "mcp/withdraw"),
	testutil.Member("calculator", "chat"),
) + `approvals:
  - name: sums
    reason: sums are checked by two people
    match: {to: [calculator], payload: {method: tools/call, params: {name: add}}}
    approvers: [you, bob]
    required: 2
`

// TestPolicyThroughGateway: under the space's approval policy the dialog
// says the rule, its reason and who must approve, and offers Approve, not
// Yes or Grant; the user's approval is counted, not carried out; when bob
// completes the quorum the dialog comes back offering Yes, which carries
// the call out as approved, and the assistant's call returns.
func TestPolicyThroughGateway(t *testing.T) {
	t.Setenv(testutil.ClusterEnv, "") // the flow, not the cluster, is tested here
	g := testutil.StartGateway(t, policySpace, gateway.Options{})
	testutil.JoinParticipant(t, g, "calculator-token", participant.Options{}, participant.Tool{
		Name: "add",
		Execute: func(_ context.Context, args json.RawMessage) (any, error) {
			var in struct{ A, B float64 }
			if err := json.Unmarshal(args, &in); err != nil {
				return nil, err
			}
			return in.A + in.B, nil
		},
	})
	assistant := testutil.JoinParticipant(t, g, "assistant-token", participant.Options{})
	bob := testutil.JoinParticipant(t, g, "bob-token", participant.Options{})
	you := testutil.JoinParticipant(t, g, "you-token", participant.Options{})
	h := attachTo(t, g, you, "you-token")
	pump := h.pump
	done := make(chan error, 1)
	go func() {
		res, err := assistant.Request(t.Context(), "calculator", map[string]any{"method": "tools/call", "params": map[string]any{"name": "add", "arguments": map[string]any{"a": 2, "b": 3}}})
		if err == nil && !strings.Contains(string(res), `"text":"5"`) {
			err = &json.UnsupportedValueError{Str: string(res)}
		}
		done <- err
	}()

	pump("the dialog under the policy", func() bool {
		d := h.m.props.dlg
		return d != nil && d.p.policy != nil && strings.Contains(h.screen(), "1 Approve")
	})
	screen := h.screen()
	for _, want := range []string{"awaiting 2 more approvals of you, bob", "rule sums: sums are checked by two", "1 Approve", "2 No", "Esc Later"} {
		if !strings.Contains(screen, want) {
			t.Errorf("the dialog lacks %q:\n%s", want, screen)
		}
	}
	if strings.Contains(screen, "Grant…") {
		t.Errorf("the dialog offers a grant under the policy:\n%s", screen)
	}
	id := h.m.props.dlg.p.id
	h.key("a") // Approve
	pump("the user's approval counted", func() bool {
		p := h.m.props.book.byID[id]
		return p.policy != nil && p.policy.Remaining == 1 && strings.Contains(h.screen(), "approved by you")
	})
	if h.m.props.dlg != nil {
		t.Fatalf("the dialog still asks after the user's approval:\n%s", h.screen())
	}
	select {
	case err := <-done:
		t.Fatalf("the call ended before the quorum: %v", err)
	default:
	}
	if err := bob.Approve(t.Context(), id); err != nil {
		t.Fatal(err)
	}
	pump("the dialog again, to carry it out", func() bool {
		d := h.m.props.dlg
		s := h.screen()
		return d != nil && strings.Contains(s, "1 Yes") && strings.Contains(s, "2 No") && !strings.Contains(s, "Grant")
	})
	if !strings.Contains(h.screen(), "approved by you, bob") {
		t.Errorf("the dialog does not say who approved:\n%s", h.screen())
	}
	h.key("y")
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("the assistant's call: %v", err)
		}
	case <-time.After(15 * time.Second):
		t.Fatalf("the assistant's call did not return; the screen:\n%s", h.screen())
	}
}
