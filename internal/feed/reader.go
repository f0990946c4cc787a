package feed

import (
	"cmp"
	"encoding/json"
	"errors"
	"reflect"
	"slices"
	"strings"

	"github.com/mew-protocol/mew/client"
	"github.com/mew-protocol/mew/protocol"
)

// Bounds of what a Reader remembers: past them the oldest is forgotten
// (a reasoning is ended, Evicted), so that a peer flooding the space
// cannot grow a client without limit.
const (
	MaxRequests   = 1024
	MaxProposals  = 1024
	MaxReasonings = 256
	MaxTools      = 32 // tools remembered per reasoning
)

// Reader turns envelopes into events. Its zero value is not ready: use
// NewReader. It is not safe for concurrent use; a client reads its stream
// from one goroutine, or under its own lock.
type Reader struct {
	requests map[string]*request
	reqOrder []string

	proposals map[string]*proposal
	propOrder []string

	reasonings map[string]*reasoning
	reaOrder   []string
}

type request struct {
	to       []string
	method   string
	listing  bool
	answered bool
}

type proposal struct {
	from    string
	params  json.RawMessage
	settled bool
}

type reasoning struct {
	from     string
	question string
	thoughts int
	tools    []string
}

// NewReader returns a Reader that has seen nothing.
func NewReader() *Reader {
	return &Reader{
		requests:   map[string]*request{},
		proposals:  map[string]*proposal{},
		reasonings: map[string]*reasoning{},
	}
}

// Read returns the events env makes, in the order a person should see
// them; none for nil, for a duplicate proposal, and for a settlement or
// conclusion of something unseen or not its sender's to settle.
func (r *Reader) Read(env *protocol.Envelope) []Event {
	if env == nil {
		return nil
	}
	m := metaOf(env)
	if gatewayOnly(env.Kind) && !client.FromGateway(env) {
		return []Event{&Spoofed{Meta: m}}
	}
	evs, err := r.read(env, m)
	if err != nil {
		return []Event{&Malformed{Meta: m, Err: err}}
	}
	return evs
}

// gatewayOnly reports whether only the gateway may say kind: system/*,
// floor/yield, and stream/open, its answer to a stream/request (a
// participant's would name a stream the gateway never opened).
func gatewayOnly(kind string) bool {
	return protocol.IsGatewayOnly(kind) || kind == protocol.KindStreamOpen
}

// decode decodes env's payload into v.
func decode[T any](env *protocol.Envelope) (*T, error) {
	v := new(T)
	if err := env.DecodePayload(v); err != nil {
		return nil, err
	}
	return v, nil
}

// one decodes env's payload as a T and makes the one event it is.
func one[T any](env *protocol.Envelope, build func(*T) Event) ([]Event, error) {
	v, err := decode[T](env)
	if err != nil {
		return nil, err
	}
	return []Event{build(v)}, nil
}

