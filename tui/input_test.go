package tui

import (
	"strings"
	"testing"

	tea "charm.land/bubbletea/v2"

	"github.com/mew-protocol/mew/protocol"
)

// TestComplete: Tab finishes a command and an @participant, and offers
// the candidates when several fit.
func TestComplete(t *testing.T) {
	h := newHarness(t)
	for _, c := range []struct{ typed, want, hint string }{
		{"/gr", "/grants ", ""},
		{"/re", "/re", "/reject /restart /resume /review /revoke"},
		{"/rev", "/rev", "/review /revoke"},
		{"@ca", "@calculator ", ""},
		{"@", "@", "@assistant @calculator @files"},
		{"hello @fi", "hello @files ", ""},
		{"/nosuch", "/nosuch", "no completion for /nosuch"},
		{"plain", "plain", ""},
	} {
		h.m.prompt.in.set("")
		for _, r := range c.typed {
			h.key(string(r))
		}
		h.key("tab")
		if got := h.m.prompt.in.value(); got != c.want || h.m.prompt.hint != c.hint {
			t.Errorf("%q + Tab = %q (hint %q), want %q (hint %q)", c.typed, got, h.m.prompt.hint, c.want, c.hint)
		}
	}
	h.m.prompt.in.set("")
	h.key("/", "r", "e", "tab")
	h.golden("complete")
}

// TestMultiLineInput: Alt+Enter starts a new line; the chat sent holds
// both; ↑ moves between the lines before it reaches the history.
func TestMultiLineInput(t *testing.T) {
	h := newHarness(t)
	for _, r := range "first" {
		h.key(string(r))
	}
	h.key("alt+enter")
	for _, r := range "second" {
		h.key(string(r))
	}
	h.golden("multiline")
	h.key("up")
	if h.m.prompt.in.pos != len("first") {
		t.Errorf("↑ on the second line put the cursor at %d", h.m.prompt.in.pos)
	}
	h.key("enter")
	var c protocol.Chat
	h.sentOne(protocol.KindChat, &c)
	if c.Text != "first\nsecond" {
		t.Errorf("chat %q", c.Text)
	}
}

// TestFind: /find marks the lines holding the text and shows the latest;
// n goes back to older ones, N forward, Esc ends it; Ctrl+F starts one.
func TestFind(t *testing.T) {
	h := newHarness(t)
	for i := range 40 {
		text := "filler line"
		if i%10 == 3 {
			text = "the Needle is here"
		}
		h.recv(chat("assistant", "c"+string(rune('A'+i)), text, "you"))
	}
	h.key("ctrl+f")
	if h.m.prompt.in.value() != "/find " {
		t.Fatalf("Ctrl+F gave %q", h.m.prompt.in.value())
	}
	h.typeLine("needle")
	if len(h.m.tr.find.hits) != 4 {
		t.Fatalf("%d hits", len(h.m.tr.find.hits))
	}
	h.golden("find")
	if content, _ := h.m.frame(); !strings.Contains(content, "the "+h.m.e.st.Match.Render("Needle")+" is here") {
		t.Errorf("the match is not marked: %q", content)
	}
	latest := h.m.tr.offset
	h.key("n")
	if h.m.tr.offset <= latest || !strings.Contains(h.screen(), "find \"needle\" 2/4") {
		t.Errorf("n did not go back (offset %d → %d):\n%s", latest, h.m.tr.offset, h.screen())
	}
	h.key("N")
	if !strings.Contains(h.screen(), "find \"needle\" 1/4") {
		t.Errorf("N did not go forward:\n%s", h.screen())
	}
	h.key("esc")
	if h.m.tr.find.q != "" || strings.Contains(h.screen(), "find \"") {
		t.Error("Esc did not end the search")
	}
	h.key("n") // no search: a letter
	if h.m.prompt.in.value() != "n" {
		t.Errorf("n without a search typed %q", h.m.prompt.in.value())
	}
	h.m.prompt.in.set("")
	h.typeLine("/find nothing like it")
	if !strings.Contains(h.screen(), "no line holds nothing like it") {
		t.Errorf("a search without hits:\n%s", h.screen())
	}
}

// TestMouseWheelAndTheme: the wheel scrolls three lines a notch; /mouse
// gives the terminal its selection back; /theme switches palettes.
func TestMouseWheelAndTheme(t *testing.T) {
	h := newHarness(t)
	for i := range 40 {
		h.recv(chat("assistant", "c"+string(rune('A'+i)), "line", "you"))
	}
	h.send(tea.MouseWheelMsg{Button: tea.MouseWheelUp})
	h.send(tea.MouseWheelMsg{Button: tea.MouseWheelUp})
	h.send(tea.MouseWheelMsg{Button: tea.MouseWheelDown})
	if h.m.tr.offset != 3 {
		t.Errorf("offset %d after up, up, down", h.m.tr.offset)
	}
	if v := h.m.View(); v.MouseMode != tea.MouseModeCellMotion {
		t.Error("the mouse is not on by default")
	}
	h.typeLine("/mouse")
	if v := h.m.View(); v.MouseMode != tea.MouseModeNone {
		t.Error("/mouse did not turn the mouse off")
	}
	h.typeLine("/theme light")
	if h.m.e.st.StatusBar.GetBackground() != LightStyles().StatusBar.GetBackground() {
		t.Error("/theme light did not switch")
	}
	h.typeLine("/theme neon")
	if !strings.Contains(h.screen(), "no theme neon") {
		t.Errorf("an unknown theme:\n%s", h.screen())
	}
}

