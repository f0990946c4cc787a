package participant

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"runtime/debug"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/mew-protocol/mew/client"
	"github.com/mew-protocol/mew/protocol"
)

const (
	// maxPending bounds the requests and proposals awaiting an answer.
	maxPending = 10000
	// maxFulfilments bounds the fulfilments tracked for one proposal.
	maxFulfilments = 16
	// maxTrackedProposals bounds the others' proposals remembered for
	// Fulfill, Reject and withdrawals; the oldest are forgotten first.
	maxTrackedProposals = 1024
	// withdrawTimeout bounds sending the withdrawal of a proposal given up.
	withdrawTimeout = 5 * time.Second
)

var (
	// ErrTooManyRequests: too many requests and proposals of this
	// participant are awaiting an answer.
	ErrTooManyRequests = errors.New("participant: too many requests awaiting an answer")
	// ErrProposalWithdrawn: the proposer withdrew the proposal.
	ErrProposalWithdrawn = errors.New("participant: proposal withdrawn by its proposer")
	// ErrTargetLeft: the participant a request or proposal was addressed
	// to left the space (the gateway's system/presence leave) before
	// answering; no answer will come.
	ErrTargetLeft = errors.New("participant: target left the space")

	// ErrProposalTimedOut: nobody decided a proposal of this participant
	// within Options.ProposalTimeout (or its context's deadline); it was
	// withdrawn with reason "timeout". It is not a rejection.
	ErrProposalTimedOut = errors.New("participant: nobody decided the proposal in time")
)

// Request is an mcp/request addressed to this participant for a method
// the participant does not serve itself, as OnRequest handlers receive it.
type Request struct {
	// Envelope is the request as it arrived; it must not be modified.
	Envelope *protocol.Envelope
	// Method and Params are the JSON-RPC method and params.
	Method string
	Params json.RawMessage
	// RPCID is the JSON-RPC id, echoed in the answer; nil when absent.
	RPCID json.RawMessage

	p        *Participant
	answered atomic.Bool
}

// From returns the requester.
func (r *Request) From() string { return r.Envelope.From }

// IsNotification reports whether the request is an MCP notification
// (method "notifications/..."), which is never answered.
func (r *Request) IsNotification() bool { return isNotification(r.Method) }

// Respond answers the request with a JSON-RPC result. A request is
// answered once; Respond may be called from any goroutine.
func (r *Request) Respond(ctx context.Context, result any) error {
	return r.answer(ctx, result, nil)
}

// RespondError answers the request with a JSON-RPC error.
func (r *Request) RespondError(ctx context.Context, code int, message string) error {
	return r.answer(ctx, nil, &RPCError{Code: code, Message: message})
}

// RespondRPCError answers the request with a JSON-RPC error as it is,
// data included: for instance one that an MCP server returned.
func (r *Request) RespondRPCError(ctx context.Context, e *RPCError) error {
	if e == nil {
		return fmt.Errorf("participant: request %s: no error to answer with", r.Envelope.ID)
	}
	return r.answer(ctx, nil, e)
}

// Answer answers the request with rpcErr when it is not nil, else with
// result: for code that forwards an answer it got from elsewhere (an MCP
// server, a tool run) without caring which of the two it is. A result
// larger than Options.MaxReplyBytes is answered with an error that says so,
// since the gateway would refuse it.
func (r *Request) Answer(ctx context.Context, result any, rpcErr *RPCError) error {
	return r.answer(ctx, result, rpcErr)
}

func (r *Request) answer(ctx context.Context, result any, rpcErr *RPCError) error {
	if r.IsNotification() {
		return fmt.Errorf("participant: %s is a notification and takes no answer", r.Method)
	}
	if !r.answered.CompareAndSwap(false, true) {
		return fmt.Errorf("participant: request %s already answered", r.Envelope.ID)
	}
	// A result too large for the gateway is answered with an error that
	// says so (response), as the participant's own tools are.
	out, err := r.p.response(r.Envelope, r.RPCID, result, rpcErr)
	if err != nil {
		return err
	}
	return r.p.Send(ctx, out)
}

