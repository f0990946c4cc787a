package toolsagent_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mew-protocol/mew/internal/mcptest"
	"github.com/mew-protocol/mew/internal/mcpver"
	"github.com/mew-protocol/mew/internal/testutil"
	"github.com/mew-protocol/mew/llm"
	"github.com/mew-protocol/mew/toolsagent"
)

// mcpAgent is an agent served over an in-memory MCP transport to a go-sdk
// client.
type mcpAgent struct {
	agent    *toolsagent.Agent
	session  *mcp.ClientSession
	logs     *testutil.Buffer
	progress chan string
}

// serveInMemory serves a over in-memory transports until the test ends
// and connects a client to it.
func serveInMemory(t *testing.T, def *toolsagent.Definition, srv *testutil.LLMServer) *mcpAgent {
	t.Helper()
	m := &mcpAgent{logs: &testutil.Buffer{}, progress: make(chan string, 100)}
	provider, err := llm.NewOpenAI(llm.Config{BaseURL: srv.URL(), APIKey: "k", Model: "scripted"})
	if err != nil {
		t.Fatal(err)
	}
	m.agent, err = toolsagent.New(ctxFor(t, 60*time.Second), toolsagent.Options{
		Definition: def, Provider: provider,
		Logger: slog.New(slog.NewTextHandler(m.logs, &slog.HandlerOptions{Level: slog.LevelDebug})),
	})
	if err != nil {
		t.Fatal(err)
	}
	ct, st := mcp.NewInMemoryTransports()
	ctx, cancel := context.WithCancel(context.Background())
	served := make(chan error, 1)
	go func() { served <- m.agent.ServeMCP(ctx, st) }()
	client := mcp.NewClient(&mcp.Implementation{Name: "test-host", Version: "1"}, &mcp.ClientOptions{
		ProgressNotificationHandler: func(_ context.Context, r *mcp.ProgressNotificationClientRequest) {
			select {
			case m.progress <- r.Params.Message:
			default:
			}
		},
	})
	m.session, err = client.Connect(ctxFor(t, 10*time.Second), ct, nil)
	if err != nil {
		cancel()
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = m.session.Close()
		cancel()
		if err := <-served; err != nil {
			t.Errorf("ServeMCP: %v", err)
		}
		if err := m.agent.Close(); err != nil {
			t.Errorf("Close: %v", err)
		}
	})
	return m
}

func TestToolsAgentMCPInitializeListAndCall(t *testing.T) {
	tr := loadTravel(t, "")
	srv := testutil.NewLLMServer(t)
	srv.Script(
		testutil.LLMCall(testutil.LLMToolCall{Name: "travel_search_flights", Arguments: `{"origin":"Oslo","destination":"Rome","date":"2026-03-02"}`}),
		testutil.LLMReply("TP 123 at 08:00."),
	)
	m := serveInMemory(t, tr.def, srv)
	testutil.CheckToolsServer(t, m.session, tr.def, "travel-desk", "2.1.0", "Finds flights.")

	params := &mcp.CallToolParams{Name: "find_flights", Arguments: map[string]any{"origin": "Oslo", "destination": "Rome", "date": "2026-03-02", "passengers": 2}}
	params.SetProgressToken("p1")
	res, err := m.session.CallTool(ctxFor(t, 30*time.Second), params)
	if err != nil {
		t.Fatal(err)
	}
	if res.IsError || mcptest.Text(res) != "TP 123 at 08:00." || res.Meta[toolsagent.MetaContextID] == "" {
		t.Errorf("result %+v (%s)", res, mcptest.Text(res))
	}
	if u := userMessage(srv.Requests()[0]); u != "Find flights from Oslo to Rome on 2026-03-02 for 2." {
		t.Errorf("prompt %q", u)
	}
	var progress []string
	for len(progress) < 4 {
		select {
		case p := <-m.progress:
			progress = append(progress, p)
		case <-time.After(5 * time.Second):
			t.Fatalf("progress notifications %q, want 4", progress)
		}
	}
	if !strings.HasPrefix(progress[0], "Running find_flights (context ") || progress[1] != "Calling travel/search_flights." ||
		!strings.HasPrefix(progress[2], "travel/search_flights returned: Flights from Oslo to Rome") || progress[3] != "Answering." {
		t.Errorf("progress %q", progress)
	}
	if got := calls(t, tr.callLog); len(got) != 1 || got[0] != "search_flights" {
		t.Errorf("travel server calls %v", got)
	}
}

