package participant_test

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/mew-protocol/mew/participant"
	"github.com/mew-protocol/mew/protocol"
)

// TestFulfillWith: the human changes a proposed call's arguments before
// carrying it out; the tool runs once with the edited arguments and the
// proposer gets that answer. Params that are not an object are refused
// before anything is sent, leaving the proposal open.
func TestFulfillWith(t *testing.T) {
	sc := newProposalScene(t, participant.Options{})
	human, agent, proposals, calls, ctx := sc.human, sc.agent, sc.proposals, sc.calls, sc.ctx

	res := mcpRequestAsync(ctx, agent, "calc", mcpCall("add", map[string]any{"a": 1, "b": 2}))
	pr := mcpNextProposal(t, proposals)
	for _, bad := range []string{`[1,2]`, `"add"`, `null`, `{`, ``} {
		if _, err := human.FulfillWith(ctx, pr, json.RawMessage(bad)); err == nil || !strings.Contains(err.Error(), "not a JSON object") {
			t.Errorf("FulfillWith(%q) = %v", bad, err)
		}
	}
	if len(human.PendingProposals()) != 1 || calls.Load() != 0 {
		t.Fatalf("a refused edit settled the proposal or ran the tool (%d calls)", calls.Load())
	}
	got, err := human.FulfillWith(ctx, pr, json.RawMessage(`{"name":"add","arguments":{"a":10,"b":5}}`))
	if err != nil || !strings.Contains(string(got), `"text":"15"`) {
		t.Fatalf("FulfillWith = %s, %v", got, err)
	}
	if o := mcpOutcomeOf(t, res); o.err != nil || !strings.Contains(string(o.raw), `"text":"15"`) {
		t.Fatalf("the proposer got %s, %v; want the edited call's 15", o.raw, o.err)
	}
	if calls.Load() != 1 {
		t.Errorf("the tool ran %d times", calls.Load())
	}
	if _, err := human.FulfillWith(ctx, pr, json.RawMessage(`{"name":"add","arguments":{"a":1,"b":1}}`)); !errors.Is(err, participant.ErrProposalSettled) {
		t.Errorf("a second FulfillWith = %v, want ErrProposalSettled", err)
	}
	if _, err := human.FulfillWith(ctx, nil, json.RawMessage(`{}`)); err == nil {
		t.Error("FulfillWith of no proposal succeeded")
	}
}

// TestRejectWith: the reason code and the person's words reach the
// proposer in the mcp/reject's payload; without words the payload has the
// code alone.
func TestRejectWith(t *testing.T) {
	sc := newProposalScene(t, participant.Options{})
	human, agent, proposals, ctx := sc.human, sc.agent, sc.proposals, sc.ctx
	rejects := mcpWatch(agent, protocol.KindMCPReject)

	for _, c := range []struct{ message, payload string }{
		{"not on a Friday\x1b[2J", `{"reason":"policy","message":"not on a Friday\u001b[2J"}`},
		{"", `{"reason":"policy"}`},
	} {
		res := mcpRequestAsync(ctx, agent, "calc", mcpCall("add", map[string]any{"a": 1, "b": 2}))
		pr := mcpNextProposal(t, proposals)
		if err := human.RejectWith(ctx, pr, protocol.ReasonPolicy, c.message); err != nil {
			t.Fatal(err)
		}
		var rej *participant.RejectedError
		if o := mcpOutcomeOf(t, res); !errors.As(o.err, &rej) || rej.Reason != "policy" || rej.By != "human" {
			t.Fatalf("the proposer got %v", o.err)
		}
		select {
		case env := <-rejects:
			if string(env.Payload) != c.payload {
				t.Errorf("mcp/reject payload %s, want %s", env.Payload, c.payload)
			}
		case <-time.After(5 * time.Second):
			t.Fatal("no mcp/reject seen")
		}
		if err := human.RejectWith(ctx, pr, protocol.ReasonUnsafe, "again"); !errors.Is(err, participant.ErrProposalSettled) {
			t.Errorf("a second RejectWith = %v", err)
		}
	}
}