// read interprets env by its kind. A payload is decoded in full before
// any state changes, so that a malformed one leaves the reader as it was.
func (r *Reader) read(env *protocol.Envelope, m Meta) ([]Event, error) {
	switch env.Kind {
	case protocol.KindSystemWelcome:
		return one(env, func(w *protocol.Welcome) Event {
			ids := make([]string, 0, len(w.Participants))
			for _, p := range w.Participants {
				ids = append(ids, p.ID)
			}
			return &Welcome{Meta: m, You: w.You.ID, Participants: ids, Payload: w}
		})
	case protocol.KindSystemPresence:
		p, err := decode[protocol.Presence](env)
		if err != nil {
			return nil, err
		}
		evs := []Event{&Presence{Meta: m, Participant: p.Participant.ID, Event: p.Event, Payload: p}}
		if p.Event == protocol.PresenceLeave {
			for _, id := range slices.Clone(r.reaOrder) {
				if x := r.reasonings[id]; x.from == p.Participant.ID {
					evs = append(evs, r.end(m, id, Left, false, ""))
				}
			}
		}
		return evs, nil
	case protocol.KindSystemError:
		return one(env, func(e *protocol.SystemError) Event {
			return &SystemError{Meta: m, Code: e.Error, Message: e.Message, AttemptedKind: e.AttemptedKind, Correlation: env.CorrelationID}
		})
	case protocol.KindChat:
		c, err := decode[protocol.Chat](env)
		if err != nil {
			return nil, err
		}
		var evs []Event
		for _, id := range r.reaOrder {
			if x := r.reasonings[id]; x.from == env.From && x.question != "" && env.CorrelatesWith(x.question) {
				evs = append(evs, r.end(m, id, Answered, false, ""))
				break
			}
		}
		return append(evs, &Chat{Meta: m, Text: c.Text, Format: c.Format, Correlation: env.CorrelationID}), nil
	case protocol.KindChatAcknowledge:
		return one(env, func(a *protocol.ChatAcknowledge) Event {
			return &ChatAcked{Meta: m, Chats: env.CorrelationID, Status: a.Status}
		})
	case protocol.KindMCPRequest:
		return r.request(env, m)
	case protocol.KindMCPResponse:
		return r.response(env, m)
	case protocol.KindMCPProposal:
		return r.propose(env, m)
	case protocol.KindMCPReject:
		x, err := decode[struct {
			Reason  string `json:"reason"`
			Message string `json:"message"` // a person's words (participant.RejectWith)
		}](env)
		if err != nil {
			return nil, err
		}
		return r.settle(env, m, Rejected, x.Reason, x.Message, false), nil
	case protocol.KindMCPWithdraw:
		w, err := decode[protocol.Withdraw](env)
		if err != nil {
			return nil, err
		}
		outcome := Withdrawn
		if w.Reason == protocol.ReasonTimeout {
			outcome = TimedOut // not a rejection: nobody was there to decide
		}
		return r.settle(env, m, outcome, w.Reason, "", true), nil
	case protocol.KindSystemApproval:
		return r.approval(env, m)
	case protocol.KindApprovalApprove:
		if len(env.CorrelationID) != 1 {
			return nil, errors.New("approval/approve names one proposal in correlation_id")
		}
		return []Event{&Approve{Meta: m, Proposal: env.CorrelationID[0]}}, nil
	case protocol.KindReasoningStart:
		return r.start(env, m), nil
	case protocol.KindReasoningThought:
		return r.thought(env, m)
	case protocol.KindReasoningConclusion, protocol.KindReasoningCancel:
		return r.conclude(env, m)
	case protocol.KindCapabilityGrant:
		return one(env, func(g *protocol.Grant) Event {
			return &Granted{Meta: m, Recipient: g.Recipient, Capabilities: g.Capabilities, TTLSeconds: g.TTLSeconds, ExpiresAt: g.ExpiresAt, Session: g.Session}
		})
	case protocol.KindCapabilityRevoke:
		return one(env, func(g *protocol.Revoke) Event {
			return &Revoked{Meta: m, Recipient: g.Recipient, Grant: g.GrantID, Capabilities: g.Capabilities, Reason: g.Reason}
		})
	case protocol.KindCapabilityGrantAck:
		return one(env, func(*protocol.GrantAck) Event { return &GrantAcked{Meta: m, Grants: env.CorrelationID} })
	case protocol.KindStreamOpen:
		return one(env, func(s *protocol.StreamOpen) Event {
			return &StreamOpened{Meta: m, Stream: s.StreamID, Owner: s.Owner, Target: s.Target}
		})
	case protocol.KindStreamClose:
		return one(env, func(s *protocol.StreamClose) Event {
			return &StreamClosed{Meta: m, Stream: s.StreamID, Reason: s.Reason}
		})
	case protocol.KindParticipantPause, protocol.KindParticipantResume, protocol.KindParticipantShutdown,
		protocol.KindParticipantRestart, protocol.KindParticipantClear, protocol.KindParticipantCompact,
		protocol.KindParticipantForget, protocol.KindParticipantRequestStatus:
		return one(env, func(p *protocol.Pause) Event {
			return &Control{Meta: m, Reason: p.Reason, TimeoutSeconds: p.TimeoutSeconds}
		})
	case protocol.KindElicitationRequest, protocol.KindElicitationResponse,
		protocol.KindElicitationDone, protocol.KindElicitationRefused:
		return []Event{&Elicitation{Meta: m}}, nil
	case protocol.KindChatCancel, protocol.KindParticipantStatus, protocol.KindParticipantCompactDone,
		protocol.KindSystemHeartbeat, protocol.KindFloorRespondingTo, protocol.KindFloorYield,
		protocol.KindStreamRequest:
		return []Event{&Bookkeeping{Meta: m}}, nil
	}
	return []Event{&Other{Meta: m, Payload: env.Payload}}, nil
}

