package a2a

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"mime"
	"net"
	"net/http"
	"strings"
	"sync"
	"time"
)

// Defaults of Options.
const (
	DefaultMaxTasks            = 10000
	DefaultMaxActivePerCaller  = 32
	DefaultMaxStreamsPerCaller = 16
	DefaultMaxHistory          = 100
	DefaultMaxArtifacts        = 64
	DefaultMaxParts            = 64
	DefaultRetention           = time.Hour
	DefaultStreamBuffer        = 256
	DefaultKeepAlive           = 15 * time.Second
)

// Anonymous is the caller of every request when Options.Authenticate is
// nil: all such callers share their tasks.
const Anonymous = "anonymous"

// Executor runs the turns of tasks.
type Executor interface {
	// Execute runs one turn of run's task: the message that created it,
	// or one that continues it after input-required or auth-required. It
	// reports through run and ends the turn by setting a final or
	// interrupted state; returning first ends it completed (nil) or
	// failed (an error, whose text the client sees). ctx ends when the
	// task is canceled or the server closes.
	Execute(ctx context.Context, run *Run) error
}

// ExecutorFunc is a function that is an Executor.
type ExecutorFunc func(ctx context.Context, run *Run) error

// Execute calls f.
func (f ExecutorFunc) Execute(ctx context.Context, run *Run) error { return f(ctx, run) }

// Options configures a Server. Zero values take the defaults.
type Options struct {
	// Card is the agent card, served at CardPath; required. Its
	// Capabilities.Streaming decides whether SendStreamingMessage and
	// SubscribeToTask are served.
	Card *AgentCard
	// Executor runs the tasks; required.
	Executor Executor
	// Authenticate names the caller of a request, or fails (the request
	// is answered 401 with CodeUnauthenticated; the error's text is not
	// shown). Nil means every caller is Anonymous.
	Authenticate func(*http.Request) (string, error)
	// MaxBodyBytes bounds a request body (default 1 MiB).
	MaxBodyBytes int64
	// MaxTasks bounds the tasks kept; finished ones are forgotten oldest
	// first to make room (default DefaultMaxTasks).
	MaxTasks int
	// MaxActivePerCaller bounds the unfinished tasks of one caller
	// (default DefaultMaxActivePerCaller).
	MaxActivePerCaller int
	// MaxStreamsPerCaller bounds one caller's open streams (default
	// DefaultMaxStreamsPerCaller).
	MaxStreamsPerCaller int
	// MaxHistory bounds the messages kept per task, the oldest dropped
	// (default DefaultMaxHistory).
	MaxHistory int
	// MaxArtifacts bounds the artifacts of a task (default
	// DefaultMaxArtifacts).
	MaxArtifacts int
	// Retention is how long a finished task stays readable (default
	// DefaultRetention).
	Retention time.Duration
	// StreamBuffer is how many events a stream may fall behind before it
	// is closed (default DefaultStreamBuffer).
	StreamBuffer int
	// KeepAlive is the interval of SSE comments on an idle stream
	// (default DefaultKeepAlive).
	KeepAlive time.Duration
	// Logger receives diagnostics; nil means none. Credentials are never
	// logged.
	Logger *slog.Logger
}

// Server serves an agent over A2A's JSON-RPC binding: POST / is the
// JSON-RPC endpoint and GET CardPath the card. It is an http.Handler.
type Server struct {
	opts Options
	log  *slog.Logger
	card []byte

	ctx    context.Context // parent of the turns; cancelled by Close
	cancel context.CancelFunc
	wg     sync.WaitGroup // the turns

	mu      sync.Mutex
	closed  bool
	tasks   map[string]*task
	streams map[string]int // open streams per caller
}

// NewServer checks the options and returns a Server.
func NewServer(opts Options) (*Server, error) {
	if opts.Card == nil {
		return nil, errors.New("a2a: no agent card")
	}
	if opts.Executor == nil {
		return nil, errors.New("a2a: no executor")
	}
	card, err := json.Marshal(opts.Card)
	if err != nil {
		return nil, fmt.Errorf("a2a: agent card: %w", err)
	}
	def := func(v *int, d int) {
		if *v <= 0 {
			*v = d
		}
	}
	def(&opts.MaxTasks, DefaultMaxTasks)
	def(&opts.MaxActivePerCaller, DefaultMaxActivePerCaller)
	def(&opts.MaxStreamsPerCaller, DefaultMaxStreamsPerCaller)
	def(&opts.MaxHistory, DefaultMaxHistory)
	def(&opts.MaxArtifacts, DefaultMaxArtifacts)
	def(&opts.StreamBuffer, DefaultStreamBuffer)
	if opts.MaxBodyBytes <= 0 {
		opts.MaxBodyBytes = defaultMaxBodyBytes
	}
	if opts.Retention <= 0 {
		opts.Retention = DefaultRetention
	}
	if opts.KeepAlive <= 0 {
		opts.KeepAlive = DefaultKeepAlive
	}
	log := opts.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	ctx, cancel := context.WithCancel(context.Background())
	return &Server{opts: opts, log: log, card: card, ctx: ctx, cancel: cancel,
		tasks: map[string]*task{}, streams: map[string]int{}}, nil
}

