package bridge

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mew-protocol/mew/internal/mcpver"
	"github.com/mew-protocol/mew/participant"
	"github.com/mew-protocol/mew/protocol"
)

// delegated are the methods the participant would answer itself and the
// bridge takes over (Options.DelegatedMethods of the participant).
var delegated = []string{"initialize", "tools/list", "tools/call", "resources/list", "resources/read", "resources/templates/list"}

// forwarded are the MCP methods the bridge forwards to the server.
var forwarded = map[string]bool{
	"initialize":               true,
	"tools/list":               true,
	"tools/call":               true,
	"resources/list":           true,
	"resources/read":           true,
	"resources/templates/list": true,
	"prompts/list":             true,
	"prompts/get":              true,
	"completion/complete":      true,
}

const (
	// maxInFlight bounds the requests forwarded at once.
	maxInFlight = 1024
	// answerTimeout bounds sending one answer to the space.
	answerTimeout = 10 * time.Second
	// exitWait is how long the bridge waits, when the server's output
	// closes or a call fails, to learn that the process exited and how.
	exitWait = 500 * time.Millisecond
)

// Reasons a forwarded request is cancelled, as context causes.
var (
	errShutdown  = errors.New("the bridge is stopping")
	errWithdrawn = errors.New("the proposal it fulfils was withdrawn")
	errCancelled = errors.New("cancelled by the requester")
)

// call is one request being forwarded.
type call struct {
	req     *participant.Request
	cancel  context.CancelCauseFunc
	started time.Time
	// timer cancels the call when Options.RequestTimeout passes; it is
	// stopped while an elicitation of the call waits for a person.
	timer *time.Timer

	mu     sync.Mutex
	paused int                // elicitations waiting
	sess   *mcp.ClientSession // the session it was sent on, once sent
}

// pause stops the call's timeout while a person answers.
func (c *call) pause() {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.paused == 0 {
		c.timer.Stop()
	}
	c.paused++
}

// resume starts the call's timeout afresh, d, when no elicitation waits.
func (c *call) resume(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.paused--
	if c.paused == 0 {
		c.timer.Reset(d)
	}
}

func (c *call) session() *mcp.ClientSession {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.sess
}

func (c *call) setSession(cs *mcp.ClientSession) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.sess = cs
}

// inflightTable holds the requests being forwarded, by envelope id.
type inflightTable struct {
	mu    sync.Mutex
	calls map[string]*call
}

func (t *inflightTable) add(c *call) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	if len(t.calls) >= maxInFlight {
		return false
	}
	t.calls[c.req.Envelope.ID] = c
	return true
}

func (t *inflightTable) remove(c *call) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.calls[c.req.Envelope.ID] == c {
		delete(t.calls, c.req.Envelope.ID)
	}
}

// cancelWhere cancels, with cause, the calls that match.
func (t *inflightTable) cancelWhere(match func(*call) bool, cause error) int {
	t.mu.Lock()
	defer t.mu.Unlock()
	n := 0
	for _, c := range t.calls {
		if match(c) {
			c.cancel(cause)
			n++
		}
	}
	return n
}

func (t *inflightTable) cancelAll(cause error) {
	t.cancelWhere(func(*call) bool { return true }, cause)
}

// onRequest receives the mcp/request envelopes addressed to the bridge
// that the participant does not answer itself. It runs on the client's
// dispatch goroutine: the forwarding happens on a goroutine of its own.
func (b *Bridge) onRequest(r *participant.Request) {
	if r.IsNotification() {
		b.onNotification(r)
		return
	}
	if !forwarded[r.Method] {
		b.answerLater(r, &participant.RPCError{Code: participant.CodeMethodNotFound, Message: "Method not found: " + r.Method})
		return
	}
	ctx, cancel := context.WithCancelCause(b.jobs.Context())
	c := &call{req: r, cancel: cancel, started: time.Now()}
	c.timer = time.AfterFunc(b.opts.RequestTimeout, func() { cancel(context.DeadlineExceeded) })
	cancelTimeout := func() { c.timer.Stop() }
	ctx = context.WithValue(ctx, callKey{}, c)
	if !b.inflight.add(c) {
		cancelTimeout()
		cancel(nil)
		b.log.Warn("request refused: too many in flight", "id", r.Envelope.ID, "from", r.From())
		b.answerLater(r, &participant.RPCError{Code: CodeBusy, Message: "Bridge busy: too many requests in flight"})
		return
	}
	if b.fulfilsWithdrawn(r) {
		cancel(errWithdrawn)
	}
	started := b.goOwned(func(context.Context) {
		defer b.inflight.remove(c)
		defer cancel(nil)
		defer cancelTimeout()
		result, rpcErr := b.forward(ctx, r)
		b.answer(r, result, rpcErr)
	})
	if !started {
		b.inflight.remove(c)
		cancelTimeout()
		cancel(nil)
		b.answerNow(r, &participant.RPCError{Code: CodeConnectionClosed, Message: "MCP server unavailable: the bridge is stopping"})
	}
}

