package toolsagent_test

import (
	"context"
	"encoding/json"
	"errors"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mew-protocol/mew/client"
	"github.com/mew-protocol/mew/gateway"
	"github.com/mew-protocol/mew/internal/testutil"
	"github.com/mew-protocol/mew/llm"
	"github.com/mew-protocol/mew/participant"
	"github.com/mew-protocol/mew/protocol"
	"github.com/mew-protocol/mew/toolsagent"
)

// deskSpace: desk is the tools agent, which may call calc's add directly
// but may only propose calc's wipe; human may do anything.
var deskSpace = testutil.SpaceYAML("desk",
	testutil.Member("human", "*"),
	testutil.Member("calc", "chat"),
	testutil.Member("desk", "reasoning/*", "mcp/response", `{kind: mcp/request, payload: {method: "tools/list"}}`, `{kind: mcp/request, payload: {method: "tools/call", params: {name: add}}}`, `{kind: mcp/request, payload: {method: "notifications/*"}}`, "mcp/proposal"),
)

const deskDefinition = `
name: desk-agent
version: 0.3.0
description: Does sums in the space.
mode: tools
maxIterations: 5
timeout: 20s
discoveryWaitMs: 3000
tools:
  - name: sum
    description: Adds numbers.
    parameters:
      type: object
      properties:
        a: {type: number}
        b: {type: number}
      required: [a, b]
    prompt: "What is {a} plus {b}?"
`

var calcTools = []participant.Tool{
	testutil.ArithTool("add", "Add two numbers", func(a, b float64) float64 { return a + b }),
	{
		Name: "wipe", Description: "Erase the memory",
		Execute: func(context.Context, json.RawMessage) (any, error) { return "wiped", nil },
	},
}

// join connects a participant that is closed when the test ends.
func join(t *testing.T, g *testutil.Gateway, token string, tools ...participant.Tool) *participant.Participant {
	t.Helper()
	return testutil.JoinParticipant(t, g, token, participant.Options{}, tools...)
}

// recorder keeps the envelopes a participant sees.
type recorder struct {
	mu   sync.Mutex
	envs []*protocol.Envelope
}

func record(p *participant.Participant) *recorder {
	r := &recorder{}
	p.Client().OnMessage(func(e *protocol.Envelope) {
		r.mu.Lock()
		r.envs = append(r.envs, e)
		r.mu.Unlock()
	})
	return r
}

func (r *recorder) all() []*protocol.Envelope {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.envs)
}

// find returns the first envelope that ok accepts.
func (r *recorder) find(ok func(*protocol.Envelope) bool) *protocol.Envelope {
	for _, e := range r.all() {
		if ok(e) {
			return e
		}
	}
	return nil
}

// startDesk serves deskDefinition in g until the test ends.
func startDesk(t *testing.T, g *testutil.Gateway, srv *testutil.LLMServer) *toolsagent.Agent {
	t.Helper()
	return startDeskDefinition(t, g, srv, deskDefinition)
}

// startDeskDefinition serves the definition text in g as desk until the
// test ends.
func startDeskDefinition(t *testing.T, g *testutil.Gateway, srv *testutil.LLMServer, text string) *toolsagent.Agent {
	t.Helper()
	def, err := toolsagent.Parse([]byte(text))
	if err != nil {
		t.Fatal(err)
	}
	provider, err := llm.NewOpenAI(llm.Config{BaseURL: srv.URL(), APIKey: "k"})
	if err != nil {
		t.Fatal(err)
	}
	a, err := toolsagent.New(ctxFor(t, 10*time.Second), toolsagent.Options{Definition: def, Provider: provider})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = a.Close() }) // after ServeSpace has returned
	testutil.Background(t, func(ctx context.Context) error {
		return a.ServeSpace(ctx, participant.Options{Client: client.Options{Gateway: "ws://" + g.Addr, Space: g.Config.Space.ID, Token: "desk-token"}})
	})
	return a
}

// waitTools waits until p has discovered desk's tools.
func waitDesk(t *testing.T, p *participant.Participant) []participant.DiscoveredTool {
	t.Helper()
	var tools []participant.DiscoveredTool
	waitFor(t, "desk is there", func() bool {
		var err error
		tools, err = p.DiscoverTools(ctxFor(t, 5*time.Second), "desk")
		return err == nil && len(tools) > 0
	})
	return tools
}

// calcSpace starts a gateway for deskSpace with the calculator (calcTools)
// and human joined, records what human sees, and scripts a model with
// steps for the desk the test starts.
func calcSpace(t *testing.T, steps ...testutil.LLMStep) (*testutil.Gateway, *participant.Participant, *recorder, *testutil.LLMServer) {
	t.Helper()
	g := testutil.StartGateway(t, deskSpace, gateway.Options{})
	join(t, g, "calc-token", calcTools...)
	human := join(t, g, "human-token")
	seen := record(human)
	srv := testutil.NewLLMServer(t)
	srv.Script(steps...)
	return g, human, seen, srv
}

