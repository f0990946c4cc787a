package toolsagent_test

import (
	"context"
	"encoding/json"
	"errors"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mew-protocol/mew/agent"
	"github.com/mew-protocol/mew/internal/testutil"
	"github.com/mew-protocol/mew/toolsagent"
)

// A call fills the prompt, runs a fresh session that may use the travel
// server's tools (no approval needed) and never the bookings server's
// (approval needed: it is not even started), and answers the model's
// final text.
func TestToolsAgentCallUsesPermittedToolsOnly(t *testing.T) {
	tr := loadTravel(t, "")
	srv := testutil.NewLLMServer(t)
	srv.Script(
		testutil.LLMCall(testutil.LLMToolCall{Name: "travel_search_flights", Arguments: `{"origin":"Lisbon","destination":"Paris","date":"2026-12-01"}`}),
		// The model tries a tool that needs approval: it does not exist
		// for this session.
		testutil.LLMCall(testutil.LLMToolCall{Name: "bookings_book_flight", Arguments: `{"flight":"MW 1","date":"2026-12-01","passenger":"Ada"}`}),
		testutil.LLMReply("Take the first flight."),
	)
	a := newAgent(t, tr.def, srv)
	var steps []toolsagent.Step
	var started string
	res, err := a.Call(ctxFor(t, 30*time.Second), "find_flights", json.RawMessage(`{"origin":"Lisbon","destination":"Paris","date":"2026-12-01"}`),
		toolsagent.CallOptions{OnStart: func(p string, _ []string) { started = p }, OnStep: func(s toolsagent.Step) { steps = append(steps, s) }})
	if err != nil {
		t.Fatal(err)
	}
	if res.Text != "Take the first flight." || res.Steps != 3 || res.ContextID == "" {
		t.Errorf("result %+v", res)
	}
	wantPrompt := "Find flights from Lisbon to Paris on 2026-12-01 for 1."
	if res.Prompt != wantPrompt || started != wantPrompt {
		t.Errorf("prompt %q (started with %q), want %q", res.Prompt, started, wantPrompt)
	}
	if want := []string{"travel/search_flights", "travel/weather_forecast"}; !slices.Equal(res.Tools, want) {
		t.Errorf("tools offered %v, want %v", res.Tools, want)
	}
	reqs := srv.Requests()
	if len(reqs) != 3 {
		t.Fatalf("%d model requests, want 3", len(reqs))
	}
	if got := toolNames(reqs[0]); !slices.Equal(got, []string{"travel_search_flights", "travel_weather_forecast"}) {
		t.Errorf("the model was offered %v", got)
	}
	if u := userMessage(reqs[0]); u != wantPrompt {
		t.Errorf("user message %q", u)
	}
	if r := reqs[0].Messages[0]; r.Role != "system" || !strings.Contains(r.Content, "travel-desk") {
		t.Errorf("system message %+v", r)
	}
	if obs := lastToolMessage(reqs[1]); !strings.Contains(obs, "Flights from Lisbon to Paris on 2026-12-01") {
		t.Errorf("search result told to the model: %q", obs)
	}
	if obs := lastToolMessage(reqs[2]); !strings.Contains(obs, "unknown tool") {
		t.Errorf("a call of a tool needing approval was answered %q, want unknown tool", obs)
	}
	if got := calls(t, tr.callLog); !slices.Equal(got, []string{"search_flights"}) {
		t.Errorf("the travel server ran %v", got)
	}
	if got := calls(t, tr.bookedLog); got != nil {
		t.Errorf("the bookings server (permission always) ran %v", got)
	}
	kinds := make([]string, len(steps))
	for i, s := range steps {
		kinds[i] = s.Kind + ":" + s.Summary()
	}
	if len(steps) != 5 || steps[0].Calls[0].Name != "travel/search_flights" || steps[1].Tool != "travel/search_flights" ||
		steps[4].Kind != toolsagent.StepModel || steps[4].Text != "Take the first flight." {
		t.Errorf("steps %q", kinds)
	}
}