// requestTable tracks this participant's requests and proposals awaiting
// an answer, the fulfilments of its proposals, the others' proposals, and
// the OnProposal and OnRequest handlers. mu guards the maps; it is never
// held while calling out.
type requestTable struct {
	mu          sync.Mutex
	calls       map[string]*pendingCall  // by request or proposal envelope id
	fulfilments map[string]fulfilmentRef // fulfilment request id → our proposal
	proposals   map[string]*Proposal     // others' proposals by id
	order       []string                 // of proposals, oldest first
	rpcID       atomic.Int64             // last JSON-RPC id used
	claims      atomic.Uint64            // last serial of a decision on a proposal

	hmu              sync.Mutex
	nextHandler      int
	proposalHandlers []handler[*Proposal]
	requestHandlers  []handler[*Request]
	approvalHandlers []handler[protocol.Approval]

	approvals approvalBook // the last state of each governed proposal seen (approvals.go)
}

// handler is a function registered by OnProposal or OnRequest, numbered
// so that its remover finds it.
type handler[T any] struct {
	n int
	f func(T)
}

// addHandler appends f to *list under t.hmu and returns the function that
// removes it. The list is copied on removal, never changed in place, so
// that a dispatch holding the old slice runs it unlocked.
func addHandler[T any](t *requestTable, list *[]handler[T], f func(T)) (remove func()) {
	t.hmu.Lock()
	defer t.hmu.Unlock()
	t.nextHandler++
	n := t.nextHandler
	*list = append(*list, handler[T]{n, f})
	return func() {
		t.hmu.Lock()
		defer t.hmu.Unlock()
		*list = slices.DeleteFunc(slices.Clone(*list), func(h handler[T]) bool { return h.n == n })
	}
}

// pendingCall is one request or proposal awaiting its answer.
type pendingCall struct {
	id          string
	proposal    bool
	targets     []string         // who may answer
	done        chan callOutcome // buffered; receives exactly one outcome
	fulfilments []string         // ids in requestTable.fulfilments
	left        map[string]bool  // targets that have left the space
	onApproval  func(protocol.Approval)
}

type callOutcome struct {
	result json.RawMessage
	err    error
}

// fulfilmentRef links someone's fulfilment request to our proposal.
type fulfilmentRef struct {
	call *pendingCall
	to   []string // the fulfilment's addressees
}

func (p *Participant) wireRequests() {
	t := &p.pending
	t.calls = make(map[string]*pendingCall)
	t.fulfilments = make(map[string]fulfilmentRef)
	t.proposals = make(map[string]*Proposal)
	p.c.OnKind(protocol.KindMCPResponse, p.onMCPResponse)
	p.c.OnKind(protocol.KindMCPRequest, p.onMCPRequestSeen)
	p.c.OnKind(protocol.KindMCPProposal, p.onMCPProposal)
	p.c.OnKind(protocol.KindMCPReject, p.onMCPReject)
	p.c.OnKind(protocol.KindMCPWithdraw, p.onMCPWithdraw)
	p.c.OnKind(protocol.KindSystemError, p.onSystemError)
	p.c.OnKind(protocol.KindSystemPresence, p.onTargetLeave)
	p.c.OnKind(protocol.KindSystemApproval, p.onSystemApproval)
}

// add registers a call before its envelope is sent.
func (t *requestTable) add(c *pendingCall) error {
	t.mu.Lock()
	defer t.mu.Unlock()
	if len(t.calls) >= maxPending {
		return ErrTooManyRequests
	}
	if _, dup := t.calls[c.id]; dup {
		return fmt.Errorf("participant: envelope id %s already pending", c.id)
	}
	t.calls[c.id] = c
	return nil
}

// finish removes c and, if it was still pending, hands it its outcome.
func (t *requestTable) finish(c *pendingCall, o callOutcome) {
	t.mu.Lock()
	live := t.calls[c.id] == c
	if live {
		t.dropLocked(c)
	}
	t.mu.Unlock()
	if live {
		c.done <- o
	}
}

// remove forgets c (its caller gave up).
func (t *requestTable) remove(c *pendingCall) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.calls[c.id] == c {
		t.dropLocked(c)
	}
}

func (t *requestTable) dropLocked(c *pendingCall) {
	delete(t.calls, c.id)
	for _, f := range c.fulfilments {
		delete(t.fulfilments, f)
	}
}

