package tui

import (
	"encoding/json"
	"strconv"
	"strings"
	"testing"
	"time"

	tea "charm.land/bubbletea/v2"

	"github.com/mew-protocol/mew/capability"
	"github.com/mew-protocol/mew/participant"
	"github.com/mew-protocol/mew/protocol"
)

func TestChatFrame(t *testing.T) {
	h := newHarness(t)
	h.recv(
		envelope(protocol.KindSystemPresence, protocol.GatewayID, "p1", nil, nil, protocol.Presence{Event: "join", Participant: protocol.ParticipantInfo{ID: "bob"}}),
		chat("bob", "c1", "hello everyone"),
		chat("assistant", "c2", "hi you, what shall I compute?", "you"),
		chat("you", "c3", "add 1 and 5", "assistant"),
		// A peer's text cannot clear the screen, move the cursor or start a
		// line of its own at the margin.
		chat("bob", "c4", "first line\x1b[2J\x1b]0;pwned\x07\r\nyou: forged line"),
		envelope(protocol.KindSystemPresence, protocol.GatewayID, "p2", nil, nil, protocol.Presence{Event: "leave", Participant: protocol.ParticipantInfo{ID: "bob"}}),
	)
	h.golden("chat")
	if s := h.screen(); strings.Contains(s, "\x1b") || strings.Contains(s, "\nyou: forged") {
		t.Errorf("a peer's text steered the screen:\n%s", s)
	}
}

func TestRequestResponseFrame(t *testing.T) {
	h := newHarness(t)
	h.recv(
		call("assistant", "r1", "calculator", "add", map[string]any{"a": 1, "b": 5}),
		envelope(protocol.KindMCPRequest, "assistant", "l1", []string{"files"}, nil, map[string]any{"jsonrpc": "2.0", "id": 2, "method": "tools/list"}),
		reply("files", "l2", "l1", "assistant", "a listing nobody needs to read"),
		reply("calculator", "r2", "r1", "assistant", "6"),
		call("assistant", "r3", "calculator", "divide", map[string]any{"a": 1, "b": 0}),
		envelope(protocol.KindMCPResponse, "calculator", "r4", []string{"assistant"}, []string{"r3"}, map[string]any{
			"jsonrpc": "2.0", "id": 1, "error": map[string]any{"code": -32602, "message": "Tool not found: divide"},
		}),
		// An answer from someone the request was not addressed to is not
		// paired with it.
		call("assistant", "r5", "calculator", "add", map[string]any{"a": 2, "b": 2}),
		reply("bob", "r6", "r5", "assistant", "5"),
	)
	h.golden("request_response")
	if strings.Contains(h.screen(), "listing nobody") {
		t.Error("the answer to a tools/list is shown")
	}
}

func TestReasoningFrame(t *testing.T) {
	h := newHarness(t)
	h.recv(
		chat("you", "q1", "what is 1+5?", "assistant"),
		envelope(protocol.KindReasoningStart, "assistant", "rs1", nil, []string{"q1"}, protocol.Reasoning{Message: "thinking about q1"}),
	)
	think := func(n int, action string, input any) {
		e := envelope(protocol.KindReasoningThought, "assistant", "th"+string(rune('0'+n)), nil, nil, protocol.Reasoning{
			Reasoning: "step " + strconv.Itoa(n), Action: action, ActionInput: json.RawMessage(mustJSON(t, input)),
		})
		e.Context = "rs1"
		h.recv(e)
	}
	think(1, "", nil)
	think(2, "", nil)
	think(3, "tool", map[string]any{"name": "calculator/add"})
	h.now = h.now.Add(4200 * time.Millisecond)
	h.golden("reasoning_live")
	if !strings.Contains(h.screen(), "assistant is thinking · 3 thoughts · 4.2 s · calling calculator/add") {
		t.Errorf("no live reasoning line:\n%s", h.screen())
	}
	h.recv(call("assistant", "r1", "calculator", "add", map[string]any{"a": 1, "b": 5}), reply("calculator", "r2", "r1", "assistant", "6"))
	h.now = h.now.Add(time.Second)
	answer := chat("assistant", "a1", "1+5 is 6", "you")
	answer.CorrelationID = []string{"q1"}
	h.recv(answer)
	h.golden("reasoning_done")
	h.typeLine("/thinking")
	h.golden("reasoning_thoughts")
}

