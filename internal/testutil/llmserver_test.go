package testutil_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	openai "github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
	"go.uber.org/goleak"

	"github.com/mew-protocol/mew/internal/testutil"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

// post sends a chat completion request and returns the response.
func post(t *testing.T, url, body string) *http.Response {
	t.Helper()
	res, err := http.Post(url+"/chat/completions", "application/json", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = res.Body.Close() })
	return res
}

func decode(t *testing.T, res *http.Response) map[string]any {
	t.Helper()
	var v map[string]any
	if err := json.NewDecoder(res.Body).Decode(&v); err != nil {
		t.Fatal(err)
	}
	return v
}

const chatBody = `{"model":"m1","messages":[{"role":"system","content":"sys"},{"role":"user","content":[{"type":"text","text":"add "},{"type":"text","text":"2 and 3"}],"name":"bob"},
{"role":"assistant","content":null,"tool_calls":[{"id":"c0","type":"function","function":{"name":"add","arguments":"{}"}}]},
{"role":"tool","tool_call_id":"c0","content":"0"}],
"tools":[{"type":"function","function":{"name":"add","description":"Add","parameters":{"type":"object","properties":{"b":{},"a":{}}}}}],
"temperature":0.5,"max_completion_tokens":9}`

func TestLLMServerCompletion(t *testing.T) {
	srv := testutil.NewLLMServer(t)
	srv.Script(testutil.LLMStep{
		Text:      "calling",
		Reasoning: "think",
		ToolCalls: []testutil.LLMToolCall{{Name: "add", Arguments: `{"a":2,"b":3}`}},
	})
	res := post(t, srv.URL(), chatBody)
	if res.StatusCode != 200 || res.Header.Get("Content-Type") != "application/json" {
		t.Fatalf("status %d, content type %q", res.StatusCode, res.Header.Get("Content-Type"))
	}
	var got struct {
		ID, Object, Model string
		Choices           []struct {
			Index        int
			FinishReason string `json:"finish_reason"`
			Message      struct {
				Role, Content    string
				ReasoningContent string `json:"reasoning_content"`
				ToolCalls        []struct {
					ID, Type string
					Function struct{ Name, Arguments string }
				} `json:"tool_calls"`
			}
		}
		Usage struct {
			Prompt     int `json:"prompt_tokens"`
			Completion int `json:"completion_tokens"`
			Total      int `json:"total_tokens"`
		}
	}
	if err := json.NewDecoder(res.Body).Decode(&got); err != nil {
		t.Fatal(err)
	}
	if got.Object != "chat.completion" || got.Model != "m1" || got.ID == "" || len(got.Choices) != 1 {
		t.Fatalf("completion %+v", got)
	}
	c := got.Choices[0]
	if c.FinishReason != "tool_calls" || c.Message.Role != "assistant" || c.Message.Content != "calling" || c.Message.ReasoningContent != "think" {
		t.Errorf("choice %+v", c)
	}
	if len(c.Message.ToolCalls) != 1 || c.Message.ToolCalls[0].ID != "call_1" || c.Message.ToolCalls[0].Type != "function" ||
		c.Message.ToolCalls[0].Function.Name != "add" || c.Message.ToolCalls[0].Function.Arguments != `{"a":2,"b":3}` {
		t.Errorf("tool calls %+v", c.Message.ToolCalls)
	}
	if got.Usage.Prompt == 0 || got.Usage.Completion == 0 || got.Usage.Total != got.Usage.Prompt+got.Usage.Completion {
		t.Errorf("usage %+v", got.Usage)
	}

	reqs := srv.Requests()
	if len(reqs) != 1 {
		t.Fatalf("%d requests", len(reqs))
	}
	r := reqs[0]
	if r.Path != "/v1/chat/completions" || r.Model != "m1" || r.Stream || r.MaxTokens != 9 || r.Temperature == nil || *r.Temperature != 0.5 {
		t.Errorf("request %+v", r)
	}
	want := []testutil.LLMMessage{
		{Role: "system", Content: "sys"},
		{Role: "user", Content: "add 2 and 3", Name: "bob"},
		{Role: "assistant", ToolCalls: []testutil.LLMToolCall{{ID: "c0", Name: "add", Arguments: "{}"}}},
		{Role: "tool", Content: "0", ToolCallID: "c0"},
	}
	if fmt.Sprint(r.Messages) != fmt.Sprint(want) {
		t.Errorf("messages %+v, want %+v", r.Messages, want)
	}
	if len(r.Tools) != 1 || r.Tools[0].Name != "add" || r.Tools[0].Description != "Add" ||
		string(r.Tools[0].Parameters) != `{"type":"object","properties":{"b":{},"a":{}}}` {
		t.Errorf("tools %+v", r.Tools)
	}
	if !json.Valid(r.Body) {
		t.Error("raw body not kept")
	}
}

