package llm

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	openai "github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
	"github.com/openai/openai-go/v3/packages/param"
	"github.com/openai/openai-go/v3/packages/respjson"
	"github.com/openai/openai-go/v3/packages/ssestream"
	"github.com/openai/openai-go/v3/shared"
)

// openAIBaseURL is the API root when Config.BaseURL is empty.
const openAIBaseURL = "https://api.openai.com/v1"

// maxErrorBody bounds how much of an error answer is read.
const maxErrorBody = 64 << 10

// errIdle is the cause with which a stream is cancelled when no piece came
// within the timeout.
var errIdle = errors.New("llm: stream idle")

// OpenAI is the [Provider] for any OpenAI-compatible Chat Completions
// endpoint, built on the official openai-go client. Create it with
// [NewOpenAI] (or [FromEnv]); it is safe for concurrent use.
type OpenAI struct {
	client  openai.Client
	model   string
	where   string        // the base URL without credentials, for errors
	timeout time.Duration // per attempt or stream piece; 0 means none
	total   time.Duration // the whole answer; 0 means none
	maxBody int64         // bytes of one answer as sent
	// completionTokens sends max_completion_tokens (which OpenAI's newer
	// models require) instead of max_tokens (which every compatible server
	// knows).
	completionTokens bool
}

// NewOpenAI returns a provider for the endpoint cfg describes (cfg.Provider
// is ignored). It makes no request: a bad key or model shows on the first
// call, as [ErrUnauthorized] or [ErrNotFound].
func NewOpenAI(cfg Config) (*OpenAI, error) {
	base := strings.TrimSpace(cfg.BaseURL)
	if base == "" {
		base = openAIBaseURL
	}
	u, err := url.Parse(base)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("llm: base URL %q: want http(s)://host[:port][/path], such as http://localhost:11434/v1", base)
	}
	p := &OpenAI{
		model:            cfg.Model,
		where:            u.Scheme + "://" + u.Host + strings.TrimRight(u.Path, "/"),
		timeout:          cfg.Timeout,
		completionTokens: u.Host == "api.openai.com",
	}
	if p.model == "" {
		p.model = DefaultModel
	}
	if p.timeout == 0 {
		p.timeout = DefaultTimeout
	} else if p.timeout < 0 {
		p.timeout = 0
	}
	p.total = cmp.Or(cfg.MaxAnswerTime, DefaultMaxAnswerTime)
	if p.total < 0 {
		p.total = 0
	}
	p.maxBody = cmp.Or(cfg.MaxResponseBytes, DefaultMaxResponseBytes)
	retries := cfg.MaxRetries
	if retries == 0 {
		retries = DefaultMaxRetries
	} else if retries < 0 {
		retries = 0
	}
	// Every setting is given explicitly, so that the client's own reading
	// of OPENAI_BASE_URL and OPENAI_API_KEY cannot override cfg (an empty
	// key sends no Authorization header).
	opts := []option.RequestOption{
		option.WithBaseURL(base),
		option.WithAPIKey(cfg.APIKey),
		option.WithMaxRetries(retries),
	}
	if p.timeout > 0 {
		opts = append(opts, option.WithRequestTimeout(p.timeout))
	}
	if cfg.HTTPClient != nil {
		opts = append(opts, option.WithHTTPClient(cfg.HTTPClient))
	}
	p.client = openai.NewClient(opts...)
	return p, nil
}

// Name returns "openai".
func (p *OpenAI) Name() string { return "openai" }

// Model returns the model asked for when a request names none.
func (p *OpenAI) Model() string { return p.model }

