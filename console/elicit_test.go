package console_test

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/chromedp/chromedp/kb"

	"github.com/mew-protocol/mew/bridge"
	"github.com/mew-protocol/mew/gateway"
	"github.com/mew-protocol/mew/internal/testutil"
	"github.com/mew-protocol/mew/participant"
	"github.com/mew-protocol/mew/protocol"
)

// elicitSpace: you answer any bridge's questions; agent calls the booking
// server and may not answer; booking is the bridge, allowed to ask.
var elicitSpace = testutil.SpaceYAML("web",
	testutil.Member("you", "*"),
	testutil.Member("agent", "chat", "mcp/request"),
	testutil.Member("booking", "mcp/response", "participant/status", "elicitation/*"),
	testutil.Member("mallory", "elicitation/*"),
)

// TestElicitationInConsole drives the console in Chromium: the person's
// own call to a bridged server elicits a form, a wrong answer is shown in
// place, the right one completes the call; another participant's call is
// answered for it from the console; a picture in a tool result is drawn.
func TestElicitationInConsole(t *testing.T) {
	g := testutil.StartGateway(t, elicitSpace, gateway.Options{Audit: gateway.AuditOptions{Off: true}})
	testutil.StartBooking(t, g, "booking-token", bridge.Options{})
	agent := testutil.JoinParticipant(t, g, "agent-token", participant.Options{})
	p := openAs(t, g, "you-token", 3)

	// The person's own call, sent as an envelope from the compose line.
	call := `{"kind":"mcp/request","to":["booking"],"payload":{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"book","arguments":{}}}}`
	p.do("send the call", chromedp.SendKeys(chromedp.CSS("#compose-input"), call+kb.Enter))
	open := `.elicit-card:not(.settled)`
	p.wait("the form", `!!document.querySelector(`+jsString(open+` input[name="name"]`)+`) && document.querySelector(`+jsString(open)+`).innerText.includes("booking asks you (for book): Who is travelling?")`)
	p.shot("elicit-form")
	// Empty name, 12 seats: both refused in place, nothing sent.
	p.eval(`document.querySelector(` + jsString(open+` input[name="seats"]`) + `).value = "12"`)
	p.click(open + " .el-accept")
	p.wait("the errors in place", `document.querySelector(`+jsString(open+` [data-field="name"] .field-err`)+`).textContent === "required" && document.querySelector(`+jsString(open+` [data-field="seats"] .field-err`)+`).textContent === "at most 9"`)
	p.eval(`document.querySelector(` + jsString(open+` input[name="seats"]`) + `).value = "2"`)
	p.do("type the name", chromedp.SendKeys(chromedp.CSS(open+` input[name="name"]`), "Ada"))
	p.click(open + " .el-accept")
	p.wait("the call's answer", `[...document.querySelectorAll(".request .response")].some((r) => r.innerText.includes('accept {"name":"Ada","seats":2}'))`)
	p.wait("the card settled", `[...document.querySelectorAll(".elicit-card.settled")].some((c) => c.dataset.state === "accepted by you")`)

	// The agent's call, answered by the person for it.
	got := testutil.CallBooking(t, agent, "book")
	p.wait("the agent's form", `!!document.querySelector(`+jsString(open+` input[name="name"]`)+`) && document.querySelector(`+jsString(open)+`).innerText.includes("booking asks agent")`)
	p.do("type the name", chromedp.SendKeys(chromedp.CSS(open+` input[name="name"]`), "Grace"))
	p.click(open + " .el-accept")
	select {
	case text := <-got:
		if text != `accept {"name":"Grace","seats":1}` {
			t.Fatalf("the agent's call answered %q", text)
		}
	case <-time.After(60 * time.Second):
		t.Fatalf("the agent's call did not complete\n%s", p.text("#app"))
	}
	p.wait("the agent's card settled", `[...document.querySelectorAll(".elicit-card.settled")].filter((c) => c.dataset.state === "accepted by you").length === 2`)

	// Declined for the agent: the call completes with the decline.
	got = testutil.CallBooking(t, agent, "book")
	p.wait("a third form", `!!document.querySelector(`+jsString(open+` .el-decline`)+`)`)
	p.click(open + " .el-decline")
	if text := <-got; text != "decline" {
		t.Fatalf("the declined call answered %q", text)
	}

	// A picture: drawn in the page, its placeholder in the text.
	got = testutil.CallBooking(t, agent, "picture")
	if text := <-got; !strings.HasPrefix(text, "a red square") {
		t.Fatalf("picture answered %q", text)
	}
	p.wait("the picture drawn", `[...document.querySelectorAll(".rich-image img")].some((i) => i.complete && i.naturalWidth === 16 && i.src.startsWith("data:image/png;base64,"))`)
	p.wait("its placeholder", `document.querySelector("#stream").innerText.includes("[image image/png ")`)
	p.wait("the audio, the link, the resource", `!!document.querySelector(".rich-audio audio[src^='data:audio/wav;base64,']") &&
		document.querySelector(".rich-link a").getAttribute("href") === "https://example.com/notes.txt" &&
		document.querySelector(".rich-link a").rel === "noopener noreferrer" &&
		document.querySelector(".rich-resource summary").textContent === "[resource file:///square.txt text/plain 3 B]"`)
	p.shot("elicit-picture")
}