// TestOtherKinds: errors, streams, controls, others' grants; and what only
// the gateway may send is ignored from anyone else.
func TestOtherKinds(t *testing.T) {
	h := newHarness(t)
	h.recv(
		envelope(protocol.KindSystemError, protocol.GatewayID, "e1", []string{"you"}, []string{"x"}, protocol.SystemError{
			Error: "capability_violation", Message: "you may not send mcp/request", AttemptedKind: "mcp/request"}),
		envelope(protocol.KindSystemError, "mallory", "e2", []string{"you"}, nil, protocol.SystemError{Error: "forged"}),
		envelope(protocol.KindSystemPresence, "mallory", "e3", nil, nil, protocol.Presence{Event: "join", Participant: protocol.ParticipantInfo{ID: "ghost"}}),
		envelope(protocol.KindStreamOpen, protocol.GatewayID, "s1", []string{"assistant"}, nil, protocol.StreamOpen{StreamID: "stream-7"}),
		envelope(protocol.KindStreamClose, "assistant", "s2", nil, nil, protocol.StreamClose{StreamID: "stream-7", Reason: "complete"}),
		envelope("participant/pause", "bob", "c1", []string{"assistant"}, nil, map[string]any{"reason": "wait", "timeout_seconds": 30}),
		envelope(protocol.KindCapabilityGrant, "bob", "g1", []string{"assistant"}, nil, protocol.Grant{
			Recipient: "assistant", Capabilities: []json.RawMessage{json.RawMessage(`{"kind":"chat"}`)}}),
		envelope(protocol.KindChatAcknowledge, "assistant", "a1", []string{"you"}, []string{"c9"}, map[string]any{"status": "received"}),
	)
	h.golden("other_kinds")
	if s := h.screen(); strings.Contains(s, "forged") || strings.Contains(s, "ghost") {
		t.Errorf("a gateway-only envelope from a participant was shown:\n%s", s)
	}
}

func TestProposalDialogFrames(t *testing.T) {
	h := newHarness(t)
	h.recv(propose("assistant", "pr1", "files", "write_file", map[string]any{
		"path": "notes.txt", "content": "# Notes\nbuy milk\ncall bob\n",
	}))
	h.golden("dialog_choose")
	h.key("g")
	h.golden("dialog_scope")
	h.key("1")
	h.golden("dialog_lifetime")
	h.key("esc", "esc", "n")
	h.golden("dialog_reason")
}

func TestDialogYes(t *testing.T) {
	h := newHarness(t)
	h.recv(propose("assistant", "pr1", "calculator", "add", map[string]any{"a": 1, "b": 5}))
	if !strings.Contains(h.screen(), "1 proposal pending") {
		t.Errorf("status bar does not count the proposal:\n%s", h.screen())
	}
	h.key("y")
	if got := h.sp.fulfilled; len(got) != 1 || got[0] != "pr1" {
		t.Fatalf("fulfilled %v, want [pr1]", got)
	}
	if g := h.sentOf(protocol.KindCapabilityGrant); len(g) != 0 {
		t.Errorf("Yes sent a grant: %v", g)
	}
	// The fulfilment as the space relays it, and the answer.
	f := call("you", "f1", "calculator", "add", map[string]any{"a": 1, "b": 5})
	f.CorrelationID = []string{"pr1"}
	h.recv(f, reply("calculator", "f2", "f1", "you", "6"))
	h.golden("dialog_yes")
	// A settled proposal cannot be decided again.
	h.typeLine("/approve 1")
	if len(h.sp.fulfilled) != 1 {
		t.Errorf("fulfilled twice: %v", h.sp.fulfilled)
	}
	if !strings.Contains(h.screen(), "proposal #1 was already approved by you") {
		t.Errorf("no refusal:\n%s", h.screen())
	}
}