// Complete implements [Provider].
func (p *OpenAI) Complete(ctx context.Context, req Request) (*Response, error) {
	params, names, err := p.params(req)
	if err != nil {
		return nil, err
	}
	ctx, cancel := p.answerContext(ctx)
	defer cancel(nil)
	c := capture{maxBody: p.maxBody}
	cc, err := p.client.Chat.Completions.New(ctx, params, option.WithMiddleware(c.middleware))
	if err != nil {
		if e := p.overAnswer(ctx, &c, params.Model); e != nil {
			return nil, e
		}
		return nil, p.fail(ctx, err, &c, params.Model)
	}
	if len(cc.Choices) == 0 {
		return nil, fmt.Errorf("%w from %s: the answer has no choices", ErrBadResponse, p.at(params.Model))
	}
	choice := cc.Choices[0]
	r := &Response{
		Content:      choice.Message.Content,
		Reasoning:    reasoningOf(choice.Message.JSON.ExtraFields),
		FinishReason: FinishReason(choice.FinishReason),
		Usage:        usageOf(cc.Usage),
		Model:        cc.Model,
	}
	for i, tc := range choice.Message.ToolCalls {
		if tc.Type != "" && tc.Type != "function" {
			continue // a custom tool, which no request of ours offers
		}
		id := tc.ID
		if id == "" {
			id = "call_" + strconv.Itoa(i)
		}
		r.ToolCalls = append(r.ToolCalls, ToolCall{
			ID:        id,
			Name:      names.caller(tc.Function.Name),
			Arguments: arguments(tc.Function.Arguments),
		})
	}
	settle(r)
	return r, nil
}

// Stream implements [Provider]. The timeout bounds the wait for each piece
// rather than the whole answer, so a long answer that keeps coming is never
// cut off.
func (p *OpenAI) Stream(ctx context.Context, req Request, onDelta func(Delta)) (*Response, error) {
	params, names, err := p.params(req)
	if err != nil {
		return nil, err
	}
	params.StreamOptions = openai.ChatCompletionStreamOptionsParam{IncludeUsage: param.NewOpt(true)}

	actx, cancelAnswer := p.answerContext(ctx)
	defer cancelAnswer(nil)
	sctx, cancel := context.WithCancelCause(actx)
	defer cancel(nil)
	var idle *time.Timer
	if p.timeout > 0 {
		idle = time.AfterFunc(p.timeout, func() { cancel(errIdle) })
		defer idle.Stop()
	}
	c := capture{maxBody: p.maxBody}
	stream := p.client.Chat.Completions.NewStreaming(sctx, params,
		option.WithMiddleware(c.middleware), option.WithRequestTimeout(0))
	defer func() { _ = stream.Close() }()

	acc := accumulator{names: names, emit: onDelta, byWire: map[int64]int{}}
	for stream.Next() {
		if idle != nil {
			idle.Stop()
		}
		acc.add(stream.Current())
		if idle != nil {
			idle.Reset(p.timeout)
		}
	}
	if err := stream.Err(); err != nil {
		if e := p.overAnswer(actx, &c, params.Model); e != nil && ctx.Err() == nil {
			return nil, e
		}
		if ctx.Err() == nil && errors.Is(context.Cause(sctx), errIdle) {
			return nil, fmt.Errorf("%w: %s sent no piece of the answer within %s", ErrTimeout, p.at(params.Model), p.timeout)
		}
		return nil, p.fail(ctx, err, &c, params.Model)
	}
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("llm: openai model %s: %w", params.Model, err)
	}
	if acc.chunks == 0 {
		return nil, fmt.Errorf("%w from %s: the stream ended without a chunk", ErrBadResponse, p.at(params.Model))
	}
	return acc.response(), nil
}

