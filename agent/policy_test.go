package agent_test

import (
	"context"
	"encoding/json"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mew-protocol/mew/agent"
	"github.com/mew-protocol/mew/internal/testutil"
	"github.com/mew-protocol/mew/llm"
	"github.com/mew-protocol/mew/protocol"
)

// isClassifier tells the classifier's requests apart: they offer no tools
// and their system prompt asks for shouldRespond.
func isClassifier(r testutil.LLMRequest) bool {
	return len(r.Messages) > 0 && strings.Contains(r.Messages[0].Content, "shouldRespond")
}

// TestClassifierGate: a broadcast chat that does not mention the agent is
// answered only when the classifier says so with enough confidence; a
// classifier that answers nonsense leaves the decision to the question
// mark.
func TestClassifierGate(t *testing.T) {
	g, human := calcSpace(t)
	verdicts := map[string]string{
		"chit chat":                `{"shouldRespond": false, "confidence": 0.9, "reason": "small talk"}`,
		"maybe relevant":           "I think so: ```json\n{\"shouldRespond\": true, \"confidence\": 0.3}\n```",
		"please add 2 and 3":       `{"shouldRespond": true, "confidence": 0.8, "reason": "a sum"}`,
		"garbled but a question?":  "yes!",
		"garbled and no question":  "yes!",
		"classifier down?":         "",
		"classifier down and flat": "",
	}
	llmSrv := testutil.NewLLMServer(t)
	llmSrv.SetFallback(func(r testutil.LLMRequest) testutil.LLMStep {
		last := r.Messages[len(r.Messages)-1].Content
		if isClassifier(r) {
			v := verdicts[last]
			if v == "" {
				return testutil.LLMFail(500, "classifier overloaded")
			}
			return testutil.LLMReply(v)
		}
		return testutil.LLMReply("answer to " + last)
	})
	prov, err := llm.NewOpenAI(llm.Config{BaseURL: llmSrv.URL(), APIKey: "k", MaxRetries: -1})
	if err != nil {
		t.Fatal(err)
	}
	// A queue that holds all eight chats, the marker below included.
	startAgent(t, g, "agent", prov, agent.Config{AutoRespond: true, FloorControl: quickFloor, QueueSize: 16})
	rec := record(t, human)

	ids := map[string]string{}
	for _, text := range []string{"chit chat", "maybe relevant", "please add 2 and 3", "garbled but a question?",
		"garbled and no question", "classifier down?", "classifier down and flat"} {
		ids[text] = sendChat(t, human, text)
	}
	// The agent decides on chats in order: once a marker sent after them all
	// is answered (a question, with the classifier down), every decision has
	// been made, and an answer it decided on is acknowledged. The answers
	// themselves may still be on their way; those wanted are waited for.
	marker := sendChat(t, human, "is that all?")
	rec.wait(t, "the answer to the marker", answerTo("agent", marker))
	for _, text := range []string{"please add 2 and 3", "garbled but a question?", "classifier down?"} {
		rec.wait(t, "the answer to "+text, answerTo("agent", ids[text]))
	}
	answered := map[string]bool{}
	for _, e := range rec.all() {
		if e.From != "agent" {
			continue
		}
		for text, id := range ids {
			if e.Kind == protocol.KindChat && e.CorrelatesWith(id) {
				answered[text] = true
			}
			if e.Kind == protocol.KindChatAcknowledge && e.CorrelatesWith(id) && !answered[text] {
				// an acknowledgement is sent only for a chat that will be answered
				defer func() {
					if !answered[text] {
						t.Errorf("%q acknowledged but not answered", text)
					}
				}()
			}
		}
	}
	want := map[string]bool{"please add 2 and 3": true, "garbled but a question?": true, "classifier down?": true}
	for text := range ids {
		if answered[text] != want[text] {
			t.Errorf("%q answered %v, want %v", text, answered[text], want[text])
		}
	}
	var sawContext bool
	for _, r := range llmSrv.Requests() {
		if isClassifier(r) && strings.Contains(r.Messages[0].Content, "human: chit chat") {
			sawContext = true
		}
	}
	if !sawContext {
		t.Error("the classifier never saw the earlier conversation")
	}
}

