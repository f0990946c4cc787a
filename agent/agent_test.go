package agent_test

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mew-protocol/mew/agent"
	"github.com/mew-protocol/mew/internal/testutil"
	"github.com/mew-protocol/mew/llm"
	"github.com/mew-protocol/mew/participant"
	"github.com/mew-protocol/mew/protocol"
)

// TestAnswerWithTools follows one question through acknowledgement,
// reasoning, two tool calls to the calculator and the answer.
func TestAnswerWithTools(t *testing.T) {
	g := startGateway(t)
	llmSrv := testutil.NewLLMServer(t)
	llmSrv.Script(
		testutil.LLMCall(testutil.LLMToolCall{Name: "calc_add", Arguments: `{"a":2,"b":3}`}),
		testutil.LLMCall(testutil.LLMToolCall{Name: "calc_multiply", Arguments: `{"a":5,"b":4}`}),
		testutil.LLMReply("(2 + 3) × 4 = 20"),
	)
	human := join(t, g, "human")
	join(t, g, "calc", addTool, multiplyTool)
	startAgent(t, g, "agent", openAI(t, llmSrv), agent.Config{ReasoningEnabled: true, SystemPrompt: "Be brief."})
	rec := record(t, human)

	q := sendChat(t, human, "what is (2 plus 3) times 4?", "agent")
	answer := rec.wait(t, "the answer", answerTo("agent", q))
	if got := chatText(answer); got != "(2 + 3) × 4 = 20" {
		t.Errorf("answer %q", got)
	}
	if len(answer.To) != 1 || answer.To[0] != "human" {
		t.Errorf("answer to %v, want [human]", answer.To)
	}

	// The envelopes of the exchange, from the question on.
	var seq []string
	var start *protocol.Envelope
	var calls []*protocol.Envelope
	started := false
	for _, e := range rec.all() {
		if e.ID == q {
			started = true
		}
		if !started || e.Kind == protocol.KindParticipantStatus {
			continue
		}
		seq = append(seq, e.From+" "+e.Kind)
		switch e.Kind {
		case protocol.KindReasoningStart:
			start = e
		case protocol.KindMCPRequest:
			calls = append(calls, e)
		}
	}
	want := []string{
		"human chat",
		"agent chat/acknowledge",
		"agent reasoning/start",
		"agent reasoning/thought",
		"agent mcp/request",
		"calc mcp/response",
		"agent reasoning/thought",
		"agent mcp/request",
		"calc mcp/response",
		"agent reasoning/thought",
		"agent reasoning/conclusion",
		"agent chat",
	}
	if strings.Join(seq, "\n") != strings.Join(want, "\n") {
		t.Fatalf("sequence:\n%s\nwant:\n%s\nall:\n%s", strings.Join(seq, "\n"), strings.Join(want, "\n"), dump(rec.all()))
	}
	if !start.CorrelatesWith(q) {
		t.Errorf("reasoning/start correlation %v, want %s", start.CorrelationID, q)
	}
	for _, e := range rec.all() {
		if (e.Kind == protocol.KindReasoningThought || e.Kind == protocol.KindReasoningConclusion) && e.Context != start.ID {
			t.Errorf("%s context %q, want %q", e.Kind, e.Context, start.ID)
		}
	}
	for i, tool := range []string{"add", "multiply"} {
		var mcp struct {
			Method string `json:"method"`
			Params struct {
				Name      string          `json:"name"`
				Arguments json.RawMessage `json:"arguments"`
			} `json:"params"`
		}
		if err := calls[i].DecodePayload(&mcp); err != nil {
			t.Fatal(err)
		}
		if mcp.Method != "tools/call" || mcp.Params.Name != tool || len(calls[i].To) != 1 || calls[i].To[0] != "calc" {
			t.Errorf("tool call %d: %s to %v", i, calls[i].Payload, calls[i].To)
		}
		// A step of the reasoning names it, so lineage needs no inference.
		if calls[i].Context != start.ID {
			t.Errorf("tool call %d context %q, want the reasoning %q", i, calls[i].Context, start.ID)
		}
	}

	reqs := llmSrv.Requests()
	if len(reqs) != 3 {
		t.Fatalf("%d model requests, want 3", len(reqs))
	}
	if len(reqs[0].Tools) != 2 || reqs[0].Tools[0].Name != "calc_add" {
		t.Errorf("tools offered: %+v", reqs[0].Tools)
	}
	if m := reqs[0].Messages; len(m) < 2 || m[0].Role != "system" || m[0].Content != "Be brief." || m[len(m)-1].Content != "what is (2 plus 3) times 4?" {
		t.Errorf("first request messages: %+v", m)
	}
	for i, want := range []string{"5", "20"} {
		last := reqs[i+1].Messages[len(reqs[i+1].Messages)-1]
		if last.Role != "tool" || last.Content != want {
			t.Errorf("tool result %d given to the model: %+v, want %s", i, last, want)
		}
	}
}

