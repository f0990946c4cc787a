package tui

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/mew-protocol/mew/bridge"
	"github.com/mew-protocol/mew/gateway"
	"github.com/mew-protocol/mew/internal/testutil"
	"github.com/mew-protocol/mew/participant"
)

const elicitSpace = `
space: {id: tui}
participants:
  you: {tokens: [you-token], capabilities: [{kind: "*"}]}
  agent: {tokens: [agent-token], capabilities: [{kind: chat}, {kind: mcp/request}]}
  booking:
    tokens: [booking-token]
    capabilities: [{kind: mcp/response}, {kind: participant/status}, {kind: "elicitation/*"}]
`

// TestElicitationThroughBridge: through a real gateway and bridge, the
// user answers an agent's elicitation for it and the agent's call gets
// the answer; an answer the bridge refuses (the form does not fit) says
// why and the dialog comes back; one nobody answers times out, and the
// card and the call say so.
func TestElicitationThroughBridge(t *testing.T) {
	g := testutil.StartGateway(t, elicitSpace, gateway.Options{})
	testutil.StartBooking(t, g, "booking-token", bridge.Options{ElicitationTimeout: 3 * time.Second})
	agent := testutil.JoinParticipant(t, g, "agent-token", participant.Options{})
	you := testutil.JoinParticipant(t, g, "you-token", participant.Options{})

	h := attachTo(t, g, you, "you-token")
	pump := h.pump
	book := func() <-chan string {
		ch := make(chan string, 1)
		go func() {
			raw, err := agent.Request(t.Context(), "booking", map[string]any{"method": "tools/call", "params": map[string]any{"name": "book", "arguments": map[string]any{}}})
			var r struct {
				Content []struct{ Text string } `json:"content"`
			}
			_ = json.Unmarshal(raw, &r)
			if err != nil || len(r.Content) == 0 {
				ch <- "error: " + string(raw) + " " + errString(err)
				return
			}
			ch <- r.Content[0].Text
		}()
		return ch
	}
	wait := func(ch <-chan string, want string) {
		t.Helper()
		for {
			select {
			case got := <-ch:
				if got != want {
					t.Fatalf("the agent's call answered %q, want %q", got, want)
				}
				return
			case msg := <-h.events:
				h.send(msg)
			case <-time.After(20 * time.Second):
				t.Fatalf("the agent's call did not complete:\n%s", h.screen())
			}
		}
	}

	// Answered for the agent, after one answer the bridge refuses.
	call := book()
	pump("the dialog", func() bool { return h.m.asks.dlg != nil })
	e := h.m.asks.dlg
	h.run(h.m.asks.answer(e, "accept", map[string]any{"name": "Ada", "seats": 50})) // what the form would not send
	pump("the refusal", func() bool { return h.m.asks.dlg == e && e.refused != "" })
	if s := h.screen(); !strings.Contains(s, "Your answer was not used: content does not fit the form") {
		t.Errorf("the refusal is not shown:\n%s", s)
	}
	h.typeText("Ada")
	h.key("enter")
	wait(call, `accept {"name":"Ada","seats":1}`)
	pump("the card settled", func() bool { return e.settled })
	if !strings.Contains(h.screen(), "accepted by you") {
		t.Errorf("the card:\n%s", h.screen())
	}

	// Nobody answers: the card and the call say it timed out.
	call = book()
	pump("the second dialog", func() bool { return h.m.asks.dlg != nil && h.m.asks.dlg != e })
	e2 := h.m.asks.dlg
	h.key("esc")
	wait(call, "cancel")
	pump("the expiry", func() bool { return e2.settled })
	if s := h.screen(); !strings.Contains(s, "timed out: nobody answered within 3s") {
		t.Errorf("the expiry is not shown:\n%s", s)
	}
}

func errString(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}