// A server flagged permission: always is never started: its command may
// even be missing.
func TestToolsAgentNeverStartsServersNeedingApproval(t *testing.T) {
	def, err := toolsagent.Parse([]byte(`
name: x
version: "1"
description: d
mode: tools
mcpServers:
  danger: {command: /nonexistent/server, permission: always}
tools:
  - {name: t, description: d, prompt: "hello"}
`))
	if err != nil {
		t.Fatal(err)
	}
	srv := testutil.NewLLMServer(t)
	srv.Script(testutil.LLMReply("hi"))
	a := newAgent(t, def, srv)
	res, err := a.Call(ctxFor(t, 10*time.Second), "t", nil, toolsagent.CallOptions{})
	if err != nil || res.Text != "hi" || len(res.Tools) != 0 {
		t.Fatalf("call: %+v, %v", res, err)
	}
	if got := srv.Requests()[0].Tools; len(got) != 0 {
		t.Errorf("tools offered: %v", got)
	}

	// A server that may be used but does not start is an error.
	def.Servers[0].Permission = toolsagent.PermissionNever
	_, err = toolsagent.New(ctxFor(t, 10*time.Second), toolsagent.Options{Definition: def, Provider: nil, Getenv: func(string) string { return "" }})
	if err == nil || !strings.Contains(err.Error(), "mcp server danger") {
		t.Errorf("New with a missing server: %v", err)
	}
}

func TestToolsAgentCallErrors(t *testing.T) {
	tr := loadTravel(t, "")
	srv := testutil.NewLLMServer(t)
	a := newAgent(t, tr.def, srv)
	ctx := ctxFor(t, 30*time.Second)

	_, err := a.Call(ctx, "nope", nil, toolsagent.CallOptions{})
	if !errors.Is(err, toolsagent.ErrUnknownTool) {
		t.Errorf("unknown tool: %v", err)
	}
	_, err = a.Call(ctx, "find_flights", json.RawMessage(`{"origin":3,"date":"tomorrow","extra":true}`), toolsagent.CallOptions{})
	var ae *toolsagent.ArgumentError
	if !errors.As(err, &ae) || len(ae.Violations) != 4 {
		t.Fatalf("invalid arguments: %v", err)
	}
	for _, want := range []string{"destination: required", "origin: want a string, got a number (3)", "date: at least 10 characters, got 8", "extra: unknown member"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("%q lacks %q", err, want)
		}
	}
	if n := len(srv.Requests()); n != 0 {
		t.Errorf("the model was asked %d times for invalid arguments", n)
	}

	// A model that fails: isError material, with the model's reason.
	srv.Script(testutil.LLMFail(401, "bad key"))
	_, err = a.Call(ctx, "echo", json.RawMessage(`{"text":"x"}`), toolsagent.CallOptions{})
	if err == nil || !strings.Contains(err.Error(), "toolsagent: echo: model openai") {
		t.Errorf("model failure: %v", err)
	}

	// Out of iterations (maxIterations: 4).
	srv.SetFallback(func(testutil.LLMRequest) testutil.LLMStep {
		return testutil.LLMCall(testutil.LLMToolCall{Name: "travel_weather_forecast", Arguments: `{"city":"Oslo","date":"2026-01-01"}`})
	})
	_, err = a.Call(ctx, "echo", nil, toolsagent.CallOptions{})
	if !errors.Is(err, agent.ErrMaxIterations) {
		t.Errorf("endless tool calls: %v", err)
	}
}

// A call is bounded by the definition's timeout, and ends when its
// context ends or the agent closes.
func TestToolsAgentCallTimeoutAndCancel(t *testing.T) {
	tr := loadTravel(t, "")
	tr.def.Timeout = 300 * time.Millisecond
	srv := testutil.NewLLMServer(t)
	srv.SetFallback(func(testutil.LLMRequest) testutil.LLMStep {
		return testutil.LLMStep{Text: "late", Delay: 20 * time.Second}
	})
	a := newAgent(t, tr.def, srv)

	start := time.Now()
	_, err := a.Call(ctxFor(t, 10*time.Second), "echo", nil, toolsagent.CallOptions{})
	if !errors.Is(err, toolsagent.ErrTimeout) || !strings.Contains(err.Error(), "echo ran for 300ms") {
		t.Errorf("timeout: %v", err)
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Errorf("the timeout took %s", d)
	}

	tr.def.Timeout = time.Minute
	ctx, cancel := context.WithCancel(context.Background())
	time.AfterFunc(200*time.Millisecond, cancel)
	_, err = a.Call(ctx, "echo", nil, toolsagent.CallOptions{})
	if !errors.Is(err, context.Canceled) || !strings.Contains(err.Error(), "cancelled") {
		t.Errorf("cancelled: %v", err)
	}

	done := make(chan error, 1)
	go func() {
		_, err := a.Call(context.Background(), "echo", nil, toolsagent.CallOptions{})
		done <- err
	}()
	waitFor(t, "the call reaches the model", func() bool { return len(srv.Requests()) == 3 })
	if err := a.Close(); err != nil {
		t.Fatal(err)
	}
	if err := testutil.Receive(t, done, 10*time.Second, "Close to end the call"); !errors.Is(err, toolsagent.ErrClosed) {
		t.Errorf("closed: %v", err)
	}
}