// answerLater answers r with rpcErr from a goroutine of the bridge, or at
// once if the bridge is stopping.
func (b *Bridge) answerLater(r *participant.Request, rpcErr *participant.RPCError) {
	if !b.goOwned(func(context.Context) { b.answer(r, nil, rpcErr) }) {
		b.answerNow(r, rpcErr)
	}
}

// answerNow answers r from the dispatch goroutine without waiting for room
// in the send queue: when the queue is full, the answer is dropped (and
// logged).
func (b *Bridge) answerNow(r *participant.Request, rpcErr *participant.RPCError) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel() // Send still queues when there is room; it only does not wait
	if err := r.RespondRPCError(ctx, rpcErr); err != nil {
		b.log.Warn("answer not sent", "request", r.Envelope.ID, "to", r.From(), "err", err)
	}
}

// fulfilsWithdrawn reports whether r fulfils a proposal that was already
// withdrawn.
func (b *Bridge) fulfilsWithdrawn(r *participant.Request) bool {
	for _, id := range r.Envelope.CorrelationID {
		if pr, ok := b.p.Proposal(id); ok {
			if _, withdrawn := pr.WithdrawReason(); withdrawn {
				return true
			}
		}
	}
	return false
}

// onWithdraw cancels the requests that fulfil a proposal its proposer
// withdrew: the proposer no longer wants the result.
func (b *Bridge) onWithdraw(env *protocol.Envelope) {
	for _, id := range env.CorrelationID {
		pr, ok := b.p.Proposal(id)
		if !ok || pr.From() != env.From {
			continue
		}
		n := b.inflight.cancelWhere(func(c *call) bool {
			return slices.Contains(c.req.Envelope.CorrelationID, id)
		}, errWithdrawn)
		if n > 0 {
			b.log.Info("proposal withdrawn: cancelling its fulfilment", "proposal", id, "by", env.From, "requests", n)
		}
	}
}

// onNotification handles the notifications addressed to the bridge:
// notifications/cancelled from a requester cancels its request, named by
// the correlation id (the request's envelope id) or by params.requestId
// (its JSON-RPC id). Other notifications are ignored.
func (b *Bridge) onNotification(r *participant.Request) {
	if r.Method != "notifications/cancelled" {
		return
	}
	var p struct {
		RequestID json.RawMessage `json:"requestId"`
		Reason    string          `json:"reason"`
	}
	_ = json.Unmarshal(r.Params, &p)
	from := r.From()
	n := b.inflight.cancelWhere(func(c *call) bool {
		if c.req.From() != from {
			return false
		}
		if slices.Contains(r.Envelope.CorrelationID, c.req.Envelope.ID) {
			return true
		}
		return len(p.RequestID) > 0 && bytes.Equal(bytes.TrimSpace(p.RequestID), bytes.TrimSpace(c.req.RPCID))
	}, errCancelled)
	b.log.Info("request cancelled by its requester", "from", from, "reason", p.Reason, "requests", n)
}

// answer sends the mcp/response to r.
func (b *Bridge) answer(r *participant.Request, result any, rpcErr *participant.RPCError) {
	ctx, cancel := context.WithTimeout(context.Background(), answerTimeout)
	defer cancel()
	if err := r.Answer(ctx, result, rpcErr); err != nil {
		b.log.Warn("answer not sent", "request", r.Envelope.ID, "to", r.From(), "err", err)
	}
}