// params translates a request into the client's parameters, with the map
// between the caller's tool names and those sent.
func (p *OpenAI) params(req Request) (openai.ChatCompletionNewParams, *toolNames, error) {
	var params openai.ChatCompletionNewParams
	params.Model = shared.ChatModel(req.Model)
	if req.Model == "" {
		params.Model = shared.ChatModel(p.model)
	}

	var all []string
	for _, t := range req.Tools {
		all = append(all, t.Name)
	}
	for _, m := range req.Messages {
		for _, tc := range m.ToolCalls {
			all = append(all, tc.Name)
		}
	}
	names := newToolNames(all)

	for i, m := range req.Messages {
		switch m.Role {
		case RoleSystem:
			params.Messages = append(params.Messages, openai.SystemMessage(m.Content))
		case RoleUser:
			um := openai.ChatCompletionUserMessageParam{}
			um.Content.OfString = param.NewOpt(m.Content)
			if m.Name != "" {
				um.Name = param.NewOpt(speakerName(m.Name))
			}
			params.Messages = append(params.Messages, openai.ChatCompletionMessageParamUnion{OfUser: &um})
		case RoleAssistant:
			am := openai.ChatCompletionAssistantMessageParam{}
			if m.Content != "" || len(m.ToolCalls) == 0 {
				am.Content.OfString = param.NewOpt(m.Content)
			}
			for _, tc := range m.ToolCalls {
				am.ToolCalls = append(am.ToolCalls, openai.ChatCompletionMessageToolCallUnionParam{
					OfFunction: &openai.ChatCompletionMessageFunctionToolCallParam{
						ID: tc.ID,
						Function: openai.ChatCompletionMessageFunctionToolCallFunctionParam{
							Name:      names.wire(tc.Name),
							Arguments: wireArguments(tc.Arguments),
						},
					},
				})
			}
			params.Messages = append(params.Messages, openai.ChatCompletionMessageParamUnion{OfAssistant: &am})
		case RoleTool:
			params.Messages = append(params.Messages, openai.ToolMessage(m.Content, m.ToolCallID))
		default:
			return params, nil, fmt.Errorf("llm: message %d: unknown role %q", i, m.Role)
		}
	}

	for _, t := range req.Tools {
		schema := bytes.TrimSpace(t.Parameters)
		if len(schema) == 0 {
			schema = []byte(`{"type":"object","properties":{}}`)
		} else if schema[0] != '{' || !json.Valid(schema) {
			return params, nil, fmt.Errorf("llm: tool %q: parameters must be a JSON Schema object", t.Name)
		}
		def, err := json.Marshal(struct {
			Name        string          `json:"name"`
			Description string          `json:"description,omitempty"`
			Parameters  json.RawMessage `json:"parameters"`
		}{names.wire(t.Name), t.Description, schema})
		if err != nil {
			return params, nil, fmt.Errorf("llm: tool %q: %w", t.Name, err)
		}
		// The definition goes out as written, keeping the order of the
		// schema's properties, which the model reads.
		params.Tools = append(params.Tools, openai.ChatCompletionToolUnionParam{
			OfFunction: &openai.ChatCompletionFunctionToolParam{
				Function: param.Override[shared.FunctionDefinitionParam](json.RawMessage(def)),
			},
		})
	}

	if req.Temperature != nil {
		params.Temperature = param.NewOpt(*req.Temperature)
	}
	if req.MaxTokens > 0 {
		if p.completionTokens {
			params.MaxCompletionTokens = param.NewOpt(int64(req.MaxTokens))
		} else {
			params.MaxTokens = param.NewOpt(int64(req.MaxTokens))
		}
	}
	return params, names, nil
}

// fail turns an error of the client into one of this package's.
func (p *OpenAI) fail(ctx context.Context, err error, c *capture, model shared.ChatModel) error {
	if ctxErr := ctx.Err(); ctxErr != nil {
		return fmt.Errorf("llm: openai model %s: %w", model, ctxErr)
	}
	at := p.at(model)
	var sdkErr *openai.Error
	if c.status >= 400 || errors.As(err, &sdkErr) {
		e := c.apiError()
		if e.Status == 0 && sdkErr != nil {
			e.Status = sdkErr.StatusCode
		}
		return fmt.Errorf("llm: %s: %w%s", at, e, hint(e.Status, c.attempts))
	}
	var se *ssestream.StreamError
	if errors.As(err, &se) {
		return fmt.Errorf("llm: %s: %w", at, parseAPIError(0, se.Event.Data))
	}
	var ne net.Error
	if errors.Is(err, context.DeadlineExceeded) || (errors.As(err, &ne) && ne.Timeout()) {
		return fmt.Errorf("%w: %s gave no answer within %s", ErrTimeout, at, p.timeout)
	}
	if c.status >= 200 && c.status < 300 {
		return fmt.Errorf("%w from %s: %v", ErrBadResponse, at, err)
	}
	return fmt.Errorf("llm: %s: %w", at, err)
}

// at names the model and server in errors.
func (p *OpenAI) at(model shared.ChatModel) string {
	return fmt.Sprintf("openai model %s at %s", model, p.where)
}

// hint says what to do about an error status.
func hint(status, attempts int) string {
	switch {
	case status == http.StatusUnauthorized || status == http.StatusForbidden:
		return "; check the API key (" + EnvAPIKey + ")"
	case status == http.StatusNotFound:
		return "; check the model (--model, " + EnvModel + ") and the base URL (--base-url, " + EnvBaseURL + ")"
	case status == http.StatusTooManyRequests || status >= 500:
		if attempts > 1 {
			return fmt.Sprintf("; gave up after %d attempts", attempts)
		}
	}
	return ""
}

