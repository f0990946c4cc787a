package llm_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"go.uber.org/goleak"

	"github.com/mew-protocol/mew/internal/testutil"
	"github.com/mew-protocol/mew/llm"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

// newOpenAI returns a provider for the scripted server; cfg's zero fields
// get the test's defaults.
func newOpenAI(t *testing.T, srv *testutil.LLMServer, cfg llm.Config) *llm.OpenAI {
	t.Helper()
	cfg.BaseURL = srv.URL()
	if cfg.APIKey == "" {
		cfg.APIKey = "sk-test"
	}
	if cfg.Model == "" {
		cfg.Model = "test-model"
	}
	p, err := llm.NewOpenAI(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func user(text string) llm.Message { return llm.Message{Role: llm.RoleUser, Content: text} }

var addTool = llm.Tool{
	Name:        "calculator/add",
	Description: "Add two numbers",
	Parameters:  json.RawMessage(`{"type":"object","properties":{"b":{"type":"number"},"a":{"type":"number"}},"required":["a","b"]}`),
}

var readTool = llm.Tool{
	Name:        "read_file",
	Description: "Read a text file",
	Parameters:  json.RawMessage(`{"type":"object","properties":{"path":{"type":"string"}},"required":["path"]}`),
}

func TestOpenAICompletePlain(t *testing.T) {
	srv := testutil.NewLLMServer(t)
	srv.Script(testutil.LLMStep{Text: "Hello there.", PromptTokens: 12, CompletionTokens: 3, Model: "test-model-0125"})
	p := newOpenAI(t, srv, llm.Config{})
	temp := 0.25
	resp, err := p.Complete(context.Background(), llm.Request{
		Messages: []llm.Message{
			{Role: llm.RoleSystem, Content: "Be brief."},
			{Role: llm.RoleUser, Content: "Hi", Name: "alice@example"},
		},
		Temperature: &temp,
		MaxTokens:   50,
	})
	if err != nil {
		t.Fatal(err)
	}
	want := &llm.Response{
		Content:      "Hello there.",
		FinishReason: llm.FinishStop,
		Usage:        llm.Usage{PromptTokens: 12, CompletionTokens: 3, TotalTokens: 15},
		Model:        "test-model-0125",
	}
	if diff := cmp.Diff(want, resp); diff != "" {
		t.Errorf("response (-want +got):\n%s", diff)
	}

	reqs := srv.Requests()
	if len(reqs) != 1 {
		t.Fatalf("%d requests, want 1", len(reqs))
	}
	r := reqs[0]
	if r.Path != "/v1/chat/completions" || r.Model != "test-model" || r.Stream || len(r.Tools) != 0 {
		t.Errorf("request path %q model %q stream %v tools %d", r.Path, r.Model, r.Stream, len(r.Tools))
	}
	if got := r.Header.Get("Authorization"); got != "Bearer sk-test" {
		t.Errorf("Authorization = %q", got)
	}
	if r.Temperature == nil || *r.Temperature != 0.25 || r.MaxTokens != 50 {
		t.Errorf("temperature %v, max tokens %d", r.Temperature, r.MaxTokens)
	}
	wantMsgs := []testutil.LLMMessage{
		{Role: "system", Content: "Be brief."},
		{Role: "user", Content: "Hi", Name: "alice_example"},
	}
	if diff := cmp.Diff(wantMsgs, r.Messages); diff != "" {
		t.Errorf("messages sent (-want +got):\n%s", diff)
	}
}

func TestOpenAIToolCalls(t *testing.T) {
	srv := testutil.NewLLMServer(t)
	srv.Script(
		testutil.LLMCall(testutil.LLMToolCall{ID: "call_a", Name: "calculator_add", Arguments: `{"a": 2, "b": 3}`}),
		testutil.LLMCall(testutil.LLMToolCall{ID: "call_b", Name: "calculator_add", Arguments: `{"a":1,"b":1}`}),
		testutil.LLMReply("2 + 3 = 5"),
	)
	p := newOpenAI(t, srv, llm.Config{})
	ctx := context.Background()
	tools := []llm.Tool{addTool, readTool, {Name: "calculator_add", Description: "a different tool, same wire name"}}
	msgs := []llm.Message{user("add 2 and 3")}

	resp, err := p.Complete(ctx, llm.Request{Messages: msgs, Tools: tools})
	if err != nil {
		t.Fatal(err)
	}
	if resp.FinishReason != llm.FinishToolCalls || len(resp.ToolCalls) != 1 {
		t.Fatalf("finish %q, %d tool calls", resp.FinishReason, len(resp.ToolCalls))
	}
	call := resp.ToolCalls[0]
	// The model answered with the wire name of the literal calculator_add.
	if call.ID != "call_a" || call.Name != "calculator_add" {
		t.Errorf("call %q %q", call.ID, call.Name)
	}
	var args struct{ A, B float64 }
	if err := json.Unmarshal(call.Arguments, &args); err != nil || args.A != 2 || args.B != 3 {
		t.Errorf("arguments %s: %+v %v", call.Arguments, args, err)
	}

	sent := srv.Requests()[0].Tools
	if len(sent) != 3 {
		t.Fatalf("%d tools sent", len(sent))
	}
	// Valid names keep themselves; "calculator/add" is rewritten around them.
	if sent[0].Name != "calculator_add_2" || sent[1].Name != "read_file" || sent[2].Name != "calculator_add" {
		t.Errorf("tool names sent: %q %q %q", sent[0].Name, sent[1].Name, sent[2].Name)
	}
	if string(sent[0].Parameters) != string(addTool.Parameters) {
		t.Errorf("schema sent %s, want it as written %s", sent[0].Parameters, addTool.Parameters)
	}
	if sent[0].Description != "Add two numbers" {
		t.Errorf("description %q", sent[0].Description)
	}

	// Without the literal calculator_add, "calculator/add" goes out as
	// calculator_add, and the model's call of it is mapped back.
	resp2, err := p.Complete(ctx, llm.Request{Messages: msgs, Tools: tools[:2]})
	if err != nil {
		t.Fatal(err)
	}
	if got := resp2.ToolCalls[0].Name; got != "calculator/add" {
		t.Errorf("mapped back to %q, want calculator/add", got)
	}

	// Answering the first call.
	msgs = append(msgs,
		llm.Message{Role: llm.RoleAssistant, ToolCalls: []llm.ToolCall{{ID: "call_b", Name: "calculator/add", Arguments: json.RawMessage(`{"a":2,"b":3}`)}}},
		llm.Message{Role: llm.RoleTool, ToolCallID: "call_b", Content: "5"},
	)
	final, err := p.Complete(ctx, llm.Request{Messages: msgs, Tools: []llm.Tool{addTool}})
	if err != nil {
		t.Fatal(err)
	}
	if final.Content != "2 + 3 = 5" || len(final.ToolCalls) != 0 || final.FinishReason != llm.FinishStop {
		t.Errorf("final answer %+v", final)
	}
	reqs := srv.Requests()
	got := reqs[len(reqs)-1].Messages
	want := []testutil.LLMMessage{
		{Role: "user", Content: "add 2 and 3"},
		{Role: "assistant", ToolCalls: []testutil.LLMToolCall{{ID: "call_b", Name: "calculator_add", Arguments: `{"a":2,"b":3}`}}},
		{Role: "tool", ToolCallID: "call_b", Content: "5"},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("conversation sent (-want +got):\n%s", diff)
	}
}

func TestOpenAIMalformedArguments(t *testing.T) {
	srv := testutil.NewLLMServer(t)
	srv.Script(
		testutil.LLMCall(
			testutil.LLMToolCall{ID: "c1", Name: "read_file", Arguments: `{"path": "notes.txt"`},
			testutil.LLMToolCall{ID: "c2", Name: "read_file", Arguments: ``},
		),
		testutil.LLMReply("ok"),
	)
	p := newOpenAI(t, srv, llm.Config{})
	resp, err := p.Complete(context.Background(), llm.Request{Messages: []llm.Message{user("read")}, Tools: []llm.Tool{readTool}})
	if err != nil {
		t.Fatal(err)
	}
	if got := string(resp.ToolCalls[0].Arguments); got != `"{\"path\": \"notes.txt\""` {
		t.Errorf("malformed arguments kept as %s", got)
	}
	if got := string(resp.ToolCalls[1].Arguments); got != `{}` {
		t.Errorf("empty arguments became %s", got)
	}
	var m map[string]any
	if err := json.Unmarshal(resp.ToolCalls[0].Arguments, &m); err == nil {
		t.Error("malformed arguments decoded into an object")
	}
	// Sent back, the model sees exactly what it wrote.
	_, err = p.Complete(context.Background(), llm.Request{Messages: []llm.Message{
		user("read"),
		{Role: llm.RoleAssistant, ToolCalls: resp.ToolCalls},
		{Role: llm.RoleTool, ToolCallID: "c1", Content: "error: arguments are not JSON"},
		{Role: llm.RoleTool, ToolCallID: "c2", Content: "error: path is required"},
	}})
	if err != nil {
		t.Fatal(err)
	}
	sent := srv.Requests()[1].Messages[1].ToolCalls
	if sent[0].Arguments != `{"path": "notes.txt"` || sent[1].Arguments != `{}` {
		t.Errorf("arguments sent back: %q, %q", sent[0].Arguments, sent[1].Arguments)
	}
}

// collect streams a request and returns the deltas with the response.
func collect(t *testing.T, p llm.Provider, req llm.Request) ([]llm.Delta, *llm.Response, error) {
	t.Helper()
	var deltas []llm.Delta
	resp, err := p.Stream(context.Background(), req, func(d llm.Delta) { deltas = append(deltas, d) })
	return deltas, resp, err
}

func TestOpenAIStreamText(t *testing.T) {
	srv := testutil.NewLLMServer(t)
	srv.Script(testutil.LLMStep{Text: "Streaming is fun to watch.", Reasoning: "The user wants a sentence.", PromptTokens: 7, CompletionTokens: 6})
	p := newOpenAI(t, srv, llm.Config{})
	deltas, resp, err := collect(t, p, llm.Request{Messages: []llm.Message{user("say something")}})
	if err != nil {
		t.Fatal(err)
	}
	var content, reasoning strings.Builder
	for _, d := range deltas {
		content.WriteString(d.Content)
		reasoning.WriteString(d.Reasoning)
		if d.ToolCall != nil {
			t.Errorf("unexpected tool call delta %+v", d.ToolCall)
		}
	}
	if len(deltas) < 5 {
		t.Errorf("%d deltas, want the text word by word", len(deltas))
	}
	want := &llm.Response{
		Content:      "Streaming is fun to watch.",
		Reasoning:    "The user wants a sentence.",
		FinishReason: llm.FinishStop,
		Usage:        llm.Usage{PromptTokens: 7, CompletionTokens: 6, TotalTokens: 13},
		Model:        "test-model",
	}
	if diff := cmp.Diff(want, resp); diff != "" {
		t.Errorf("response (-want +got):\n%s", diff)
	}
	if content.String() != resp.Content || reasoning.String() != resp.Reasoning {
		t.Errorf("deltas add up to %q / %q", content.String(), reasoning.String())
	}
	r := srv.Requests()[0]
	if !r.Stream || !r.StreamUsage {
		t.Errorf("stream %v, include_usage %v", r.Stream, r.StreamUsage)
	}
}

func TestOpenAIStreamToolCalls(t *testing.T) {
	srv := testutil.NewLLMServer(t)
	srv.Script(testutil.LLMStep{
		Text: "Let me compute.",
		ToolCalls: []testutil.LLMToolCall{
			{ID: "call_1", Name: "calculator_add", Arguments: `{"a": 2, "b": 3, "note": "héllo wörld ✓"}`},
			{ID: "call_2", Name: "read_file", Arguments: `{"path": "notes.txt"}`},
		},
	})
	p := newOpenAI(t, srv, llm.Config{})
	deltas, resp, err := collect(t, p, llm.Request{Messages: []llm.Message{user("add and read")}, Tools: []llm.Tool{addTool, readTool}})
	if err != nil {
		t.Fatal(err)
	}
	if resp.Content != "Let me compute." || resp.FinishReason != llm.FinishToolCalls {
		t.Errorf("content %q finish %q", resp.Content, resp.FinishReason)
	}
	want := []llm.ToolCall{
		{ID: "call_1", Name: "calculator/add", Arguments: json.RawMessage(`{"a": 2, "b": 3, "note": "héllo wörld ✓"}`)},
		{ID: "call_2", Name: "read_file", Arguments: json.RawMessage(`{"path": "notes.txt"}`)},
	}
	if diff := cmp.Diff(want, resp.ToolCalls); diff != "" {
		t.Errorf("tool calls (-want +got):\n%s", diff)
	}
	// The pieces, merged by index, make the same calls.
	type parts struct{ id, name, args string }
	merged := map[int]*parts{}
	pieces := 0
	for _, d := range deltas {
		if d.ToolCall == nil {
			continue
		}
		pieces++
		m := merged[d.ToolCall.Index]
		if m == nil {
			m = &parts{}
			merged[d.ToolCall.Index] = m
		}
		m.id += d.ToolCall.ID
		m.name += d.ToolCall.Name
		m.args += d.ToolCall.Arguments
	}
	if pieces < 6 {
		t.Errorf("%d tool call pieces, want the arguments in fragments", pieces)
	}
	for i, w := range want {
		m := merged[i]
		if m == nil || m.id != w.ID || m.name != w.Name || m.args != string(w.Arguments) {
			t.Errorf("merged pieces of call %d: %+v", i, m)
		}
	}
	if resp.Usage.TotalTokens == 0 {
		t.Error("no usage reported")
	}
}

func TestOpenAIRateLimitRetried(t *testing.T) {
	srv := testutil.NewLLMServer(t)
	srv.Script(
		testutil.LLMStep{Status: http.StatusTooManyRequests, Error: "Rate limit reached", RetryAfter: 80 * time.Millisecond},
		testutil.LLMReply("finally"),
	)
	p := newOpenAI(t, srv, llm.Config{})
	start := time.Now()
	resp, err := p.Complete(context.Background(), llm.Request{Messages: []llm.Message{user("hi")}})
	if err != nil {
		t.Fatal(err)
	}
	if resp.Content != "finally" {
		t.Errorf("content %q", resp.Content)
	}
	if n := len(srv.Requests()); n != 2 {
		t.Errorf("%d attempts, want 2", n)
	}
	if waited := time.Since(start); waited < 80*time.Millisecond {
		t.Errorf("retried after %s, before the server's Retry-After", waited)
	}
}

func TestOpenAIRateLimitGivesUp(t *testing.T) {
	srv := testutil.NewLLMServer(t)
	limited := testutil.LLMStep{Status: http.StatusTooManyRequests, Error: "Rate limit reached for requests", RetryAfter: 20 * time.Millisecond}
	srv.Script(limited, limited, limited)
	p := newOpenAI(t, srv, llm.Config{MaxRetries: 1})
	_, err := p.Stream(context.Background(), llm.Request{Messages: []llm.Message{user("hi")}}, nil)
	if !errors.Is(err, llm.ErrRateLimited) {
		t.Fatalf("err = %v, want ErrRateLimited", err)
	}
	var apiErr *llm.APIError
	if !errors.As(err, &apiErr) || apiErr.Status != 429 || apiErr.RetryAfter != 20*time.Millisecond || apiErr.Code != "rate_limit_exceeded" {
		t.Errorf("APIError %+v", apiErr)
	}
	if n := len(srv.Requests()); n != 2 {
		t.Errorf("%d attempts, want 2 (MaxRetries 1)", n)
	}
	if !strings.Contains(err.Error(), "gave up after 2 attempts") || !strings.Contains(err.Error(), "Rate limit reached for requests") {
		t.Errorf("message %q", err)
	}
	if errors.Is(err, llm.ErrUnauthorized) || errors.Is(err, llm.ErrNotFound) {
		t.Error("429 matches other sentinels")
	}
}

func TestOpenAIServerErrorRetried(t *testing.T) {
	srv := testutil.NewLLMServer(t)
	srv.Script(testutil.LLMFail(http.StatusInternalServerError, "The server had an error"), testutil.LLMReply("recovered"))
	p := newOpenAI(t, srv, llm.Config{})
	resp, err := p.Complete(context.Background(), llm.Request{Messages: []llm.Message{user("hi")}})
	if err != nil {
		t.Fatal(err)
	}
	if resp.Content != "recovered" || len(srv.Requests()) != 2 {
		t.Errorf("content %q after %d attempts", resp.Content, len(srv.Requests()))
	}

	srv.Script(testutil.LLMFail(http.StatusServiceUnavailable, "overloaded"))
	p = newOpenAI(t, srv, llm.Config{MaxRetries: -1})
	_, err = p.Complete(context.Background(), llm.Request{Messages: []llm.Message{user("hi")}})
	var apiErr *llm.APIError
	if !errors.As(err, &apiErr) || apiErr.Status != 503 || apiErr.Type != "server_error" || apiErr.Message != "overloaded" {
		t.Errorf("err = %v", err)
	}
	if len(srv.Requests()) != 3 {
		t.Errorf("retried with MaxRetries -1")
	}
}

func TestOpenAIUnauthorized(t *testing.T) {
	srv := testutil.NewLLMServer(t)
	srv.Script(testutil.LLMFail(http.StatusUnauthorized, "Incorrect API key provided: sk-test. You can find your API key at https://platform.openai.com/account/api-keys."))
	p := newOpenAI(t, srv, llm.Config{})
	_, err := p.Complete(context.Background(), llm.Request{Messages: []llm.Message{user("hi")}})
	if !errors.Is(err, llm.ErrUnauthorized) {
		t.Fatalf("err = %v, want ErrUnauthorized", err)
	}
	var apiErr *llm.APIError
	if !errors.As(err, &apiErr) || apiErr.Status != 401 || apiErr.Code != "invalid_api_key" {
		t.Errorf("APIError %+v", apiErr)
	}
	msg := err.Error()
	for _, want := range []string{"401", "Incorrect API key provided", "OPENAI_API_KEY", "test-model", srv.URL()} {
		if !strings.Contains(msg, want) {
			t.Errorf("message %q lacks %q", msg, want)
		}
	}
	if n := len(srv.Requests()); n != 1 {
		t.Errorf("%d attempts: 401 must not be retried", n)
	}
}

func TestOpenAINotFound(t *testing.T) {
	srv := testutil.NewLLMServer(t)
	srv.Script(testutil.LLMFail(http.StatusNotFound, "The model `no-such-model` does not exist or you do not have access to it."))
	p := newOpenAI(t, srv, llm.Config{Model: "no-such-model"})
	_, err := p.Stream(context.Background(), llm.Request{Messages: []llm.Message{user("hi")}}, func(llm.Delta) { t.Error("delta from an error") })
	if !errors.Is(err, llm.ErrNotFound) {
		t.Fatalf("err = %v, want ErrNotFound", err)
	}
	for _, want := range []string{"404", "no-such-model", "does not exist", "--model", "--base-url"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("message %q lacks %q", err, want)
		}
	}
	if n := len(srv.Requests()); n != 1 {
		t.Errorf("%d attempts: 404 must not be retried", n)
	}

	// Servers that are not OpenAI shape their errors differently.
	srv.Script(testutil.LLMStep{Status: http.StatusNotFound, Body: `{"error":"model \"llama9\" not found, try pulling it first"}`})
	_, err = p.Complete(context.Background(), llm.Request{Messages: []llm.Message{user("hi")}})
	var apiErr *llm.APIError
	if !errors.Is(err, llm.ErrNotFound) || !errors.As(err, &apiErr) || apiErr.Message != `model "llama9" not found, try pulling it first` {
		t.Errorf("err = %v", err)
	}
	srv.Script(testutil.LLMStep{Status: http.StatusBadGateway, Body: "<html>502 Bad Gateway</html>"})
	p = newOpenAI(t, srv, llm.Config{MaxRetries: -1})
	_, err = p.Complete(context.Background(), llm.Request{Messages: []llm.Message{user("hi")}})
	if !errors.As(err, &apiErr) || apiErr.Status != 502 || apiErr.Message != "<html>502 Bad Gateway</html>" {
		t.Errorf("err = %v", err)
	}
}

func TestOpenAIBadResponse(t *testing.T) {
	srv := testutil.NewLLMServer(t)
	p := newOpenAI(t, srv, llm.Config{MaxRetries: -1})
	for _, body := range []string{
		`{"id":"x","object":"chat.completion","model":"m","choices":[]}`,
		`this is not JSON`,
	} {
		srv.Script(testutil.LLMStep{Body: body})
		_, err := p.Complete(context.Background(), llm.Request{Messages: []llm.Message{user("hi")}})
		if !errors.Is(err, llm.ErrBadResponse) {
			t.Errorf("body %q: err = %v, want ErrBadResponse", body, err)
		}
	}
}

func TestOpenAIStreamErrorEvent(t *testing.T) {
	srv := testutil.NewLLMServer(t)
	srv.Script(testutil.LLMStep{Text: "partial answer", StreamError: "the model crashed"})
	p := newOpenAI(t, srv, llm.Config{})
	deltas, _, err := collect(t, p, llm.Request{Messages: []llm.Message{user("hi")}})
	var apiErr *llm.APIError
	if !errors.As(err, &apiErr) || apiErr.Message != "the model crashed" {
		t.Fatalf("err = %v", err)
	}
	if len(deltas) == 0 {
		t.Error("the pieces before the error were not delivered")
	}
}

func TestOpenAICancelMidStream(t *testing.T) {
	srv := testutil.NewLLMServer(t)
	srv.Script(testutil.LLMStep{Text: "one two three four five", ChunkDelay: 10 * time.Second})
	p := newOpenAI(t, srv, llm.Config{})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var got []string
	var start time.Time
	_, err := p.Stream(ctx, llm.Request{Messages: []llm.Message{user("count")}}, func(d llm.Delta) {
		got = append(got, d.Content)
		if start.IsZero() {
			start = time.Now()
			cancel()
		}
	})
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("err = %v, want context.Canceled", err)
	}
	if elapsed := time.Since(start); elapsed > 2*time.Second {
		t.Errorf("returned %s after the cancel", elapsed)
	}
	if len(got) != 1 {
		t.Errorf("deltas %q after the cancel", got)
	}
}

