//go:build unix

package cli

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/mew-protocol/mew/bridge"
	"github.com/mew-protocol/mew/gateway"
	"github.com/mew-protocol/mew/internal/testutil"
)

// elicitSpaceCLI: human answers any bridge's questions; agent calls the
// booking server and may not answer them; booking is the bridge.
const elicitSpaceCLI = `
space: {id: trips}
participants:
  human: {tokens: [human-token], capabilities: [{kind: "*"}]}
  agent: {tokens: [agent-token], capabilities: [{kind: chat}, {kind: mcp/request}]}
  booking:
    tokens: [booking-token]
    capabilities: [{kind: mcp/response}, {kind: participant/status}, {kind: "elicitation/*"}]
`

// TestElicitationTmux drives the full-screen UI of the built binary in
// tmux: the person's own call to a bridged server elicits a form, a wrong
// value is shown in place, the answer completes the call; then an agent's
// call is answered by the person for the agent, a URL elicitation's link
// is opened with MEW_OAUTH_OPENER, and a picture in a result shows as a
// placeholder.
func TestElicitationTmux(t *testing.T) {
	g := testutil.StartGateway(t, elicitSpaceCLI, gateway.Options{})
	testutil.StartBooking(t, g, "booking-token", bridge.Options{})
	agent := joinCLI(t, g, "agent-token")
	tm := startTmux(t, 120, 40)
	// The opener writes the link it is given to a file.
	dir := t.TempDir()
	opened, opener := filepath.Join(dir, "opened"), filepath.Join(dir, "opener")
	if err := os.WriteFile(opener, []byte("#!/bin/sh\nprintf %s \"$1\" > "+opened+"\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	tm.run(dir, "env", "MEW_OAUTH_OPENER="+opener, mewBinary(t), "client", "connect", "-g", "ws://"+g.Addr, "-s", "trips", "-t", "human-token")
	tm.wait("the UI", func(s string) bool { return strings.Contains(s, "joined trips as human") })

	// The person's own call, typed as an envelope.
	tm.typeLine(`{"kind":"mcp/request","to":["booking"],"payload":{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"book","arguments":{}}}}`)
	tm.wait("the form", func(s string) bool {
		return strings.Contains(s, "╭─ elicitation ?1") && strings.Contains(s, "booking asks you (for book)") &&
			strings.Contains(s, "▸ Name *") && strings.Contains(s, "Seats")
	})
	tm.must("send-keys", "-l", "Ada")
	tm.keys("Tab", "BSpace")
	tm.must("send-keys", "-l", "12")
	tm.keys("Enter")
	tm.wait("the error in place", func(s string) bool { return strings.Contains(s, "! at most 9") })
	tm.keys("BSpace", "BSpace")
	tm.must("send-keys", "-l", "2")
	tm.keys("Enter")
	tm.wait("the call's answer", func(s string) bool {
		return strings.Contains(s, `booking → human: accept {"name":"Ada","seats":2}`) && strings.Contains(s, "accepted by you") &&
			!strings.Contains(s, "╭─ elicitation")
	})

	// The agent's call: the person answers for it.
	got := testutil.CallBooking(t, agent, "book")
	tm.wait("the agent's form", func(s string) bool {
		return strings.Contains(s, "╭─ elicitation ?2") && strings.Contains(s, "booking asks agent (for book)")
	})
	tm.must("send-keys", "-l", "Grace")
	tm.keys("Enter")
	select {
	case text := <-got:
		if text != `accept {"name":"Grace","seats":1}` {
			t.Fatalf("the agent's call answered %q", text)
		}
	case <-time.After(60 * time.Second):
		t.Fatalf("the agent's call did not complete:\n%s", tm.capture())
	}

	// A URL elicitation of the person's own call: o opens the link with
	// the opener and accepts.
	tm.typeLine(`{"kind":"mcp/request","to":["booking"],"payload":{"jsonrpc":"2.0","id":8,"method":"tools/call","params":{"name":"consent","arguments":{}}}}`)
	tm.wait("the link", func(s string) bool {
		return strings.Contains(s, "https://example.com/consent") && strings.Contains(s, "o open it and accept")
	})
	tm.keys("o")
	tm.wait("the consent's answer", func(s string) bool { return strings.Contains(s, "booking → human: accept") })
	// The opener runs beside the answer: wait for it.
	deadline := time.Now().Add(tmplWait)
	for b, _ := os.ReadFile(opened); string(b) != "https://example.com/consent"; b, _ = os.ReadFile(opened) {
		if time.Now().After(deadline) {
			t.Fatalf("the opener was given %q", b)
		}
		time.Sleep(50 * time.Millisecond)
	}

	// A picture: a placeholder with its type and size.
	if text := <-testutil.CallBooking(t, agent, "picture"); !strings.HasPrefix(text, "a red square") {
		t.Fatalf("picture answered %q", text)
	}
	tm.wait("the picture's placeholder", func(s string) bool { return strings.Contains(s, "[image image/png ") })

	tm.keys("C-c")
	tm.waitExit()
}