// TestMarkdown: a chat's bold, code spans, code block, list and heading
// are drawn as such; unclosed markers stay as typed; a control sequence
// inside a code block is removed like anywhere else.
func TestMarkdown(t *testing.T) {
	h := newHarness(t)
	h.recv(chat("assistant", "m1", strings.Join([]string{
		"Here is **the plan** for `notes.txt`:",
		"# Steps",
		"- read it",
		"* count the `lines`",
		"```",
		"wc -l notes.txt\x1b[2J **not bold**",
		"```",
		"an **unclosed one and a ` tick",
	}, "\n"), "you"))
	h.golden("markdown")
	content, _ := h.m.frame()
	st := h.m.e.st
	for _, want := range []string{st.Bold.Render("the plan"), st.Code.Render("notes.txt"), st.Code.Render("lines"),
		"• read it", st.Code.Render("wc -l notes.txt **not bold**"), "an **unclosed one and a ` tick"} {
		if !strings.Contains(content, want) {
			t.Errorf("the frame lacks %q", want)
		}
	}
	if strings.Contains(content, "\x1b[2J") {
		t.Error("a control sequence got through")
	}
}

// TestControls: the reference's control commands send their envelope, to
// the participant named, with the payload their arguments make; a command
// missing its participant says how it is used and sends nothing.
func TestControls(t *testing.T) {
	h := newHarness(t)
	h.recv(chat("assistant", "q1", "are you there?", "you"))
	h.recv(envelope(protocol.KindReasoningStart, "assistant", "rs1", nil, nil, protocol.Reasoning{Message: "hm"}))
	for _, c := range []struct{ line, kind, to, payload, corr, ctx string }{
		{"/pause assistant 30 too fast", protocol.KindParticipantPause, "assistant", `{"reason":"too fast","timeout_seconds":30}`, "", ""},
		{"/pause @assistant", protocol.KindParticipantPause, "assistant", `{}`, "", ""},
		{"/resume assistant go on", protocol.KindParticipantResume, "assistant", `{"reason":"go on"}`, "", ""},
		{"/status assistant tokens", protocol.KindParticipantRequestStatus, "assistant", `{"fields":["tokens"]}`, "", ""},
		{"/forget assistant newest 2", protocol.KindParticipantForget, "assistant", `{"direction":"newest","entries":2}`, "", ""},
		{"/compact assistant 1000", protocol.KindParticipantCompact, "assistant", `{"target_tokens":1000}`, "", ""},
		{"/clear assistant", protocol.KindParticipantClear, "assistant", `{}`, "", ""},
		{"/restart assistant hard now", protocol.KindParticipantRestart, "assistant", `{"reason":"now","mode":"hard"}`, "", ""},
		{"/shutdown assistant bye", protocol.KindParticipantShutdown, "assistant", `{"reason":"bye"}`, "", ""},
		{"/ack", protocol.KindChatAcknowledge, "assistant", `{"status":"received"}`, "q1", ""},
		{"/cancel enough", protocol.KindReasoningCancel, "assistant", `{"reason":"enough"}`, "", "rs1"},
		{"/stream request files upload the logs", protocol.KindStreamRequest, "files", `{"direction":"upload","description":"the logs"}`, "", ""},
		{"/stream close s1", protocol.KindStreamClose, "", `{"stream_id":"s1","reason":"complete"}`, "", ""},
		{`/envelope mcp/request tools/call calculator add {"a": 1, "b": 2}`, protocol.KindMCPRequest, "calculator",
			`{"id":1,"jsonrpc":"2.0","method":"tools/call","params":{"arguments":{"a":1,"b":2},"name":"add"}}`, "", ""},
	} {
		before := len(h.sentOf(c.kind))
		h.typeLine(c.line)
		sent := h.sentOf(c.kind)
		if len(sent) != before+1 {
			t.Errorf("%s: sent %d %s", c.line, len(sent)-before, c.kind)
			continue
		}
		env := sent[len(sent)-1]
		if got := strings.Join(env.To, ","); got != c.to || string(env.Payload) != c.payload ||
			strings.Join(env.CorrelationID, ",") != c.corr || env.Context != c.ctx {
			t.Errorf("%s: to %q payload %s corr %v context %q; want %q %s %q %q", c.line, got, env.Payload, env.CorrelationID, env.Context, c.to, c.payload, c.corr, c.ctx)
		}
		if c.line == "/ack" && !strings.Contains(h.screen(), "acknowledged assistant's chat: received") {
			t.Errorf("/ack said nothing:\n%s", h.screen())
		}
	}
	n := len(h.sp.sent)
	for _, bad := range []string{"/pause", "/forget assistant sideways", "/stream open x", "/envelope chat", "/ack"} {
		h.typeLine(bad)
	}
	if len(h.sp.sent) != n {
		t.Errorf("malformed controls sent %d envelopes", len(h.sp.sent)-n)
	}
	h.typeLine("/target calculator files")
	h.typeLine("hello both")
	chats := h.sentOf(protocol.KindChat)
	if len(chats) != 1 || strings.Join(chats[0].To, ",") != "calculator,files" {
		t.Errorf("/target: chat to %v", chats)
	}
	h.typeLine("/target none")
	h.typeLine("hello all")
	if chats = h.sentOf(protocol.KindChat); len(chats) != 2 || len(chats[1].To) != 0 {
		t.Errorf("/target none: chat to %v", chats[len(chats)-1].To)
	}
	h.typeLine("/help pause")
	if !strings.Contains(h.screen(), "/pause <p> [seconds] [reason]") {
		t.Errorf("/help pause:\n%s", h.screen())
	}
}