func TestToolsAgentMCPInvalidArguments(t *testing.T) {
	tr := loadTravel(t, "")
	srv := testutil.NewLLMServer(t)
	m := serveInMemory(t, tr.def, srv)
	res, err := m.session.CallTool(ctxFor(t, 10*time.Second), &mcp.CallToolParams{Name: "find_flights",
		Arguments: map[string]any{"origin": "Oslo", "date": 20260302, "passengers": 0, "seat": "12A"}})
	if err != nil || !res.IsError {
		t.Fatalf("invalid arguments: %+v, %v, want an isError result", res, err)
	}
	for _, want := range []string{"invalid arguments for find_flights", "destination: required", "date: want a string, got a number (20260302)",
		"passengers: at least 1, got 0", "seat: unknown member (allowed: origin, destination, date, passengers)"} {
		if !strings.Contains(mcptest.Text(res), want) {
			t.Errorf("%q lacks %q", mcptest.Text(res), want)
		}
	}
	var data []struct{ Path, Message string }
	raw, _ := json.Marshal(res.Meta[toolsagent.MetaViolations])
	if err := json.Unmarshal(raw, &data); err != nil || len(data) != 4 || data[0].Path != "destination" {
		t.Errorf("violations %s: %v", raw, err)
	}
	if n := len(srv.Requests()); n != 0 {
		t.Errorf("the model was asked %d times", n)
	}
	// An unknown tool is the SDK's error.
	if _, err := m.session.CallTool(ctxFor(t, 10*time.Second), &mcp.CallToolParams{Name: "book_flight"}); err == nil {
		t.Error("unknown tool: no error")
	}
}

// notifications/cancelled from the client stops the run; a run past the
// timeout answers isError.
func TestToolsAgentMCPCancelAndTimeout(t *testing.T) {
	tr := loadTravel(t, "")
	srv := testutil.NewLLMServer(t)
	srv.SetFallback(func(testutil.LLMRequest) testutil.LLMStep {
		return testutil.LLMStep{Text: "late", Delay: 30 * time.Second}
	})
	m := serveInMemory(t, tr.def, srv)

	ctx, cancel := context.WithCancel(context.Background())
	errc := make(chan error, 1)
	go func() {
		_, err := m.session.CallTool(ctx, &mcp.CallToolParams{Name: "echo", Arguments: map[string]any{"text": "x"}})
		errc <- err
	}()
	waitFor(t, "the model is asked", func() bool { return len(srv.Requests()) == 1 })
	cancel()
	if err := <-errc; !errors.Is(err, context.Canceled) {
		t.Errorf("client side: %v", err)
	}
	waitFor(t, "the server's run stops", func() bool {
		return strings.Contains(m.logs.String(), "call failed") && strings.Contains(m.logs.String(), "echo: cancelled")
	})

	tr.def.Timeout = 300 * time.Millisecond
	res, err := m.session.CallTool(ctxFor(t, 10*time.Second), &mcp.CallToolParams{Name: "echo", Arguments: map[string]any{"text": "x"}})
	if err != nil {
		t.Fatal(err)
	}
	if !res.IsError || !strings.Contains(mcptest.Text(res), "the call timed out: echo ran for 300ms") {
		t.Errorf("timeout result %+v: %s", res, mcptest.Text(res))
	}
}