// listing reports whether an MCP method is bookkeeping (discovery, set-up,
// notifications) rather than something a person asked for.
func listing(method string) bool {
	return strings.HasSuffix(method, "/list") || method == "initialize" || method == "ping" || strings.HasPrefix(method, "notifications/")
}

// toolOf names what a tools/call calls: "calculator/add" when addressed
// to one participant.
func toolOf(method string, params json.RawMessage, to []string) string {
	if method != "tools/call" {
		return ""
	}
	var c struct {
		Name string `json:"name"`
	}
	_ = json.Unmarshal(params, &c) // params are the tool's own: a name or none
	if len(to) == 1 && c.Name != "" {
		return to[0] + "/" + c.Name
	}
	return c.Name
}

// request takes in an mcp/request: it settles the proposal it fulfils and
// tells its sender's reasonings what they call.
func (r *Reader) request(env *protocol.Envelope, m Meta) ([]Event, error) {
	msg, err := decode[protocol.MCPMessage](env)
	if err != nil {
		return nil, err
	}
	req := &Request{Meta: m, Method: msg.Method, Params: msg.Params, Listing: listing(msg.Method), Tool: toolOf(msg.Method, msg.Params, env.To)}
	evs := []Event{req}
	if env.ID != "" {
		r.remember(env.ID, &request{to: env.To, method: msg.Method, listing: req.Listing})
	}
	for _, id := range env.CorrelationID {
		p := r.proposals[id]
		if p == nil {
			continue
		}
		req.Proposal = cmp.Or(req.Proposal, id)
		if !p.settled {
			p.settled = true
			evs = append(evs, &ProposalSettled{Meta: m, Proposal: id, Outcome: Approved, By: env.From, Edited: !sameJSON(msg.Params, p.params)})
		}
	}
	if req.Tool != "" {
		for _, id := range r.reaOrder {
			if x := r.reasonings[id]; x.from == env.From {
				x.used(req.Tool)
				evs = append(evs, x.step(m, id, func(s *ReasoningStep) { s.Calling = req.Tool }))
			}
		}
	}
	return evs, nil
}

// remember keeps a request until its response.
func (r *Reader) remember(id string, q *request) {
	if _, seen := r.requests[id]; !seen {
		r.reqOrder = append(r.reqOrder, id)
	}
	r.requests[id] = q
	if len(r.reqOrder) > MaxRequests {
		delete(r.requests, r.reqOrder[0])
		r.reqOrder = r.reqOrder[1:]
	}
}

// response pairs an mcp/response with the first request it correlates to
// that it may answer: one not answered yet, by one of its addressees (a
// request to everyone may be answered by anyone). A listing's answer is
// paired whoever sends it: it is not shown, only used.
func (r *Reader) response(env *protocol.Envelope, m Meta) ([]Event, error) {
	msg, err := decode[protocol.MCPMessage](env)
	if err != nil {
		return nil, err
	}
	ev := &Response{Meta: m, Result: msg.Result, Error: msg.Error, IsError: msg.Error != nil}
	if msg.Error == nil {
		var res struct {
			IsError bool `json:"isError"`
		}
		_ = json.Unmarshal(msg.Result, &res) // a result need not be an object
		ev.IsError = res.IsError
	}
	for _, id := range env.CorrelationID {
		q := r.requests[id]
		if q == nil || (!q.listing && (q.answered || !addressee(q.to, env.From))) {
			continue
		}
		q.answered = true
		ev.Request, ev.Method, ev.Listing = id, q.method, q.listing
		break
	}
	return []Event{ev}, nil
}