// TestElicitationConsoleHostile: a card from a hostile schema is drawn
// safely (text only, no form it cannot hold), and a participant who may
// not answer gets no controls.
func TestElicitationConsoleHostile(t *testing.T) {
	g := testutil.StartGateway(t, elicitSpace, gateway.Options{Audit: gateway.AuditOptions{Off: true}})
	// booking here is a plain participant allowed to send elicitation/*:
	// what it sends is what a hostile bridge could.
	rogue := testutil.JoinParticipant(t, g, "booking-token", participant.Options{})
	p := openAs(t, g, "you-token", 2)
	send := func(payload string) string {
		t.Helper()
		env := &protocol.Envelope{ID: protocol.NewID(), Kind: protocol.KindElicitationRequest, To: []string{"you"}, Payload: json.RawMessage(payload)}
		if err := rogue.Send(t.Context(), env); err != nil {
			t.Fatal(err)
		}
		return env.ID
	}
	id := send(`{"mode":"form","message":"<img src=x onerror=alert(1)>","requestedSchema":{"type":"object","properties":{"a":{"type":"object","properties":{}}}}}`)
	p.wait("the card", `[...document.querySelectorAll(".elicit-card")].some((c) => c.innerText.includes('field "a" has type "object", which a form cannot hold'))`)
	if n := p.eval(`document.querySelectorAll(".elicit-card img").length`); n != float64(0) {
		t.Errorf("a peer's HTML became %v elements", n)
	}
	if d := p.eval(`document.querySelector(".elicit-card .el-accept").disabled`); d != true {
		t.Errorf("accept is offered for a form that cannot be filled")
	}
	if w := p.eval(`document.querySelector(".elicit-card").innerText.includes("names no call")`); w != true {
		t.Errorf("no warning for an elicitation of no call")
	}
	// Only the participant that asked closes its question: mallory's done
	// is ignored, booking's is not.
	mallory := testutil.JoinParticipant(t, g, "mallory-token", participant.Options{})
	done := func(who *participant.Participant, by string) {
		t.Helper()
		env := &protocol.Envelope{Kind: protocol.KindElicitationDone, To: []string{"you"}, CorrelationID: []string{id}}
		if err := env.SetPayload(protocol.ElicitationDone{Status: protocol.ElicitationAnswered, By: by, Action: "accept"}); err != nil {
			t.Fatal(err)
		}
		if err := who.Send(t.Context(), env); err != nil {
			t.Fatal(err)
		}
	}
	seen := make(chan struct{}, 1)
	rogue.Client().OnKind(protocol.KindElicitationDone, func(env *protocol.Envelope) {
		if env.From == "mallory" {
			seen <- struct{}{}
		}
	})
	done(mallory, "mallory")
	select { // the space has relayed mallory's first
	case <-seen:
	case <-time.After(10 * time.Second):
		t.Fatal("mallory's elicitation/done was not relayed")
	}
	done(rogue, "booking")
	p.wait("the card closed by its bridge", `document.querySelector(".elicit-card").dataset.state === "accepted by booking"`)
}