// grantOf decodes the one capability/grant sent.
func grantOf(t *testing.T, h *harness) (protocol.Grant, *protocol.Envelope) {
	t.Helper()
	var g protocol.Grant
	env := h.sentOne(protocol.KindCapabilityGrant, &g)
	return g, env
}

func TestDialogGrant(t *testing.T) {
	args := map[string]any{"a": 1, "b": 5}
	cases := []struct {
		name      string
		keys      []string
		pattern   string
		ttl       int64
		session   bool
		allows    []any // other arguments the grant allows
		refuses   []any // and refuses
		otherTool bool  // a subtract call is allowed too
	}{
		{name: "exact arguments, 10 minutes", keys: []string{"g", "1", "2"},
			pattern: `{"kind":"mcp/request","payload":{"method":"tools/call","params":{"arguments":{"a":1,"b":5},"name":"add"}}}`,
			ttl:     600, refuses: []any{map[string]any{"a": 2, "b": 5}}},
		{name: "this tool, until revoked", keys: []string{"g", "2", "4"},
			pattern: `{"kind":"mcp/request","payload":{"method":"tools/call","params":{"name":"add"}}}`,
			allows:  []any{map[string]any{"a": 2, "b": 5}}},
		{name: "its tools, this session", keys: []string{"g", "3", "3"},
			pattern: `{"kind":"mcp/request","payload":{"method":"tools/call","params":{"name":["add","subtract"]}}}`,
			session: true, allows: []any{map[string]any{"a": 7}}, otherTool: true},
		{name: "arrows and enter", keys: []string{"right", "enter", "down", "enter", "enter"},
			pattern: `{"kind":"mcp/request","payload":{"method":"tools/call","params":{"name":"add"}}}`, ttl: 600},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			h := newHarness(t)
			h.recv(propose("assistant", "pr1", "calculator", "add", args))
			h.key(c.keys...)
			g, env := grantOf(t, h)
			if g.Recipient != "assistant" || len(env.To) != 1 || env.To[0] != "assistant" || env.ID == "" {
				t.Errorf("grant to %q (envelope to %v, id %q), want assistant", g.Recipient, env.To, env.ID)
			}
			if len(g.Capabilities) != 1 || string(g.Capabilities[0]) != c.pattern {
				t.Errorf("pattern %s, want %s", g.Capabilities, c.pattern)
			}
			if g.TTLSeconds != c.ttl {
				t.Errorf("ttl_seconds %d, want %d", g.TTLSeconds, c.ttl)
			}
			if g.Session != c.session {
				t.Errorf("session %v, want %v: the gateway must end a session grant by itself", g.Session, c.session)
			}
			if got := h.sp.fulfilled; len(got) != 1 || got[0] != "pr1" {
				t.Errorf("fulfilled %v, want [pr1]", got)
			}
			set, err := capability.Compile(g.Capabilities)
			if err != nil {
				t.Fatal(err)
			}
			match := func(tool string, a any) bool {
				_, ok := set.Match(protocol.KindMCPRequest, []byte(mustJSON(t, map[string]any{
					"jsonrpc": "2.0", "id": 9, "method": "tools/call", "params": map[string]any{"name": tool, "arguments": a}})))
				return ok
			}
			if !match("add", args) {
				t.Error("the grant does not allow the call approved")
			}
			for _, a := range c.allows {
				if !match("add", a) {
					t.Errorf("the grant does not allow add(%v)", a)
				}
			}
			for _, a := range c.refuses {
				if match("add", a) {
					t.Errorf("the grant allows add(%v)", a)
				}
			}
			if match("subtract", args) != c.otherTool {
				t.Errorf("subtract allowed: %v, want %v", !c.otherTool, c.otherTool)
			}
			if match("delete_everything", args) {
				t.Error("the grant allows another tool")
			}
			revokes := h.m.RevokeOnExit()
			if c.session != (len(revokes) == 1) {
				t.Errorf("revoked on exit: %d, session grant: %v", len(revokes), c.session)
			}
			if c.session {
				var r protocol.Revoke
				_ = revokes[0].DecodePayload(&r)
				if r.GrantID != env.ID || r.Recipient != "assistant" {
					t.Errorf("revoke on exit %+v, want grant %s of assistant", r, env.ID)
				}
			}
		})
	}
}

