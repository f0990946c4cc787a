package toolsagent

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/mew-protocol/mew/agent"
	"github.com/mew-protocol/mew/internal/clip"
	"github.com/mew-protocol/mew/internal/mcpver"
	"github.com/mew-protocol/mew/llm"
	"github.com/mew-protocol/mew/participant"
	"github.com/mew-protocol/mew/protocol"
)

// Timeouts of ServeSpace.
const (
	spaceConnectTimeout = 30 * time.Second
	spaceSendTimeout    = 10 * time.Second
)

// ErrShutdown ends ServeSpace without an error: the participant was asked
// to shut down (participant/shutdown).
var ErrShutdown = errors.New("toolsagent: participant/shutdown received")

// errBusy: ServeSpace is already running.
var errBusy = errors.New("toolsagent: already serving a space")

// ServeSpace joins a space as a participant and serves the tools there
// until ctx ends, the participant is asked to shut down (both return nil),
// or the gateway refuses, kicks out or replaces it (an error). One
// ServeSpace runs at a time.
//
// The participant answers tools/list with the tools, initialize with the
// definition's serverInfo and instructions, and tools/call as an MCP
// server does: invalid arguments with the JSON-RPC error invalid params,
// a run with its final text, a failure with isError. Each call's steps
// are visible in the space (with Definition.Reasoning and the
// capabilities): reasoning/start correlated to the mcp/request, a
// reasoning/thought for each answer of the model and each tool result
// (context: the start's id), and reasoning/conclusion. A requester that
// gave a progress token also gets notifications/progress. A call stops
// when its requester sends notifications/cancelled naming it (params
// requestId, its JSON-RPC id, or correlation_id, its envelope id), and
// when anyone sends reasoning/cancel with its reasoning as context (then
// it is answered with isError).
//
// While it runs, every call of the agent (over MCP too) may also use the
// tools of the space's participants that Definition.Participants allows
// with PermissionNever and that the agent may call with a direct
// mcp/request: a tools agent never proposes. opts.AutoDiscovery is set,
// and initialize and tools/call are added to opts.DelegatedMethods.
func (a *Agent) ServeSpace(ctx context.Context, opts participant.Options) error {
	opts.AutoDiscovery = true
	opts.DelegatedMethods = append(slices.Clone(opts.DelegatedMethods), "initialize", "tools/call")
	if opts.RequestTimeout <= 0 {
		opts.RequestTimeout = a.def.Timeout
	}
	if opts.Logger == nil {
		opts.Logger = a.log
	}
	p, err := participant.New(opts)
	if err != nil {
		return fmt.Errorf("toolsagent: %w", err)
	}
	sctx, stopCalls := context.WithCancelCause(context.Background())
	s := &spaceConn{a: a, p: p, ctx: sctx, stopCalls: stopCalls, calls: map[string]*spaceCall{}}
	if !a.space.CompareAndSwap(nil, s) {
		_ = p.Close()
		return errBusy
	}
	defer a.space.CompareAndSwap(s, nil)
	defer func() {
		s.close()
		_ = p.Close()
	}()
	if err := s.register(); err != nil {
		return err
	}

	parent := ctx
	ctx, stop := context.WithCancelCause(ctx)
	defer stop(nil)
	p.OnRequest(s.onRequest)
	p.Client().OnKind(protocol.KindReasoningCancel, s.onReasoningCancel)
	p.OnShutdown(func(context.Context) error {
		stop(ErrShutdown)
		return nil
	})
	p.Client().OnFinal(stop)
	cctx, cancel := context.WithTimeout(ctx, spaceConnectTimeout)
	err = p.Connect(cctx)
	cancel()
	if err != nil {
		return fmt.Errorf("toolsagent: %w", err)
	}
	a.log.Info("toolsagent: serving in the space", "id", p.ID(), "tools", len(a.def.Tools))
	<-ctx.Done()
	if cause := context.Cause(ctx); parent.Err() == nil && !errors.Is(cause, ErrShutdown) {
		return fmt.Errorf("toolsagent: %w", cause)
	}
	return nil
}

