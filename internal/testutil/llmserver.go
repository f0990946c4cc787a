package testutil

import (
	"cmp"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
	"unicode/utf8"
)

// LLMServer is a scripted OpenAI-compatible Chat Completions server for
// tests: real HTTP on 127.0.0.1 and real OpenAI JSON, so that it drives the
// real client code. It serves POST /v1/chat/completions (and
// /chat/completions). Each request takes the next [LLMStep] of the script;
// when the script is used up, the fallback (see SetFallback) answers, and
// without one the request fails with HTTP 500 and a message saying so. A
// request that asks to stream ("stream": true) gets its answer as
// server-sent events, chunk by chunk, ending with "data: [DONE]". Every
// request is recorded. It is safe for concurrent use.
type LLMServer struct {
	srv  *httptest.Server
	done chan struct{} // closed when the server stops, to end waits

	mu       sync.Mutex
	script   []LLMStep
	fallback func(LLMRequest) LLMStep
	requests []LLMRequest
}

// LLMStep is the answer to one request: an error when Status is 400 or more,
// else a completion with Text and/or ToolCalls.
type LLMStep struct {
	// Text is the answer's content.
	Text string
	// Reasoning, when set, is sent as the message's "reasoning_content",
	// as reasoning models served by vLLM or llama.cpp do.
	Reasoning string
	// ToolCalls are the answer's tool calls; an empty ID gets
	// "call_<n>".
	ToolCalls []LLMToolCall
	// FinishReason defaults to "tool_calls" with tool calls, else "stop".
	FinishReason string
	// Model defaults to the model the request asked for.
	Model string
	// PromptTokens and CompletionTokens are the usage reported; zero means
	// an estimate of one token per four characters.
	PromptTokens, CompletionTokens int

	// Chunks, when streaming, splits Text into these pieces (which should
	// add up to Text); by default Text goes word by word and tool-call
	// arguments in fragments of at most 8 bytes.
	Chunks []string
	// ChunkDelay, when streaming, is the wait before each chunk after the
	// first piece (of reasoning, text or a tool call).
	ChunkDelay time.Duration
	// StreamError, when streaming, ends the stream after the content with
	// an error event carrying this message instead of the finish chunk.
	StreamError string

	// Status, when 400 or more, answers with this HTTP status and an
	// OpenAI-shaped error body.
	Status int
	// Error is the error's message; ErrorType and ErrorCode its "type"
	// and "code" (defaults fit the status, as OpenAI's do).
	Error, ErrorType, ErrorCode string
	// RetryAfter, when set, is sent as Retry-After-Ms and Retry-After
	// (whole seconds, rounded up).
	RetryAfter time.Duration

	// Body, when set, is sent as it is (with Status, default 200, and
	// Content-Type application/json) in place of any answer, to test
	// malformed responses.
	Body string
	// Delay is a wait before answering (the response headers included). It
	// ends early when the client goes away or the server stops.
	Delay time.Duration
}

// LLMToolCall is one tool call in an answer or in a recorded request.
type LLMToolCall struct {
	ID, Name string
	// Arguments is the JSON text of the arguments, as the API carries it.
	Arguments string
}

// LLMRequest is one request as the server received it.
type LLMRequest struct {
	Path        string
	Header      http.Header
	Body        json.RawMessage // the raw JSON body
	Model       string
	Messages    []LLMMessage
	Tools       []LLMTool
	Stream      bool
	StreamUsage bool // stream_options.include_usage
	Temperature *float64
	MaxTokens   int // max_tokens or max_completion_tokens
}

// LLMMessage is one message of a recorded request. Content joins the text
// parts of a message sent as parts.
type LLMMessage struct {
	Role       string
	Content    string
	Name       string
	ToolCallID string
	ToolCalls  []LLMToolCall
}

// LLMTool is one function tool of a recorded request; Parameters is its
// schema as sent.
type LLMTool struct {
	Name        string
	Description string
	Parameters  json.RawMessage
}

// NewLLMServer starts a server on 127.0.0.1 and stops it when the test ends.
func NewLLMServer(t testing.TB) *LLMServer {
	t.Helper()
	s := &LLMServer{done: make(chan struct{})}
	s.srv = httptest.NewServer(http.HandlerFunc(s.serveHTTP))
	t.Cleanup(func() {
		close(s.done)
		s.srv.CloseClientConnections()
		s.srv.Close()
	})
	return s
}

// URL returns the base URL to give an OpenAI client, ending in /v1.
func (s *LLMServer) URL() string { return s.srv.URL + "/v1" }