// Request sends an MCP request to target and returns the JSON-RPC result
// (the spec's mcpRequest). payload is anything that encodes to a JSON
// object holding the MCP method and params (a map, a struct, a
// json.RawMessage), e.g. map[string]any{"method": "tools/call", "params":
// ...}; Request sets "jsonrpc":"2.0" and a numeric "id" of its own.
//
// If the participant's capabilities allow the payload as an mcp/request,
// it is sent to target directly and the answer is the target's
// mcp/response correlated to it. Otherwise, if they allow it as an
// mcp/proposal, it is proposed to target, and the answer is target's
// response to the first fulfilment (an mcp/request correlated to the
// proposal, addressed to target, from whoever fulfils it); an mcp/reject
// of the proposal from anyone but this participant fails it at once with
// a *RejectedError. Otherwise Request returns an error wrapping
// ErrNotAllowed and sends nothing. Responses from anyone but target are
// ignored.
//
// A JSON-RPC error in the answer is returned as an *RPCError; a refusal by
// the gateway as a *GatewayError. When the target leaves the space before
// answering (the gateway's system/presence leave), Request fails at once
// with an error wrapping ErrTargetLeft, and a proposal is withdrawn. Request waits until ctx ends, or for
// Options.RequestTimeout if ctx has no deadline, and the error wraps ctx's
// error. A request given up this way is cancelled: a proposal is withdrawn
// (mcp/withdraw with reason "timeout" or "cancelled"), and the target of a
// direct request is told with MCP's notifications/cancelled (an mcp/request
// correlated to the request, params requestId and reason), when the
// capabilities allow it. Request blocks its caller only; it must not be
// called from a handler.
func (p *Participant) Request(ctx context.Context, target string, payload any) (json.RawMessage, error) {
	return p.request(ctx, target, payload, true, RequestOptions{})
}

// RequestOptions are the optional settings of RequestWith.
type RequestOptions struct {
	// Context is the envelope context of the request or proposal (spec
	// 3.5.6): the id of the reasoning/start whose step the call is, so that
	// the space and the audit log tie the call to that reasoning exactly.
	Context string
	// OnApproval, when set, is called with each state the gateway announces
	// of the call's proposal under the space's approval policy
	// (system/approval, docs/approvals.md): who must approve, how many
	// more, and how it ended. It runs on the client's dispatch goroutine
	// and must not block.
	OnApproval func(protocol.Approval)
}

// RequestWith is Request with options.
func (p *Participant) RequestWith(ctx context.Context, target string, payload any, opts RequestOptions) (json.RawMessage, error) {
	return p.request(ctx, target, payload, true, opts)
}

// RequestDirect is Request that never proposes: when the participant may
// not send the payload as an mcp/request, it returns an error wrapping
// ErrNotAllowed and sends nothing. It is for callers that must not ask
// anyone's approval, such as a tools agent answering an MCP host.
func (p *Participant) RequestDirect(ctx context.Context, target string, payload any) (json.RawMessage, error) {
	return p.request(ctx, target, payload, false, RequestOptions{})
}

func (p *Participant) request(ctx context.Context, target string, payload any, propose bool, opts RequestOptions) (json.RawMessage, error) {
	if target == "" {
		return nil, errors.New("participant: request: target is required")
	}
	body, method, err := p.pending.rpcPayload(payload)
	if err != nil {
		return nil, fmt.Errorf("participant: request to %s: %w", target, err)
	}
	switch {
	case p.CanSendTo(protocol.KindMCPRequest, []string{target}, body):
		return p.roundTrip(ctx, protocol.KindMCPRequest, []string{target}, nil, opts, body, nil)
	case propose && p.CanSendTo(protocol.KindMCPProposal, []string{target}, body):
		return p.roundTrip(ctx, protocol.KindMCPProposal, []string{target}, nil, opts, body, nil)
	}
	return nil, fmt.Errorf("participant: %s to %s: %w", method, target, ErrNotAllowed)
}