// spaceConn is a running ServeSpace: the participant and the calls it
// serves.
type spaceConn struct {
	a         *Agent
	p         *participant.Participant
	ctx       context.Context // parent of the calls; cancelled by close
	stopCalls context.CancelCauseFunc

	mu     sync.Mutex
	closed bool
	wg     sync.WaitGroup        // the goroutines of go
	calls  map[string]*spaceCall // by the mcp/request's envelope id
}

// spaceCall is a tools/call being served.
type spaceCall struct {
	env       *protocol.Envelope
	rpcID     json.RawMessage
	reasoning string // the reasoning/start id, once sent
	cancel    context.CancelCauseFunc
	silent    bool // the requester cancelled: send no answer
}

// register registers the tools with the participant, which answers
// tools/list with them (tools/call is delegated to onRequest).
func (s *spaceConn) register() error {
	for _, t := range s.a.def.Tools {
		schema, err := t.InputSchema()
		if err != nil {
			return err
		}
		out, err := t.OutputSchema()
		if err != nil {
			return err
		}
		name := t.Name
		err = s.p.RegisterTool(participant.Tool{
			Name:         name,
			Description:  t.Description,
			InputSchema:  schema,
			OutputSchema: out,
			Execute: func(ctx context.Context, args json.RawMessage) (any, error) {
				res, err := s.a.Call(ctx, name, args, CallOptions{})
				if err != nil {
					return nil, err
				}
				return spaceResult(res), nil
			},
		})
		if err != nil {
			return fmt.Errorf("toolsagent: %w", err)
		}
	}
	return nil
}

// goOwned runs f on a goroutine that close waits for.
func (s *spaceConn) goOwned(f func()) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return false
	}
	s.wg.Go(f)
	return true
}

// close stops the calls and waits for them (they answer first).
func (s *spaceConn) close() {
	s.mu.Lock()
	s.closed = true
	s.mu.Unlock()
	s.stopCalls(ErrClosed)
	s.wg.Wait()
}

// onRequest handles the MCP requests delegated to the agent. It runs on
// the dispatch goroutine: the work goes to goroutines of s.
func (s *spaceConn) onRequest(r *participant.Request) {
	switch r.Method {
	case "tools/call":
		s.startCall(r)
	case "initialize":
		s.goOwned(func() { s.answer(r, s.initializeResult(r.Params), nil) })
	case "notifications/cancelled":
		s.onCancelled(r)
	default:
		if !r.IsNotification() {
			s.goOwned(func() {
				s.answer(r, nil, &participant.RPCError{Code: participant.CodeMethodNotFound, Message: "Method not found: " + r.Method})
			})
		}
	}
}

// answer sends the answer to a request, bounded by spaceSendTimeout.
func (s *spaceConn) answer(r *participant.Request, result any, rpcErr *participant.RPCError) {
	ctx, cancel := context.WithTimeout(context.Background(), spaceSendTimeout)
	defer cancel()
	if err := r.Answer(ctx, result, rpcErr); err != nil {
		s.a.log.Warn("toolsagent: answer not sent", "request", r.Envelope.ID, "err", err)
	}
}

func (s *spaceConn) initializeResult(params json.RawMessage) any {
	var in struct {
		ProtocolVersion string `json:"protocolVersion"`
	}
	_ = json.Unmarshal(params, &in)
	d := s.a.def
	res := map[string]any{
		"protocolVersion": mcpver.Negotiate(in.ProtocolVersion),
		"capabilities":    map[string]any{"tools": map[string]any{}},
		"serverInfo":      map[string]any{"name": d.Name, "version": d.Version},
	}
	if d.Description != "" {
		res["instructions"] = d.Description
	}
	return res
}

// callParams are the params of tools/call.
type callParams struct {
	Name      string          `json:"name"`
	Arguments json.RawMessage `json:"arguments"`
	Meta      struct {
		ProgressToken json.RawMessage `json:"progressToken"`
	} `json:"_meta"`
}

