package console_test

import (
	"context"
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/chromedp/chromedp/kb"

	"github.com/mew-protocol/mew/agent"
	"github.com/mew-protocol/mew/gateway"
	"github.com/mew-protocol/mew/internal/testutil"
	"github.com/mew-protocol/mew/llm"
	"github.com/mew-protocol/mew/participant"
	"github.com/mew-protocol/mew/protocol"
)

// agentSpace is webSpace with an agent that reasons and may call tools.
var agentSpace = webSpace + testutil.Member("thinker", "chat", "chat/*", "reasoning/*", "mcp/request", "participant/*")

// startThinker connects an agent that reasons, driven by model, and waits
// until it knows the files' tools.
func startThinker(t *testing.T, g *testutil.Gateway, model *testutil.LLMServer) *agent.Agent {
	t.Helper()
	provider, err := llm.NewOpenAI(llm.Config{BaseURL: model.URL(), APIKey: "k", MaxRetries: -1, Model: "m"})
	if err != nil {
		t.Fatal(err)
	}
	return startToolUser(t, g, "thinker-token", provider)
}

// startToolUser connects an agent that reasons with provider, and waits
// until it knows the files' tools.
func startToolUser(t *testing.T, g *testutil.Gateway, token string, provider llm.Provider) *agent.Agent {
	t.Helper()
	a := startAgent(t, g, token, provider, agent.Config{ReasoningEnabled: true, DiscoveryWait: time.Second})
	waitFor(t, "the agent to know the files' tools", func() bool {
		for _, tool := range a.Participant().AvailableTools() {
			if tool.Participant == "files" {
				return true
			}
		}
		return false
	})
	return a
}

// startAgent connects an agent to g's space "web" with token, until the
// test ends.
func startAgent(t *testing.T, g *testutil.Gateway, token string, provider llm.Provider, cfg agent.Config) *agent.Agent {
	t.Helper()
	return testutil.StartAgent(t, g, token, provider, cfg)
}