// TestResponsePolicy: a broadcast is ignored without AutoRespond, a mention
// is answered, and the history carries the earlier exchange.
func TestResponsePolicy(t *testing.T) {
	g, human := calcSpace(t)
	llmSrv := testutil.NewLLMServer(t)
	llmSrv.SetFallback(func(r testutil.LLMRequest) testutil.LLMStep {
		return testutil.LLMReply("reply to " + r.Messages[len(r.Messages)-1].Content)
	})
	a := startAgent(t, g, "agent", openAI(t, llmSrv), agent.Config{})
	rec := record(t, human)

	broadcast := sendChat(t, human, "hello everyone")
	mention := sendChat(t, human, "hey @agent, how are you?")
	rec.wait(t, "the answer to the mention", answerTo("agent", mention))
	direct := sendChat(t, human, "and now?", "agent")
	rec.wait(t, "the answer to the direct chat", answerTo("agent", direct))
	for _, e := range rec.all() {
		if e.From == "agent" && e.CorrelatesWith(broadcast) {
			t.Errorf("the agent reacted to a broadcast: %s %s", e.Kind, e.Payload)
		}
	}
	reqs := llmSrv.Requests()
	if len(reqs) != 2 {
		t.Fatalf("%d model requests, want 2", len(reqs))
	}
	var contents []string
	for _, m := range reqs[1].Messages {
		contents = append(contents, m.Role+":"+m.Content)
	}
	want := "user:hey @agent, how are you?|assistant:reply to hey @agent, how are you?|user:and now?"
	if got := strings.Join(contents[1:], "|"); got != want {
		t.Errorf("second request:\n%s\nwant\n%s", got, want)
	}
	if h := a.History(); len(h) != 4 {
		t.Errorf("history has %d messages, want 4", len(h))
	}
}

// TestAutoRespond: with AutoRespond and the offline model, a broadcast chat
// that a tool fits is answered; small talk is not.
func TestAutoRespond(t *testing.T) {
	g, human := calcSpace(t)
	startAgent(t, g, "agent", llm.NewOffline(), agent.Config{AutoRespond: true, FloorControl: quickFloor})
	rec := record(t, human)
	chatter := sendChat(t, human, "nice weather today")
	q := sendChat(t, human, "add 2 and 3")
	answer := rec.wait(t, "the answer", answerTo("agent", q))
	if got := chatText(answer); !strings.Contains(got, "5") {
		t.Errorf("answer %q", got)
	}
	for _, e := range rec.all() {
		if e.From == "agent" && e.CorrelatesWith(chatter) {
			t.Errorf("small talk answered: %s %s", e.Kind, e.Payload)
		}
	}
}

// TestProposalFallback: an agent without mcp/request proposes its tool
// call, and the human fulfils it.
func TestProposalFallback(t *testing.T) {
	g, human := calcSpace(t)
	llmSrv := addingModel(t, "It is 9.")
	var wg sync.WaitGroup
	defer wg.Wait()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	human.OnProposal(func(pr *participant.Proposal) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if _, err := human.Fulfill(ctx, pr); err != nil && ctx.Err() == nil {
				t.Errorf("fulfil: %v", err)
			}
		}()
	})
	startAgent(t, g, "proposer", openAI(t, llmSrv), agent.Config{})
	rec := record(t, human)
	q := sendChat(t, human, "add 4 and 5", "proposer")
	answer := rec.wait(t, "the answer", answerTo("proposer", q))
	if got := chatText(answer); got != "It is 9." {
		t.Errorf("answer %q", got)
	}
	pr := rec.wait(t, "the proposal", func(e *protocol.Envelope) bool {
		return e.Kind == protocol.KindMCPProposal && e.From == "proposer"
	})
	if pr.Context != "" { // reasoning is off: there is no reasoning to name
		t.Errorf("proposal context %q without reasoning", pr.Context)
	}
	if m := lastMessage(llmSrv); m.Role != "tool" || !strings.Contains(m.Content, "9") {
		t.Errorf("tool result given to the model: %+v", m)
	}
}