// TestAnswerRate: beyond AnswersPerMinute, unaddressed chats are ignored;
// addressed chats are still answered.
func TestAnswerRate(t *testing.T) {
	g, human := calcSpace(t)
	startAgent(t, g, "agent", llm.NewOffline(), agent.Config{AutoRespond: true, FloorControl: quickFloor, ChatResponse: agent.ChatResponse{AnswersPerMinute: 1}})
	rec := record(t, human)
	first := sendChat(t, human, "add 1 and 2")
	second := sendChat(t, human, "add 3 and 4")
	direct := sendChat(t, human, "add 5 and 6", "agent")
	rec.wait(t, "the first answer", answerTo("agent", first))
	rec.wait(t, "the direct answer", answerTo("agent", direct))
	for _, e := range rec.all() {
		if e.From == "agent" && e.CorrelatesWith(second) {
			t.Errorf("chat over the rate answered: %s %s", e.Kind, e.Payload)
		}
	}
}

// TestOfflineCalculator: the offline model answers "what is 2 plus 3" with
// the calculator's add tool, and says it is the offline model.
func TestOfflineCalculator(t *testing.T) {
	g := startGateway(t)
	human := join(t, g, "human")
	join(t, g, "calc", addTool, multiplyTool)
	startAgent(t, g, "agent", llm.NewOffline(), agent.Config{ReasoningEnabled: true})
	rec := record(t, human)
	q := sendChat(t, human, "@agent what is 2 plus 3")
	got := chatText(rec.wait(t, "the answer", answerTo("agent", q)))
	if !strings.Contains(got, "5") || !strings.Contains(got, llm.OfflineLabel) {
		t.Errorf("answer %q", got)
	}
	rec.wait(t, "the add call", func(e *protocol.Envelope) bool {
		return e.Kind == protocol.KindMCPRequest && e.From == "agent" && strings.Contains(string(e.Payload), `"name":"add"`)
	})
}

// TestReasoningStream: an agent that may open streams mirrors its reasoning
// into one, the model's output included, and closes it at the end.
func TestReasoningStream(t *testing.T) {
	g, human := calcSpace(t)
	llmSrv := testutil.NewLLMServer(t)
	llmSrv.Script(
		testutil.LLMStep{Reasoning: "I should add.", ToolCalls: []testutil.LLMToolCall{{Name: "calc_add", Arguments: `{"a":2,"b":3}`}}},
		testutil.LLMReply("The sum is 5."),
	)
	startAgent(t, g, "thinker", openAI(t, llmSrv), agent.Config{ReasoningEnabled: true})
	rec := record(t, human)
	var mu sync.Mutex
	var frames []string
	framesDone := make(chan struct{})
	open := make(chan string, 1)
	// Frames are taken from the stream/open on, on the dispatch goroutine
	// that delivers them in order.
	human.Client().OnKind(protocol.KindStreamOpen, func(e *protocol.Envelope) {
		var so protocol.StreamOpen
		if e.DecodePayload(&so) != nil {
			return
		}
		select {
		case open <- so.StreamID:
		default:
			return
		}
		human.OnStreamData(so.StreamID, func(data []byte) {
			mu.Lock()
			defer mu.Unlock()
			frames = append(frames, string(data))
			if strings.Contains(string(data), "Answering.") {
				close(framesDone)
			}
		})
	})
	q := sendChat(t, human, "add 2 and 3", "thinker")
	var sid string
	select {
	case sid = <-open:
	case <-time.After(10 * time.Second):
		t.Fatalf("no stream opened; saw:\n%s", dump(rec.all()))
	}
	rec.wait(t, "the answer", answerTo("thinker", q))
	closed := rec.wait(t, "stream/close", func(e *protocol.Envelope) bool { return e.Kind == protocol.KindStreamClose })
	if !strings.Contains(string(closed.Payload), sid) {
		t.Errorf("closed %s, want %s", closed.Payload, sid)
	}
	select {
	case <-framesDone:
	case <-time.After(5 * time.Second):
		t.Fatal("the last thought never came in a frame")
	}
	req := rec.wait(t, "stream/request", func(e *protocol.Envelope) bool { return e.Kind == protocol.KindStreamRequest })
	start := rec.wait(t, "reasoning/start", func(e *protocol.Envelope) bool { return e.Kind == protocol.KindReasoningStart })
	if !strings.Contains(string(req.Payload), start.ID) {
		t.Errorf("stream/request %s does not name the reasoning %s", req.Payload, start.ID)
	}
	mu.Lock()
	defer mu.Unlock()
	all := strings.Join(frames, "\n")
	for _, want := range []string{`"type":"reasoning","text":"I should add."`, `"type":"thought"`, `"type":"observation","text":"5","tool":"calc/add"`, `"type":"content"`} {
		if !strings.Contains(all, want) {
			t.Errorf("frames lack %s:\n%s", want, all)
		}
	}
	for _, f := range frames {
		if !json.Valid([]byte(f)) {
			t.Errorf("frame %q is not JSON", f)
		}
	}
	if reqs := llmSrv.Requests(); len(reqs) != 2 || !reqs[0].Stream {
		t.Errorf("the model was not streamed: %d requests", len(reqs))
	}
}