// sse reads a stream's events.
func sse(t *testing.T, body io.Reader) []string {
	t.Helper()
	var events []string
	sc := bufio.NewScanner(body)
	for sc.Scan() {
		line := sc.Text()
		if line == "" {
			continue
		}
		data, ok := strings.CutPrefix(line, "data: ")
		if !ok {
			t.Fatalf("line %q is not an SSE data line", line)
		}
		events = append(events, data)
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return events
}

func TestLLMServerStream(t *testing.T) {
	srv := testutil.NewLLMServer(t)
	srv.Script(testutil.LLMStep{
		Text:      "one two",
		ToolCalls: []testutil.LLMToolCall{{ID: "x", Name: "add", Arguments: `{"a": 2, "b": 3, "c": "ü✓"}`}},
	})
	res := post(t, srv.URL(), `{"model":"m","messages":[{"role":"user","content":"hi"}],"stream":true,"stream_options":{"include_usage":true}}`)
	if ct := res.Header.Get("Content-Type"); ct != "text/event-stream" {
		t.Fatalf("content type %q", ct)
	}
	events := sse(t, res.Body)
	if events[len(events)-1] != "[DONE]" {
		t.Fatalf("last event %q", events[len(events)-1])
	}
	var text, args, name, finish string
	var sawUsage bool
	for _, e := range events[:len(events)-1] {
		var chunk struct {
			Object  string
			Choices []struct {
				Delta struct {
					Content   string
					ToolCalls []struct {
						Index    int
						ID       string
						Function struct{ Name, Arguments string }
					} `json:"tool_calls"`
				}
				FinishReason *string `json:"finish_reason"`
			}
			Usage *struct {
				Total int `json:"total_tokens"`
			}
		}
		if err := json.Unmarshal([]byte(e), &chunk); err != nil {
			t.Fatalf("event %q: %v", e, err)
		}
		if chunk.Object != "chat.completion.chunk" {
			t.Errorf("object %q", chunk.Object)
		}
		if chunk.Usage != nil {
			sawUsage = chunk.Usage.Total > 0 && len(chunk.Choices) == 0
		}
		for _, c := range chunk.Choices {
			text += c.Delta.Content
			for _, tc := range c.Delta.ToolCalls {
				name += tc.Function.Name
				args += tc.Function.Arguments
			}
			if c.FinishReason != nil {
				finish = *c.FinishReason
			}
		}
	}
	if text != "one two" || name != "add" || args != `{"a": 2, "b": 3, "c": "ü✓"}` || finish != "tool_calls" || !sawUsage {
		t.Errorf("stream adds up to text %q, name %q, args %q, finish %q, usage %v", text, name, args, finish, sawUsage)
	}
	if len(events) < 8 {
		t.Errorf("%d events, want the pieces in separate chunks", len(events))
	}
}

func TestLLMServerErrors(t *testing.T) {
	srv := testutil.NewLLMServer(t)
	srv.Script(
		testutil.LLMStep{Status: 429, Error: "slow down", RetryAfter: 1500 * time.Millisecond},
		testutil.LLMFail(401, ""),
		testutil.LLMFail(404, "no model"),
		testutil.LLMFail(500, "boom"),
		testutil.LLMStep{Body: "not json"},
	)
	for _, want := range []struct {
		status            int
		typ, code, msg    string
		retryMs, retrySec string
	}{
		{429, "requests", "rate_limit_exceeded", "slow down", "1500", "2"},
		{401, "invalid_request_error", "invalid_api_key", "Unauthorized", "", ""},
		{404, "invalid_request_error", "model_not_found", "no model", "", ""},
		{500, "server_error", "", "boom", "", ""},
	} {
		res := post(t, srv.URL(), `{"model":"m","messages":[]}`)
		if res.StatusCode != want.status {
			t.Errorf("status %d, want %d", res.StatusCode, want.status)
		}
		if res.Header.Get("Retry-After-Ms") != want.retryMs || res.Header.Get("Retry-After") != want.retrySec {
			t.Errorf("%d: Retry-After-Ms %q Retry-After %q", want.status, res.Header.Get("Retry-After-Ms"), res.Header.Get("Retry-After"))
		}
		e, _ := decode(t, res)["error"].(map[string]any)
		code, _ := e["code"].(string)
		if e["message"] != want.msg || e["type"] != want.typ || code != want.code {
			t.Errorf("%d: error body %v", want.status, e)
		}
	}
	res := post(t, srv.URL(), `{"model":"m","messages":[]}`)
	if b, _ := io.ReadAll(res.Body); res.StatusCode != 200 || string(b) != "not json" {
		t.Errorf("raw body: %d %q", res.StatusCode, b)
	}

	// Requests the server cannot take.
	res = post(t, srv.URL(), `{"model":`)
	if res.StatusCode != 400 {
		t.Errorf("malformed JSON: status %d", res.StatusCode)
	}
	res, err := http.Get(srv.URL() + "/models")
	if err != nil {
		t.Fatal(err)
	}
	_ = res.Body.Close()
	if res.StatusCode != 404 {
		t.Errorf("unknown path: status %d", res.StatusCode)
	}
}

func TestLLMServerScriptAndFallback(t *testing.T) {
	srv := testutil.NewLLMServer(t)
	srv.Script(testutil.LLMReply("first"), testutil.LLMReply("second"))
	if srv.Pending() != 2 {
		t.Errorf("pending %d", srv.Pending())
	}
	for _, want := range []string{"first", "second"} {
		v := decode(t, post(t, srv.URL(), `{"model":"m","messages":[]}`))
		if got := v["choices"].([]any)[0].(map[string]any)["message"].(map[string]any)["content"]; got != want {
			t.Errorf("content %v, want %s", got, want)
		}
	}
	// Used up: a clear error the client will not retry.
	res := post(t, srv.URL(), `{"model":"m","messages":[]}`)
	body, _ := io.ReadAll(res.Body)
	if res.StatusCode != 500 || res.Header.Get("X-Should-Retry") != "false" || !bytes.Contains(body, []byte("no scripted step left for request 3")) {
		t.Errorf("exhausted script: %d %s", res.StatusCode, body)
	}

	srv.SetFallback(func(r testutil.LLMRequest) testutil.LLMStep {
		return testutil.LLMReply("fallback for " + r.Model)
	})
	v := decode(t, post(t, srv.URL(), `{"model":"m9","messages":[]}`))
	if got := v["choices"].([]any)[0].(map[string]any)["message"].(map[string]any)["content"]; got != "fallback for m9" {
		t.Errorf("fallback answered %v", got)
	}
	// The script goes before the fallback.
	srv.Script(testutil.LLMReply("scripted"))
	v = decode(t, post(t, srv.URL(), `{"model":"m","messages":[]}`))
	if got := v["choices"].([]any)[0].(map[string]any)["message"].(map[string]any)["content"]; got != "scripted" {
		t.Errorf("got %v, want the scripted step", got)
	}
	if n := len(srv.Requests()); n != 5 {
		t.Errorf("%d requests recorded, want 5", n)
	}
}

func TestLLMServerDelayEndsWithClient(t *testing.T) {
	srv := testutil.NewLLMServer(t)
	srv.Script(testutil.LLMStep{Text: "late", Delay: time.Minute})
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, srv.URL()+"/chat/completions", strings.NewReader(`{"model":"m","messages":[]}`))
	if err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	res, err := http.DefaultClient.Do(req)
	if err == nil {
		_ = res.Body.Close()
		t.Fatal("answered despite the delay")
	}
	if !errors.Is(err, context.DeadlineExceeded) || time.Since(start) > 5*time.Second {
		t.Errorf("err %v after %s", err, time.Since(start))
	}
	// The cleanup does not wait out the minute either: the test would
	// take that long.
}