// Fulfill carries out (approves) another participant's proposal: it sends
// the proposal's payload as an mcp/request to the proposal's addressees,
// correlated to the proposal, and returns the result as Request does (the
// answer must come from one of them). A proposal is decided once: one that
// was settled already, here or by anyone in the space (carried out,
// rejected, withdrawn by its proposer, timed out), is refused with a
// *ProposalSettledError (errors.Is ErrProposalSettled, and
// ErrProposalWithdrawn when withdrawn), as is one the participant may not
// send as a request (ErrNotAllowed). A fulfilment that never reached the
// space (not sent, or refused by the gateway) leaves the proposal open.
// Fulfill blocks; call it from a goroutine of your own, not from an
// OnProposal handler.
func (p *Participant) Fulfill(ctx context.Context, pr *Proposal) (json.RawMessage, error) {
	if pr == nil || pr.Envelope == nil {
		return nil, errors.New("participant: fulfil: no proposal")
	}
	return p.fulfil(ctx, pr, json.RawMessage(pr.Envelope.Payload))
}

// Reject declines another participant's proposal: an mcp/reject to the
// proposer, correlated to the proposal. reason should be one of the
// protocol.Reason* codes; "" sends none. As Fulfill, it refuses a proposal
// settled already with a *ProposalSettledError.
func (p *Participant) Reject(ctx context.Context, pr *Proposal, reason string) error {
	return p.RejectWith(ctx, pr, reason, "")
}

// OnProposal registers f for the mcp/proposal envelopes of other
// participants, whoever they are addressed to, and returns a function that
// removes it. f runs on the client's dispatch goroutine and must not block:
// to fulfil, call Fulfill from a goroutine of your own. A panic in f is
// recovered and logged.
func (p *Participant) OnProposal(f func(*Proposal)) (remove func()) {
	return addHandler(&p.pending, &p.pending.proposalHandlers, f)
}

// OnRequest registers f for the mcp/request envelopes addressed to this
// participant whose method it does not serve itself (it serves initialize,
// ping, tools/list, tools/call, resources/list, resources/read and
// resources/templates/list, except those listed in
// Options.DelegatedMethods), notifications included, and returns a
// function that removes it. f answers with Request.Respond or
// RespondError; while no handler is registered, such requests are answered
// with CodeMethodNotFound. f runs on the dispatch goroutine and must not
// block; a panic in it is recovered and logged.
func (p *Participant) OnRequest(f func(*Request)) (remove func()) {
	return addHandler(&p.pending, &p.pending.requestHandlers, f)
}

// Proposal returns another participant's proposal that this participant
// has seen, by id; it remembers the latest 1024.
func (p *Participant) Proposal(id string) (*Proposal, bool) {
	t := &p.pending
	t.mu.Lock()
	defer t.mu.Unlock()
	pr, ok := t.proposals[id]
	return pr, ok
}

// roundTrip sends one request or proposal and waits for its outcome.
// sent, when not nil, is called once the envelope is queued for the
// gateway.
func (p *Participant) roundTrip(ctx context.Context, kind string, to, correlation []string, opts RequestOptions, body []byte, sent func()) (json.RawMessage, error) {
	if _, ok := ctx.Deadline(); !ok {
		wait := p.opts.RequestTimeout
		if kind == protocol.KindMCPProposal {
			wait = p.opts.ProposalTimeout
		}
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, wait)
		defer cancel()
	}
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("participant: %s: %w", kind, err)
	}
	env := &protocol.Envelope{
		ID:            protocol.NewID(),
		Kind:          kind,
		To:            to,
		CorrelationID: correlation,
		Context:       opts.Context,
		Payload:       body,
	}
	c := &pendingCall{
		id:         env.ID,
		proposal:   kind == protocol.KindMCPProposal,
		targets:    to,
		done:       make(chan callOutcome, 1),
		onApproval: opts.OnApproval,
	}
	t := &p.pending
	if err := t.add(c); err != nil {
		return nil, err
	}
	defer t.remove(c)
	if err := p.Send(ctx, env); err != nil {
		return nil, fmt.Errorf("participant: send %s to %v: %w", kind, to, err)
	}
	if sent != nil {
		sent()
	}
	select {
	case o := <-c.done:
		if c.proposal && errors.Is(o.err, ErrTargetLeft) {
			// No one can carry it out now: stop asking the approvers.
			p.withdraw(context.WithoutCancel(ctx), env.ID, protocol.ReasonNoLongerNeeded)
		}
		return o.result, o.err
	case <-ctx.Done():
		reason := "cancelled"
		if errors.Is(ctx.Err(), context.DeadlineExceeded) {
			reason = protocol.ReasonTimeout
		}
		t.remove(c)
		select {
		case o := <-c.done: // answered just in time
			return o.result, o.err
		default:
		}
		if c.proposal {
			p.withdraw(context.WithoutCancel(ctx), env.ID, reason)
			if reason == protocol.ReasonTimeout {
				return nil, fmt.Errorf("participant: proposal %s to %v: %w (%w)", env.ID, to, ErrProposalTimedOut, ctx.Err())
			}
			return nil, fmt.Errorf("participant: proposal %s to %v not fulfilled: %w", env.ID, to, ctx.Err())
		}
		p.cancelRequest(context.WithoutCancel(ctx), env, reason)
		return nil, fmt.Errorf("participant: request %s to %v: %w", env.ID, to, ctx.Err())
	case <-p.ctx.Done():
		return nil, ErrClosed
	}
}