// TestSpaceWork drives what TestSpaceView leaves out, through a gateway
// that keeps an audit log: Edit (the tool runs with the edited arguments),
// a grant of every tool of the target, @ completion, the thinking line of
// an agent driven by a scripted model (one line, folded, that opens), the
// correlation chain read from the gateway's log (steps from the log, one
// the page never saw), and participant controls with their effect.
func TestSpaceWork(t *testing.T) {
	g := testutil.StartGateway(t, agentSpace, gateway.Options{})
	work := t.TempDir()
	startFiles(t, g, work)
	helper := testutil.JoinParticipant(t, g, "helper-token", participant.Options{})
	model := testutil.NewLLMServer(t)
	first := testutil.LLMCall(testutil.LLMToolCall{Name: "files_read_file", Arguments: `{"path":"notes.txt"}`})
	first.Delay = 1500 * time.Millisecond // long enough to see the line live
	model.Script(first, testutil.LLMReply("notes.txt says: buy oat milk"))
	thinker := startThinker(t, g, model)

	// Before the page joins: a chat it will never see.
	early := &protocol.Envelope{ID: "q0", Kind: protocol.KindChat}
	if err := early.SetPayload(protocol.Chat{Text: "remember the milk"}); err != nil {
		t.Fatal(err)
	}
	if err := helper.Send(t.Context(), early); err != nil {
		t.Fatal(err)
	}
	p := openAs(t, g, "you-token", 4)
	reply := &protocol.Envelope{ID: "re0", Kind: protocol.KindChat, CorrelationID: []string{"q0"}}
	if err := reply.SetPayload(protocol.Chat{Text: "which milk?"}); err != nil {
		t.Fatal(err)
	}
	if err := helper.Send(t.Context(), reply); err != nil {
		t.Fatal(err)
	}

	// Edit: the helper proposes a draft; the page changes the content and
	// the file holds the edited one.
	write := map[string]any{"method": "tools/call", "params": map[string]any{"name": "write_file",
		"arguments": map[string]any{"path": "notes.txt", "content": "draft"}}}
	edited := callAsync(t, helper, "files", write)
	p.wait("the dialog", `!!document.querySelector("#queue .proposal .edit")`)
	// The file the write would replace is read for the dialog's diff, which
	// may arrive while the person edits: it must not take the form away.
	// (Clicked by the element, not at its place: the diff arriving moves
	// the button, and a click at its old place would miss it.)
	p.do("click Edit", chromedp.Evaluate[chromedp.Void](`document.querySelector("#queue .proposal .edit").click()`))
	p.wait("the diff", `!!document.querySelector("#queue .proposal .diff, #queue .proposal .diff-note")`)
	p.wait("the edit form, still there", `!!document.querySelector("#queue .edit-args")`)
	p.do("edit the arguments", chromedp.SetValue(chromedp.CSS("#queue .edit-args"), `{"path": "notes.txt", "content": "buy oat milk\n"}`))
	p.click("#queue .edit-go")
	p.answered(edited, "the edited call")
	if b, err := os.ReadFile(filepath.Join(work, "notes.txt")); err != nil || string(b) != "buy oat milk\n" {
		t.Fatalf("notes.txt after Edit: %q, %v (want the edited content, not the draft)", b, err)
	}

	// Grant every tool of files: another tool of it then needs no approval.
	read := map[string]any{"method": "tools/call", "params": map[string]any{"name": "read_file", "arguments": map[string]any{"path": "notes.txt"}}}
	granted := callAsync(t, helper, "files", read)
	p.wait("the dialog again", `!!document.querySelector("#queue .proposal .grant")`)
	p.click("#queue .proposal .grant")
	// files' tools are known since the first proposal (the page asked them).
	p.wait("the target scope", `document.querySelector("#queue input[name=scope][value=target]")?.disabled === false`)
	if label := p.text(`#queue label.opt:has(input[value=target])`); !strings.Contains(label, "every tool of files") || !strings.Contains(label, "list_directory") {
		t.Errorf("the target scope reads %q", label)
	}
	p.click(`#queue input[name=scope][value=target]`)
	p.click(`#queue input[name=life][value="600"]`)
	p.click("#queue .grant-go")
	p.answered(granted, "the call granted with every tool")
	list := []byte(`{"method":"tools/call","params":{"name":"list_directory","arguments":{"path":"."}}}`)
	waitFor(t, "the helper to hold the grant", func() bool { return helper.CanSend(protocol.KindMCPRequest, list) })
	proposals := p.eval(`document.querySelectorAll(".proposal-entry").length`)
	p.answered(callAsync(t, helper, "files", json.RawMessage(list)), "another tool of files under the grant")
	if now := p.eval(`document.querySelectorAll(".proposal-entry").length`); now != proposals {
		t.Errorf("list_directory was proposed (%v proposals, then %v)", proposals, now)
	}

	// @ completion: "@th" offers thinker, Tab takes it, Enter sends.
	p.do("type @th", chromedp.SendKeys(chromedp.CSS("#compose-input"), "@th"))
	p.wait("the completion", `!document.querySelector("#complete").hidden && document.querySelector("#complete .opt.sel")?.dataset.id === "thinker"`)
	p.do("take it", chromedp.SendKeys(chromedp.CSS("#compose-input"), kb.Tab))
	if v := p.eval(`document.querySelector("#compose-input").value`); v != "@thinker " {
		t.Fatalf("the input after Tab: %q", v)
	}
	p.do("ask", chromedp.SendKeys(chromedp.CSS("#compose-input"), "what do the notes say?"+kb.Enter))
	p.wait("the question, addressed", `[...document.querySelectorAll(".entry.chat")].some(e => e.textContent.includes("you → thinker") && e.textContent.includes("what do the notes say?"))`)

	// The thinking line: live while the model works, then one folded line
	// that opens to the thoughts.
	p.wait("the live line", `[...document.querySelectorAll(".thinking.live .thinking-line")].some(l => l.textContent.includes("thinker is thinking"))`)
	p.wait("the answer", `[...document.querySelectorAll(".entry.chat")].some(e => e.textContent.includes("thinker → you") && e.textContent.includes("buy oat milk"))`)
	p.wait("the line ended", `document.querySelectorAll(".thinking").length === 1 && !document.querySelector(".thinking.live")`)
	line := p.text(".thinking .thinking-line")
	for _, want := range []string{"thinker thought", "2 thoughts", "calling files/read_file"} {
		if !strings.Contains(line, want) {
			t.Errorf("the thinking line %q lacks %q", line, want)
		}
	}
	if p.eval(`document.querySelector(".thinking .thoughts").hidden`) != true {
		t.Error("the thoughts are not folded")
	}
	p.click(".thinking .thinking-line")
	if n := p.eval(`document.querySelector(".thinking .thoughts").hidden ? -1 : document.querySelectorAll(".thinking .thoughts li").length`); n != float64(3) {
		t.Errorf("opened, the line shows %v items; want 2 thoughts and the conclusion", n)
	}

	// The chain of the agent's tool call, from the gateway's log: every
	// step is in it, the reasoning by the call's context.
	p.do("open the call's chain", chromedp.Evaluate[chromedp.Void](`[...document.querySelectorAll(".entry.request")].find(e => e.textContent.startsWith("thinker")).querySelector(".chain-btn").click()`))
	p.wait("the chain from the log", `document.querySelector("#chain-source")?.dataset.source === "log"`)
	kinds := p.eval(`[...document.querySelectorAll("#chain svg g.node")].map(n => n.dataset.kind + ":" + n.dataset.source).join(" ")`).(string)
	for _, want := range []string{"chat:log", "reasoning/start:log", "mcp/request:log", "mcp/response:log"} {
		if !strings.Contains(kinds, want) {
			t.Errorf("the chain %q lacks %s", kinds, want)
		}
	}
	if p.eval(`!!document.querySelector("#chain svg g.node.inferred")`) != false {
		t.Errorf("the call's reasoning is inferred, not taken from its context")
	}
	p.click("#chain-close")
	// The chain of the reply to a chat the page never saw shows that chat,
	// from the log alone.
	p.do("open the reply's chain", chromedp.Evaluate[chromedp.Void](`document.querySelector(".entry[data-id=re0] .chain-btn").click()`))
	p.wait("the early chat from the log", `document.querySelector("#chain svg g.node[data-id=q0]")?.dataset.source === "log only" && document.querySelector("#chain-source").textContent.includes("1 this page never saw")`)
	if label := p.eval(`document.querySelector("#chain svg g.node[data-id=q0] .label").textContent`); !strings.Contains(label.(string), "remember the milk") {
		t.Errorf("the early chat's step reads %q", label)
	}
	p.click("#chain-close")

	// Controls: a status request answered in the list; a pause with a
	// timeout that holds the agent, then a resume.
	row := `#participants .participant[data-id=thinker]`
	// An agent gets the controls of its context; a tool does not.
	if got := p.eval(`[...document.querySelectorAll(` + jsString(row+` .controls button`) + `)].map(b => b.dataset.kind).join(" ")`); !strings.Contains(got.(string), "participant/forget") {
		t.Errorf("the agent's controls: %v", got)
	}
	if got := p.eval(`[...document.querySelectorAll("#participants .participant[data-id=files] .controls button")].map(b => b.dataset.kind).join(" ")`); strings.Contains(got.(string), "participant/forget") || strings.Contains(got.(string), "participant/compact") || !strings.Contains(got.(string), "participant/pause") {
		t.Errorf("the files' controls: %v; a tool keeps no context to forget or compact", got)
	}
	p.click(row + ` button[data-kind="participant/request-status"]`)
	p.wait("the status", `document.querySelector(`+jsString(row)+`).textContent.includes("msgs")`)
	p.do("set the timeout", chromedp.SetValue(chromedp.CSS(row+" .pause-timeout"), "120"))
	p.click(row + ` button[data-kind="participant/pause"]`)
	p.wait("paused", `document.querySelector(`+jsString(row)+`).textContent.includes("paused")`)
	waitFor(t, "the agent to be paused", thinker.Participant().Paused)
	if v := p.eval(`[...document.querySelectorAll(".entry[data-kind='participant/pause']")].map(e => e.textContent).join("|")`); !strings.Contains(v.(string), `"timeout_seconds":120`) {
		t.Errorf("the pause sent: %q; want timeout_seconds 120", v)
	}
	p.click(row + ` button[data-kind="participant/resume"]`)
	p.wait("resumed", `document.querySelector(`+jsString(row)+`).textContent.includes("active")`)
	waitFor(t, "the agent to resume", func() bool { return !thinker.Participant().Paused() })
}