// Close cancels the running turns (their tasks end canceled) and waits for
// them. Requests that arrive later are refused.
func (s *Server) Close() error {
	s.mu.Lock()
	s.closed = true
	s.mu.Unlock()
	s.cancel()
	s.wg.Wait()
	return nil
}

// Serve serves s on l until ctx ends, then shuts the HTTP server down and
// closes s.
func (s *Server) Serve(ctx context.Context, l net.Listener) error {
	hs := &http.Server{Handler: s, ReadHeaderTimeout: 10 * time.Second, IdleTimeout: 2 * time.Minute,
		BaseContext: func(net.Listener) context.Context { return s.ctx }}
	errc := make(chan error, 1)
	go func() { errc <- hs.Serve(l) }()
	var err error
	select {
	case <-ctx.Done():
	case err = <-errc:
	}
	// Streams end with the server's context; then the listener closes.
	s.cancel()
	sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	_ = hs.Shutdown(sctx)
	if err == nil {
		<-errc
	}
	_ = s.Close()
	if errors.Is(err, http.ErrServerClosed) {
		err = nil
	}
	return err
}

// ServeHTTP serves the card and the JSON-RPC endpoint.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	switch {
	case r.URL.Path == CardPath:
		if r.Method != http.MethodGet && r.Method != http.MethodHead {
			w.Header().Set("Allow", "GET, HEAD")
			http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
			return
		}
		w.Header().Set("Content-Type", contentTypeJSON)
		w.Header().Set("Cache-Control", "max-age=300")
		_, _ = w.Write(s.card)
	case r.URL.Path == "/" || r.URL.Path == "":
		if r.Method != http.MethodPost {
			w.Header().Set("Allow", "POST")
			writeRPC(w, http.StatusMethodNotAllowed, rpcResponse{JSONRPC: jsonrpcVersion, ID: json.RawMessage("null"),
				Error: errorf(ErrInvalidRequest, "the JSON-RPC endpoint takes POST")})
			return
		}
		s.serveRPC(w, r)
	default:
		http.NotFound(w, r)
	}
}

// writeRPC writes one JSON-RPC response.
func writeRPC(w http.ResponseWriter, status int, resp rpcResponse) {
	b, err := json.Marshal(resp)
	if err != nil {
		status = http.StatusInternalServerError
		b, _ = json.Marshal(rpcResponse{JSONRPC: jsonrpcVersion, ID: resp.ID, Error: errorf(ErrInternal, "the response could not be encoded")})
	}
	w.Header().Set("Content-Type", contentTypeJSON)
	w.WriteHeader(status)
	_, _ = w.Write(b)
}