// cancelRequest tells the targets of a request given up with MCP's
// notifications/cancelled, when the capabilities allow it.
func (p *Participant) cancelRequest(ctx context.Context, env *protocol.Envelope, reason string) {
	var head struct {
		ID json.RawMessage `json:"id"`
	}
	if json.Unmarshal(env.Payload, &head) != nil || len(head.ID) == 0 {
		return
	}
	note := map[string]any{
		"jsonrpc": "2.0",
		"method":  "notifications/cancelled",
		"params":  map[string]any{"requestId": head.ID, "reason": reason},
	}
	raw, err := json.Marshal(note)
	if err != nil || !p.CanSend(protocol.KindMCPRequest, raw) {
		return
	}
	ctx, cancel := context.WithTimeout(ctx, withdrawTimeout)
	defer cancel()
	if _, err := p.send(ctx, protocol.KindMCPRequest, env.To, []string{env.ID}, json.RawMessage(raw)); err != nil {
		p.log.Warn("notifications/cancelled not sent", "request", env.ID, "err", err)
	}
}

// withdraw sends an mcp/withdraw of our proposal.
func (p *Participant) withdraw(ctx context.Context, proposalID, reason string) {
	ctx, cancel := context.WithTimeout(ctx, withdrawTimeout)
	defer cancel()
	if _, err := p.send(ctx, protocol.KindMCPWithdraw, nil, []string{proposalID}, protocol.Withdraw{Reason: reason}); err != nil {
		p.log.Warn("mcp/withdraw not sent", "proposal", proposalID, "err", err)
	}
}

// rpcPayload turns a caller's MCP payload into the JSON-RPC object sent:
// jsonrpc, a new numeric id, method, params, then any other members.
func (t *requestTable) rpcPayload(payload any) ([]byte, string, error) {
	raw, err := marshalNoEscape(payload)
	if err != nil {
		return nil, "", fmt.Errorf("payload: %w", err)
	}
	var m map[string]json.RawMessage
	if err := json.Unmarshal(raw, &m); err != nil || m == nil {
		return nil, "", errors.New("payload must be a JSON object with a method")
	}
	var method string
	if err := json.Unmarshal(m["method"], &method); err != nil || method == "" {
		return nil, "", errors.New("payload needs a method")
	}
	var b bytes.Buffer
	b.WriteString(`{"jsonrpc":"2.0","id":`)
	b.WriteString(strconv.FormatInt(t.rpcID.Add(1), 10))
	b.WriteString(`,"method":`)
	b.Write(m["method"])
	if params, ok := m["params"]; ok {
		b.WriteString(`,"params":`)
		b.Write(params)
	}
	rest := make([]string, 0, len(m))
	for k := range m {
		switch k {
		case "jsonrpc", "id", "method", "params":
		default:
			rest = append(rest, k)
		}
	}
	sort.Strings(rest)
	for _, k := range rest {
		b.WriteByte(',')
		kb, _ := json.Marshal(k)
		b.Write(kb)
		b.WriteByte(':')
		b.Write(m[k])
	}
	b.WriteByte('}')
	return b.Bytes(), method, nil
}

