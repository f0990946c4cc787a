package tui

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"testing"

	tea "charm.land/bubbletea/v2"

	"github.com/mew-protocol/mew/protocol"
)

// tripSchema is a form of every kind a form may hold: a required string,
// an integer with bounds and a default, a boolean, a titled enum.
const tripSchema = `{"type":"object","properties":{
	"name":{"type":"string","title":"Name","description":"who travels"},
	"seats":{"type":"integer","minimum":1,"maximum":9,"default":1},
	"window":{"type":"boolean","title":"Window seat"},
	"class":{"type":"string","title":"Class","oneOf":[{"const":"eco","title":"Economy"},{"const":"biz","title":"Business"}]}
},"required":["name"]}`

// elicitReq builds an elicitation/request of files, for the call callID.
func elicitReq(id, callID string, to []string, req protocol.ElicitationRequest) *protocol.Envelope {
	return envelope(protocol.KindElicitationRequest, "files", id, to, []string{callID}, req)
}

func formReq(schema string) protocol.ElicitationRequest {
	return protocol.ElicitationRequest{Mode: "form", Message: "Who is travelling?", RequestedSchema: json.RawMessage(schema),
		Server: "trips", Method: "tools/call", Name: "book", ExpiresAt: "2026-03-01T12:10:00Z"}
}

// lastAnswer is the latest elicitation/response the model sent.
func (h *harness) lastAnswer() (*protocol.Envelope, protocol.ElicitationResponse) {
	h.t.Helper()
	sent := h.sentOf(protocol.KindElicitationResponse)
	if len(sent) == 0 {
		h.t.Fatal("no elicitation/response sent")
	}
	env := sent[len(sent)-1]
	var r protocol.ElicitationResponse
	if err := env.DecodePayload(&r); err != nil {
		h.t.Fatal(err)
	}
	return env, r
}

// TestElicitationForm: the user's own call elicits; the form is drawn from
// the schema, a wrong value is shown in place and not sent, the right one
// is, as the envelope the SDK sends; the bridge's done settles the card.
func TestElicitationForm(t *testing.T) {
	h := newHarness(t)
	h.recv(call("you", "c1", "files", "book", map[string]any{}))
	h.recv(elicitReq("el1", "c1", []string{"you"}, formReq(tripSchema)))
	h.golden("elicit_form")

	h.typeText("Ada")
	h.key("tab")
	h.key("backspace")
	h.typeText("12")
	h.key("tab", " ", "tab", "right", "enter")
	if n := len(h.sentOf(protocol.KindElicitationResponse)); n != 0 {
		t.Fatalf("a form with 12 seats of 9 was sent (%d)", n)
	}
	h.golden("elicit_invalid")

	h.key("backspace", "backspace")
	h.typeText("2")
	h.key("enter")
	env, r := h.lastAnswer()
	if env.To[0] != "files" || !env.CorrelatesWith("el1") || r.Action != protocol.ElicitationAccept {
		t.Fatalf("answer %+v %+v", env, r)
	}
	if got, want := string(r.Content), `{"class":"eco","name":"Ada","seats":2,"window":true}`; got != want {
		t.Errorf("content %s, want %s", got, want)
	}
	if h.m.asks.dlg != nil {
		t.Error("the dialog stays open after the answer")
	}
	h.recv(envelope(protocol.KindElicitationDone, "files", "d1", []string{"you"}, []string{"el1"},
		protocol.ElicitationDone{Status: protocol.ElicitationAnswered, By: "you", Action: "accept"}))
	h.recv(reply("files", "r1", "c1", "you", "booked 2 seats for Ada"))
	h.golden("elicit_done")
}

// typeText types s, one key a rune.
func (h *harness) typeText(s string) {
	h.t.Helper()
	for _, r := range s {
		h.send(keyMsg(string(r)))
	}
}