// capture is a client middleware that remembers the last attempt's answer,
// so that errors can be reported from what the server actually said.
// Attempts of one call run one after another, so it needs no lock.
type capture struct {
	attempts int
	status   int
	header   http.Header
	body     []byte // of an error answer
	maxBody  int64  // what a good answer's body may hold; 0: no bound
	tooLarge bool   // an answer's body went past maxBody
}

// errAnswerTime is the cause of an answer's context ended by MaxAnswerTime.
var errAnswerTime = errors.New("the answer took too long")

// answerContext bounds one whole answer by MaxAnswerTime.
func (p *OpenAI) answerContext(ctx context.Context) (context.Context, context.CancelCauseFunc) {
	ctx, cancel := context.WithCancelCause(ctx)
	if p.total > 0 {
		t := time.AfterFunc(p.total, func() { cancel(errAnswerTime) })
		return ctx, func(cause error) { t.Stop(); cancel(cause) }
	}
	return ctx, cancel
}

// overAnswer is the error of an answer cut off by its bounds (too large,
// too long), or nil.
func (p *OpenAI) overAnswer(ctx context.Context, c *capture, model string) error {
	switch {
	case c.tooLarge:
		return fmt.Errorf("%w: %s sent more than %d bytes for one answer", ErrTooLarge, p.at(model), p.maxBody)
	case errors.Is(context.Cause(ctx), errAnswerTime):
		return fmt.Errorf("%w: %s took longer than %s for one answer", ErrTimeout, p.at(model), p.total)
	}
	return nil
}

// cappedBody ends an answer's body with an error past its bound, so that a
// model that sends without end costs no more than the bound.
type cappedBody struct {
	io.ReadCloser
	left int64
	over *bool
}

func (b *cappedBody) Read(p []byte) (int, error) {
	if b.left <= 0 {
		// At the bound: an answer that ends here is whole.
		var one [1]byte
		if n, err := b.ReadCloser.Read(one[:]); n == 0 && err != nil {
			return 0, err
		}
		*b.over = true
		return 0, ErrTooLarge
	}
	if int64(len(p)) > b.left {
		p = p[:b.left]
	}
	n, err := b.ReadCloser.Read(p)
	b.left -= int64(n)
	return n, err
}

func (c *capture) middleware(req *http.Request, next option.MiddlewareNext) (*http.Response, error) {
	c.attempts++
	res, err := next(req)
	c.status, c.header, c.body = 0, nil, nil
	if res == nil {
		return res, err
	}
	c.status, c.header = res.StatusCode, res.Header
	if res.StatusCode < 400 && res.Body != nil && c.maxBody > 0 {
		res.Body = &cappedBody{ReadCloser: res.Body, left: c.maxBody, over: &c.tooLarge}
	}
	if res.StatusCode >= 400 && res.Body != nil {
		b, _ := io.ReadAll(io.LimitReader(res.Body, maxErrorBody))
		_ = res.Body.Close()
		c.body = b
		res.Body = io.NopCloser(bytes.NewReader(b))
	}
	return res, err
}

// apiError builds the error for the last attempt's answer.
func (c *capture) apiError() *APIError {
	e := parseAPIError(c.status, c.body)
	e.RetryAfter = retryAfter(c.header)
	return e
}

// parseAPIError reads an error body: OpenAI's {"error": {"message", "type",
// "code"}}, the {"error": "text"} of some servers, {"message"} or {"detail"},
// or else whatever text it holds.
func parseAPIError(status int, body []byte) *APIError {
	e := &APIError{Status: status}
	var env struct {
		Error   json.RawMessage `json:"error"`
		Message string          `json:"message"`
		Detail  string          `json:"detail"`
	}
	if json.Unmarshal(body, &env) == nil {
		var obj struct {
			Message string          `json:"message"`
			Type    string          `json:"type"`
			Code    json.RawMessage `json:"code"`
		}
		var text string
		switch {
		case json.Unmarshal(env.Error, &obj) == nil:
			e.Message, e.Type = obj.Message, obj.Type
			var code string
			if json.Unmarshal(obj.Code, &code) == nil {
				e.Code = code
			} else if n, err := strconv.Atoi(string(obj.Code)); err == nil {
				e.Code = strconv.Itoa(n)
				if e.Status == 0 && n >= 400 && n < 600 {
					e.Status = n
				}
			}
		case json.Unmarshal(env.Error, &text) == nil:
			e.Message = text
		}
		if e.Message == "" {
			e.Message = env.Message
		}
		if e.Message == "" {
			e.Message = env.Detail
		}
	}
	if e.Message == "" {
		e.Message = excerpt(body)
	}
	return e
}