// TestToolCompletion: the tools a tools/list answer names (from the
// participant listed, and only names without spaces) complete /envelope,
// and Tab after the tool writes its argument skeleton.
func TestToolCompletion(t *testing.T) {
	h := newHarness(t)
	list := func(id, to string) *protocol.Envelope {
		return envelope(protocol.KindMCPRequest, "assistant", id, []string{to}, nil, map[string]any{"jsonrpc": "2.0", "id": 1, "method": "tools/list"})
	}
	answer := func(from, corr string, tools ...map[string]any) *protocol.Envelope {
		return envelope(protocol.KindMCPResponse, from, "r"+corr, []string{"assistant"}, []string{corr}, map[string]any{"jsonrpc": "2.0", "id": 1, "result": map[string]any{"tools": tools}})
	}
	h.recv(list("tl1", "calculator"), answer("calculator", "tl1",
		map[string]any{"name": "add", "inputSchema": map[string]any{"type": "object", "properties": map[string]any{"a": map[string]any{"type": "number"}, "b": map[string]any{"type": "number"}, "note": map[string]any{"type": "string"}}}},
		map[string]any{"name": "subtract"},
		map[string]any{"name": "rm -rf\x1b[2J"},
	))
	h.recv(list("tl2", "files"), answer("calculator", "tl2", map[string]any{"name": "forged"}))
	if len(h.m.tools.schemas["files"]) != 0 || len(h.m.tools.schemas["calculator"]) != 2 {
		t.Fatalf("tools seen: %v", h.m.tools.schemas)
	}
	if strings.Contains(h.screen(), "tools/list") {
		t.Errorf("a listing is shown:\n%s", h.screen())
	}
	for _, r := range "/envelope mcp/request tools/call calculator a" {
		h.key(string(r))
	}
	h.key("tab", "tab")
	want := `/envelope mcp/request tools/call calculator add {"a":0,"b":0,"note":""} `
	if got := h.m.prompt.in.value(); got != want {
		t.Fatalf("completed %q, want %q", got, want)
	}
	h.key("enter")
	reqs := h.sentOf(protocol.KindMCPRequest)
	if len(reqs) != 1 || !strings.Contains(string(reqs[0].Payload), `"arguments":{"a":0,"b":0,"note":""}`) {
		t.Errorf("sent %v", reqs)
	}
}

// TestHugeChat: a peer's megabyte of text is drawn as at most
// maxChatLines lines with a note, once per width: later frames reuse it.
// Past maxEntryBytes the note says where the whole is (the chat is folded);
// below it, that /verbose shows it.
func TestHugeChat(t *testing.T) {
	h := newHarness(t)
	big := strings.Repeat("word **bold** `code` ", 50000) + "\n" + strings.Repeat("line\x1b[2J\n", 20000)
	h.recv(chat("assistant", "big", big, "you"))
	e := h.m.tr.entries[len(h.m.tr.entries)-1].(*chatEntry)
	lines := e.lines(h.m.renderCtx())
	if len(lines) < maxChatLines+1 || len(lines) > maxChatLines+3 || !strings.Contains(strings.Join(lines[maxChatLines:], " "), "mew log query --id big") {
		t.Fatalf("%d lines, the last %q", len(lines), lines[len(lines)-1])
	}
	if again := e.lines(h.m.renderCtx()); &again[0] != &lines[0] {
		t.Error("the chat was drawn again for the same width")
	}
	if s := h.screen(); strings.Contains(s, "\x1b") || !strings.Contains(s, "folded to keep the transcript small") {
		t.Errorf("the screen:\n%s", s)
	}
	// Long in lines but small in bytes: cut, and /verbose has the rest.
	h.recv(chat("assistant", "tall", strings.Repeat("line\n", maxChatLines+50), "you"))
	e = h.m.tr.entries[len(h.m.tr.entries)-1].(*chatEntry)
	lines = e.lines(h.m.renderCtx())
	if len(lines) != maxChatLines+1 || !strings.Contains(lines[maxChatLines], "the rest is cut") {
		t.Fatalf("%d lines, the last %q", len(lines), lines[len(lines)-1])
	}
}