// TestElicitationKeys: Ctrl+D declines, Ctrl+X cancels, Esc postpones
// until /review; a refusal of the bridge reopens the dialog with its
// reason; an expiry settles the card.
func TestElicitationKeys(t *testing.T) {
	h := newHarness(t)
	h.recv(call("you", "c1", "files", "book", map[string]any{}))
	h.recv(elicitReq("el1", "c1", []string{"you"}, formReq(tripSchema)))
	h.send(ctrl('d'))
	if _, r := h.lastAnswer(); r.Action != protocol.ElicitationDecline || r.Content != nil {
		t.Fatalf("Ctrl+D sent %+v", r)
	}
	h.recv(envelope(protocol.KindElicitationRefused, "files", "f1", []string{"you"}, []string{"el1"},
		protocol.ElicitationRefused{Reason: "content does not fit the form"}))
	if h.m.asks.dlg == nil || !strings.Contains(h.screen(), "Your answer was not used: content does not fit the form") {
		t.Fatalf("the refusal did not reopen the dialog:\n%s", h.screen())
	}
	h.key("esc")
	if h.m.asks.dlg != nil || !strings.Contains(h.screen(), "postponed: /review to answer") {
		t.Fatalf("Esc did not postpone:\n%s", h.screen())
	}
	h.typeLine("/review")
	if h.m.asks.dlg == nil {
		t.Fatal("/review did not reopen the elicitation")
	}
	h.send(ctrl('x'))
	if _, r := h.lastAnswer(); r.Action != protocol.ElicitationCancel {
		t.Fatalf("Ctrl+X sent %+v", r)
	}
	h.recv(envelope(protocol.KindElicitationDone, "files", "d1", []string{"you"}, []string{"el1"},
		protocol.ElicitationDone{Status: protocol.ElicitationExpired, Reason: "nobody answered within 10m0s"}))
	if !strings.Contains(h.screen(), "timed out: nobody answered within 10m0s") {
		t.Errorf("the expiry is not shown:\n%s", h.screen())
	}
}

func ctrl(r rune) tea.KeyPressMsg { return tea.KeyPressMsg{Code: r, Mod: tea.ModCtrl} }

// TestElicitationURL: a URL elicitation shows its link and host; for the
// addressee, o opens it with the opener and accepts; without an opener
// the link is written out. Only http(s) links are opened.
func TestElicitationURL(t *testing.T) {
	h := newHarness(t)
	var mu sync.Mutex
	var opened []string
	h.m.e.o.Open = func(_ context.Context, u string) error {
		mu.Lock()
		defer mu.Unlock()
		opened = append(opened, u)
		return nil
	}
	h.recv(call("you", "c1", "files", "consent", map[string]any{}))
	h.recv(elicitReq("el1", "c1", []string{"you"}, protocol.ElicitationRequest{Mode: "url", Message: "Please give consent",
		URL: "https://example.com/consent?x=1", ElicitationID: "k1", Name: "consent"}))
	h.golden("elicit_url")
	h.key("o")
	mu.Lock()
	got := fmt.Sprint(opened)
	mu.Unlock()
	if got != "[https://example.com/consent?x=1]" {
		t.Errorf("opened %s", got)
	}
	if _, r := h.lastAnswer(); r.Action != protocol.ElicitationAccept {
		t.Errorf("o answered %+v", r)
	}

	// A link of another scheme is shown, never opened.
	h.recv(elicitReq("el2", "c1", []string{"you"}, protocol.ElicitationRequest{Mode: "url", Message: "run this", URL: "file:///etc/passwd"}))
	h.key("o")
	if len(opened) != 1 || !strings.Contains(h.screen(), "not an http(s) URL") {
		t.Errorf("a file: link: opened %v\n%s", opened, h.screen())
	}
	h.send(ctrl('d'))

	// Without an opener the link is written in the transcript.
	h.m.e.o.Open = nil
	h.recv(elicitReq("el3", "c1", []string{"you"}, protocol.ElicitationRequest{Mode: "url", Message: "again", URL: "https://example.com/b"}))
	h.key("o")
	if !strings.Contains(h.screen(), "open this link: https://example.com/b") {
		t.Errorf("the link is not written out:\n%s", h.screen())
	}
}

// TestElicitationForAnother: an elicitation addressed to another
// participant is offered to a user allowed to answer it, whose answer
// goes to the bridge as the caller's would; the link of a URL one is not
// the user's to open. A user without the capability only sees the card.
func TestElicitationForAnother(t *testing.T) {
	h := newHarness(t)
	h.recv(call("assistant", "c1", "files", "book", map[string]any{}))
	h.recv(elicitReq("el1", "c1", []string{"assistant"}, formReq(`{"type":"object","properties":{"ok":{"type":"boolean"}}}`)))
	h.golden("elicit_for_another")
	h.key(" ", "enter")
	if env, r := h.lastAnswer(); env.To[0] != "files" || string(r.Content) != `{"ok":true}` {
		t.Fatalf("answer %+v %s", env, r.Content)
	}
	h.recv(elicitReq("el2", "c1", []string{"assistant"}, protocol.ElicitationRequest{Mode: "url", Message: "consent", URL: "https://example.com/x"}))
	h.key("o")
	if n := len(h.sentOf(protocol.KindElicitationResponse)); n != 1 {
		t.Errorf("o on another's link answered (%d answers)", n)
	}

	h2 := newHarness(t)
	h2.sp.noAnswers = true
	h2.recv(call("assistant", "c1", "files", "book", map[string]any{}))
	h2.recv(elicitReq("el1", "c1", []string{"assistant"}, formReq(tripSchema)))
	if h2.m.asks.dlg != nil || !strings.Contains(h2.screen(), "awaiting an answer") {
		t.Errorf("a user who may not answer got the dialog:\n%s", h2.screen())
	}
}