// Over streamable HTTP: initialize, tools/list, a call, invalid
// arguments, cancellation and timeout; stopping the server ends it all.
func TestToolsAgentMCPStreamableHTTP(t *testing.T) {
	tr := loadTravel(t, "")
	tr.def.Timeout = 2 * time.Second
	srv := testutil.NewLLMServer(t)
	srv.Script(testutil.LLMReply("hello over HTTP"))
	provider, err := llm.NewOpenAI(llm.Config{BaseURL: srv.URL(), APIKey: "k"})
	if err != nil {
		t.Fatal(err)
	}
	logs := &testutil.Buffer{}
	a, err := toolsagent.New(ctxFor(t, 60*time.Second), toolsagent.Options{Definition: tr.def, Provider: provider,
		Logger: slog.New(slog.NewTextHandler(logs, nil))})
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	served := testutil.Background(t, func(ctx context.Context) error { return a.ServeStreamableHTTP(ctx, l) })

	client := mcp.NewClient(&mcp.Implementation{Name: "test-host", Version: "1"}, nil)
	session, err := client.Connect(ctxFor(t, 10*time.Second), &mcp.StreamableClientTransport{Endpoint: "http://" + l.Addr().String() + toolsagent.HTTPPath}, nil)
	if err != nil {
		t.Fatal(err)
	}
	testutil.CheckToolsServer(t, session, tr.def, "travel-desk", "2.1.0", "Finds flights.")
	res, err := session.CallTool(ctxFor(t, 30*time.Second), &mcp.CallToolParams{Name: "echo", Arguments: map[string]any{"text": "hi"}})
	if err != nil || mcptest.Text(res) != "hello over HTTP" {
		t.Fatalf("call: %+v, %v", res, err)
	}
	res, err = session.CallTool(ctxFor(t, 10*time.Second), &mcp.CallToolParams{Name: "find_flights", Arguments: map[string]any{}})
	if err != nil || !res.IsError || !strings.Contains(mcptest.Text(res), "origin: required") {
		t.Errorf("invalid arguments over HTTP: %+v, %v", res, err)
	}

	// Cancelled by the client, then out of time.
	srv.SetFallback(func(testutil.LLMRequest) testutil.LLMStep {
		return testutil.LLMStep{Text: "late", Delay: 30 * time.Second}
	})
	cctx, ccancel := context.WithCancel(context.Background())
	time.AfterFunc(300*time.Millisecond, ccancel)
	if _, err := session.CallTool(cctx, &mcp.CallToolParams{Name: "echo", Arguments: map[string]any{"text": "x"}}); !errors.Is(err, context.Canceled) {
		t.Errorf("cancelled call: %v", err)
	}
	waitFor(t, "the cancelled run stops", func() bool { return strings.Contains(logs.String(), "echo: cancelled") })
	res, err = session.CallTool(ctxFor(t, 20*time.Second), &mcp.CallToolParams{Name: "echo", Arguments: map[string]any{"text": "x"}})
	if err != nil || !res.IsError || !strings.Contains(mcptest.Text(res), "the call timed out: echo ran for 2s") {
		t.Errorf("timeout: %+v, %v", res, err)
	}

	// Stopping the server ends the session.
	if err := served.Stop(); err != nil {
		t.Errorf("ServeStreamableHTTP: %v", err)
	}
	_ = session.Close()
}