// awaitRun returns the server to forward to: the current one, or the next
// one while the server starts or restarts. It fails at once when the
// server was given up on or the bridge is stopping.
func (b *Bridge) awaitRun(ctx context.Context) (*run, *participant.RPCError) {
	for {
		b.mu.Lock()
		r, state, why, ch := b.cur, b.state, b.lastErr, b.changed
		b.mu.Unlock()
		switch {
		case r != nil && !r.isOver():
			return r, nil
		case state == StateFailed:
			return nil, &participant.RPCError{Code: CodeConnectionClosed, Message: "MCP server unavailable: it failed too often and is not restarted (" + why + ")"}
		case state == StateStopped:
			return nil, &participant.RPCError{Code: CodeConnectionClosed, Message: "MCP server unavailable: the bridge is stopping"}
		}
		select {
		case <-ch:
		case <-ctx.Done():
			return nil, b.contextError(ctx, "waiting for the MCP server to restart")
		}
	}
}

// forward sends r to the server and returns its result or error.
func (b *Bridge) forward(ctx context.Context, r *participant.Request) (any, *participant.RPCError) {
	run, rpcErr := b.awaitRun(ctx)
	if rpcErr != nil {
		return nil, rpcErr
	}
	if c, ok := ctx.Value(callKey{}).(*call); ok {
		c.setSession(run.session)
	}
	ctx, slot := withRawSlot(ctx)
	defer slot.release()
	result, err := b.send(ctx, run, r.Method, r.Params)
	if raw := slot.get(); raw != nil {
		// The server's own bytes; also when the go-sdk could not decode
		// them into its types, since the requester may.
		return raw, nil
	}
	if err == nil {
		return result, nil
	}
	if slot.tooLarge.Load() {
		b.log.Warn("MCP server answer too large, dropped", "method", r.Method, "limit", maxFrame)
		return nil, &participant.RPCError{Code: CodeResultTooLarge, Message: errHTTPTooLarge.Error() + "; the server keeps running"}
	}
	var bad badParams
	if errors.As(err, &bad) {
		return nil, &participant.RPCError{Code: participant.CodeInvalidParams, Message: "Invalid params: " + bad.Error()}
	}
	return nil, b.callError(ctx, run, err)
}

// badParams is params that do not decode as the method's.
type badParams struct{ error }

// decodeParams decodes params (absent means {}) into v.
func decodeParams(params json.RawMessage, v any) error {
	if len(bytes.TrimSpace(params)) == 0 || string(bytes.TrimSpace(params)) == "null" {
		return nil
	}
	if err := json.Unmarshal(params, v); err != nil {
		return badParams{err}
	}
	return nil
}

// callWith decodes params into a new P (none or null: the zero P) and
// calls f with it: a forwarded method whose params go to the server as
// they came.
func callWith[P, R any](ctx context.Context, params json.RawMessage, f func(context.Context, *P) (R, error)) (any, error) {
	p := new(P)
	if err := decodeParams(params, p); err != nil {
		return nil, err
	}
	return f(ctx, p)
}

// send calls method on the server's session with params.
func (b *Bridge) send(ctx context.Context, r *run, method string, params json.RawMessage) (any, error) {
	cs := r.session
	switch method {
	case "initialize":
		return initializeAnswer(cs, params), nil
	case "tools/call":
		var in struct {
			Meta      mcp.Meta        `json:"_meta,omitempty"`
			Name      string          `json:"name"`
			Arguments json.RawMessage `json:"arguments,omitempty"`
		}
		if err := decodeParams(params, &in); err != nil {
			return nil, err
		}
		if in.Name == "" {
			return nil, badParams{errors.New("tools/call needs a tool name")}
		}
		p := &mcp.CallToolParams{Meta: in.Meta, Name: in.Name}
		if len(in.Arguments) > 0 && string(in.Arguments) != "null" {
			p.Arguments = in.Arguments
		}
		res, err := cs.CallTool(ctx, p)
		if err == nil && res != nil && res.Content == nil {
			res.Content = []mcp.Content{}
		}
		return res, err
	case "tools/list":
		return callWith(ctx, params, cs.ListTools)
	case "resources/list":
		return callWith(ctx, params, cs.ListResources)
	case "resources/templates/list":
		return callWith(ctx, params, cs.ListResourceTemplates)
	case "resources/read":
		return callWith(ctx, params, cs.ReadResource)
	case "prompts/list":
		return callWith(ctx, params, cs.ListPrompts)
	case "prompts/get":
		return callWith(ctx, params, cs.GetPrompt)
	case "completion/complete":
		return callWith(ctx, params, cs.Complete)
	}
	return nil, fmt.Errorf("method %s is not forwarded", method)
}

