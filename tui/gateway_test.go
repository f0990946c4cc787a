package tui

import (
	"context"
	"encoding/json"
	"fmt"
	"regexp"
	"strings"
	"testing"
	"time"

	tea "charm.land/bubbletea/v2"

	"github.com/mew-protocol/mew/client"
	"github.com/mew-protocol/mew/gateway"
	"github.com/mew-protocol/mew/internal/testutil"
	"github.com/mew-protocol/mew/participant"
	"github.com/mew-protocol/mew/protocol"
)

const grantSpace = `
space: {id: tui}
participants:
  you:
    tokens: [you-token]
    capabilities: [{kind: "*"}]
  assistant:
    tokens: [assistant-token]
    capabilities:
      - {kind: chat}
      - {kind: mcp/proposal}
      - {kind: mcp/withdraw}
      - {kind: capability/grant-ack}
  calculator:
    tokens: [calculator-token]
    capabilities: [{kind: chat}]
`

// TestGrantThroughGateway: through a real gateway, the user approves an
// untrusted agent's proposal with Grant (this tool, 10 minutes); the
// agent's next identical call goes through without a proposal or a dialog;
// after /revoke it proposes, and the dialog asks, again.
func TestGrantThroughGateway(t *testing.T) {
	g := testutil.StartGateway(t, grantSpace, gateway.Options{})
	add := participant.Tool{
		Name:        "add",
		InputSchema: json.RawMessage(`{"type":"object","properties":{"a":{"type":"number"},"b":{"type":"number"}}}`),
		Execute: func(_ context.Context, args json.RawMessage) (any, error) {
			var in struct{ A, B float64 }
			if err := json.Unmarshal(args, &in); err != nil {
				return nil, err
			}
			return in.A + in.B, nil
		},
	}
	testutil.JoinParticipant(t, g, "calculator-token", participant.Options{}, add)
	assistant := testutil.JoinParticipant(t, g, "assistant-token", participant.Options{})
	you := testutil.JoinParticipant(t, g, "you-token", participant.Options{})

	h := attachTo(t, g, you, "you-token")
	pump := h.pump
	args := map[string]any{"name": "add", "arguments": map[string]any{"a": 1, "b": 5}}
	type answer struct {
		res json.RawMessage
		err error
	}
	ask := func() <-chan answer {
		ch := make(chan answer, 1)
		go func() {
			res, err := assistant.Request(t.Context(), "calculator", map[string]any{"method": "tools/call", "params": args})
			ch <- answer{res, err}
		}()
		return ch
	}
	got := func(ch <-chan answer) {
		t.Helper()
		select {
		case a := <-ch:
			if a.err != nil || !strings.Contains(string(a.res), `"text":"6"`) {
				t.Fatalf("the assistant's call returned %s, %v", a.res, a.err)
			}
		case <-time.After(15 * time.Second):
			t.Fatalf("the assistant's call did not return; the screen:\n%s", h.screen())
		}
	}

	first := ask()
	pump("the dialog", func() bool { return h.m.props.dlg != nil })
	proposalID := h.m.props.dlg.p.id
	h.key("g", "2", "2") // Grant · add with any arguments · 10 minutes
	got(first)

	// On the wire: the grant, then the fulfilment of the proposal.
	var grantEnv, fulfil *protocol.Envelope
	pump("the grant and the fulfilment", func() bool {
		for _, e := range h.seen {
			switch {
			case e.Kind == protocol.KindCapabilityGrant && e.From == "you":
				grantEnv = e
			case e.Kind == protocol.KindMCPRequest && e.From == "you" && e.CorrelatesWith(proposalID):
				fulfil = e
			}
		}
		return grantEnv != nil && fulfil != nil
	})
	var gp protocol.Grant
	if err := grantEnv.DecodePayload(&gp); err != nil {
		t.Fatal(err)
	}
	want := `{"kind":"mcp/request","payload":{"method":"tools/call","params":{"name":"add"}}}`
	if gp.Recipient != "assistant" || gp.TTLSeconds != 600 || len(gp.Capabilities) != 1 || string(gp.Capabilities[0]) != want {
		t.Errorf("grant %+v (%s), want add for 600 s to assistant", gp, gp.Capabilities)
	}
	if fmt.Sprint(fulfil.To) != "[calculator]" {
		t.Errorf("fulfilment to %v, want [calculator]", fulfil.To)
	}

	// The gateway told the assistant; its next identical call is a request.
	waitFor(t, "the assistant to hold the grant", func() bool {
		return assistant.CanSend(protocol.KindMCPRequest, []byte(`{"method":"tools/call","params":{"name":"add","arguments":{"a":1,"b":5}}}`))
	})
	second := ask()
	got(second)
	pump("the second call's answer", func() bool {
		for _, e := range h.m.tr.entries {
			if r, ok := e.(*requestEntry); ok && r.from == "assistant" && r.by == "calculator" {
				return true
			}
		}
		return false
	})
	if h.m.props.book.last != 1 || h.m.props.dlg != nil {
		t.Fatalf("the granted call was proposed again (%d proposals, dialog %v):\n%s", h.m.props.book.last, h.m.props.dlg != nil, h.screen())
	}
	h.golden("gateway_granted")

	// The gateway's ledger lists the grant, with its time left; revoked,
	// the call asks again.
	h.now = time.Now() // the gateway's clock
	h.typeLine("/grants")
	if s := h.screen(); !regexp.MustCompile(`1\. you → assistant: add with any arguments · expires in (10m0|9m[0-5]\d)s`).MatchString(s) {
		t.Fatalf("/grants does not list the grant:\n%s", s)
	}
	h.typeLine("/revoke 1")
	waitFor(t, "the assistant to lose the grant", func() bool {
		return !assistant.CanSend(protocol.KindMCPRequest, []byte(`{"method":"tools/call","params":{"name":"add","arguments":{"a":1,"b":5}}}`))
	})
	third := ask()
	pump("the dialog again", func() bool { return h.m.props.dlg != nil })
	h.key("y")
	got(third)
}