// TestProposalTimedOutInWords: nobody decides the agent's proposal within
// its ProposalTimeout (the reference's requestTimeout): the proposal is
// withdrawn as timed out, and what the model reads, and so the person, is
// words about a missing approval, not a deadline's error string.
func TestProposalTimedOutInWords(t *testing.T) {
	g, human := calcSpace(t)
	llmSrv := addingModel(t, "Nobody approved the addition in time.")
	var cfg agent.Config
	if err := cfg.MergeJSON([]byte(`{"requestTimeout":700}`)); err != nil {
		t.Fatal(err)
	}
	startAgent(t, g, "proposer", openAI(t, llmSrv), cfg)
	rec := record(t, human)
	q := sendChat(t, human, "add 4 and 5", "proposer")
	rec.wait(t, "the answer", answerTo("proposer", q))
	w := rec.wait(t, "the withdrawal", func(e *protocol.Envelope) bool {
		return e.Kind == protocol.KindMCPWithdraw && e.From == "proposer"
	})
	var wp protocol.Withdraw
	if err := w.DecodePayload(&wp); err != nil || wp.Reason != protocol.ReasonTimeout {
		t.Errorf("withdrawal %s", w.Payload)
	}
	m := lastMessage(llmSrv)
	if m.Role != "tool" || !strings.Contains(m.Content, "nobody approved or rejected it within 1s") || strings.Contains(m.Content, "deadline") {
		t.Errorf("tool result given to the model: %+v", m)
	}
}

// TestProposalRejectedInWords: a person rejects the agent's proposal with a
// reason and words of their own; the model reads who rejected it, why and
// their words, and the offline model's answer says them with what was
// asked.
func TestProposalRejectedInWords(t *testing.T) {
	g, human := calcSpace(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var wg sync.WaitGroup
	defer wg.Wait()
	human.OnProposal(func(pr *participant.Proposal) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := human.RejectWith(ctx, pr, protocol.ReasonDisagree, "once is enough"); err != nil && ctx.Err() == nil {
				t.Errorf("reject: %v", err)
			}
		}()
	})
	startAgent(t, g, "proposer", llm.NewOffline(), agent.Config{})
	rec := record(t, human)
	q := sendChat(t, human, "add 4 and 5", "proposer")
	want := `You asked: add 4 and 5. I proposed calc/add (a: 4, b: 5), and human rejected it (disagree): "once is enough". So it was not done. (offline model)`
	if got := chatText(rec.wait(t, "the answer", answerTo("proposer", q))); got != want {
		t.Errorf("answer %q\nwant   %q", got, want)
	}
}

// TestReasoningCancel: a reasoning/cancel during a slow model call stops the
// answer and ends the reasoning.
func TestReasoningCancel(t *testing.T) {
	g, human := calcSpace(t)
	llmSrv := slowModel(t, "too late", 10*time.Second)
	llmSrv.SetFallback(func(testutil.LLMRequest) testutil.LLMStep { return testutil.LLMReply("second answer") })
	startAgent(t, g, "agent", openAI(t, llmSrv), agent.Config{ReasoningEnabled: true})
	rec := record(t, human)
	q := sendChat(t, human, "think hard", "agent")
	start := rec.wait(t, "reasoning/start", func(e *protocol.Envelope) bool {
		return e.Kind == protocol.KindReasoningStart && e.CorrelatesWith(q)
	})
	waitAsked(t, llmSrv)
	cancelEnv, err := protocol.New(protocol.KindReasoningCancel, protocol.ReasoningCancel{Reason: "stop"})
	if err != nil {
		t.Fatal(err)
	}
	cancelEnv.Context = start.ID
	began := time.Now()
	sendEnv(t, human, cancelEnv)
	concl := rec.wait(t, "reasoning/conclusion", func(e *protocol.Envelope) bool {
		return e.Kind == protocol.KindReasoningConclusion && e.Context == start.ID
	})
	if time.Since(began) > 5*time.Second {
		t.Errorf("cancel took %v", time.Since(began))
	}
	var p map[string]any
	_ = concl.DecodePayload(&p)
	if p["cancelled"] != true || p["reason"] != "stop" {
		t.Errorf("conclusion payload %s", concl.Payload)
	}
	nextAnswered(t, human, rec, q)
}