func TestDialogGrantOnceSendsNoGrant(t *testing.T) {
	h := newHarness(t)
	h.recv(propose("assistant", "pr1", "calculator", "add", map[string]any{"a": 1}))
	h.key("g", "2", "1")
	if g := h.sentOf(protocol.KindCapabilityGrant); len(g) != 0 {
		t.Errorf("once sent a grant: %v", g)
	}
	if len(h.sp.fulfilled) != 1 {
		t.Errorf("fulfilled %v", h.sp.fulfilled)
	}
}

func TestDialogNo(t *testing.T) {
	h := newHarness(t)
	h.recv(propose("assistant", "pr1", "files", "write_file", map[string]any{"path": "/etc/passwd", "content": "x"}))
	h.key("n", "2")
	// The user's words: control sequences typed or pasted are dropped.
	h.send(tea.PasteMsg{Content: "outside\x1b[31m the folder"})
	h.golden("dialog_no_text")
	h.key("enter")
	if got := h.sp.rejected; len(got) != 1 || got[0] != "pr1 unsafe outside the folder" {
		t.Fatalf("rejected %q, want [pr1 unsafe outside the folder]", got)
	}
	if len(h.sp.fulfilled) != 0 {
		t.Errorf("fulfilled %v", h.sp.fulfilled)
	}
	h.golden("dialog_no")

	// No words: the code alone; Esc from the words goes back to the codes.
	h.recv(propose("assistant", "pr2", "files", "write_file", map[string]any{"path": "b", "content": "x"}))
	h.key("n", "3", "esc")
	if h.m.props.dlg == nil || h.m.props.dlg.step != stepReason || h.m.props.dlg.cursor != 2 {
		t.Fatalf("Esc from the words: %+v", h.m.props.dlg)
	}
	h.key("enter", "enter")
	if got := h.sp.rejected; len(got) != 2 || got[1] != "pr2 policy" {
		t.Fatalf("rejected %q", got)
	}
}

// TestDialogEdit: Edit opens the arguments as JSON; what is not a JSON
// object is refused in place; the edited call is what gets fulfilled.
func TestDialogEdit(t *testing.T) {
	h := newHarness(t)
	h.recv(propose("assistant", "pr1", "files", "write_file", map[string]any{"path": "notes.txt", "content": "x"}))
	h.key("e")
	h.golden("dialog_edit")
	h.key("x", "enter")
	if len(h.sp.fulfilled) != 0 || h.m.props.dlg == nil || h.m.props.dlg.edErr == "" {
		t.Fatalf("an invalid edit was sent: %v", h.sp.fulfilled)
	}
	h.golden("dialog_edit_invalid")
	h.key("backspace", "down", "down", "end", "left", "backspace", "backspace", "backspace", "m", "d")
	h.key("end", "alt+enter") // a new line between members is still JSON
	h.key("enter")
	want := `pr1 {"arguments":{"content":"x","path":"notes.md"},"name":"write_file"}`
	if len(h.sp.edited) != 1 || h.sp.edited[0] != want {
		t.Fatalf("edited %q, want %q", h.sp.edited, want)
	}
	h.golden("dialog_edited")
}