func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(15 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("waiting for %s", what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// TestLedger: the ledger's URL from the gateway's, and a gateway that
// refuses the token is reported, not shown as an empty ledger.
func TestLedger(t *testing.T) {
	for in, want := range map[string]string{
		"ws://127.0.0.1:9/":             "http://127.0.0.1:9/participants/a%2Fb/grants?space=s",
		"wss://gw.example/ws?space=s":   "https://gw.example/participants/a%2Fb/grants?space=s",
		"http://gw.example:8080/x#frag": "http://gw.example:8080/participants/a%2Fb/grants?space=s",
	} {
		space := "s"
		if strings.Contains(in, "space=") {
			space = ""
		}
		if got, err := ledgerURL(in, space, "a/b"); err != nil || got != want {
			t.Errorf("ledgerURL(%q) = %q, %v; want %q", in, got, err, want)
		}
	}
	if _, err := ledgerURL("ftp://x", "s", "a"); err == nil {
		t.Error("ledgerURL took ftp")
	}

	g := testutil.StartGateway(t, grantSpace, gateway.Options{})
	you := testutil.JoinParticipant(t, g, "you-token", participant.Options{})
	h := newHarnessWith(t, NewSDKSpace(you, SDKOptions{Gateway: "ws://" + g.Addr, Space: "tui", Token: "assistant-token"}))
	h.m.welcome(you.Client().Welcome())
	h.typeLine("/grants")
	if s := h.screen(); !strings.Contains(s, "/grants: the gateway refused the grants' list: 403 Forbidden") {
		t.Errorf("a refused ledger:\n%s", s)
	}
	h.typeLine("/revoke 1")
	if n := strings.Count(h.screen(), "the gateway refused"); n != 2 {
		t.Errorf("/revoke without a ledger:\n%s", h.screen())
	}
}

// TestAttachReady: attached to a client that became Ready before Attach
// (as the dispatch goroutine may make it between Run's look at the state
// and Attach), the screen still learns it is connected.
func TestAttachReady(t *testing.T) {
	g := testutil.StartGateway(t, grantSpace, gateway.Options{})
	you := testutil.JoinParticipant(t, g, "you-token", participant.Options{})
	waitFor(t, "the client to be ready", func() bool { return you.Client().State() == client.Ready })
	events := make(chan tea.Msg, 16)
	detach := Attach(you, func(m tea.Msg) { events <- m })
	defer detach()
	deadline := time.After(5 * time.Second)
	for {
		select {
		case m := <-events:
			if c, ok := m.(Connection); ok {
				if c.State != Connected {
					t.Fatalf("Attach told %v, want connected", c.State)
				}
				return
			}
		case <-deadline:
			t.Fatal("Attach never told the screen the client is connected")
		}
	}
}
