package a2a

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
)

// Client defaults.
const (
	DefaultMaxResponseBytes = 8 << 20
	DefaultMaxEventBytes    = 1 << 20
)

// ClientOptions configures a Client and FetchCard.
type ClientOptions struct {
	// HTTPClient makes the requests; nil means http.DefaultClient. Bound
	// the time of unary calls with their contexts: streams may last.
	HTTPClient *http.Client
	// Header is sent with every request, such as Authorization or an API
	// key header.
	Header http.Header
	// MaxResponseBytes bounds a response body or a card (default
	// DefaultMaxResponseBytes).
	MaxResponseBytes int64
	// MaxEventBytes bounds one event of a stream (default
	// DefaultMaxEventBytes).
	MaxEventBytes int
}

func (o ClientOptions) withDefaults() ClientOptions {
	if o.HTTPClient == nil {
		o.HTTPClient = http.DefaultClient
	}
	if o.MaxResponseBytes <= 0 {
		o.MaxResponseBytes = DefaultMaxResponseBytes
	}
	if o.MaxEventBytes <= 0 {
		o.MaxEventBytes = DefaultMaxEventBytes
	}
	return o
}

// FetchCard reads the agent card published under base (an agent's root
// URL, or the card's own URL).
func FetchCard(ctx context.Context, base string, opts ClientOptions) (*AgentCard, error) {
	opts = opts.withDefaults()
	u, err := url.Parse(base)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("a2a: %q is not an http(s) URL", base)
	}
	if !strings.HasSuffix(u.Path, ".json") {
		u.Path = strings.TrimSuffix(u.Path, "/") + CardPath
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u.String(), nil)
	if err != nil {
		return nil, fmt.Errorf("a2a: card: %w", err)
	}
	addHeader(req.Header, opts.Header)
	req.Header.Set("Accept", contentTypeJSON)
	resp, err := opts.HTTPClient.Do(req)
	if err != nil {
		return nil, fmt.Errorf("a2a: card: %w", err)
	}
	defer resp.Body.Close()
	body, err := readLimited(resp.Body, opts.MaxResponseBytes)
	if err != nil {
		return nil, fmt.Errorf("a2a: card: %w", err)
	}
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("a2a: card: %s answered %s", u.Redacted(), resp.Status)
	}
	var card AgentCard
	if err := json.Unmarshal(body, &card); err != nil {
		return nil, fmt.Errorf("a2a: card: %s", describeJSONError(err))
	}
	if card.Name == "" {
		return nil, errors.New("a2a: card: it has no name")
	}
	return &card, nil
}

func addHeader(dst, src http.Header) {
	for k, vs := range src {
		for _, v := range vs {
			dst.Add(k, v)
		}
	}
}

// readLimited reads r to its end, failing past limit bytes.
func readLimited(r io.Reader, limit int64) ([]byte, error) {
	b, err := io.ReadAll(io.LimitReader(r, limit+1))
	if err != nil {
		return nil, err
	}
	if int64(len(b)) > limit {
		return nil, fmt.Errorf("the response is larger than %d bytes", limit)
	}
	return b, nil
}

// Client calls an agent's JSON-RPC endpoint. It is safe for concurrent
// use.
type Client struct {
	url  string
	opts ClientOptions
	id   atomic.Int64
}

// NewClient returns a client of the JSON-RPC endpoint at endpoint (an
// AgentInterface.URL).
func NewClient(endpoint string, opts ClientOptions) *Client {
	return &Client{url: endpoint, opts: opts.withDefaults()}
}

// NewClientForCard returns a client of the card's JSON-RPC 1.0 interface.
func NewClientForCard(card *AgentCard, opts ClientOptions) (*Client, error) {
	i, ok := card.Interface()
	if !ok {
		return nil, fmt.Errorf("a2a: agent %q has no %s interface for A2A %s", card.Name, BindingJSONRPC, ProtocolVersion)
	}
	return NewClient(i.URL, opts), nil
}