func TestToolsAgentSpaceCall(t *testing.T) {
	g, human, seen, srv := calcSpace(t,
		testutil.LLMCall(testutil.LLMToolCall{Name: "calc_add", Arguments: `{"a":2,"b":40}`}),
		testutil.LLMCall(testutil.LLMToolCall{Name: "calc_wipe", Arguments: `{}`}),
		testutil.LLMReply("42"),
	)
	startDesk(t, g, srv)

	// tools/list and initialize, as an MCP client in the space sees them.
	tools := waitDesk(t, human)
	if len(tools) != 1 || tools[0].Name != "sum" || !strings.Contains(string(tools[0].InputSchema), `"required":["a","b"]`) {
		t.Errorf("desk's tools: %+v", tools)
	}
	raw, err := human.Request(ctxFor(t, 10*time.Second), "desk", map[string]any{"method": "initialize", "params": map[string]any{"protocolVersion": "2025-06-18"}})
	if err != nil || !containsAll(string(raw), `"serverInfo":{"name":"desk-agent","version":"0.3.0"}`, `"instructions":"Does sums in the space."`, `"protocolVersion":"2025-06-18"`) {
		t.Errorf("initialize: %s, %v", raw, err)
	}

	raw, err = human.Request(ctxFor(t, 30*time.Second), "desk", map[string]any{"method": "tools/call", "params": map[string]any{"name": "sum", "arguments": map[string]any{"a": 2, "b": 40}}})
	if err != nil {
		t.Fatal(err)
	}
	var res participant.ToolResult
	if err := json.Unmarshal(raw, &res); err != nil || res.IsError || res.Text() != "42" {
		t.Fatalf("sum: %s, %v", raw, err)
	}
	reqs := srv.Requests()
	if got := toolNames(reqs[0]); !slices.Equal(got, []string{"calc_add"}) {
		t.Errorf("the model was offered %v, want only calc/add (wipe would need a proposal)", got)
	}
	if userMessage(reqs[0]) != "What is 2 plus 40?" || lastToolMessage(reqs[1]) != "42" || !strings.Contains(lastToolMessage(reqs[2]), "unknown tool") {
		t.Errorf("conversation: %q, %q, %q", userMessage(reqs[0]), lastToolMessage(reqs[1]), lastToolMessage(reqs[2]))
	}

	// The steps are visible, correlated to the call; nothing was proposed.
	call := seen.find(func(e *protocol.Envelope) bool {
		return e.Kind == protocol.KindMCPRequest && e.From == "human" && strings.Contains(string(e.Payload), `"name":"sum"`)
	})
	if call == nil {
		t.Fatal("the call is not in the space")
	}
	var start *protocol.Envelope
	waitFor(t, "the reasoning ends", func() bool {
		start = seen.find(func(e *protocol.Envelope) bool {
			return e.Kind == protocol.KindReasoningStart && e.CorrelatesWith(call.ID)
		})
		return start != nil && seen.find(func(e *protocol.Envelope) bool {
			return e.Kind == protocol.KindReasoningConclusion && e.Context == start.ID
		}) != nil
	})
	var thoughts []string
	for _, e := range seen.all() {
		switch {
		case e.Kind == protocol.KindMCPProposal:
			t.Errorf("a proposal was sent: %s", e.Payload)
		case e.Kind == protocol.KindReasoningThought && e.Context == start.ID:
			var r protocol.Reasoning
			_ = e.DecodePayload(&r)
			thoughts = append(thoughts, r.Action+": "+r.Message)
		case e.Kind == protocol.KindReasoningConclusion && e.Context == start.ID:
			if !strings.Contains(string(e.Payload), "Answer: 42") {
				t.Errorf("conclusion %s", e.Payload)
			}
		}
	}
	want := []string{"tool_call: Calling calc/add.", "observation: calc/add returned: 42", "tool_call: Calling calc_wipe.",
		"observation: calc_wipe returned: Error: unknown tool \"calc_wipe\"", "respond: Answering."}
	if !slices.Equal(thoughts, want) {
		t.Errorf("thoughts\n%q\nwant\n%q", thoughts, want)
	}
	if !strings.Contains(string(start.Payload), "What is 2 plus 40?") {
		t.Errorf("reasoning/start %s", start.Payload)
	}

	// Invalid arguments: the JSON-RPC error, every violation listed.
	_, err = human.Request(ctxFor(t, 10*time.Second), "desk", map[string]any{"method": "tools/call", "params": map[string]any{"name": "sum", "arguments": map[string]any{"a": "two"}}})
	var rpcErr *participant.RPCError
	if !errors.As(err, &rpcErr) || rpcErr.Code != participant.CodeInvalidParams || !containsAll(rpcErr.Message, "a: want a number, got a string", "b: required") {
		t.Errorf("invalid arguments: %v", err)
	}
}