// TestToolsAgentMCPRevisions: the tools agent agrees on every revision mew
// speaks (and the right one for those it does not), over stdio (the same
// go-sdk connection as in memory) and over streamable HTTP, where
// 2026-07-28 is served statelessly and the older revisions in sessions;
// a call answers at each.
func TestToolsAgentMCPRevisions(t *testing.T) {
	tr := loadTravel(t, "")
	srv := testutil.NewLLMServer(t)
	srv.SetFallback(func(testutil.LLMRequest) testutil.LLMStep { return testutil.LLMStep{Text: "answered"} })
	a := newAgent(t, tr.def, srv)
	t.Run("stdio", func(t *testing.T) {
		mcptest.CheckRevisions(t, func(t *testing.T) mcp.Transport {
			ct, st := mcp.NewInMemoryTransports()
			testutil.Background(t, func(ctx context.Context) error { return a.ServeMCP(ctx, st) })
			return ct
		}, "echo")
	})
	t.Run("http", func(t *testing.T) {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		testutil.Background(t, func(ctx context.Context) error { return a.ServeStreamableHTTP(ctx, l) })
		endpoint := "http://" + l.Addr().String() + toolsagent.HTTPPath
		mcptest.CheckRevisions(t, func(*testing.T) mcp.Transport {
			return &mcp.StreamableClientTransport{Endpoint: endpoint}
		}, "echo")
		// A call at each end of the range.
		for _, v := range []string{mcpver.Stateless, mcpver.Oldest} {
			cs, err := mcp.NewClient(&mcp.Implementation{Name: "t", Version: "1"}, nil).Connect(ctxFor(t, 10*time.Second),
				&mcp.StreamableClientTransport{Endpoint: endpoint}, &mcp.ClientSessionOptions{ProtocolVersion: v})
			if err != nil {
				t.Fatalf("%s: %v", v, err)
			}
			res, err := cs.CallTool(ctxFor(t, 20*time.Second), &mcp.CallToolParams{Name: "echo", Arguments: map[string]any{"text": "hi"}})
			if err != nil || mcptest.Text(res) != "answered" {
				t.Errorf("%s: call: %+v, %v", v, res, err)
			}
			_ = cs.Close()
		}
	})
}

// pickClass is a tool whose parameters suggest values: an enum, string
// examples and number examples.
const pickClass = `
  - name: pick_class
    description: Pick a class.
    parameters:
      type: object
      properties:
        cabin: {type: string, enum: [economy, business, first]}
        city: {type: string, examples: [Paris, Parma, Oslo]}
        nights: {type: integer, examples: [1, 2, 7]}
      required: [cabin]
    prompt: "Fly {cabin} to {city} for {nights} nights."
`