// onMCPResponse completes the call a response answers: a request of ours
// answered by its target, or a fulfilment of our proposal answered by the
// proposal's target. Everything else is ignored.
func (p *Participant) onMCPResponse(env *protocol.Envelope) {
	t := &p.pending
	var c *pendingCall
	t.mu.Lock()
	for _, id := range env.CorrelationID {
		if pc := t.calls[id]; pc != nil && !pc.proposal && slices.Contains(pc.targets, env.From) {
			c = pc
			break
		}
		if f, ok := t.fulfilments[id]; ok && slices.Contains(f.to, env.From) && slices.Contains(f.call.targets, env.From) {
			c = f.call
			break
		}
	}
	t.mu.Unlock()
	if c == nil {
		return
	}
	var msg struct {
		Result json.RawMessage `json:"result"`
		Error  *RPCError       `json:"error"`
	}
	if err := json.Unmarshal(env.Payload, &msg); err != nil {
		t.finish(c, callOutcome{err: fmt.Errorf("participant: malformed mcp/response %s from %s: %w", env.ID, env.From, err)})
		return
	}
	if msg.Error != nil {
		t.finish(c, callOutcome{err: msg.Error})
		return
	}
	t.finish(c, callOutcome{result: msg.Result})
}

// onMCPRequestSeen notes fulfilments: of our proposals (so that their
// responses complete our calls) and of the others' proposals we track.
func (p *Participant) onMCPRequestSeen(env *protocol.Envelope) {
	if len(env.CorrelationID) == 0 {
		return
	}
	t := &p.pending
	t.mu.Lock()
	defer t.mu.Unlock()
	for _, id := range env.CorrelationID {
		if c := t.calls[id]; c != nil && c.proposal && len(c.fulfilments) < maxFulfilments && intersects(env.To, c.targets) {
			if _, dup := t.fulfilments[env.ID]; !dup {
				t.fulfilments[env.ID] = fulfilmentRef{call: c, to: slices.Clone(env.To)}
				c.fulfilments = append(c.fulfilments, env.ID)
			}
		}
		if pr := t.proposals[id]; pr != nil && intersects(env.To, pr.Envelope.To) && !isNotificationPayload(env.Payload) {
			pr.settle(ProposalStatus{Settlement: Approved, By: env.From, At: time.Now()})
		}
	}
}

// onMCPProposal tracks another participant's proposal and calls the
// OnProposal handlers.
func (p *Participant) onMCPProposal(env *protocol.Envelope) {
	if env.From == p.ID() {
		return
	}
	var msg rpcRequest
	_ = json.Unmarshal(env.Payload, &msg)
	now := time.Now()
	pr := &Proposal{Envelope: env, Method: msg.Method, Params: msg.Params, withdrawn: make(chan struct{}), expires: now.Add(p.opts.ProposalTimeout)}
	t := &p.pending
	t.mu.Lock()
	if _, seen := t.proposals[env.ID]; seen {
		t.mu.Unlock()
		return
	}
	t.trackLocked(pr, now)
	t.mu.Unlock()

	t.hmu.Lock()
	hs := t.proposalHandlers
	t.hmu.Unlock()
	for _, h := range hs {
		p.guard("OnProposal", func() { h.f(pr) })
	}
}

// onMCPReject settles a tracked proposal as rejected, and fails our
// proposal on its first rejection by someone else.
// Any participant may reject (spec 3.3.2: "any participant with the
// capability"; the gateway checks the capability): the approver who
// declines is usually not one of the proposal's addressees.
func (p *Participant) onMCPReject(env *protocol.Envelope) {
	var r rejection // the reason, and the person's words
	_ = env.DecodePayload(&r)
	t := &p.pending
	var c *pendingCall
	t.mu.Lock()
	for _, id := range env.CorrelationID {
		if pr := t.proposals[id]; pr != nil {
			pr.settle(ProposalStatus{Settlement: Rejected, By: env.From, Reason: r.Reason, At: time.Now()})
		}
		if pc := t.calls[id]; pc != nil && pc.proposal && env.From != p.ID() {
			c = pc
			break
		}
	}
	t.mu.Unlock()
	if c == nil {
		return
	}
	if r.Reason == "" {
		r.Reason = "unknown"
	}
	t.finish(c, callOutcome{err: &RejectedError{ProposalID: c.id, By: env.From, Reason: r.Reason, Message: r.Message}})
}