// startCall starts serving a tools/call.
func (s *spaceConn) startCall(r *participant.Request) {
	var params callParams
	if len(r.Params) == 0 || json.Unmarshal(r.Params, &params) != nil || params.Name == "" {
		s.goOwned(func() {
			s.answer(r, nil, &participant.RPCError{Code: participant.CodeInvalidParams, Message: "Invalid params: tools/call needs a tool name"})
		})
		return
	}
	if _, ok := s.a.def.Tool(params.Name); !ok {
		s.goOwned(func() {
			s.answer(r, nil, &participant.RPCError{Code: participant.CodeInvalidParams, Message: "Tool not found: " + params.Name})
		})
		return
	}
	ctx, cancel := context.WithCancelCause(s.ctx)
	c := &spaceCall{env: r.Envelope, rpcID: compact(r.RPCID), cancel: cancel}
	s.mu.Lock()
	s.calls[r.Envelope.ID] = c
	s.mu.Unlock()
	started := s.goOwned(func() {
		defer func() {
			s.mu.Lock()
			delete(s.calls, r.Envelope.ID)
			s.mu.Unlock()
			cancel(nil)
		}()
		s.serveCall(ctx, r, c, params)
	})
	if !started {
		cancel(nil)
	}
}

// serveCall runs a call and answers it, with its reasoning.
func (s *spaceConn) serveCall(ctx context.Context, r *participant.Request, c *spaceCall, params callParams) {
	id := protocol.NewID()
	progress := 0
	notify := func(msg string) {
		if len(params.Meta.ProgressToken) == 0 {
			return
		}
		progress++
		s.progress(r, params.Meta.ProgressToken, progress, msg)
	}
	res, err := s.a.Call(ctx, params.Name, params.Arguments, CallOptions{
		ContextID: id,
		OnStart: func(prompt string, _ []string) {
			s.startReasoning(c, id, params.Name, prompt)
			notify(fmt.Sprintf("Running %s (context %s).", params.Name, id))
		},
		OnStep: func(st Step) {
			s.thought(c, st)
			notify(st.Summary())
		},
	})
	var argErr *ArgumentError
	switch {
	case errors.As(err, &argErr):
		s.answer(r, nil, &participant.RPCError{Code: participant.CodeInvalidParams, Message: strings.TrimPrefix(argErr.Error(), "toolsagent: ")})
	case err != nil:
		s.mu.Lock()
		silent := c.silent
		s.mu.Unlock()
		if cause := context.Cause(ctx); ctx.Err() != nil && !errors.Is(cause, ErrClosed) {
			s.conclude(c, map[string]any{"message": "Cancelled: " + cause.Error(), "cancelled": true, "reason": cause.Error()})
		} else {
			s.conclude(c, protocol.Reasoning{Message: "Failed: " + err.Error()})
		}
		if !silent {
			s.answer(r, participant.ErrorResult(err.Error()), nil)
		}
	default:
		s.conclude(c, protocol.Reasoning{Message: "Answer: " + clip.Mark(res.Text, 200)})
		s.answer(r, spaceResult(res), nil)
	}
}

// spaceResult is a call's result as the space gets it: the answer as text
// and, for a tool with an output schema, the checked object as structured
// content (its compact JSON is then the text), as over MCP.
func spaceResult(res *Result) *participant.ToolResult {
	if res.Structured == nil {
		return participant.TextResult(res.Text)
	}
	return &participant.ToolResult{Content: []participant.Content{participant.TextContent(string(res.Structured))}, StructuredContent: res.Structured}
}

// send sends an envelope of kind when the definition and the
// capabilities allow; it reports whether it was sent.
func (s *spaceConn) send(env *protocol.Envelope, kind string, payload any) bool {
	if !s.a.def.Reasoning {
		return false
	}
	env.Protocol, env.Kind = protocol.Version, kind
	if err := env.SetPayload(payload); err != nil {
		return false
	}
	if !s.p.CanSendTo(kind, env.To, env.Payload) {
		return false
	}
	ctx, cancel := context.WithTimeout(context.Background(), spaceSendTimeout)
	defer cancel()
	if err := s.p.Send(ctx, env); err != nil {
		s.a.log.Warn("toolsagent: not sent", "kind", kind, "err", err)
		return false
	}
	return true
}