// post sends a request and returns the response, checked for an HTTP
// error that carries no JSON-RPC answer.
func (c *Client) post(ctx context.Context, method string, params any, accept string) (*http.Response, json.RawMessage, error) {
	id := c.id.Add(1)
	body, err := json.Marshal(map[string]any{"jsonrpc": jsonrpcVersion, "id": id, "method": method, "params": params})
	if err != nil {
		return nil, nil, fmt.Errorf("a2a: %s: %w", method, err)
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, c.url, bytes.NewReader(body))
	if err != nil {
		return nil, nil, fmt.Errorf("a2a: %s: %w", method, err)
	}
	addHeader(req.Header, c.opts.Header)
	req.Header.Set("Content-Type", contentTypeJSON)
	req.Header.Set("Accept", accept)
	req.Header.Set(HeaderVersion, ProtocolVersion)
	resp, err := c.opts.HTTPClient.Do(req)
	if err != nil {
		return nil, nil, fmt.Errorf("a2a: %s: %w", method, err)
	}
	return resp, json.RawMessage(fmt.Sprint(id)), nil
}

// unary calls method and decodes its result into out.
func (c *Client) unary(ctx context.Context, method string, params, out any) error {
	resp, id, err := c.post(ctx, method, params, contentTypeJSON)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	body, err := readLimited(resp.Body, c.opts.MaxResponseBytes)
	if err != nil {
		return fmt.Errorf("a2a: %s: %w", method, err)
	}
	return decodeResponse(method, resp.Status, body, id, out)
}

// decodeResponse decodes one JSON-RPC response to the request id.
func decodeResponse(method, status string, body []byte, id json.RawMessage, out any) error {
	var r struct {
		JSONRPC string          `json:"jsonrpc"`
		ID      json.RawMessage `json:"id"`
		Result  json.RawMessage `json:"result"`
		Error   *Error          `json:"error"`
	}
	if err := json.Unmarshal(body, &r); err != nil || r.JSONRPC != jsonrpcVersion {
		return fmt.Errorf("a2a: %s: the agent answered %s with no JSON-RPC response: %w", method, status, ErrInvalidAgentResponse)
	}
	if r.Error != nil {
		return r.Error
	}
	if !bytes.Equal(bytes.TrimSpace(r.ID), id) {
		return fmt.Errorf("a2a: %s: the response is to another request: %w", method, ErrInvalidAgentResponse)
	}
	if len(r.Result) == 0 {
		return fmt.Errorf("a2a: %s: the response has no result: %w", method, ErrInvalidAgentResponse)
	}
	if err := json.Unmarshal(r.Result, out); err != nil {
		return fmt.Errorf("a2a: %s: %s: %w", method, describeJSONError(err), ErrInvalidAgentResponse)
	}
	return nil
}

// SendMessage sends a message and returns the task (or message) it made.
func (c *Client) SendMessage(ctx context.Context, req SendMessageRequest) (*SendMessageResponse, error) {
	out, err := unaryResult[SendMessageResponse](ctx, c, MethodSendMessage, req)
	if err != nil {
		return nil, err
	}
	if (out.Task == nil) == (out.Message == nil) {
		return nil, fmt.Errorf("a2a: SendMessage: the result needs a task or a message: %w", ErrInvalidAgentResponse)
	}
	return out, nil
}

// GetTask returns a task.
func (c *Client) GetTask(ctx context.Context, req GetTaskRequest) (*Task, error) {
	return unaryResult[Task](ctx, c, MethodGetTask, req)
}

// ListTasks lists the caller's tasks.
func (c *Client) ListTasks(ctx context.Context, req ListTasksRequest) (*ListTasksResponse, error) {
	return unaryResult[ListTasksResponse](ctx, c, MethodListTasks, req)
}

// CancelTask cancels a task and returns it.
func (c *Client) CancelTask(ctx context.Context, req CancelTaskRequest) (*Task, error) {
	return unaryResult[Task](ctx, c, MethodCancelTask, req)
}

// unaryResult is c.unary decoding the result into a new T.
func unaryResult[T any](ctx context.Context, c *Client, method string, req any) (*T, error) {
	var out T
	if err := c.unary(ctx, method, req, &out); err != nil {
		return nil, err
	}
	return &out, nil
}

// SendStreamingMessage sends a message and streams the task's events.
func (c *Client) SendStreamingMessage(ctx context.Context, req SendMessageRequest) (*Stream, error) {
	return c.stream(ctx, MethodSendStreamingMessage, req)
}

// SubscribeToTask streams the events of a task that is not finished.
func (c *Client) SubscribeToTask(ctx context.Context, req SubscribeToTaskRequest) (*Stream, error) {
	return c.stream(ctx, MethodSubscribeToTask, req)
}