// Script appends steps to the script.
func (s *LLMServer) Script(steps ...LLMStep) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.script = append(s.script, steps...)
}

// SetFallback sets the function that answers requests once the script is
// used up (nil for none). It is called on the request's goroutine, possibly
// for several requests at once.
func (s *LLMServer) SetFallback(f func(LLMRequest) LLMStep) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.fallback = f
}

// Requests returns the requests received so far, in order of arrival.
func (s *LLMServer) Requests() []LLMRequest {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]LLMRequest(nil), s.requests...)
}

// Pending returns how many steps of the script are still unused.
func (s *LLMServer) Pending() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.script)
}

// LLMReply is a step answering with text.
func LLMReply(text string) LLMStep { return LLMStep{Text: text} }

// LLMCall is a step answering with tool calls.
func LLMCall(calls ...LLMToolCall) LLMStep { return LLMStep{ToolCalls: calls} }

// LLMFail is a step answering with an HTTP error status.
func LLMFail(status int, message string) LLMStep { return LLMStep{Status: status, Error: message} }

// wire types: the OpenAI JSON the server reads.
type llmWireRequest struct {
	Model         string           `json:"model"`
	Messages      []llmWireMessage `json:"messages"`
	Tools         []llmWireTool    `json:"tools"`
	Stream        bool             `json:"stream"`
	StreamOptions *struct {
		IncludeUsage bool `json:"include_usage"`
	} `json:"stream_options"`
	Temperature         *float64 `json:"temperature"`
	MaxTokens           int      `json:"max_tokens"`
	MaxCompletionTokens int      `json:"max_completion_tokens"`
}

type llmWireMessage struct {
	Role       string          `json:"role"`
	Content    json.RawMessage `json:"content"`
	Name       string          `json:"name"`
	ToolCallID string          `json:"tool_call_id"`
	ToolCalls  []struct {
		ID       string `json:"id"`
		Function struct {
			Name      string `json:"name"`
			Arguments string `json:"arguments"`
		} `json:"function"`
	} `json:"tool_calls"`
}

type llmWireTool struct {
	Type     string `json:"type"`
	Function struct {
		Name        string          `json:"name"`
		Description string          `json:"description"`
		Parameters  json.RawMessage `json:"parameters"`
	} `json:"function"`
}

func (s *LLMServer) serveHTTP(w http.ResponseWriter, r *http.Request) {
	if r.URL.Path != "/v1/chat/completions" && r.URL.Path != "/chat/completions" {
		llmWriteError(w, LLMStep{Status: http.StatusNotFound, Error: "no route " + r.URL.Path})
		return
	}
	if r.Method != http.MethodPost {
		llmWriteError(w, LLMStep{Status: http.StatusMethodNotAllowed, Error: "use POST"})
		return
	}
	var body json.RawMessage
	var wr llmWireRequest
	if err := json.NewDecoder(http.MaxBytesReader(w, r.Body, 16<<20)).Decode(&body); err != nil {
		llmWriteError(w, LLMStep{Status: http.StatusBadRequest, Error: "request body: " + err.Error()})
		return
	}
	if err := json.Unmarshal(body, &wr); err != nil {
		llmWriteError(w, LLMStep{Status: http.StatusBadRequest, Error: "request body: " + err.Error()})
		return
	}
	req := llmRecord(r, body, wr)

	s.mu.Lock()
	n := len(s.requests) + 1
	s.requests = append(s.requests, req)
	var step LLMStep
	found := true
	if len(s.script) > 0 {
		step, s.script = s.script[0], s.script[1:]
	} else if f := s.fallback; f != nil {
		s.mu.Unlock()
		step = f(req)
		s.mu.Lock()
	} else {
		found = false
	}
	s.mu.Unlock()
	if !found {
		w.Header().Set("X-Should-Retry", "false")
		llmWriteError(w, LLMStep{Status: http.StatusInternalServerError, ErrorType: "script_exhausted",
			Error: fmt.Sprintf("testutil.LLMServer: no scripted step left for request %d", n)})
		return
	}

	if !s.wait(r, step.Delay) {
		return
	}
	switch {
	case step.Body != "":
		status := step.Status
		if status == 0 {
			status = http.StatusOK
		}
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(status)
		_, _ = w.Write([]byte(step.Body))
	case step.Status >= 400:
		llmWriteError(w, step)
	case wr.Stream:
		s.stream(w, r, n, req, step)
	default:
		llmWriteJSON(w, http.StatusOK, llmCompletion(n, req, step))
	}
}