// excerpt is the start of a body, on one line.
func excerpt(body []byte) string {
	s := strings.Join(strings.Fields(string(body)), " ")
	if len(s) > 200 {
		s = s[:200]
		for !utf8.ValidString(s) {
			s = s[:len(s)-1]
		}
		s += "..."
	}
	return s
}

// retryAfter reads the wait a server asked for.
func retryAfter(h http.Header) time.Duration {
	if h == nil {
		return 0
	}
	if v := h.Get("Retry-After-Ms"); v != "" {
		if ms, err := strconv.ParseFloat(v, 64); err == nil && ms > 0 && ms < 1e9 {
			return time.Duration(ms * float64(time.Millisecond))
		}
	}
	if v := h.Get("Retry-After"); v != "" {
		if s, err := strconv.ParseFloat(v, 64); err == nil && s > 0 && s < 1e6 {
			return time.Duration(s * float64(time.Second))
		}
		if t, err := http.ParseTime(v); err == nil {
			if d := time.Until(t); d > 0 {
				return d
			}
		}
	}
	return 0
}

// accumulator assembles a streamed answer and reports its pieces.
type accumulator struct {
	names     *toolNames
	emit      func(Delta)
	chunks    int
	content   strings.Builder
	reasoning strings.Builder
	calls     []*callParts
	byWire    map[int64]int // the server's index → position in calls
	finish    string
	model     string
	usage     Usage
}

type callParts struct {
	id, name string
	args     strings.Builder
}

func (a *accumulator) add(ch openai.ChatCompletionChunk) {
	a.chunks++
	if a.model == "" {
		a.model = ch.Model
	}
	if ch.JSON.Usage.Valid() {
		a.usage = usageOf(ch.Usage)
	}
	for _, c := range ch.Choices {
		if c.Index != 0 {
			continue
		}
		if r := reasoningOf(c.Delta.JSON.ExtraFields); r != "" {
			a.reasoning.WriteString(r)
			a.send(Delta{Reasoning: r})
		}
		if c.Delta.Content != "" {
			a.content.WriteString(c.Delta.Content)
			a.send(Delta{Content: c.Delta.Content})
		}
		for _, tc := range c.Delta.ToolCalls {
			pos, ok := a.byWire[tc.Index]
			// A new id at a known index is a new call: some servers
			// send every call whole at index 0.
			if !ok || (tc.ID != "" && a.calls[pos].id != "" && tc.ID != a.calls[pos].id) {
				pos = len(a.calls)
				a.calls = append(a.calls, &callParts{})
				a.byWire[tc.Index] = pos
			}
			call := a.calls[pos]
			d := ToolCallDelta{Index: pos, Arguments: tc.Function.Arguments}
			if call.id == "" && tc.ID != "" {
				call.id, d.ID = tc.ID, tc.ID
			}
			if call.name == "" && tc.Function.Name != "" {
				call.name = a.names.caller(tc.Function.Name)
				d.Name = call.name
			}
			call.args.WriteString(tc.Function.Arguments)
			if d.ID != "" || d.Name != "" || d.Arguments != "" {
				a.send(Delta{ToolCall: &d})
			}
		}
		if c.FinishReason != "" {
			a.finish = c.FinishReason
		}
	}
}

func (a *accumulator) send(d Delta) {
	if a.emit != nil {
		a.emit(d)
	}
}