func TestDialogQueueAndPostpone(t *testing.T) {
	h := newHarness(t)
	h.recv(
		propose("assistant", "pr1", "calculator", "add", map[string]any{"a": 1}),
		propose("assistant", "pr2", "files", "read_file", map[string]any{"path": "notes.txt"}),
	)
	h.golden("dialog_queue")
	h.key("esc") // postpone #1: #2 shows
	if h.m.props.dlg == nil || h.m.props.dlg.p.n != 2 {
		t.Fatalf("after Esc the dialog shows %+v, want #2", h.m.props.dlg)
	}
	h.key("esc")
	if h.m.props.dlg != nil {
		t.Fatal("the dialog shows after both were postponed")
	}
	if !strings.Contains(h.screen(), "2 proposals pending") {
		t.Errorf("postponed proposals are not counted:\n%s", h.screen())
	}
	h.typeLine("/proposals")
	h.typeLine("/review")
	if h.m.props.dlg == nil || h.m.props.dlg.p.n != 1 {
		t.Fatalf("/review shows %+v, want #1", h.m.props.dlg)
	}
	h.key("y")
	if h.m.props.dlg == nil || h.m.props.dlg.p.n != 2 {
		t.Fatalf("after deciding #1 the dialog shows %+v, want #2", h.m.props.dlg)
	}
	h.golden("dialog_queue_next")
}

func TestSettledElsewhere(t *testing.T) {
	h := newHarness(t)
	h.recv(propose("assistant", "pr1", "calculator", "add", map[string]any{"a": 1}))
	// Someone else approves it while the dialog shows: the dialog goes.
	f := call("bob", "f1", "calculator", "add", map[string]any{"a": 1})
	f.CorrelationID = []string{"pr1"}
	h.recv(f)
	if h.m.props.dlg != nil {
		t.Fatal("the dialog still shows a settled proposal")
	}
	h.typeLine("/reject 1")
	if len(h.sp.rejected) != 0 {
		t.Errorf("rejected a settled proposal: %v", h.sp.rejected)
	}
	// The SDK refuses a decision on a proposal settled where the model did
	// not see it.
	h.recv(propose("assistant", "pr2", "calculator", "add", map[string]any{"a": 2}))
	h.sp.settled["pr2"] = participant.ProposalStatus{Settlement: participant.Withdrawn, By: "assistant"}
	h.key("y")
	h.golden("settled_elsewhere")
	// A withdrawal from anyone but the proposer does not count.
	h.recv(propose("assistant", "pr3", "calculator", "add", map[string]any{"a": 3}))
	h.recv(envelope(protocol.KindMCPWithdraw, "bob", "w1", nil, []string{"pr3"}, protocol.Withdraw{Reason: "mine now"}))
	if h.m.props.dlg == nil || h.m.props.dlg.p.n != 3 {
		t.Fatal("a stranger's withdrawal closed the dialog")
	}
	h.recv(envelope(protocol.KindMCPWithdraw, "assistant", "w2", nil, []string{"pr3"}, protocol.Withdraw{Reason: "timeout"}))
	if h.m.props.dlg != nil {
		t.Fatal("the proposer's withdrawal left the dialog open")
	}
	// A proposer that gave up waiting is not a rejection: the transcript
	// says the proposal timed out.
	if s := h.screen(); !strings.Contains(s, "timed out: nobody decided in time") {
		t.Errorf("the screen after a timed-out proposal:\n%s", s)
	}
}

func TestNotMineNoDialog(t *testing.T) {
	h := newHarness(t)
	h.sp.noRequests = true
	h.recv(propose("assistant", "pr1", "calculator", "add", map[string]any{"a": 1}))
	if h.m.props.dlg != nil {
		t.Error("a dialog for a proposal the user can neither fulfil nor was asked")
	}
	// Addressed to the user, it is theirs to decide.
	h.recv(propose("assistant", "pr2", "you", "add", map[string]any{"a": 1}))
	if h.m.props.dlg == nil {
		t.Error("no dialog for a proposal addressed to the user")
	}
	// The user's own proposals are not offered to them.
	h.sp.noRequests = false
	h.recv(propose("you", "pr3", "calculator", "add", map[string]any{"a": 1}))
	if n := len(h.m.props.pending()); n != 1 {
		t.Errorf("%d pending, want 1", n)
	}
}