func TestOpenAICallerDeadline(t *testing.T) {
	srv := testutil.NewLLMServer(t)
	srv.Script(testutil.LLMStep{Text: "late", Delay: 10 * time.Second})
	p := newOpenAI(t, srv, llm.Config{})
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	start := time.Now()
	_, err := p.Complete(ctx, llm.Request{Messages: []llm.Message{user("hi")}})
	if !errors.Is(err, context.DeadlineExceeded) || errors.Is(err, llm.ErrTimeout) {
		t.Fatalf("err = %v, want the caller's context.DeadlineExceeded", err)
	}
	if time.Since(start) > 2*time.Second {
		t.Errorf("took %s", time.Since(start))
	}
}

func TestOpenAITimeout(t *testing.T) {
	srv := testutil.NewLLMServer(t)
	p := newOpenAI(t, srv, llm.Config{Timeout: 150 * time.Millisecond})
	req := llm.Request{Messages: []llm.Message{user("hi")}}

	srv.Script(testutil.LLMStep{Text: "too late", Delay: 10 * time.Second})
	start := time.Now()
	_, err := p.Complete(context.Background(), req)
	if !errors.Is(err, llm.ErrTimeout) || errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Complete: err = %v, want ErrTimeout", err)
	}
	if time.Since(start) > 2*time.Second {
		t.Errorf("Complete took %s", time.Since(start))
	}

	// A stream that stalls between pieces times out...
	srv.Script(testutil.LLMStep{Text: "one two three", ChunkDelay: 10 * time.Second})
	start = time.Now()
	_, err = p.Stream(context.Background(), req, nil)
	if !errors.Is(err, llm.ErrTimeout) {
		t.Fatalf("Stream: err = %v, want ErrTimeout", err)
	}
	if time.Since(start) > 2*time.Second {
		t.Errorf("Stream took %s", time.Since(start))
	}

	// ...but one that keeps coming may take longer than the timeout.
	srv.Script(testutil.LLMStep{Text: "a b c d e f g h", ChunkDelay: 40 * time.Millisecond})
	resp, err := p.Stream(context.Background(), req, nil)
	if err != nil || resp.Content != "a b c d e f g h" {
		t.Fatalf("slow but steady stream: %v, %+v", err, resp)
	}
}