func TestLLMServerConcurrent(t *testing.T) {
	srv := testutil.NewLLMServer(t)
	srv.SetFallback(func(r testutil.LLMRequest) testutil.LLMStep {
		return testutil.LLMReply(r.Messages[0].Content)
	})
	var wg sync.WaitGroup
	for i := range 20 {
		wg.Go(func() {
			body := fmt.Sprintf(`{"model":"m","messages":[{"role":"user","content":"n%d"}],"stream":%v}`, i, i%2 == 0)
			res, err := http.Post(srv.URL()+"/chat/completions", "application/json", strings.NewReader(body))
			if err != nil {
				t.Error(err)
				return
			}
			_, _ = io.Copy(io.Discard, res.Body)
			_ = res.Body.Close()
		})
	}
	wg.Wait()
	if n := len(srv.Requests()); n != 20 {
		t.Errorf("%d requests recorded", n)
	}
}

// TestLLMServerWithOpenAIClient checks the server against the official
// client directly: what it sends must parse there.
func TestLLMServerWithOpenAIClient(t *testing.T) {
	srv := testutil.NewLLMServer(t)
	call := testutil.LLMToolCall{ID: "call_9", Name: "get_weather", Arguments: `{"city":"Tokyo"}`}
	srv.Script(
		testutil.LLMCall(call),
		testutil.LLMStep{Text: "It is sunny in Tokyo.", ToolCalls: []testutil.LLMToolCall{call}},
		testutil.LLMFail(http.StatusUnauthorized, "bad key"),
	)
	client := openai.NewClient(option.WithBaseURL(srv.URL()), option.WithAPIKey("k"), option.WithMaxRetries(0))
	params := openai.ChatCompletionNewParams{
		Model:    "m",
		Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage("weather in Tokyo?")},
	}
	ctx := context.Background()

	cc, err := client.Chat.Completions.New(ctx, params)
	if err != nil {
		t.Fatal(err)
	}
	tc := cc.Choices[0].Message.ToolCalls
	if len(tc) != 1 || tc[0].ID != "call_9" || tc[0].Function.Name != "get_weather" || tc[0].Function.Arguments != `{"city":"Tokyo"}` {
		t.Errorf("tool calls %+v", tc)
	}

	stream := client.Chat.Completions.NewStreaming(ctx, params)
	var acc openai.ChatCompletionAccumulator
	for stream.Next() {
		acc.AddChunk(stream.Current())
	}
	if err := stream.Err(); err != nil {
		t.Fatal(err)
	}
	_ = stream.Close()
	if len(acc.Choices) != 1 {
		t.Fatalf("accumulated %+v", acc.ChatCompletion)
	}
	msg := acc.Choices[0].Message
	if msg.Content != "It is sunny in Tokyo." || len(msg.ToolCalls) != 1 || msg.ToolCalls[0].Function.Arguments != `{"city":"Tokyo"}` {
		t.Errorf("accumulated message %+v", msg)
	}

	_, err = client.Chat.Completions.New(ctx, params)
	var apiErr *openai.Error
	if !errors.As(err, &apiErr) || apiErr.StatusCode != 401 || apiErr.Message != "bad key" || apiErr.Code != "invalid_api_key" {
		t.Errorf("err %v", err)
	}
}