// TestToolsAgentMCPPromptsCompletionLogging: each tool is a prompt too;
// completion/complete offers a parameter's enum values or examples that
// start with what was typed (nothing for anything else); a call reports
// its steps as progress against the iteration limit, ending at it, and as
// log messages to a client that set a level.
func TestToolsAgentMCPPromptsCompletionLogging(t *testing.T) {
	tr := loadTravel(t, pickClass)
	srv := testutil.NewLLMServer(t)
	srv.SetFallback(func(testutil.LLMRequest) testutil.LLMStep { return testutil.LLMStep{Text: "done"} })
	a := newAgent(t, tr.def, srv)
	ct, st := mcp.NewInMemoryTransports()
	ctx, cancel := context.WithCancel(context.Background())
	served := make(chan error, 1)
	go func() { served <- a.ServeMCP(ctx, st) }()
	defer func() { cancel(); <-served }()
	logs := make(chan string, 100)
	type prog struct{ at, total float64 }
	progress := make(chan prog, 100)
	client := mcp.NewClient(&mcp.Implementation{Name: "t", Version: "1"}, &mcp.ClientOptions{
		//lint:ignore SA1019 MCP logging is deprecated in 2026-07-28 but part of 2025-11-25, which mew serves too
		LoggingMessageHandler: func(_ context.Context, r *mcp.LoggingMessageRequest) {
			logs <- fmt.Sprint(r.Params.Data)
		},
		ProgressNotificationHandler: func(_ context.Context, r *mcp.ProgressNotificationClientRequest) {
			progress <- prog{r.Params.Progress, r.Params.Total}
		},
	})
	cs, err := client.Connect(ctxFor(t, 10*time.Second), ct, &mcp.ClientSessionOptions{ProtocolVersion: mcpver.LatestSession})
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	caps := cs.InitializeResult().Capabilities
	//lint:ignore SA1019 MCP logging is deprecated in 2026-07-28 but part of 2025-11-25, which mew serves too
	if caps.Completions == nil || caps.Prompts == nil || caps.Logging == nil {
		t.Errorf("capabilities %+v", caps)
	}

	complete := func(prompt, arg, typed string) []string {
		t.Helper()
		res, err := cs.Complete(ctxFor(t, 10*time.Second), &mcp.CompleteParams{
			Ref: &mcp.CompleteReference{Type: "ref/prompt", Name: prompt}, Argument: mcp.CompleteParamsArgument{Name: arg, Value: typed}})
		if err != nil {
			t.Fatalf("complete %s.%s %q: %v", prompt, arg, typed, err)
		}
		if res.Completion.Total != len(res.Completion.Values) {
			t.Errorf("total %d for %q", res.Completion.Total, res.Completion.Values)
		}
		return res.Completion.Values
	}
	for _, tc := range []struct {
		prompt, arg, typed string
		want               []string
	}{
		{"pick_class", "cabin", "B", []string{"business"}},
		{"pick_class", "cabin", "", []string{"economy", "business", "first"}},
		{"pick_class", "city", "pa", []string{"Paris", "Parma"}},
		{"pick_class", "nights", "", []string{"1", "2", "7"}},
		{"pick_class", "nowhere", "", []string{}},
		{"test_prompt_with_arguments", "arg1", "par", []string{}},
	} {
		if got := complete(tc.prompt, tc.arg, tc.typed); !cmp.Equal(got, tc.want) {
			t.Errorf("complete %s.%s %q = %q, want %q", tc.prompt, tc.arg, tc.typed, got, tc.want)
		}
	}

	prompts, err := cs.ListPrompts(ctxFor(t, 10*time.Second), nil)
	if err != nil || len(prompts.Prompts) != 3 {
		t.Fatalf("prompts %+v, %v", prompts, err)
	}
	got, err := cs.GetPrompt(ctxFor(t, 10*time.Second), &mcp.GetPromptParams{Name: "pick_class", Arguments: map[string]string{"cabin": "first", "city": "Oslo", "nights": "2"}})
	if err != nil || len(got.Messages) != 1 || got.Messages[0].Content.(*mcp.TextContent).Text != "Fly first to Oslo for 2 nights." {
		t.Errorf("prompts/get: %+v, %v", got, err)
	}
	if _, err := cs.GetPrompt(ctxFor(t, 10*time.Second), &mcp.GetPromptParams{Name: "pick_class", Arguments: map[string]string{"cabin": "steerage"}}); err == nil {
		t.Error("prompts/get with an argument the enum refuses: no error")
	}

	//lint:ignore SA1019 MCP logging is deprecated in 2026-07-28 but part of 2025-11-25, which mew serves too
	if err := cs.SetLoggingLevel(ctxFor(t, 10*time.Second), &mcp.SetLoggingLevelParams{Level: "info"}); err != nil {
		t.Fatal(err)
	}
	params := &mcp.CallToolParams{Name: "echo", Arguments: map[string]any{"text": "hi"}}
	params.SetProgressToken("p")
	res, err := cs.CallTool(ctxFor(t, 20*time.Second), params)
	if err != nil || res.IsError {
		t.Fatalf("call: %+v, %v", res, err)
	}
	var last prog
	for last.at < 4 {
		select {
		case p := <-progress:
			if p.total != 4 || p.at <= last.at {
				t.Errorf("progress %v after %v, want growing, total 4 (maxIterations)", p, last)
			}
			last = p
		case <-time.After(5 * time.Second):
			t.Fatalf("progress stopped at %v", last)
		}
	}
	select {
	case l := <-logs:
		if !strings.HasPrefix(l, "Running echo") {
			t.Errorf("first log message %q", l)
		}
	case <-time.After(5 * time.Second):
		t.Error("no log message")
	}
}