// A call stops on notifications/cancelled from its requester (no answer)
// and on reasoning/cancel (answered with isError).
func TestToolsAgentSpaceCancel(t *testing.T) {
	g := testutil.StartGateway(t, deskSpace, gateway.Options{})
	human := join(t, g, "human-token")
	seen := record(human)
	srv := testutil.NewLLMServer(t)
	srv.SetFallback(func(testutil.LLMRequest) testutil.LLMStep {
		return testutil.LLMStep{Text: "late", Delay: 30 * time.Second}
	})
	startDesk(t, g, srv)
	waitDesk(t, human)
	sum := map[string]any{"method": "tools/call", "params": map[string]any{"name": "sum", "arguments": map[string]any{"a": 1, "b": 2}}}

	// notifications/cancelled correlated to the request.
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Second)
	defer cancel()
	errc := make(chan error, 1)
	go func() {
		_, err := human.Request(ctx, "desk", sum)
		errc <- err
	}()
	var call *protocol.Envelope
	waitFor(t, "the call reaches the model", func() bool {
		call = seen.find(func(e *protocol.Envelope) bool {
			return e.Kind == protocol.KindMCPRequest && e.From == "human" && strings.Contains(string(e.Payload), "tools/call")
		})
		return call != nil && len(srv.Requests()) == 1
	})
	env, err := protocol.New(protocol.KindMCPRequest, map[string]any{"jsonrpc": "2.0", "method": "notifications/cancelled", "params": map[string]any{"reason": "changed my mind"}})
	if err != nil {
		t.Fatal(err)
	}
	env.To, env.CorrelationID = []string{"desk"}, []string{call.ID}
	if err := human.Send(ctxFor(t, 5*time.Second), env); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the reasoning is cancelled", func() bool {
		return seen.find(func(e *protocol.Envelope) bool {
			return e.Kind == protocol.KindReasoningConclusion && strings.Contains(string(e.Payload), `"cancelled":true`) && strings.Contains(string(e.Payload), "changed my mind")
		}) != nil
	})
	if err := <-errc; !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("a call cancelled by its requester was answered: %v", err)
	}

	// reasoning/cancel of the call's reasoning.
	type answer struct {
		raw json.RawMessage
		err error
	}
	answers := make(chan answer, 1)
	go func() {
		raw, err := human.Request(ctxFor(t, 20*time.Second), "desk", sum)
		answers <- answer{raw, err}
	}()
	var start *protocol.Envelope
	waitFor(t, "the second call reasons", func() bool {
		n := 0
		for _, e := range seen.all() {
			if e.Kind == protocol.KindReasoningStart {
				n++
				start = e
			}
		}
		return n == 2
	})
	cancelEnv, err := protocol.New(protocol.KindReasoningCancel, protocol.ReasoningCancel{Reason: "enough"})
	if err != nil {
		t.Fatal(err)
	}
	cancelEnv.Context = start.ID
	if err := human.Send(ctxFor(t, 5*time.Second), cancelEnv); err != nil {
		t.Fatal(err)
	}
	select {
	case a := <-answers:
		var res participant.ToolResult
		if a.err != nil || json.Unmarshal(a.raw, &res) != nil || !res.IsError || !strings.Contains(res.Text(), "sum: cancelled: enough") {
			t.Fatalf("reasoning/cancel: %s, %v", a.raw, a.err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("a call stopped by reasoning/cancel was not answered")
	}
}

// A tool with an output schema, in a space: tools/list gives its
// outputSchema, and a call's result carries the checked object as
// structuredContent with the same JSON as text.
func TestToolsAgentSpaceStructuredContent(t *testing.T) {
	g := testutil.StartGateway(t, deskSpace, gateway.Options{})
	human := join(t, g, "human-token")
	srv := testutil.NewLLMServer(t)
	srv.Script(testutil.LLMReply(`{"sum": 42}`))
	startDeskDefinition(t, g, srv, deskDefinition+`
  - name: sum_data
    description: Adds numbers, as data.
    parameters:
      type: object
      properties:
        a: {type: number}
        b: {type: number}
    output:
      type: object
      properties:
        sum: {type: number}
      required: [sum]
    prompt: "What is {a} plus {b}?"
`)
	waitDesk(t, human)
	raw, err := human.Request(ctxFor(t, 10*time.Second), "desk", map[string]any{"method": "tools/list"})
	if err != nil || !strings.Contains(string(raw), `"name":"sum_data"`) ||
		!strings.Contains(string(raw), `"outputSchema":{"type":"object","properties":{"sum":{"type":"number"}},"required":["sum"]}`) {
		t.Errorf("tools/list: %s, %v", raw, err)
	}
	raw, err = human.Request(ctxFor(t, 30*time.Second), "desk", map[string]any{"method": "tools/call", "params": map[string]any{"name": "sum_data", "arguments": map[string]any{"a": 2, "b": 40}}})
	if err != nil {
		t.Fatal(err)
	}
	var res participant.ToolResult
	if err := json.Unmarshal(raw, &res); err != nil || res.IsError || res.Text() != `{"sum":42}` || string(res.StructuredContent) != `{"sum":42}` {
		t.Errorf("sum_data: %s, %v", raw, err)
	}
}