// initializeAnswer answers a participant's initialize with what the server
// said when the bridge connected to it (by initialize or server/discover),
// at the revision mcpver.Negotiate agrees to with the participant: MCP in a
// space is initialize-based, whatever revision the bridge speaks with the
// server (the methods it forwards are the same in each).
func initializeAnswer(cs *mcp.ClientSession, params json.RawMessage) any {
	var in struct {
		ProtocolVersion string `json:"protocolVersion"`
	}
	_ = json.Unmarshal(params, &in)
	out := mcp.InitializeResult{Capabilities: &mcp.ServerCapabilities{}}
	if ir := cs.InitializeResult(); ir != nil {
		out = *ir
	}
	out.ProtocolVersion = mcpver.Negotiate(in.ProtocolVersion)
	return &out
}

// callError turns the error of a call to r's server into the answer: the
// server's own JSON-RPC error as it is; a timeout, cancellation or closed
// connection as the bridge's codes say.
func (b *Bridge) callError(ctx context.Context, r *run, err error) *participant.RPCError {
	if errors.Is(err, mcp.ErrConnectionClosed) || errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
		return b.closedError(r, err)
	}
	if ctx.Err() != nil {
		return b.contextError(ctx, "waiting for the MCP server")
	}
	var we *jsonrpc.Error
	if errors.As(err, &we) {
		return &participant.RPCError{Code: int(we.Code), Message: we.Message, Data: we.Data}
	}
	// Anything else (a stream that broke, an answer that does not decode)
	// may mean the server is gone: the run ends soon if so, and otherwise
	// the supervisor checks that it still answers.
	if waitClosed(r.ended, 2*exitWait) {
		return b.closedError(r, err)
	}
	b.suspectRun(r)
	return &participant.RPCError{Code: participant.CodeInternalError, Message: "MCP server error: " + err.Error()}
}

// closedError is the answer to a call whose server went away.
func (b *Bridge) closedError(r *run, err error) *participant.RPCError {
	waitClosed(r.ended, 2*exitWait)
	msg := "MCP server connection closed"
	if why := r.reason(); why != "" {
		msg += ": " + why
	} else {
		msg += ": " + err.Error()
	}
	b.mu.Lock()
	if !b.opts.NoRestart && b.state != StateFailed {
		msg += " (the bridge restarts it)"
	}
	b.mu.Unlock()
	return &participant.RPCError{Code: CodeConnectionClosed, Message: msg}
}

// contextError is the answer to a call whose context ended.
func (b *Bridge) contextError(ctx context.Context, doing string) *participant.RPCError {
	cause := context.Cause(ctx)
	switch {
	case errors.Is(cause, context.DeadlineExceeded):
		return &participant.RPCError{Code: CodeRequestTimeout, Message: "Request timed out after " + b.opts.RequestTimeout.String() + " " + doing}
	case errors.Is(cause, errShutdown):
		return &participant.RPCError{Code: CodeConnectionClosed, Message: "Request cancelled: " + cause.Error()}
	case cause != nil:
		return &participant.RPCError{Code: CodeRequestCancelled, Message: "Request cancelled: " + cause.Error()}
	}
	return &participant.RPCError{Code: CodeRequestCancelled, Message: "Request cancelled"}
}

// waitClosed waits up to d for ch to be closed and reports whether it was.
func waitClosed(ch <-chan struct{}, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ch:
		return true
	case <-t.C:
		return false
	}
}