// onMCPWithdraw marks a tracked proposal withdrawn, if the withdrawal
// comes from its proposer; others' withdrawals are ignored.
func (p *Participant) onMCPWithdraw(env *protocol.Envelope) {
	var w protocol.Withdraw
	_ = env.DecodePayload(&w)
	t := &p.pending
	t.mu.Lock()
	defer t.mu.Unlock()
	for _, id := range env.CorrelationID {
		pr := t.proposals[id]
		if pr == nil {
			continue
		}
		if pr.From() != env.From {
			p.log.Warn("ignoring mcp/withdraw from someone other than the proposer", "proposal", id, "proposer", pr.From(), "from", env.From)
			continue
		}
		st := ProposalStatus{Settlement: Withdrawn, By: env.From, Reason: w.Reason, At: time.Now()}
		if w.Reason == protocol.ReasonTimeout {
			st.Settlement = TimedOut
		}
		pr.settle(st)
	}
}

// onTargetLeave fails at once the calls none of whose targets is left in
// the space, on the gateway's system/presence leave: their answer would
// never come, and the caller would wait out its timeout for nothing.
func (p *Participant) onTargetLeave(env *protocol.Envelope) {
	if !client.FromGateway(env) {
		return
	}
	var pr protocol.Presence
	if env.DecodePayload(&pr) != nil || pr.Event != protocol.PresenceLeave || pr.Participant.ID == "" {
		return
	}
	id := pr.Participant.ID
	t := &p.pending
	var gone []*pendingCall
	t.mu.Lock()
	for _, c := range t.calls {
		if !slices.Contains(c.targets, id) {
			continue
		}
		if c.left == nil {
			c.left = make(map[string]bool, len(c.targets))
		}
		c.left[id] = true
		if !slices.ContainsFunc(c.targets, func(to string) bool { return !c.left[to] }) {
			gone = append(gone, c)
		}
	}
	t.mu.Unlock()
	for _, c := range gone {
		what := "request"
		if c.proposal {
			what = "proposal"
		}
		t.finish(c, callOutcome{err: fmt.Errorf("participant: %s %s to %v: %s left: %w", what, c.id, c.targets, id, ErrTargetLeft)})
	}
}

// onSystemError fails the call whose envelope the gateway refused.
func (p *Participant) onSystemError(env *protocol.Envelope) {
	if !client.FromGateway(env) {
		return
	}
	t := &p.pending
	var c *pendingCall
	t.mu.Lock()
	for _, id := range env.CorrelationID {
		if pc := t.calls[id]; pc != nil {
			c = pc
			break
		}
	}
	t.mu.Unlock()
	if c == nil {
		return
	}
	var se protocol.SystemError
	_ = env.DecodePayload(&se)
	t.finish(c, callOutcome{err: &GatewayError{Code: se.Error, Message: se.Message}})
}

// deliverRequest hands a request for a method the participant does not
// serve to the OnRequest handlers, or answers CodeMethodNotFound when
// there are none. Notifications are never answered.
func (p *Participant) deliverRequest(env *protocol.Envelope, req *rpcRequest) {
	t := &p.pending
	t.hmu.Lock()
	hs := t.requestHandlers
	t.hmu.Unlock()
	if len(hs) == 0 {
		if req.Method == "" {
			p.replyNow(env, req.ID, nil, &RPCError{Code: CodeInvalidRequest, Message: "Invalid request: method is required"})
		} else if !isNotification(req.Method) {
			p.replyNow(env, req.ID, nil, &RPCError{Code: CodeMethodNotFound, Message: "Method not found: " + req.Method})
		}
		return
	}
	r := &Request{Envelope: env, Method: req.Method, Params: req.Params, RPCID: req.ID, p: p}
	for _, h := range hs {
		p.guard("OnRequest", func() { h.f(r) })
	}
}

// guard runs a user handler and recovers its panic.
func (p *Participant) guard(what string, f func()) {
	defer func() {
		if r := recover(); r != nil {
			p.log.Error("handler panicked", "handler", what, "panic", r, "stack", string(debug.Stack()))
		}
	}()
	f()
}

func isNotification(method string) bool {
	return strings.HasPrefix(method, "notifications/")
}

func intersects(a, b []string) bool {
	for _, x := range a {
		if slices.Contains(b, x) {
			return true
		}
	}
	return false
}