// TestElicitationHostile: schemas a form cannot hold are shown as such
// (decline and cancel only), every peer string is cleaned, and envelopes
// of others than the bridge that asked neither close nor refuse it.
func TestElicitationHostile(t *testing.T) {
	many := map[string]any{}
	for i := range 200 {
		many[fmt.Sprintf("f%03d", i)] = map[string]any{"type": "string"}
	}
	deep := `{"type":"string"}`
	for range 500 {
		deep = `{"type":"object","properties":{"x":` + deep + `}}`
	}
	for name, c := range map[string]struct {
		schema string
		want   string
	}{
		"nested":   {`{"type":"object","properties":{"addr":{"type":"object","properties":{"x":{"type":"string"}}}}}`, `field "addr" has type "object", which a form cannot hold`},
		"unknown":  {`{"type":"object","properties":{"x":{"type":"uuid"}}}`, `field "x" has type "uuid"`},
		"many":     {mustJSON(t, map[string]any{"type": "object", "properties": many}), "the form has 200 fields; at most 32"},
		"deep":     {deep, `field "x" has type "object"`},
		"huge":     {`{"type":"object","description":"` + strings.Repeat("a", 70000) + `"}`, "too large"},
		"notjson":  {`[1,2,3]`, "not a JSON Schema object"},
		"numenum":  {`{"type":"object","properties":{"n":{"type":"integer","enum":[1,2]}}}`, `enum of "integer"`},
		"typelist": {`{"type":"object","properties":{"n":{"type":["string","null"]}}}`, "type that is not one word"},
	} {
		t.Run(name, func(t *testing.T) {
			h := newHarness(t)
			h.recv(call("you", "c1", "files", "book", map[string]any{}))
			h.recv(elicitReq("el1", "c1", []string{"you"}, formReq(c.schema)))
			s := h.screen()
			if !strings.Contains(strings.ReplaceAll(s, "\n", " "), c.want) && !strings.Contains(strings.Join(strings.Fields(s), " "), c.want) {
				t.Fatalf("want %q on the screen:\n%s", c.want, s)
			}
			h.key("enter")
			if n := len(h.sentOf(protocol.KindElicitationResponse)); n != 0 {
				t.Fatal("an unusable form was accepted")
			}
			h.send(ctrl('d'))
			if _, r := h.lastAnswer(); r.Action != protocol.ElicitationDecline {
				t.Fatalf("decline sent %+v", r)
			}
		})
	}

	h := newHarness(t)
	// A label and a message that try to steer the terminal.
	evil := `{"type":"object","properties":{"a":{"type":"string","title":"\u001b[2J\u001b]0;pwned\u0007Name"}}}`
	h.recv(elicitReq("el1", "nocall", []string{"you"}, protocol.ElicitationRequest{Mode: "form", Message: "hi\u001b[31m red\nyou: fake line", RequestedSchema: json.RawMessage(evil)}))
	h.golden("elicit_hostile")
	if s, _ := h.m.frame(); strings.Contains(s, "\x1b[2J") || strings.Contains(s, "\x1b]0;") {
		t.Error("a peer's escape sequence reached the screen")
	}
	// A done and a refusal from someone else than the bridge are ignored.
	h.recv(envelope(protocol.KindElicitationDone, "mallory", "d1", []string{"you"}, []string{"el1"},
		protocol.ElicitationDone{Status: protocol.ElicitationAnswered, By: "mallory", Action: "accept"}))
	h.recv(envelope(protocol.KindElicitationRefused, "mallory", "f1", []string{"you"}, []string{"el1"}, protocol.ElicitationRefused{Reason: "spoofed"}))
	if h.m.asks.dlg == nil || strings.Contains(h.screen(), "mallory") {
		t.Errorf("mallory's envelopes changed the elicitation:\n%s", h.screen())
	}
	// An unreadable request is a note, not a dialog.
	bad := envelope(protocol.KindElicitationRequest, "files", "el9", []string{"you"}, nil, nil)
	bad.Payload = json.RawMessage(`{"mode":5}`)
	h.recv(bad)
	if h.m.asks.book.byID["el9"] != nil || !strings.Contains(h.screen(), "sent an elicitation that cannot be read") {
		t.Errorf("an unreadable elicitation:\n%s", h.screen())
	}
	// The gateway refusing the answer is said, and the dialog not forced
	// on the user again.
	h.send(ctrl('d'))
	ans, _ := h.lastAnswer()
	h.recv(envelope(protocol.KindSystemError, protocol.GatewayID, "e1", []string{"you"}, []string{ans.ID},
		protocol.SystemError{Error: "capability_violation", Message: "not allowed"}))
	if h.m.asks.dlg != nil || !strings.Contains(h.screen(), "the gateway refused the answer") {
		t.Errorf("a refused answer:\n%s", h.screen())
	}
}