func TestOpenAIConnectionRefused(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	_ = ln.Close()
	p, err := llm.NewOpenAI(llm.Config{BaseURL: "http://" + addr + "/v1", MaxRetries: -1})
	if err != nil {
		t.Fatal(err)
	}
	_, err = p.Complete(context.Background(), llm.Request{Messages: []llm.Message{user("hi")}})
	if err == nil || !strings.Contains(err.Error(), addr) {
		t.Fatalf("err = %v, want one naming %s", err, addr)
	}
	for _, sentinel := range []error{llm.ErrTimeout, llm.ErrBadResponse, llm.ErrNotFound, context.Canceled} {
		if errors.Is(err, sentinel) {
			t.Errorf("connection refused matches %v", sentinel)
		}
	}
}

func TestOpenAIInvalidRequests(t *testing.T) {
	srv := testutil.NewLLMServer(t)
	p := newOpenAI(t, srv, llm.Config{})
	for name, req := range map[string]llm.Request{
		"unknown role":  {Messages: []llm.Message{{Role: "narrator", Content: "x"}}},
		"schema array":  {Messages: []llm.Message{user("x")}, Tools: []llm.Tool{{Name: "t", Parameters: json.RawMessage(`[]`)}}},
		"schema broken": {Messages: []llm.Message{user("x")}, Tools: []llm.Tool{{Name: "t", Parameters: json.RawMessage(`{"type":`)}}},
	} {
		if _, err := p.Complete(context.Background(), req); err == nil {
			t.Errorf("%s: no error", name)
		}
	}
	if n := len(srv.Requests()); n != 0 {
		t.Errorf("%d requests sent for invalid input", n)
	}
	if _, err := llm.NewOpenAI(llm.Config{BaseURL: "localhost:11434"}); err == nil {
		t.Error("a base URL without scheme was accepted")
	}
}

func TestOpenAIConcurrent(t *testing.T) {
	srv := testutil.NewLLMServer(t)
	srv.SetFallback(func(r testutil.LLMRequest) testutil.LLMStep {
		return testutil.LLMStep{Text: "echo: " + r.Messages[len(r.Messages)-1].Content, Delay: 5 * time.Millisecond}
	})
	p := newOpenAI(t, srv, llm.Config{})
	var wg sync.WaitGroup
	errs := make(chan error, 16)
	for i := range 16 {
		wg.Go(func() {
			msg := fmt.Sprintf("message %d", i)
			req := llm.Request{Messages: []llm.Message{user(msg)}}
			var resp *llm.Response
			var err error
			if i%2 == 0 {
				resp, err = p.Complete(context.Background(), req)
			} else {
				resp, err = p.Stream(context.Background(), req, func(llm.Delta) {})
			}
			if err == nil && resp.Content != "echo: "+msg {
				err = fmt.Errorf("got %q for %q", resp.Content, msg)
			}
			errs <- err
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Error(err)
		}
	}
}