// nextAnswered asks the agent a second question, whose model answer is
// "second answer", and checks that it is answered and that the cancelled
// question q never was: the agent answers one question at a time, so an
// answer to the next one shows that it is done with q.
func nextAnswered(t *testing.T, human *participant.Participant, rec *recorder, q string) {
	t.Helper()
	q2 := sendChat(t, human, "second question", "agent")
	if got := chatText(rec.wait(t, "the second answer", answerTo("agent", q2))); got != "second answer" {
		t.Errorf("second answer %q", got)
	}
	for _, e := range rec.all() {
		if e.Kind == protocol.KindChat && e.From == "agent" && e.CorrelatesWith(q) {
			t.Errorf("cancelled question answered: %s", e.Payload)
		}
	}
}

// TestChatCancel: a chat/cancel of the question stops the answer.
func TestChatCancel(t *testing.T) {
	g, human := calcSpace(t)
	llmSrv := testutil.NewLLMServer(t)
	slow := testutil.LLMReply("too late")
	slow.Delay = 10 * time.Second
	llmSrv.Script(slow, testutil.LLMReply("second answer"))
	startAgent(t, g, "agent", openAI(t, llmSrv), agent.Config{})
	rec := record(t, human)
	q := sendChat(t, human, "slow question", "agent")
	waitAsked(t, llmSrv)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := human.CancelChat(ctx, q, "never mind"); err != nil {
		t.Fatal(err)
	}
	nextAnswered(t, human, rec, q)
}

// TestProviderError: a failing model gives a chat saying what went wrong.
func TestProviderError(t *testing.T) {
	g, human := calcSpace(t)
	llmSrv := testutil.NewLLMServer(t)
	llmSrv.Script(testutil.LLMFail(400, "the model is confused"))
	startAgent(t, g, "agent", openAI(t, llmSrv), agent.Config{ReasoningEnabled: true})
	rec := record(t, human)
	q := sendChat(t, human, "hello", "agent")
	got := chatText(rec.wait(t, "the error answer", answerTo("agent", q)))
	if !strings.Contains(got, "could not answer") || !strings.Contains(got, "the model is confused") {
		t.Errorf("answer %q", got)
	}
	rec.wait(t, "reasoning/conclusion", func(e *protocol.Envelope) bool {
		return e.Kind == protocol.KindReasoningConclusion && e.From == "agent"
	})
}

// TestMaxIterations: a model that only calls tools is stopped.
func TestMaxIterations(t *testing.T) {
	g, human := calcSpace(t)
	llmSrv := testutil.NewLLMServer(t)
	llmSrv.SetFallback(func(testutil.LLMRequest) testutil.LLMStep {
		return testutil.LLMCall(testutil.LLMToolCall{Name: "calc_add", Arguments: `{"a":1,"b":1}`})
	})
	startAgent(t, g, "agent", openAI(t, llmSrv), agent.Config{MaxIterations: 2})
	rec := record(t, human)
	q := sendChat(t, human, "loop", "agent")
	got := chatText(rec.wait(t, "the error answer", answerTo("agent", q)))
	if !strings.Contains(got, "maximum number of iterations") {
		t.Errorf("answer %q", got)
	}
	if n := len(llmSrv.Requests()); n != 2 {
		t.Errorf("%d model requests, want 2", n)
	}
}

func TestNewWithoutProvider(t *testing.T) {
	if _, err := agent.New(agent.Options{}); !errors.Is(err, agent.ErrNoProvider) {
		t.Fatalf("err = %v", err)
	}
}

func TestToolName(t *testing.T) {
	name, err := agent.ToolName("calc", "add/more")
	if err != nil || name != "calc/add/more" {
		t.Fatalf("ToolName = %q, %v", name, err)
	}
	p, tool, ok := agent.SplitToolName(name)
	if !ok || p != "calc" || tool != "add/more" {
		t.Errorf("SplitToolName = %q %q %v", p, tool, ok)
	}
	for _, bad := range [][2]string{{"a/b", "c"}, {"", "c"}, {"a", ""}} {
		if _, err := agent.ToolName(bad[0], bad[1]); !errors.Is(err, agent.ErrAmbiguousToolName) {
			t.Errorf("ToolName(%q, %q) err = %v", bad[0], bad[1], err)
		}
	}
	for _, bad := range []string{"add", "/add", "calc/"} {
		if _, _, ok := agent.SplitToolName(bad); ok {
			t.Errorf("SplitToolName(%q) ok", bad)
		}
	}
}