func TestStatusBar(t *testing.T) {
	h := newHarness(t)
	h.send(Connection{State: Reconnecting})
	h.golden("status_reconnecting")
	h.send(Connection{State: Connected})
	h.typeLine("/verbose")
	h.recv(chat("bob", "c1", "hi"))
	h.golden("status_verbose")
}

func TestScrollback(t *testing.T) {
	h := newHarness(t)
	for i := range 40 {
		h.recv(chat("bob", "c", "message "+strings.Repeat("·", i%5)+" number "+strconv.Itoa(i)))
	}
	h.key("pgup")
	h.golden("scrolled")
	h.key("pgdown")
	if h.m.tr.offset != 0 || !strings.Contains(h.screen(), "number 39") {
		t.Errorf("PgDn did not return to the end (offset %d)", h.m.tr.offset)
	}
}

func TestInput(t *testing.T) {
	h := newHarness(t)
	h.m.e.o.DefaultTargets = []string{"assistant"}
	h.typeLine("hello there")
	h.typeLine("@calculator @files: both of you")
	h.typeLine(`{"kind":"participant/pause","to":["assistant"],"payload":{"reason":"wait"}}`)
	chats := h.sentOf(protocol.KindChat)
	if len(chats) != 2 {
		t.Fatalf("sent %d chats", len(chats))
	}
	var c protocol.Chat
	_ = chats[0].DecodePayload(&c)
	if c.Text != "hello there" || strings.Join(chats[0].To, ",") != "assistant" {
		t.Errorf("first chat %q to %v", c.Text, chats[0].To)
	}
	_ = chats[1].DecodePayload(&c)
	if c.Text != "both of you" || strings.Join(chats[1].To, ",") != "calculator,files" {
		t.Errorf("second chat %q to %v", c.Text, chats[1].To)
	}
	if p := h.sentOf("participant/pause"); len(p) != 1 || p[0].To[0] != "assistant" {
		t.Errorf("the JSON envelope was not sent: %v", p)
	}
	// History: ↑ brings back the last line, ↑↑ the one before, ↓ goes back.
	h.key("up", "up")
	if v := h.m.prompt.in.value(); v != "@calculator @files: both of you" {
		t.Errorf("history gave %q", v)
	}
	h.key("down", "down")
	if v := h.m.prompt.in.value(); v != "" {
		t.Errorf("history end gave %q", v)
	}
	for _, r := range "draft" {
		h.key(string(r))
	}
	h.key("backspace", "backspace")
	h.golden("input")
}

func TestCommands(t *testing.T) {
	h := newHarness(t)
	h.typeLine("/help")
	h.golden("help")
	h.typeLine("/ui-clear")
	h.typeLine("/nonsense")
	h.typeLine("/grants")
	h.recv(propose("assistant", "pr1", "calculator", "add", map[string]any{"a": 1, "b": 5}))
	h.key("g", "2", "2")
	_, env := grantOf(t, h)
	h.recv(envelope(protocol.KindCapabilityGrantAck, "assistant", "ga", []string{"you"}, []string{env.ID}, protocol.GrantAck{Status: "accepted"}))
	h.now = h.now.Add(3 * time.Minute)
	h.typeLine("/grants")
	h.typeLine("/revoke 1")
	var r protocol.Revoke
	h.sentOne(protocol.KindCapabilityRevoke, &r)
	if r.GrantID != env.ID || r.Recipient != "assistant" {
		t.Errorf("revoke %+v, want grant %s of assistant", r, env.ID)
	}
	h.typeLine("/revoke 1")
	h.typeLine("/grants")
	h.golden("grants")
	if len(h.sentOf(protocol.KindCapabilityRevoke)) != 1 {
		t.Error("revoked twice")
	}
	h.typeLine("/exit")
	if !h.quit {
		t.Error("/exit did not quit")
	}
}