// wait waits d, or less when the client goes away or the server stops; it
// reports whether the whole wait passed.
func (s *LLMServer) wait(r *http.Request, d time.Duration) bool {
	if d <= 0 {
		return true
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-r.Context().Done():
	case <-s.done:
	}
	return false
}

func llmRecord(r *http.Request, body json.RawMessage, wr llmWireRequest) LLMRequest {
	req := LLMRequest{
		Path:        r.URL.Path,
		Header:      r.Header.Clone(),
		Body:        body,
		Model:       wr.Model,
		Stream:      wr.Stream,
		StreamUsage: wr.StreamOptions != nil && wr.StreamOptions.IncludeUsage,
		Temperature: wr.Temperature,
		MaxTokens:   max(wr.MaxTokens, wr.MaxCompletionTokens),
	}
	for _, m := range wr.Messages {
		lm := LLMMessage{Role: m.Role, Content: llmContentText(m.Content), Name: m.Name, ToolCallID: m.ToolCallID}
		for _, tc := range m.ToolCalls {
			lm.ToolCalls = append(lm.ToolCalls, LLMToolCall{ID: tc.ID, Name: tc.Function.Name, Arguments: tc.Function.Arguments})
		}
		req.Messages = append(req.Messages, lm)
	}
	for _, t := range wr.Tools {
		req.Tools = append(req.Tools, LLMTool{Name: t.Function.Name, Description: t.Function.Description, Parameters: t.Function.Parameters})
	}
	return req
}

// llmContentText reads a message's content: a string, or parts of which the
// text ones count.
func llmContentText(raw json.RawMessage) string {
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s
	}
	var parts []struct {
		Type string `json:"type"`
		Text string `json:"text"`
	}
	if json.Unmarshal(raw, &parts) == nil {
		var b strings.Builder
		for _, p := range parts {
			b.WriteString(p.Text)
		}
		return b.String()
	}
	return ""
}

func llmWriteJSON(w http.ResponseWriter, status int, v any) {
	b, err := json.Marshal(v)
	if err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_, _ = w.Write(b)
}

// llmWriteError answers with an OpenAI-shaped error.
func llmWriteError(w http.ResponseWriter, step LLMStep) {
	typ, code := step.ErrorType, step.ErrorCode
	if typ == "" {
		switch {
		case step.Status == http.StatusUnauthorized:
			typ = "invalid_request_error"
			code = cmp.Or(code, "invalid_api_key")
		case step.Status == http.StatusNotFound:
			typ = "invalid_request_error"
			code = cmp.Or(code, "model_not_found")
		case step.Status == http.StatusTooManyRequests:
			typ = "requests"
			code = cmp.Or(code, "rate_limit_exceeded")
		case step.Status >= 500:
			typ = "server_error"
		default:
			typ = "invalid_request_error"
		}
	}
	if step.RetryAfter > 0 {
		w.Header().Set("Retry-After-Ms", strconv.FormatInt(step.RetryAfter.Milliseconds(), 10))
		secs := (step.RetryAfter + time.Second - 1) / time.Second
		w.Header().Set("Retry-After", strconv.FormatInt(int64(secs), 10))
	}
	var codeValue any
	if code != "" {
		codeValue = code
	}
	msg := step.Error
	if msg == "" {
		msg = http.StatusText(step.Status)
	}
	llmWriteJSON(w, step.Status, map[string]any{
		"error": map[string]any{"message": msg, "type": typ, "param": nil, "code": codeValue},
	})
}

// llmUsage is the step's usage, or an estimate.
func llmUsage(req LLMRequest, step LLMStep) map[string]int {
	prompt, completion := step.PromptTokens, step.CompletionTokens
	if prompt == 0 {
		n := 0
		for _, m := range req.Messages {
			n += len(m.Content) + 4
		}
		prompt = (n + 3) / 4
	}
	if completion == 0 {
		n := len(step.Text)
		for _, tc := range step.ToolCalls {
			n += len(tc.Name) + len(tc.Arguments)
		}
		completion = max(1, (n+3)/4)
	}
	return map[string]int{"prompt_tokens": prompt, "completion_tokens": completion, "total_tokens": prompt + completion}
}

func llmFinish(step LLMStep) string {
	switch {
	case step.FinishReason != "":
		return step.FinishReason
	case len(step.ToolCalls) > 0:
		return "tool_calls"
	}
	return "stop"
}

func llmCallID(tc LLMToolCall, i int) string {
	if tc.ID != "" {
		return tc.ID
	}
	return "call_" + strconv.Itoa(i+1)
}