// serveRPC reads, checks and dispatches one JSON-RPC request.
func (s *Server) serveRPC(w http.ResponseWriter, r *http.Request) {
	fail := func(status int, id json.RawMessage, e *Error) {
		if id == nil {
			id = json.RawMessage("null")
		}
		writeRPC(w, status, rpcResponse{JSONRPC: jsonrpcVersion, ID: id, Error: e})
	}
	if ct := r.Header.Get("Content-Type"); ct != "" {
		mt, _, err := mime.ParseMediaType(ct)
		if err != nil || (mt != contentTypeJSON && mt != contentTypeA2AJSON) {
			fail(http.StatusUnsupportedMediaType, nil, errorf(ErrInvalidRequest, "the body must be application/json"))
			return
		}
	}
	caller := Anonymous
	if s.opts.Authenticate != nil {
		c, err := s.opts.Authenticate(r)
		if err != nil || c == "" {
			// The reason stays here: it may say which credential was wrong.
			s.log.Info("a2a: unauthenticated request", "remote", r.RemoteAddr)
			w.Header().Set("WWW-Authenticate", `Bearer realm="a2a"`)
			fail(http.StatusUnauthorized, nil, errorf(ErrUnauthenticated, "send a valid credential as the agent card's securitySchemes say"))
			return
		}
		caller = c
	}
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, s.opts.MaxBodyBytes))
	if err != nil {
		var tooBig *http.MaxBytesError
		if errors.As(err, &tooBig) {
			fail(http.StatusRequestEntityTooLarge, nil, errorf(ErrInvalidRequest, "the body is larger than %d bytes", s.opts.MaxBodyBytes))
			return
		}
		fail(http.StatusBadRequest, nil, errorf(ErrInvalidRequest, "the body could not be read"))
		return
	}
	req, rpcErr := parseRequest(body)
	if rpcErr != nil {
		fail(http.StatusOK, req.ID, rpcErr)
		return
	}
	if e := checkVersion(r); e != nil {
		fail(http.StatusOK, req.ID, e)
		return
	}
	s.mu.Lock()
	closed := s.closed
	s.mu.Unlock()
	if closed {
		fail(http.StatusServiceUnavailable, req.ID, errorf(ErrInternal, "the agent is shutting down"))
		return
	}
	c := &call{s: s, caller: caller, req: req}
	switch req.Method {
	case MethodSendStreamingMessage, MethodSubscribeToTask:
		if s.opts.Card.Capabilities.Streaming == nil || !*s.opts.Card.Capabilities.Streaming {
			fail(http.StatusOK, req.ID, errorf(ErrUnsupportedOperation, "this agent does not stream"))
			return
		}
		c.stream(w, r)
		return
	}
	result, e := c.unary(r.Context())
	if e != nil {
		fail(http.StatusOK, req.ID, e)
		return
	}
	writeRPC(w, http.StatusOK, rpcResponse{JSONRPC: jsonrpcVersion, ID: req.ID, Result: result})
}

// checkVersion checks the A2A-Version service parameter (header or query
// parameter): 1.0 is served; absent means 0.3 (specification 3.6.2),
// which is not.
func checkVersion(r *http.Request) *Error {
	v := strings.TrimSpace(r.Header.Get(HeaderVersion))
	if v == "" {
		v = strings.TrimSpace(r.URL.Query().Get(HeaderVersion))
	}
	if v == ProtocolVersion {
		return nil
	}
	if v == "" {
		return errorf(ErrVersionNotSupported, "no %s header, which means 0.3; this agent serves %s: send %s: %s",
			HeaderVersion, ProtocolVersion, HeaderVersion, ProtocolVersion)
	}
	return errorf(ErrVersionNotSupported, "version %q is not served; this agent serves %s", clip(v), ProtocolVersion)
}

// call is one JSON-RPC request being served.
type call struct {
	s      *Server
	caller string
	req    rpcRequest
}

// unary serves the methods that answer with one response.
func (c *call) unary(ctx context.Context) (any, *Error) {
	s := c.s
	switch c.req.Method {
	case MethodSendMessage:
		var p SendMessageRequest
		if e := decodeParams(c.req.Params, &p); e != nil {
			return nil, e
		}
		t, _, e := s.send(c.caller, p, nil)
		if e != nil {
			return nil, e
		}
		blocking := p.Configuration == nil || !p.Configuration.ReturnImmediately
		if blocking {
			select {
			case <-t.settledCh(s):
			case <-ctx.Done():
			}
		}
		var hl *int32
		if p.Configuration != nil {
			hl = p.Configuration.HistoryLength
		}
		s.mu.Lock()
		snap := t.snapshot(hl, true)
		s.mu.Unlock()
		return SendMessageResponse{Task: &snap}, nil
	case MethodGetTask:
		var p GetTaskRequest
		if e := decodeParams(c.req.Params, &p); e != nil {
			return nil, e
		}
		if p.HistoryLength != nil && *p.HistoryLength < 0 {
			return nil, errorf(ErrInvalidParams, "historyLength must not be negative")
		}
		s.mu.Lock()
		defer s.mu.Unlock()
		t, e := s.owned(c.caller, p.ID)
		if e != nil {
			return nil, e
		}
		return t.snapshot(p.HistoryLength, true), nil
	case MethodListTasks:
		var p ListTasksRequest
		if e := decodeParams(c.req.Params, &p); e != nil {
			return nil, e
		}
		return s.list(c.caller, p)
	case MethodCancelTask:
		var p CancelTaskRequest
		if e := decodeParams(c.req.Params, &p); e != nil {
			return nil, e
		}
		return s.cancelTask(c.caller, p.ID)
	case MethodCreateTaskPushNotificationConfig, MethodGetTaskPushNotificationConfig,
		MethodListTaskPushNotificationConfigs, MethodDeleteTaskPushNotificationConfig:
		return nil, errorf(ErrPushNotificationNotSupported, "this agent does not push notifications")
	case MethodGetExtendedAgentCard:
		return nil, errorf(ErrUnsupportedOperation, "this agent has no extended card")
	}
	return nil, errorf(ErrMethodNotFound, "%q is not an A2A %s method", clip(c.req.Method), ProtocolVersion)
}

