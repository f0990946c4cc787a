package toolsagent_test

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
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

// checkServer checks what an MCP client sees of the travel definition:
// serverInfo, instructions, and the tools with their schemas.
func checkServer(t *testing.T, session *mcp.ClientSession, def *toolsagent.Definition) {
	t.Helper()
	init := session.InitializeResult()
	if init.ServerInfo.Name != "travel-desk" || init.ServerInfo.Version != "2.1.0" || init.Instructions != "Finds flights." {
		t.Errorf("initialize: serverInfo %+v, instructions %q", init.ServerInfo, init.Instructions)
	}
	list, err := session.ListTools(ctxFor(t, 10*time.Second), nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(list.Tools) != len(def.Tools) {
		t.Fatalf("%d tools listed, want %d", len(list.Tools), len(def.Tools))
	}
	for _, tool := range list.Tools { // the SDK lists them by name
		want, ok := def.Tool(tool.Name)
		if !ok || tool.Description != want.Description {
			t.Errorf("tool %s %q is not the definition's", tool.Name, tool.Description)
			continue
		}
		schema, _ := want.InputSchema()
		var wantSchema, gotSchema any
		_ = json.Unmarshal(schema, &wantSchema)
		raw, _ := json.Marshal(tool.InputSchema)
		_ = json.Unmarshal(raw, &gotSchema)
		if diff := cmp.Diff(wantSchema, gotSchema); diff != "" {
			t.Errorf("tool %s: inputSchema (-definition +listed):\n%s", tool.Name, diff)
		}
	}
}

// resultText returns the text of a tool result.
func resultText(r *mcp.CallToolResult) string {
	var parts []string
	for _, c := range r.Content {
		if tc, ok := c.(*mcp.TextContent); ok {
			parts = append(parts, tc.Text)
		}
	}
	return strings.Join(parts, "\n")
}

func TestToolsAgentMCPInitializeListAndCall(t *testing.T) {
	tr := loadTravel(t, "")
	srv := testutil.NewLLMServer(t)
	srv.Script(
		testutil.LLMCall(testutil.LLMToolCall{Name: "travel_search_flights", Arguments: `{"origin":"Oslo","destination":"Rome","date":"2026-03-02"}`}),
		testutil.LLMReply("TP 123 at 08:00."),
	)
	m := serveInMemory(t, tr.def, srv)
	checkServer(t, m.session, tr.def)

	params := &mcp.CallToolParams{Name: "find_flights", Arguments: map[string]any{"origin": "Oslo", "destination": "Rome", "date": "2026-03-02", "passengers": 2}}
	params.SetProgressToken("p1")
	res, err := m.session.CallTool(ctxFor(t, 30*time.Second), params)
	if err != nil {
		t.Fatal(err)
	}
	if res.IsError || resultText(res) != "TP 123 at 08:00." || res.Meta[toolsagent.MetaContextID] == "" {
		t.Errorf("result %+v (%s)", res, resultText(res))
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
	_, err := m.session.CallTool(ctxFor(t, 10*time.Second), &mcp.CallToolParams{Name: "find_flights",
		Arguments: map[string]any{"origin": "Oslo", "date": 20260302, "passengers": 0, "seat": "12A"}})
	var rpcErr *jsonrpc.Error
	if !errors.As(err, &rpcErr) || rpcErr.Code != jsonrpc.CodeInvalidParams {
		t.Fatalf("invalid arguments: %v, want the JSON-RPC error invalid params", err)
	}
	for _, want := range []string{"invalid arguments for find_flights", "destination: required", "date: want a string, got a number (20260302)",
		"passengers: at least 1, got 0", "seat: unknown member (allowed: origin, destination, date, passengers)"} {
		if !strings.Contains(rpcErr.Message, want) {
			t.Errorf("%q lacks %q", rpcErr.Message, want)
		}
	}
	var data struct {
		Violations []struct{ Path, Message string }
	}
	if err := json.Unmarshal(rpcErr.Data, &data); err != nil || len(data.Violations) != 4 || data.Violations[0].Path != "destination" {
		t.Errorf("error data %s: %v", rpcErr.Data, err)
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
	if !res.IsError || !strings.Contains(resultText(res), "the call timed out: echo ran for 300ms") {
		t.Errorf("timeout result %+v: %s", res, resultText(res))
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
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	served := make(chan error, 1)
	go func() { served <- a.ServeStreamableHTTP(ctx, l) }()

	client := mcp.NewClient(&mcp.Implementation{Name: "test-host", Version: "1"}, nil)
	session, err := client.Connect(ctxFor(t, 10*time.Second), &mcp.StreamableClientTransport{Endpoint: "http://" + l.Addr().String() + toolsagent.HTTPPath}, nil)
	if err != nil {
		t.Fatal(err)
	}
	checkServer(t, session, tr.def)
	res, err := session.CallTool(ctxFor(t, 30*time.Second), &mcp.CallToolParams{Name: "echo", Arguments: map[string]any{"text": "hi"}})
	if err != nil || resultText(res) != "hello over HTTP" {
		t.Fatalf("call: %+v, %v", res, err)
	}
	_, err = session.CallTool(ctxFor(t, 10*time.Second), &mcp.CallToolParams{Name: "find_flights", Arguments: map[string]any{}})
	var rpcErr *jsonrpc.Error
	if !errors.As(err, &rpcErr) || rpcErr.Code != jsonrpc.CodeInvalidParams || !strings.Contains(rpcErr.Message, "origin: required") {
		t.Errorf("invalid arguments over HTTP: %v", err)
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
	if err != nil || !res.IsError || !strings.Contains(resultText(res), "the call timed out: echo ran for 2s") {
		t.Errorf("timeout: %+v, %v", res, err)
	}

	// Stopping the server ends the session.
	cancel()
	select {
	case err := <-served:
		if err != nil {
			t.Errorf("ServeStreamableHTTP: %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("ServeStreamableHTTP did not return")
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
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	t.Run("stdio", func(t *testing.T) {
		mcptest.CheckRevisions(t, func(t *testing.T) mcp.Transport {
			ct, st := mcp.NewInMemoryTransports()
			sctx, stop := context.WithCancel(ctx)
			served := make(chan error, 1)
			go func() { served <- a.ServeMCP(sctx, st) }()
			t.Cleanup(func() {
				stop()
				if err := <-served; err != nil {
					t.Errorf("ServeMCP: %v", err)
				}
			})
			return ct
		}, "echo")
	})
	t.Run("http", func(t *testing.T) {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		sctx, stop := context.WithCancel(ctx)
		served := make(chan error, 1)
		go func() { served <- a.ServeStreamableHTTP(sctx, l) }()
		defer func() {
			stop()
			if err := <-served; err != nil {
				t.Errorf("ServeStreamableHTTP: %v", err)
			}
		}()
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
			if err != nil || resultText(res) != "answered" {
				t.Errorf("%s: call: %+v, %v", v, res, err)
			}
			_ = cs.Close()
		}
	})
}