func (s *spaceConn) startReasoning(c *spaceCall, contextID, tool, prompt string) {
	env := &protocol.Envelope{ID: protocol.NewID(), CorrelationID: []string{c.env.ID}}
	msg := fmt.Sprintf("Running %s for %s (context %s).", tool, c.env.From, contextID)
	if s.send(env, protocol.KindReasoningStart, protocol.Reasoning{Message: msg, Input: prompt}) {
		s.mu.Lock()
		c.reasoning = env.ID
		s.mu.Unlock()
	}
}

func (s *spaceConn) reasoningOf(c *spaceCall) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return c.reasoning
}

func (s *spaceConn) thought(c *spaceCall, st Step) {
	rid := s.reasoningOf(c)
	if rid == "" {
		return
	}
	payload := protocol.Reasoning{Message: st.Summary(), Reasoning: st.Text}
	switch {
	case st.Kind == StepTool:
		payload.Action, payload.Reasoning = "observation", clip.Mark(st.Text, 4000)
		payload.ActionInput, _ = json.Marshal(map[string]any{"name": st.Tool, "arguments": st.Arguments})
	case len(st.Calls) > 0:
		calls := make([]map[string]any, len(st.Calls))
		for i, call := range st.Calls {
			calls[i] = map[string]any{"name": call.Name, "arguments": call.Arguments}
		}
		payload.Action = "tool_call"
		payload.ActionInput, _ = json.Marshal(calls)
	default:
		payload.Action = "respond"
	}
	s.send(&protocol.Envelope{Context: rid}, protocol.KindReasoningThought, payload)
}

func (s *spaceConn) conclude(c *spaceCall, payload any) {
	if rid := s.reasoningOf(c); rid != "" {
		s.send(&protocol.Envelope{Context: rid}, protocol.KindReasoningConclusion, payload)
	}
}

// progress sends notifications/progress to the requester, when allowed.
func (s *spaceConn) progress(r *participant.Request, token json.RawMessage, n int, msg string) {
	payload, err := json.Marshal(map[string]any{
		"jsonrpc": "2.0",
		"method":  "notifications/progress",
		"params":  map[string]any{"progressToken": token, "progress": n, "message": msg},
	})
	if err != nil || !s.p.CanSendTo(protocol.KindMCPRequest, []string{r.From()}, payload) {
		return
	}
	env := &protocol.Envelope{Protocol: protocol.Version, Kind: protocol.KindMCPRequest, To: []string{r.From()},
		CorrelationID: []string{r.Envelope.ID}, Payload: payload}
	ctx, cancel := context.WithTimeout(context.Background(), spaceSendTimeout)
	defer cancel()
	if err := s.p.Send(ctx, env); err != nil {
		s.a.log.Debug("toolsagent: progress not sent", "err", err)
	}
}

// onCancelled stops the call that a notifications/cancelled of its
// requester names, by JSON-RPC id or by correlation.
func (s *spaceConn) onCancelled(r *participant.Request) {
	var params struct {
		RequestID json.RawMessage `json:"requestId"`
		Reason    string          `json:"reason"`
	}
	_ = json.Unmarshal(r.Params, &params)
	reason := params.Reason
	if reason == "" {
		reason = "cancelled by " + r.From()
	}
	want := compact(params.RequestID)
	s.mu.Lock()
	defer s.mu.Unlock()
	for id, c := range s.calls {
		if c.env.From != r.From() {
			continue
		}
		if r.Envelope.CorrelatesWith(id) || (len(want) > 0 && bytes.Equal(want, c.rpcID)) {
			c.silent = true
			c.cancel(errors.New(reason))
		}
	}
}