func TestExactPatternIsLiteral(t *testing.T) {
	// Argument values the matcher would read as a glob, a negation or a
	// regex are granted as exactly themselves.
	for _, v := range []string{"*", "/tmp/", "!secret", "a?c", `back\slash`, "", "/a.*/"} {
		pr := newProposal(1, propose("assistant", "p", "files", "read_file", map[string]any{"path": v}))
		s := pr.scopes()[0]
		if s.err != nil {
			t.Errorf("%q: %v", v, s.err)
			continue
		}
		set, err := capability.Compile([]json.RawMessage{s.pattern})
		if err != nil {
			t.Fatalf("%q: %v", v, err)
		}
		for _, other := range []string{"x", "/tmp/x/", "secret", "abc", "a", "/a.b/"} {
			if other == v {
				continue
			}
			p := propose("assistant", "q", "files", "read_file", map[string]any{"path": other}).Payload
			if _, ok := set.Match(protocol.KindMCPRequest, p); ok {
				t.Errorf("the grant of path %q allows path %q: %s", v, other, s.pattern)
			}
		}
	}
	// Lists cannot be matched exactly: that scope is not offered.
	pr := newProposal(1, propose("assistant", "p", "files", "tag", map[string]any{"tags": []string{"a", "b"}}))
	if pr.scopes()[0].err == nil {
		t.Error("a list argument was granted exactly")
	}
}

func TestHistoryFile(t *testing.T) {
	path := t.TempDir() + "/mew/history"
	if h, err := LoadHistory(path); err != nil || h != nil {
		t.Fatalf("a missing history: %v, %v", h, err)
	}
	lines := make([]string, maxHistory+3)
	for i := range lines {
		lines[i] = "line " + strconv.Itoa(i)
	}
	if err := SaveHistory(path, lines); err != nil {
		t.Fatal(err)
	}
	got, err := LoadHistory(path)
	if err != nil || len(got) != maxHistory || got[0] != "line 3" || got[len(got)-1] != "line "+strconv.Itoa(maxHistory+2) {
		t.Fatalf("loaded %d lines (%v), first %q", len(got), err, got[0])
	}
	m := New(Options{Space: newFake(), History: got})
	m.prompt.in.browse(-1)
	if v := m.prompt.in.value(); v != got[len(got)-1] {
		t.Errorf("↑ gave %q", v)
	}
}

// TestWideFrames: the same screens at 160×48.
func TestWideFrames(t *testing.T) {
	h := newHarness(t)
	h.send(tea.WindowSizeMsg{Width: 160, Height: 48})
	h.recv(
		chat("assistant", "c1", "I will write your notes to the file now; it needs your approval since I may only propose writes.", "you"),
		propose("assistant", "pr1", "files", "write_file", map[string]any{"path": "notes.txt", "content": "# Notes\nbuy milk\ncall bob\n"}),
	)
	h.golden("wide_dialog")
	h.key("g")
	h.golden("wide_scope")
}

// TestRejectWords: another's rejection shows its code and words, cleaned.
func TestRejectWords(t *testing.T) {
	h := newHarness(t)
	h.recv(propose("assistant", "pr1", "files", "write_file", map[string]any{"path": "a", "content": "x"}))
	h.recv(envelope(protocol.KindMCPReject, "calculator", "rj", []string{"assistant"}, []string{"pr1"},
		map[string]string{"reason": "unsafe", "message": "no\x1b[2J\nway " + strings.Repeat("x", 300)}))
	p := h.m.props.book.byID["pr1"]
	if !p.settled || !strings.HasPrefix(p.outcome, "rejected by calculator: unsafe (no way xxx") ||
		!strings.HasSuffix(p.outcome, "x…)") || strings.ContainsAny(p.outcome, "\x1b\n") || len(p.outcome) > 250 {
		t.Fatalf("outcome %q", p.outcome)
	}
	if h.m.props.dlg != nil {
		t.Error("the dialog stayed for a rejected proposal")
	}
}