func (c *Client) stream(ctx context.Context, method string, params any) (*Stream, error) {
	ctx, cancel := context.WithCancel(ctx)
	resp, id, err := c.post(ctx, method, params, contentTypeSSE)
	if err != nil {
		cancel()
		return nil, err
	}
	mt, _, _ := mime.ParseMediaType(resp.Header.Get("Content-Type"))
	if mt != contentTypeSSE {
		defer cancel()
		defer resp.Body.Close()
		body, err := readLimited(resp.Body, c.opts.MaxResponseBytes)
		if err != nil {
			return nil, fmt.Errorf("a2a: %s: %w", method, err)
		}
		var never struct{}
		if err := decodeResponse(method, resp.Status, body, id, &never); err != nil {
			return nil, err
		}
		return nil, fmt.Errorf("a2a: %s: the agent answered %s, not a stream: %w", method, mt, ErrInvalidAgentResponse)
	}
	return &Stream{method: method, id: id, body: resp.Body, cancel: cancel,
		r: bufio.NewReaderSize(resp.Body, 4096), max: c.opts.MaxEventBytes}, nil
}

// Stream is the events of a streaming call. Next returns them in order;
// Close ends the stream early. One goroutine reads a Stream at a time;
// Close may be called from any.
type Stream struct {
	method string
	id     json.RawMessage
	body   io.ReadCloser
	r      *bufio.Reader
	max    int
	cancel context.CancelFunc
	once   sync.Once
	ended  bool // the last event ended the stream
}

// ErrStreamBroken: the stream ended before its task finished or waited
// for input. Get the task, or subscribe again.
var ErrStreamBroken = errors.New("a2a: the stream ended before the task did")

// Next returns the next event. At the end of a stream it returns io.EOF
// when the last event was a final or interrupted state (or a message),
// else ErrStreamBroken.
func (s *Stream) Next() (StreamResponse, error) {
	var data bytes.Buffer
	for {
		line, err := s.readLine()
		if err != nil {
			if errors.Is(err, io.EOF) && s.ended && data.Len() == 0 {
				return StreamResponse{}, io.EOF
			}
			if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
				return StreamResponse{}, ErrStreamBroken
			}
			return StreamResponse{}, fmt.Errorf("a2a: %s: %w", s.method, err)
		}
		switch {
		case len(line) == 0:
			if data.Len() == 0 {
				continue
			}
			var ev StreamResponse
			if err := decodeResponse(s.method, "an event", data.Bytes(), s.id, &ev); err != nil {
				return StreamResponse{}, err
			}
			s.ended = ev.Ends()
			return ev, nil
		case line[0] == ':':
		default:
			field, value, _ := bytes.Cut(line, []byte(":"))
			if string(field) != "data" {
				continue
			}
			value = bytes.TrimPrefix(value, []byte(" "))
			if data.Len()+len(value)+1 > s.max {
				return StreamResponse{}, fmt.Errorf("a2a: %s: an event is larger than %d bytes", s.method, s.max)
			}
			if data.Len() > 0 {
				data.WriteByte('\n')
			}
			data.Write(value)
		}
	}
}

// readLine reads one line without its end, bounded by s.max.
func (s *Stream) readLine() ([]byte, error) {
	var line []byte
	for {
		chunk, isPrefix, err := s.r.ReadLine()
		if err != nil {
			return nil, err
		}
		line = append(line, chunk...)
		if len(line) > s.max {
			return nil, fmt.Errorf("a line is longer than %d bytes", s.max)
		}
		if !isPrefix {
			return line, nil
		}
	}
}

// Close ends the stream.
func (s *Stream) Close() error {
	s.once.Do(func() {
		s.cancel()
		_ = s.body.Close()
	})
	return nil
}

// Ends reports whether ev ends a stream: a message, or a task or status in
// a final or interrupted state.
func (ev StreamResponse) Ends() bool {
	switch {
	case ev.Message != nil:
		return true
	case ev.StatusUpdate != nil:
		return ev.StatusUpdate.Status.State.Terminal() || ev.StatusUpdate.Status.State.Interrupted()
	case ev.Task != nil:
		return ev.Task.Status.State.Terminal() || ev.Task.Status.State.Interrupted()
	}
	return false
}