func llmModel(req LLMRequest, step LLMStep) string {
	if step.Model != "" {
		return step.Model
	}
	return req.Model
}

// llmCompletion is the answer to a request that does not stream.
func llmCompletion(n int, req LLMRequest, step LLMStep) map[string]any {
	msg := map[string]any{"role": "assistant", "content": nil, "refusal": nil}
	if step.Text != "" || len(step.ToolCalls) == 0 {
		msg["content"] = step.Text
	}
	if step.Reasoning != "" {
		msg["reasoning_content"] = step.Reasoning
	}
	if len(step.ToolCalls) > 0 {
		var calls []map[string]any
		for i, tc := range step.ToolCalls {
			calls = append(calls, map[string]any{
				"id": llmCallID(tc, i), "type": "function",
				"function": map[string]any{"name": tc.Name, "arguments": tc.Arguments},
			})
		}
		msg["tool_calls"] = calls
	}
	return map[string]any{
		"id":      "chatcmpl-" + strconv.Itoa(n),
		"object":  "chat.completion",
		"created": time.Now().Unix(),
		"model":   llmModel(req, step),
		"choices": []map[string]any{{"index": 0, "message": msg, "finish_reason": llmFinish(step), "logprobs": nil}},
		"usage":   llmUsage(req, step),
	}
}

// stream answers as server-sent events: a role chunk, the reasoning, the
// text, the tool calls (name first, then argument fragments), the finish
// chunk, a usage chunk when asked for, and [DONE].
func (s *LLMServer) stream(w http.ResponseWriter, r *http.Request, n int, req LLMRequest, step LLMStep) {
	flusher, _ := w.(http.Flusher)
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-cache")
	w.WriteHeader(http.StatusOK)

	sent := 0
	send := func(v any) bool {
		// The role chunk and the first piece go at once.
		if sent > 1 && !s.wait(r, step.ChunkDelay) {
			return false
		}
		sent++
		b, err := json.Marshal(v)
		if err != nil {
			return false
		}
		if _, err := fmt.Fprintf(w, "data: %s\n\n", b); err != nil {
			return false
		}
		if flusher != nil {
			flusher.Flush()
		}
		return true
	}
	chunk := func(delta map[string]any, finish any) map[string]any {
		return map[string]any{
			"id":      "chatcmpl-" + strconv.Itoa(n),
			"object":  "chat.completion.chunk",
			"created": time.Now().Unix(),
			"model":   llmModel(req, step),
			"choices": []map[string]any{{"index": 0, "delta": delta, "finish_reason": finish, "logprobs": nil}},
		}
	}

	if !send(chunk(map[string]any{"role": "assistant", "content": ""}, nil)) {
		return
	}
	if step.Reasoning != "" && !send(chunk(map[string]any{"reasoning_content": step.Reasoning}, nil)) {
		return
	}
	pieces := step.Chunks
	if pieces == nil && step.Text != "" {
		pieces = strings.SplitAfter(step.Text, " ")
	}
	for _, p := range pieces {
		if p != "" && !send(chunk(map[string]any{"content": p}, nil)) {
			return
		}
	}
	for i, tc := range step.ToolCalls {
		head := map[string]any{"index": i, "id": llmCallID(tc, i), "type": "function",
			"function": map[string]any{"name": tc.Name, "arguments": ""}}
		if !send(chunk(map[string]any{"tool_calls": []any{head}}, nil)) {
			return
		}
		for args := tc.Arguments; args != ""; {
			k := min(8, len(args))
			for k < len(args) && !utf8.RuneStart(args[k]) {
				k++
			}
			frag := map[string]any{"index": i, "function": map[string]any{"arguments": args[:k]}}
			if !send(chunk(map[string]any{"tool_calls": []any{frag}}, nil)) {
				return
			}
			args = args[k:]
		}
	}
	if step.StreamError != "" {
		send(map[string]any{"error": map[string]any{"message": step.StreamError, "type": "server_error", "code": nil}})
		return
	}
	if !send(chunk(map[string]any{}, llmFinish(step))) {
		return
	}
	if req.StreamUsage {
		u := map[string]any{
			"id": "chatcmpl-" + strconv.Itoa(n), "object": "chat.completion.chunk", "created": time.Now().Unix(),
			"model": llmModel(req, step), "choices": []any{}, "usage": llmUsage(req, step),
		}
		if !send(u) {
			return
		}
	}
	if _, err := fmt.Fprint(w, "data: [DONE]\n\n"); err == nil && flusher != nil {
		flusher.Flush()
	}
}