// Each call is a fresh session unless sharedHistory is set; at most
// maxConcurrentCalls run at once.
func TestToolsAgentHistoryAndConcurrency(t *testing.T) {
	tr := loadTravel(t, "")
	srv := testutil.NewLLMServer(t)
	srv.SetFallback(func(r testutil.LLMRequest) testutil.LLMStep { return testutil.LLMReply("answer to " + userMessage(r)) })
	a := newAgent(t, tr.def, srv)
	ctx := ctxFor(t, 30*time.Second)
	for _, text := range []string{"one", "two"} {
		if _, err := a.Call(ctx, "echo", json.RawMessage(`{"text":"`+text+`"}`), toolsagent.CallOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	if msgs := srv.Requests()[1].Messages; len(msgs) != 2 {
		t.Errorf("the second call saw %d messages, want 2 (system, prompt): no shared history", len(msgs))
	}

	shared := loadTravel(t, "sharedHistory: true\nmaxConcurrentCalls: 1\n")
	srv2 := testutil.NewLLMServer(t)
	var mu sync.Mutex
	running, most := 0, 0
	srv2.SetFallback(func(r testutil.LLMRequest) testutil.LLMStep {
		mu.Lock()
		running++
		most = max(most, running)
		mu.Unlock()
		time.Sleep(50 * time.Millisecond)
		mu.Lock()
		running--
		mu.Unlock()
		return testutil.LLMReply("answer to " + userMessage(r))
	})
	b := newAgent(t, shared.def, srv2)
	if _, err := b.Call(ctx, "echo", json.RawMessage(`{"text":"one"}`), toolsagent.CallOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := b.Call(ctx, "echo", json.RawMessage(`{"text":"two"}`), toolsagent.CallOptions{}); err != nil {
		t.Fatal(err)
	}
	msgs := srv2.Requests()[1].Messages
	if len(msgs) != 4 || msgs[1].Content != "Say one" || msgs[2].Content != "answer to Say one" {
		t.Errorf("shared history: %+v", msgs)
	}
	var wg sync.WaitGroup
	for range 4 {
		wg.Go(func() {
			if _, err := b.Call(ctx, "echo", nil, toolsagent.CallOptions{}); err != nil {
				t.Error(err)
			}
		})
	}
	wg.Wait()
	if most != 1 {
		t.Errorf("%d calls ran at once, want 1", most)
	}
}

// The example definition loads, and runs with its travel server.
func TestToolsAgentTravelDeskExample(t *testing.T) {
	def, err := toolsagent.Load(filepath.Join("..", "examples", "travel-desk", "travel-desk.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	if len(def.Tools) != 2 || def.Name != "travel-desk" || len(def.Servers) != 2 {
		t.Fatalf("%+v", def)
	}
	if len(def.Warnings) != 1 || !strings.Contains(def.Warnings[0].String(), "mcpServers.bookings") {
		t.Errorf("warnings %v", def.Warnings)
	}
	// Run travel-mcp as this test binary rather than with go run.
	exe := testutil.Executable(t)
	for i := range def.Servers {
		def.Servers[i].Command, def.Servers[i].Args = exe, nil
		def.Servers[i].Env = map[string]string{envServer: "1"}
	}
	srv := testutil.NewLLMServer(t)
	srv.Script(
		testutil.LLMCall(testutil.LLMToolCall{Name: "travel_weather_forecast", Arguments: `{"city":"Porto","date":"2026-05-01"}`}),
		testutil.LLMReply("Day 1: museums."),
	)
	a := newAgent(t, def, srv)
	res, err := a.Call(ctxFor(t, 30*time.Second), "plan_trip", json.RawMessage(`{"destination":"Porto","start":"2026-05-01","interests":["wine","tiles"]}`), toolsagent.CallOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if res.Text != "Day 1: museums." || !containsAll(res.Prompt, "Plan a 3-day trip to Porto starting on 2026-05-01.", `["wine","tiles"]`) {
		t.Errorf("%+v", res)
	}
	if obs := lastToolMessage(srv.Requests()[1]); !strings.HasPrefix(obs, "Porto on 2026-05-01: ") {
		t.Errorf("forecast %q", obs)
	}
}

// waitFor polls cond until it holds, failing after 10 s.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	testutil.WaitFor(t, 10*time.Second, what, cond)
}