// fareTool is a tool with an output schema, appended to the travel
// definition.
const fareTool = `
  - name: fare
    description: Prices a route.
    parameters:
      type: object
      properties:
        route: {type: string}
    output:
      type: object
      properties:
        price: {type: number, minimum: 0}
        currency: {type: string, enum: [EUR, USD]}
      required: [price, currency]
      additionalProperties: false
    prompt: "Price {route}."
`

// A tool with an output schema lists it as outputSchema, asks the model
// for a JSON object that fits it, and returns that object as
// structuredContent with the same JSON as text; an answer that does not
// fit is an isError result that says why.
func TestToolsAgentMCPStructuredContent(t *testing.T) {
	tr := loadTravel(t, fareTool)
	srv := testutil.NewLLMServer(t)
	srv.Script(
		testutil.LLMReply("```json\n{\"price\": 120.5,\n \"currency\": \"EUR\"}\n```"),
		testutil.LLMReply(`{"price": -1, "currency": "GBP"}`),
		testutil.LLMReply("About 120 euros."),
	)
	m := serveInMemory(t, tr.def, srv)
	list, err := m.session.ListTools(ctxFor(t, 10*time.Second), nil)
	if err != nil {
		t.Fatal(err)
	}
	var fare *mcp.Tool
	for _, tl := range list.Tools {
		switch tl.Name {
		case "fare":
			fare = tl
		case "echo", "find_flights":
			if tl.OutputSchema != nil {
				t.Errorf("%s has an output schema: %v", tl.Name, tl.OutputSchema)
			}
		}
	}
	if fare == nil {
		t.Fatalf("no fare tool in %v", list.Tools)
	}
	got, _ := json.Marshal(fare.OutputSchema)
	want := `{"type":"object","properties":{"currency":{"type":"string","enum":["EUR","USD"]},"price":{"type":"number","minimum":0}},"required":["price","currency"],"additionalProperties":false}`
	if !jsonEqual(t, got, want) {
		t.Errorf("outputSchema %s, want %s", got, want)
	}

	call := func() *mcp.CallToolResult {
		t.Helper()
		res, err := m.session.CallTool(ctxFor(t, 30*time.Second), &mcp.CallToolParams{Name: "fare", Arguments: map[string]any{"route": "OSL-FCO"}})
		if err != nil {
			t.Fatal(err)
		}
		return res
	}
	res := call()
	structured, _ := json.Marshal(res.StructuredContent)
	if res.IsError || string(structured) != `{"currency":"EUR","price":120.5}` || mcptest.Text(res) != `{"price":120.5,"currency":"EUR"}` {
		t.Errorf("result %+v: structured %s, text %s", res, structured, mcptest.Text(res))
	}
	u := userMessage(srv.Requests()[0])
	if !strings.HasPrefix(u, "Price OSL-FCO.\n\nAnswer with one JSON object") || !strings.HasSuffix(u, `"additionalProperties":false}`) {
		t.Errorf("prompt %q", u)
	}
	for _, tc := range []struct{ want []string }{
		{[]string{"does not fit its output schema", "currency: ", "price: at least 0"}},
		{[]string{"does not fit its output schema", "the answer is not one JSON value"}},
	} {
		res := call()
		if !res.IsError || res.StructuredContent != nil {
			t.Errorf("an answer that does not fit: %+v", res)
		}
		for _, w := range tc.want {
			if !strings.Contains(mcptest.Text(res), w) {
				t.Errorf("%q lacks %q", mcptest.Text(res), w)
			}
		}
	}
}

// jsonEqual says whether two JSON texts hold the same value.
func jsonEqual(t *testing.T, a []byte, b string) bool {
	t.Helper()
	var x, y any
	if err := json.Unmarshal(a, &x); err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal([]byte(b), &y); err != nil {
		t.Fatal(err)
	}
	return cmp.Equal(x, y)
}