// TestPromptsAndScratchpad: the prompt templates shape what the model is
// asked, values are inserted once, and the scratchpad format gives the
// steps as text.
func TestPromptsAndScratchpad(t *testing.T) {
	g, human := calcSpace(t)
	llmSrv := testutil.NewLLMServer(t)
	llmSrv.Script(
		testutil.LLMCall(testutil.LLMToolCall{Name: "calc_add", Arguments: `{"a":2,"b":3}`}),
		testutil.LLMReply("done"),
		testutil.LLMReply("The result is 5, boss."),
	)
	startAgent(t, g, "agent", openAI(t, llmSrv), agent.Config{
		ReasoningFormat: agent.FormatScratchpad,
		Prompts: agent.Prompts{
			System:  "SYSTEM",
			Reason:  "Request: {input}\nTools:{tools}",
			Respond: "Results: {observation}\nAnswer {objective} politely.",
		},
	})
	rec := record(t, human)
	q := sendChat(t, human, "add 2 and 3 {tools}", "agent")
	if got := chatText(rec.wait(t, "the answer", answerTo("agent", q))); got != "The result is 5, boss." {
		t.Errorf("answer %q", got)
	}
	reqs := llmSrv.Requests()
	if len(reqs) != 3 {
		t.Fatalf("%d model requests, want 3", len(reqs))
	}
	m0 := reqs[0].Messages
	if m0[0].Content != "SYSTEM" {
		t.Errorf("system prompt %q", m0[0].Content)
	}
	ask := m0[len(m0)-1].Content
	if !strings.HasPrefix(ask, "Request: add 2 and 3 {tools}\nTools:\n- calc/add: Add two numbers") {
		t.Errorf("reason prompt %q", ask)
	}
	m1 := reqs[1].Messages
	pad := m1[len(m1)-1]
	if pad.Role != "user" || !strings.Contains(pad.Content, "Tool used: calc/add") || !strings.Contains(pad.Content, "Observation: 5") {
		t.Errorf("scratchpad %+v", pad)
	}
	for _, m := range m1 {
		if m.Role == "tool" || len(m.ToolCalls) > 0 {
			t.Errorf("scratchpad request holds native tool messages: %+v", m)
		}
	}
	m2 := reqs[2].Messages
	if last := m2[len(m2)-1].Content; last != "Results: 5\nAnswer add 2 and 3 {tools} politely." || len(reqs[2].Tools) != 0 {
		t.Errorf("respond prompt %q with %d tools", last, len(reqs[2].Tools))
	}
}