// stream serves SendStreamingMessage and SubscribeToTask over SSE: the
// task first, then its events until it ends or waits for input.
func (c *call) stream(w http.ResponseWriter, r *http.Request) {
	s := c.s
	fail := func(e *Error) {
		writeRPC(w, http.StatusOK, rpcResponse{JSONRPC: jsonrpcVersion, ID: c.req.ID, Error: e})
	}
	flusher, ok := w.(http.Flusher)
	if !ok {
		fail(errorf(ErrInternal, "this connection cannot stream"))
		return
	}
	s.mu.Lock()
	if s.streams[c.caller] >= s.opts.MaxStreamsPerCaller {
		s.mu.Unlock()
		fail(errorf(ErrInternal, "you have %d open streams, the most this agent serves one caller", s.opts.MaxStreamsPerCaller))
		return
	}
	s.streams[c.caller]++
	s.mu.Unlock()
	defer func() {
		s.mu.Lock()
		if s.streams[c.caller]--; s.streams[c.caller] <= 0 {
			delete(s.streams, c.caller)
		}
		s.mu.Unlock()
	}()

	sub := &subscriber{ch: make(chan StreamResponse, s.opts.StreamBuffer)}
	var first StreamResponse
	switch c.req.Method {
	case MethodSendStreamingMessage:
		var p SendMessageRequest
		if e := decodeParams(c.req.Params, &p); e != nil {
			fail(e)
			return
		}
		// Subscribe before the turn starts, so that no event is missed.
		_, t, e := s.send(c.caller, p, sub)
		if e != nil {
			fail(e)
			return
		}
		first = StreamResponse{Task: &t}
	default:
		var p SubscribeToTaskRequest
		if e := decodeParams(c.req.Params, &p); e != nil {
			fail(e)
			return
		}
		s.mu.Lock()
		t, e := s.owned(c.caller, p.ID)
		if e == nil && t.t.Status.State.Terminal() {
			e = errorf(ErrUnsupportedOperation, "task %s is %s: there is nothing to subscribe to", t.t.ID, t.t.Status.State)
		}
		if e != nil {
			s.mu.Unlock()
			fail(e)
			return
		}
		snap := t.snapshot(nil, true)
		first = StreamResponse{Task: &snap}
		if t.running() {
			sub.t = t
			t.subs[sub] = struct{}{}
		} else {
			close(sub.ch) // waiting for input: the task is all there is
		}
		s.mu.Unlock()
	}
	defer s.unsubscribe(sub)

	h := w.Header()
	h.Set("Content-Type", contentTypeSSE)
	h.Set("Cache-Control", "no-cache")
	h.Set("X-Accel-Buffering", "no")
	w.WriteHeader(http.StatusOK)
	write := func(ev StreamResponse) bool {
		b, err := json.Marshal(rpcResponse{JSONRPC: jsonrpcVersion, ID: c.req.ID, Result: ev})
		if err != nil {
			return false
		}
		if _, err := fmt.Fprintf(w, "data: %s\n\n", b); err != nil {
			return false
		}
		flusher.Flush()
		return true
	}
	if !write(first) {
		return
	}
	tick := time.NewTicker(s.opts.KeepAlive)
	defer tick.Stop()
	for {
		select {
		case ev, ok := <-sub.ch:
			if !ok {
				if sub.isDropped(s) {
					s.log.Info("a2a: closed a stream that fell behind", "caller", c.caller)
				}
				return
			}
			if !write(ev) {
				return
			}
		case <-tick.C:
			if _, err := io.WriteString(w, ": keep-alive\n\n"); err != nil {
				return
			}
			flusher.Flush()
		case <-r.Context().Done():
			return
		}
	}
}

func (sub *subscriber) isDropped(s *Server) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return sub.dropped
}

// unsubscribe forgets sub, wherever it is subscribed.
func (s *Server) unsubscribe(sub *subscriber) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if sub.t == nil {
		return
	}
	if _, ok := sub.t.subs[sub]; ok {
		delete(sub.t.subs, sub)
		close(sub.ch)
	}
}