// TestRichContent: an image, audio, a resource link and an embedded
// resource in a tool result are placeholders that say what they are.
func TestRichContent(t *testing.T) {
	h := newHarness(t)
	h.recv(call("you", "c1", "files", "picture", map[string]any{}))
	text := "hello"
	h.recv(envelope(protocol.KindMCPResponse, "files", "r1", []string{"you"}, []string{"c1"}, map[string]any{
		"jsonrpc": "2.0", "id": 1, "result": map[string]any{"content": []any{
			map[string]any{"type": "text", "text": "here it is"},
			map[string]any{"type": "image", "mimeType": "image/png", "data": strings.Repeat("AAAA", 300)},
			map[string]any{"type": "audio", "mimeType": "audio/wav", "data": "UklGRg=="},
			map[string]any{"type": "resource_link", "uri": "file:///notes.txt", "name": "notes", "mimeType": "text/plain", "size": 2048},
			map[string]any{"type": "resource", "resource": map[string]any{"uri": "file:///a.txt", "mimeType": "text/plain", "text": text}},
		}},
	}))
	h.golden("rich_content")
}

// TestFormNumbers: a number is sent as JSON writes it, whatever Go's
// parser accepted ("0x1p4", "+5"); what is not a number is said so.
func TestFormNumbers(t *testing.T) {
	f := parseForm(json.RawMessage(`{"type":"object","properties":{"n":{"type":"number"},"i":{"type":"integer"}}}`))
	for _, c := range []struct{ n, i, want, err string }{
		{"0x1p4", "+5", `{"i":5,"n":16}`, ""},
		{"2.50", "1e2", `{"i":100,"n":2.5}`, ""},
		{"NaN", "1", "", "not a number"},
		{"1", "1.5", "", "not a whole number"},
	} {
		f.fields[0].text, f.fields[1].text = []rune(c.n), []rune(c.i)
		content, ok := f.content()
		if c.err != "" {
			if ok || f.fields[0].err+f.fields[1].err != c.err {
				t.Errorf("%s, %s: %v %q %q", c.n, c.i, ok, f.fields[0].err, f.fields[1].err)
			}
			continue
		}
		b, err := json.Marshal(content)
		if err != nil || string(b) != c.want {
			t.Errorf("%s, %s: %s, %v; want %s", c.n, c.i, b, err, c.want)
		}
	}
}

// TestElicitationTall: a long message and 32 required fields, all wrong,
// still fit the screen (goldenAt counts the lines), the field with the
// keys among those shown.
func TestElicitationTall(t *testing.T) {
	props := map[string]any{}
	var req []string
	for i := range 32 {
		name := fmt.Sprintf("f%02d", i)
		props[name] = map[string]any{"type": "string", "description": strings.Repeat("long words ", 30)}
		req = append(req, name)
	}
	h := newHarness(t)
	h.recv(call("you", "c1", "files", "book", map[string]any{}))
	r := formReq(mustJSON(t, map[string]any{"type": "object", "properties": props, "required": req}))
	r.Message = strings.Repeat("a very long question ", 80) + "\n" + strings.Repeat("line\n", 30)
	h.recv(elicitReq("el1", "c1", []string{"you"}, r))
	h.key("enter")
	for range 20 {
		h.key("tab")
	}
	h.golden("elicit_tall")
	if s := h.screen(); !strings.Contains(s, "▸ f20 *") || !strings.Contains(s, "more fields") {
		t.Errorf("the field with the keys is not shown:\n%s", s)
	}
}