// TestAutomaticCompaction: when the history would take more than 70% of the
// context, the oldest messages are dropped and the compaction reported.
func TestAutomaticCompaction(t *testing.T) {
	g, human := calcSpace(t)
	llmSrv := testutil.NewLLMServer(t)
	llmSrv.SetFallback(func(testutil.LLMRequest) testutil.LLMStep {
		return testutil.LLMReply(strings.Repeat("long answer ", 40)) // 480 bytes, 120 tokens
	})
	// 400 tokens: 280 may be used, the system prompt and a question take
	// about 40, so two exchanges (about 125 tokens each) fit and a third
	// does not.
	a := startAgent(t, g, "agent", openAI(t, llmSrv), agent.Config{SystemPrompt: "Answer.", ContextTokenLimit: 400})
	rec := record(t, human)
	for i := 0; i < 4; i++ {
		q := sendChat(t, human, "tell me more", "agent")
		rec.wait(t, "answer", answerTo("agent", q))
	}
	status := rec.wait(t, "the compaction status", func(e *protocol.Envelope) bool {
		return e.Kind == protocol.KindParticipantStatus && e.From == "agent" && strings.Contains(string(e.Payload), "compacted:dropped")
	})
	if !strings.Contains(string(status.Payload), `"max_tokens":400`) {
		t.Errorf("status %s", status.Payload)
	}
	if h := a.History(); len(h) > 6 || len(h) < 2 {
		t.Errorf("history of %d messages after compaction", len(h))
	}
	for i, r := range llmSrv.Requests() {
		size := 0
		for _, m := range r.Messages {
			size += len(m.Content)
		}
		if size/4 > 280+10 {
			t.Errorf("request %d: about %d tokens, over 70%% of 400", i, size/4)
		}
	}

	// participant/compact drops the older half and answers compact-done.
	env := &protocol.Envelope{ID: protocol.NewID(), Kind: protocol.KindParticipantCompact, To: []string{"agent"}, Payload: json.RawMessage(`{}`)}
	before := len(a.History())
	sendEnv(t, human, env)
	done := rec.wait(t, "compact-done", func(e *protocol.Envelope) bool {
		return e.Kind == protocol.KindParticipantCompactDone && e.CorrelatesWith(env.ID)
	})
	if after := len(a.History()); after != before/2 {
		t.Errorf("compact: %d messages → %d; compact-done %s", before, after, done.Payload)
	}
}

// TestRequestsToTheAgent: an mcp/request addressed to the agent is answered,
// never left unanswered: its own tools, and an error for anything else.
func TestRequestsToTheAgent(t *testing.T) {
	g, human := calcSpace(t)
	startAgent(t, g, "agent", llm.NewOffline(), agent.Config{})
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	res, err := human.Request(ctx, "agent", map[string]any{"method": "tools/list"})
	if err != nil || !strings.Contains(string(res), `"tools"`) {
		t.Errorf("tools/list: %s, %v", res, err)
	}
	_, err = human.Request(ctx, "agent", map[string]any{"method": "tools/call", "params": map[string]any{"name": "nope"}})
	if err == nil {
		t.Error("a call of an unknown tool succeeded")
	}
}

// TestProviderRecovers: a rate-limited model is retried, and an
// unauthorized one gives a chat that says what is wrong.
func TestProviderRecovers(t *testing.T) {
	g, human := calcSpace(t)
	llmSrv := testutil.NewLLMServer(t)
	limited := testutil.LLMFail(429, "slow down")
	limited.RetryAfter = 10 * time.Millisecond
	llmSrv.Script(limited, testutil.LLMReply("fine now"), testutil.LLMFail(401, "Incorrect API key provided"))
	prov, err := llm.NewOpenAI(llm.Config{BaseURL: llmSrv.URL(), APIKey: "bad-key", MaxRetries: 2})
	if err != nil {
		t.Fatal(err)
	}
	startAgent(t, g, "agent", prov, agent.Config{})
	rec := record(t, human)
	q := sendChat(t, human, "hello", "agent")
	if got := chatText(rec.wait(t, "the answer after a retry", answerTo("agent", q))); got != "fine now" {
		t.Errorf("answer %q", got)
	}
	q = sendChat(t, human, "hello again", "agent")
	got := chatText(rec.wait(t, "the 401 answer", answerTo("agent", q)))
	if !strings.Contains(got, "401") || !strings.Contains(got, "Incorrect API key") || !strings.Contains(got, "OPENAI_API_KEY") {
		t.Errorf("answer %q", got)
	}
	if strings.Contains(got, "bad-key") {
		t.Errorf("the answer shows the key: %q", got)
	}
}