// defaultsSpace is webSpace where you address plain text to the helper by
// default, and the helper may ask anyone anything.
const defaultsSpace = `
space: {id: web}
participants:
  you:
    tokens: [you-token]
    capabilities: [{kind: "*"}]
    default_to: {chat: [helper]}
  helper:
    tokens: [helper-token]
    capabilities: [{kind: chat}, {kind: mcp/request}]
`

// TestConsoleAnswersAndDefaults: the console answers an agent's tools/list
// at once (an empty list), refuses other methods with an error rather than
// silence, sends plain text to the space's default_to, and sends nothing
// for a line that starts with { but is not JSON.
func TestConsoleAnswersAndDefaults(t *testing.T) {
	g := testutil.StartGateway(t, defaultsSpace, gateway.Options{Audit: gateway.AuditOptions{Off: true}})
	helper := testutil.JoinParticipant(t, g, "helper-token", participant.Options{})
	p := openAs(t, g, "you-token", 2)

	start := time.Now()
	ctx, cancel := context.WithTimeout(t.Context(), 5*time.Second)
	defer cancel()
	res, err := helper.RequestDirect(ctx, "you", map[string]any{"method": "tools/list", "params": map[string]any{}})
	if err != nil {
		t.Fatalf("tools/list to the console: %v", err)
	}
	if took := time.Since(start); took > 2*time.Second {
		t.Errorf("the console answered tools/list after %v", took)
	}
	var list struct {
		Tools []any `json:"tools"`
	}
	if err := json.Unmarshal(res, &list); err != nil || list.Tools == nil || len(list.Tools) != 0 {
		t.Errorf("the console's tools/list: %s (%v)", res, err)
	}
	if _, err := helper.RequestDirect(ctx, "you", map[string]any{"method": "resources/list"}); err == nil || !strings.Contains(err.Error(), "serves no") {
		t.Errorf("another method: %v, want the console's refusal", err)
	}

	chats := make(chan *protocol.Envelope, 8)
	helper.Client().OnKind(protocol.KindChat, func(env *protocol.Envelope) {
		if env.From == "you" {
			chats <- env
		}
	})
	p.do("send a line with no @", chromedp.SendKeys(chromedp.CSS("#compose-input"), "hello there"+kb.Enter))
	select {
	case env := <-chats:
		if len(env.To) != 1 || env.To[0] != "helper" {
			t.Errorf("plain text went to %v, want the space's default_to [helper]", env.To)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("the chat never arrived")
	}
	p.do("send malformed JSON", chromedp.SendKeys(chromedp.CSS("#compose-input"), `{"kind":"chat",`+kb.Enter))
	p.wait("the error under the input", `document.querySelector("#compose-error")?.textContent.includes("not JSON") && document.querySelector("#compose-input").value.startsWith("{")`)
	select {
	case env := <-chats:
		t.Errorf("malformed JSON was sent: %s", env.Payload)
	case <-time.After(500 * time.Millisecond):
	}
}

// hourSpace: you, a helper that may only propose, the files, and an
// assistant that answers with the offline model.
var hourSpace = webSpace + testutil.Member("assistant", "chat", "chat/*", "reasoning/*", "mcp/request", "participant/*")

// TestPersonsHour drives the console as a person uses it for a while: the
// assistant (offline model) answers the first question within 2 s, since
// the page answers the agent's discovery at once; a proposal decided after
// a minute of reading still goes through (no 30 s deadline); a grant "for
// this session" ends when the person's browser is gone, with no page left
// to revoke it.
func TestPersonsHour(t *testing.T) {
	if testing.Short() {
		t.Skip("a minute of waiting: not with -short")
	}
	g := testutil.StartGateway(t, hourSpace, gateway.Options{Timing: gateway.Timing{SessionGrantGrace: time.Second}, Audit: gateway.AuditOptions{Off: true}})
	work := t.TempDir()
	startFiles(t, g, work)
	helper := testutil.JoinParticipant(t, g, "helper-token", participant.Options{})
	startAgent(t, g, "assistant-token", llm.NewOffline(), agent.Config{ReasoningEnabled: true})
	p := openAs(t, g, "you-token", 4)

	// The first question, answered within 2 s.
	asked := time.Now()
	p.do("ask the assistant", chromedp.SendKeys(chromedp.CSS("#compose-input"), "@assistant hello, who are you?"+kb.Enter))
	p.wait("the assistant's answer", `[...document.querySelectorAll(".entry.chat")].some(e => e.textContent.startsWith("assistant"))`)
	if took := time.Since(asked); took > 2*time.Second {
		t.Errorf("the assistant's first answer came %v after the question, want within 2 s", took)
	}

	// A proposal read for a minute, then approved: the helper's call
	// completes.
	call := map[string]any{"method": "tools/call", "params": map[string]any{"name": "write_file",
		"arguments": map[string]any{"path": "later.txt", "content": "decided after a minute\n"}}}
	// No deadline of the test's own: the participant's default, ten
	// minutes for a person, is what a proposal waits.
	slow := make(chan error, 1)
	go func() {
		_, err := helper.Request(t.Context(), "files", call)
		slow <- err
	}()
	p.wait("the approval dialog", `!!document.querySelector("#queue .proposal .yes")`)
	time.Sleep(61 * time.Second)
	p.click("#queue .proposal .yes")
	p.answered(slow, "the call approved after a minute")
	if b, err := os.ReadFile(filepath.Join(work, "later.txt")); err != nil || string(b) != "decided after a minute\n" {
		t.Fatalf("later.txt: %q, %v", b, err)
	}

	// A grant for this session: the helper's next call goes straight
	// through; when the person's browser dies, the gateway ends it.
	second := callAsync(t, helper, "files", call)
	p.wait("the second dialog", `!!document.querySelector("#queue .proposal .grant")`)
	p.click("#queue .proposal .grant")
	p.click(`#queue input[name=scope][value=tool]`)
	p.click(`#queue input[name=life][value=session]`)
	p.click("#queue .grant-go")
	p.answered(second, "the call granted for this session")
	payload := []byte(`{"method":"tools/call","params":{"name":"write_file","arguments":{"path":"later.txt","content":"decided after a minute\n"}}}`)
	waitFor(t, "the helper to hold the session grant", func() bool { return helper.CanSendTo(protocol.KindMCPRequest, []string{"files"}, payload) })
	code, body := ledger(t, g, "you-token")
	if code != http.StatusOK || !strings.Contains(body, `"session":true`) {
		t.Fatalf("the ledger after the session grant: %d %s", code, body)
	}
	p.click("#grants-refresh")
	p.wait("the session grant in the ledger", `[...document.querySelectorAll("#grants tr.grant")].some(r => r.textContent.includes("for the granter's session"))`)
	// The browser dies: no pagehide, no Leave, nothing of the page runs.
	if b := chromedp.FromContext(p.ctx).Browser; b != nil {
		if pr := b.Process(); pr != nil {
			_ = pr.Kill()
		}
	}
	waitFor(t, "the gateway to end the session grant", func() bool {
		return !helper.CanSendTo(protocol.KindMCPRequest, []string{"files"}, payload)
	})
}

// ledger reads GET /console/grants with cred.
func ledger(t *testing.T, g *testutil.Gateway, cred string) (int, string) {
	t.Helper()
	req, _ := http.NewRequest(http.MethodGet, g.URL+"/console/grants?space=web", nil)
	req.Header.Set("Authorization", "Bearer "+cred)
	req.Header.Set("X-Mew-Console", "1")
	resp, b := testutil.HTTPDo(t, req, nil)
	return resp.StatusCode, string(b)
}
