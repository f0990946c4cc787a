package llm

import (
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
)

// openAIBaseURL is the API root when Config.BaseURL is empty.
const openAIBaseURL = "https://api.openai.com/v1"

// maxErrorBody bounds how much of an error answer is read.
const maxErrorBody = 64 << 10

// errIdle is the cause with which a stream is cancelled when no piece came
// within the timeout.
var errIdle = errors.New("llm: stream idle")

// OpenAI is the [Provider] for any OpenAI-compatible Chat Completions
// endpoint, over a small client of its own (see docs/agent.md for why not
// the official SDK). Create it with [NewOpenAI] (or [FromEnv]); it is safe
// for concurrent use.
type OpenAI struct {
	http     *http.Client
	endpoint string // the chat completions URL
	apiKey   string
	header   http.Header // Config.Header
	retries  int
	model    string
	where    string        // the base URL without credentials, for errors
	timeout  time.Duration // per attempt or stream piece; 0 means none
	total    time.Duration // the whole answer; 0 means none
	maxBody  int64         // bytes of one answer as sent
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
		http:             cmp.Or(cfg.HTTPClient, http.DefaultClient),
		endpoint:         strings.TrimRight(base, "/") + "/chat/completions",
		apiKey:           cfg.APIKey,
		header:           cfg.Header.Clone(),
		model:            cmp.Or(cfg.Model, DefaultModel),
		where:            u.Scheme + "://" + u.Host + strings.TrimRight(u.Path, "/"),
		timeout:          cfg.Timeout,
		completionTokens: u.Host == "api.openai.com",
	}
	if p.timeout == 0 {
		p.timeout = DefaultTimeout
	} else if p.timeout < 0 {
		p.timeout = 0
	}
	p.total = max(cmp.Or(cfg.MaxAnswerTime, DefaultMaxAnswerTime), 0)
	p.maxBody = cmp.Or(cfg.MaxResponseBytes, DefaultMaxResponseBytes)
	p.retries = max(cmp.Or(cfg.MaxRetries, DefaultMaxRetries), 0)
	return p, nil
}

// Name returns "openai".
func (p *OpenAI) Name() string { return "openai" }

// Model returns the model asked for when a request names none.
func (p *OpenAI) Model() string { return p.model }

// Complete implements [Provider].
func (p *OpenAI) Complete(ctx context.Context, req Request) (*Response, error) {
	w, names, err := p.params(req)
	if err != nil {
		return nil, err
	}
	body, err := w.encode()
	if err != nil {
		return nil, err
	}
	ctx, cancel := p.answerContext(ctx)
	defer cancel(nil)
	c := capture{maxBody: p.maxBody}
	b, err := p.complete(ctx, body, &c)
	if err != nil {
		if e := p.overAnswer(ctx, &c, w.Model); e != nil {
			return nil, e
		}
		return nil, p.fail(ctx, err, &c, w.Model)
	}
	var cc wireCompletion
	if err := json.Unmarshal(b, &cc); err != nil {
		return nil, fmt.Errorf("%w from %s: the answer is not a chat completion (%v): %s", ErrBadResponse, p.at(w.Model), err, excerpt(b))
	}
	if len(cc.Choices) == 0 {
		return nil, fmt.Errorf("%w from %s: the answer has no choices", ErrBadResponse, p.at(w.Model))
	}
	return completion(&cc, names), nil
}

// completion is the Response of a whole answer.
func completion(cc *wireCompletion, names *toolNames) *Response {
	choice := &cc.Choices[0]
	r := &Response{
		Content:      text(choice.Message.Content),
		Reasoning:    choice.Message.reasoning(),
		FinishReason: FinishReason(choice.FinishReason),
		Usage:        cc.Usage.usage(),
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
			Arguments: arguments(argumentText(tc.Function.Arguments)),
		})
	}
	settle(r)
	return r
}

// Stream implements [Provider]. The timeout bounds the wait for each piece
// rather than the whole answer, so a long answer that keeps coming is never
// cut off.
func (p *OpenAI) Stream(ctx context.Context, req Request, onDelta func(Delta)) (*Response, error) {
	w, names, err := p.params(req)
	if err != nil {
		return nil, err
	}
	w.Stream, w.StreamOptions = true, &wireStreamOptions{IncludeUsage: true}
	body, err := w.encode()
	if err != nil {
		return nil, err
	}

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
	acc := accumulator{names: names, emit: onDelta, byWire: map[int64]int{}}
	err = p.stream(sctx, body, &c, func(ch *wireChunk) {
		if idle != nil {
			idle.Stop()
		}
		acc.add(ch)
		if idle != nil {
			idle.Reset(p.timeout)
		}
	})
	if err != nil {
		var apiErr *APIError
		if errors.As(err, &apiErr) && apiErr.Status == 0 {
			return nil, fmt.Errorf("llm: %s: %w", p.at(w.Model), err) // an error event
		}
		if e := p.overAnswer(actx, &c, w.Model); e != nil && ctx.Err() == nil {
			return nil, e
		}
		if ctx.Err() == nil && errors.Is(context.Cause(sctx), errIdle) {
			return nil, fmt.Errorf("%w: %s sent no piece of the answer within %s", ErrTimeout, p.at(w.Model), p.timeout)
		}
		return nil, p.fail(ctx, err, &c, w.Model)
	}
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("llm: openai model %s: %w", w.Model, err)
	}
	if acc.chunks == 0 {
		return nil, fmt.Errorf("%w from %s: the stream ended without a chunk", ErrBadResponse, p.at(w.Model))
	}
	return acc.response(), nil
}

// fail turns an error of an exchange into one of this package's.
func (p *OpenAI) fail(ctx context.Context, err error, c *capture, model string) error {
	if ctxErr := ctx.Err(); ctxErr != nil {
		return fmt.Errorf("llm: openai model %s: %w", model, ctxErr)
	}
	at := p.at(model)
	if c.status >= 400 {
		e := c.apiError()
		return fmt.Errorf("llm: %s: %w%s", at, e, hint(e.Status, c.attempts))
	}
	var ne net.Error
	if errors.Is(err, context.DeadlineExceeded) || errors.Is(err, errAttemptTimeout) || (errors.As(err, &ne) && ne.Timeout()) {
		return fmt.Errorf("%w: %s gave no answer within %s", ErrTimeout, at, p.timeout)
	}
	if errors.Is(err, ErrBadResponse) {
		return fmt.Errorf("llm: %s: %w", at, err)
	}
	if c.status >= 200 && c.status < 300 {
		return fmt.Errorf("%w from %s: %w", ErrBadResponse, at, err)
	}
	return fmt.Errorf("llm: %s: %w", at, err)
}

// at names the model and server in errors.
func (p *OpenAI) at(model string) string {
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

// capture remembers the last attempt's answer, so that errors can be
// reported from what the server actually said. Attempts of one call run one
// after another, so it needs no lock.
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