// addressee reports whether from is one of to, or to is everyone.
func addressee(to []string, from string) bool {
	return len(to) == 0 || slices.Contains(to, from)
}

// propose takes in an mcp/proposal once; its sender's reasonings wait for
// its approval.
func (r *Reader) propose(env *protocol.Envelope, m Meta) ([]Event, error) {
	msg, err := decode[protocol.MCPMessage](env)
	if err != nil {
		return nil, err
	}
	if env.ID != "" {
		if r.proposals[env.ID] != nil {
			return nil, nil
		}
		r.proposals[env.ID] = &proposal{from: env.From, params: msg.Params}
		r.propOrder = append(r.propOrder, env.ID)
		if len(r.propOrder) > MaxProposals {
			delete(r.proposals, r.propOrder[0])
			r.propOrder = r.propOrder[1:]
		}
	}
	ev := &Proposal{Meta: m, Method: msg.Method, Params: msg.Params, Tool: toolOf(msg.Method, msg.Params, nil)}
	evs := []Event{ev}
	waiting := cmp.Or(ev.Tool, ev.Method)
	for _, id := range r.reaOrder {
		if x := r.reasonings[id]; x.from == env.From {
			evs = append(evs, x.step(m, id, func(s *ReasoningStep) { s.Waiting = waiting }))
		}
	}
	return evs, nil
}

// settle settles the open proposals env correlates to; a withdrawal only
// its proposer's.
func (r *Reader) settle(env *protocol.Envelope, m Meta, outcome, reason, message string, proposerOnly bool) []Event {
	var evs []Event
	for _, id := range env.CorrelationID {
		p := r.proposals[id]
		if p == nil || p.settled || (proposerOnly && p.from != env.From) {
			continue
		}
		p.settled = true
		evs = append(evs, &ProposalSettled{Meta: m, Proposal: id, Outcome: outcome, By: env.From, Reason: reason, Message: message})
	}
	return evs
}

// approval reads the gateway's system/approval. A proposal the policy let
// time out is settled by it: no envelope of a participant says so.
func (r *Reader) approval(env *protocol.Envelope, m Meta) ([]Event, error) {
	a, err := decode[protocol.Approval](env)
	if err != nil {
		return nil, err
	}
	if a.Proposal == "" || a.State == "" {
		return nil, errors.New("system/approval without its proposal or state")
	}
	evs := []Event{&Approval{
		Meta: m, Proposal: a.Proposal, Rule: a.Rule, Reason: a.Reason, State: a.State, Proposer: a.Proposer,
		Approvers: nonNil(a.Approvers), Required: a.Required, ApprovedBy: nonNil(a.ApprovedBy), Remaining: a.Remaining,
		Deadline: a.Deadline, By: a.By, Message: a.Message,
	}}
	if p := r.proposals[a.Proposal]; a.State == protocol.ApprovalTimedOut && p != nil && !p.settled {
		p.settled = true
		evs = append(evs, &ProposalSettled{Meta: m, Proposal: a.Proposal, Outcome: TimedOut, By: env.From, Reason: "the approval policy's rule " + a.Rule + " timed out"})
	}
	return evs, nil
}

// nonNil is s, or an empty list: the vectors spell an empty list [].
func nonNil(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}

// sameJSON reports whether a and b hold the same JSON value, whatever the
// order of their members.
func sameJSON(a, b json.RawMessage) bool {
	var x, y any
	if json.Unmarshal(a, &x) != nil || json.Unmarshal(b, &y) != nil {
		return string(a) == string(b)
	}
	return reflect.DeepEqual(x, y)
}