// onReasoningCancel stops the call whose reasoning a reasoning/cancel
// names.
func (s *spaceConn) onReasoningCancel(env *protocol.Envelope) {
	if env.Context == "" || env.From == s.p.ID() {
		return
	}
	var payload protocol.ReasoningCancel
	_ = env.DecodePayload(&payload)
	reason := payload.Reason
	if reason == "" {
		reason = "reasoning cancelled by " + env.From
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, c := range s.calls {
		if c.reasoning == env.Context {
			c.cancel(errors.New(reason))
		}
	}
}

// compact returns raw JSON compacted, for comparing ids.
func compact(raw json.RawMessage) json.RawMessage {
	var buf bytes.Buffer
	if json.Compact(&buf, raw) != nil {
		return raw
	}
	return buf.Bytes()
}

// modelTools returns the participants' tools the model may call: those of
// participants allowed with PermissionNever that the agent may call with
// a direct mcp/request, after waiting (at most the model settings'
// discoveryWaitMs) for the discoveries under way.
func (s *spaceConn) modelTools(ctx context.Context) []agent.Tool {
	wait := s.a.def.Model.DiscoveryWait
	if wait == 0 {
		wait = agent.DefaultDiscoveryWait
	}
	if wait > 0 {
		wctx, cancel := context.WithTimeout(ctx, wait)
		_ = s.p.WaitForPendingDiscoveries(wctx)
		cancel()
	}
	var out []agent.Tool
	for _, t := range s.p.AvailableTools() {
		if t.Participant == s.p.ID() {
			continue
		}
		pc, ok := s.a.def.participant(t.Participant)
		if !ok || pc.Permission != PermissionNever || (len(pc.Tools) > 0 && !slices.Contains(pc.Tools, t.Name)) {
			continue
		}
		if !s.direct(t.Participant, t.Name, nil) {
			s.a.log.Debug("toolsagent: tool not offered: calling it needs a proposal", "participant", t.Participant, "tool", t.Name)
			continue
		}
		name, err := agent.ToolName(t.Participant, t.Name)
		if err != nil {
			s.a.log.Warn("toolsagent: tool not offered", "participant", t.Participant, "tool", t.Name, "err", err)
			continue
		}
		desc := t.Description
		if desc == "" {
			desc = t.Name
		}
		params := t.InputSchema
		if len(params) == 0 {
			params = json.RawMessage(`{"type":"object"}`)
		}
		pid, tool := t.Participant, t.Name
		out = append(out, agent.Tool{
			Tool: llm.Tool{Name: name, Description: fmt.Sprintf("%s (tool %q of participant %q)", desc, tool, pid), Parameters: params},
			Call: func(ctx context.Context, args json.RawMessage) (string, error) {
				return s.callTool(ctx, pid, tool, args)
			},
		})
	}
	return out
}

// direct reports whether the agent may call tool with a direct
// mcp/request (the gateway judges the payload).
func (s *spaceConn) direct(pid, tool string, args json.RawMessage) bool {
	if len(args) == 0 {
		args = json.RawMessage("{}")
	}
	body, err := json.Marshal(map[string]any{
		"jsonrpc": "2.0", "id": 1, "method": "tools/call",
		"params": map[string]any{"name": tool, "arguments": args},
	})
	return err == nil && s.p.CanSendTo(protocol.KindMCPRequest, []string{pid}, body)
}

// callTool calls a participant's tool with a direct mcp/request, never a
// proposal.
func (s *spaceConn) callTool(ctx context.Context, pid, tool string, args json.RawMessage) (string, error) {
	raw, err := s.p.RequestDirect(ctx, pid, map[string]any{
		"method": "tools/call",
		"params": map[string]any{"name": tool, "arguments": args},
	})
	if errors.Is(err, participant.ErrNotAllowed) {
		return "", fmt.Errorf("calling %s of %s needs approval here, and a tools agent never proposes", tool, pid)
	}
	if err != nil {
		return "", err
	}
	var res participant.ToolResult
	if err := json.Unmarshal(raw, &res); err != nil {
		return string(raw), nil
	}
	text := res.Text()
	if text == "" && len(res.StructuredContent) > 0 {
		text = string(res.StructuredContent)
	}
	if res.IsError {
		return "", errors.New(text)
	}
	return text, nil
}