func (a *accumulator) response() *Response {
	r := &Response{
		Content:      a.content.String(),
		Reasoning:    a.reasoning.String(),
		FinishReason: FinishReason(a.finish),
		Usage:        a.usage,
		Model:        a.model,
	}
	for i, c := range a.calls {
		id := c.id
		if id == "" {
			id = "call_" + strconv.Itoa(i)
		}
		r.ToolCalls = append(r.ToolCalls, ToolCall{ID: id, Name: c.name, Arguments: arguments(c.args.String())})
	}
	settle(r)
	return r
}

// settle makes the finish reason agree with the tool calls: some servers
// say "stop", or nothing, for an answer that calls tools.
func settle(r *Response) {
	if len(r.ToolCalls) > 0 && (r.FinishReason == "" || r.FinishReason == FinishStop) {
		r.FinishReason = FinishToolCalls
	}
	if r.FinishReason == "" {
		r.FinishReason = FinishStop
	}
}

func usageOf(u openai.CompletionUsage) Usage {
	return Usage{
		PromptTokens:     int(u.PromptTokens),
		CompletionTokens: int(u.CompletionTokens),
		TotalTokens:      int(u.TotalTokens),
	}
}

// reasoningOf finds a reasoning model's thinking among the fields the API
// does not define: "reasoning_content" (DeepSeek, vLLM, llama.cpp) or
// "reasoning" (Ollama, OpenRouter).
func reasoningOf(extra map[string]respjson.Field) string {
	for _, key := range []string{"reasoning_content", "reasoning"} {
		var s string
		if f, ok := extra[key]; ok && json.Unmarshal([]byte(f.Raw()), &s) == nil && s != "" {
			return s
		}
	}
	return ""
}

// arguments makes a model's argument text valid JSON: {} for nothing, the
// text itself when it is JSON, else the text as a JSON string.
func arguments(s string) json.RawMessage {
	t := strings.TrimSpace(s)
	if t == "" {
		return json.RawMessage("{}")
	}
	if json.Valid([]byte(t)) {
		return json.RawMessage(t)
	}
	b, _ := json.Marshal(s) // a string always marshals
	return b
}

// wireArguments is the inverse of arguments, for sending a call back.
func wireArguments(raw json.RawMessage) string {
	t := bytes.TrimSpace(raw)
	if len(t) == 0 {
		return "{}"
	}
	if t[0] == '"' {
		var s string
		if json.Unmarshal(t, &s) == nil {
			return s
		}
	}
	return string(t)
}

// speakerName makes a message's Name one the API accepts.
func speakerName(s string) string {
	w := sanitizeName(s)
	if w == "" {
		return "user"
	}
	return w
}

// toolNames maps the caller's tool names to names the API accepts
// (^[a-zA-Z0-9_-]{1,64}$) and back.
type toolNames struct {
	toWire, fromWire map[string]string
}

func newToolNames(names []string) *toolNames {
	n := &toolNames{toWire: map[string]string{}, fromWire: map[string]string{}}
	// Names that are already fine keep themselves, so that they never
	// collide with a rewritten one.
	for _, name := range names {
		if sanitizeName(name) == name && name != "" {
			n.toWire[name], n.fromWire[name] = name, name
		}
	}
	for _, name := range names {
		if _, done := n.toWire[name]; done {
			continue
		}
		base := sanitizeName(name)
		if base == "" {
			base = "tool"
		}
		w := base
		for i := 2; ; i++ {
			if _, taken := n.fromWire[w]; !taken {
				break
			}
			suffix := "_" + strconv.Itoa(i)
			w = base[:min(len(base), 64-len(suffix))] + suffix
		}
		n.toWire[name], n.fromWire[w] = w, name
	}
	return n
}

func (n *toolNames) wire(name string) string {
	if w, ok := n.toWire[name]; ok {
		return w
	}
	return name
}

func (n *toolNames) caller(wire string) string {
	if c, ok := n.fromWire[wire]; ok {
		return c
	}
	return wire
}

// sanitizeName replaces each character outside [a-zA-Z0-9_-] with '_' and
// cuts the result to 64 bytes.
func sanitizeName(s string) string {
	var b strings.Builder
	for _, r := range s {
		if r < utf8.RuneSelf && (r == '_' || r == '-' || r >= '0' && r <= '9' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z') {
			b.WriteRune(r)
		} else {
			b.WriteByte('_')
		}
		if b.Len() == 64 {
			break
		}
	}
	return b.String()
}
