package gateway

import (
	"bytes"
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"time"

	"github.com/mew-protocol/mew/capability"
	"github.com/mew-protocol/mew/gateway/internal/notify"
	"github.com/mew-protocol/mew/protocol"
	"github.com/mew-protocol/mew/space"
)

// Approvals by policy (docs/approvals.md). A space's approval rules
// (space.yaml approvals) govern the proposals they match: the gateway keeps
// each governed proposal's state, counts the approvals (approval/approve)
// of its approvers, settles it (approved, rejected, withdrawn, timed out,
// or escalated to other approvers), announces every state to the space
// (system/approval), and refuses a fulfilment (an mcp/request naming the
// proposal) until it is approved, or when it differs from what was
// approved. A rule that always asks also refuses requests of its shape sent
// without a proposal, whatever the sender's grants.

const (
	// ErrorApprovalRequired: the request fulfils a proposal not (or no
	// longer) approved, or an always_ask rule's shape without a proposal.
	ErrorApprovalRequired = "approval_required"
	// ErrorApprovalMismatch: the fulfilment differs from the proposal
	// approved (its payload or to).
	ErrorApprovalMismatch = "approval_mismatch"
	// ErrorNotApprover: the approval is not the sender's to give (not an
	// approver of the proposal's rule now, or its proposer).
	ErrorNotApprover = "not_approver"
)

// maxApprovals bounds the governed proposals a space keeps: past it the
// settled ones go first, and a new proposal is refused while that many
// await.
const maxApprovals = 10000

// approveCapability is what every approver of a rule holds, so that its
// approval passes the capability check; the policy decides whether it
// counts.
var approveCapability = json.RawMessage(`{"kind":"approval/approve"}`)

// approvalRule is a rule of the space's policy, compiled.
type approvalRule struct {
	cfg               *space.ApprovalRule
	proposal, request *capability.Set
}

// approval is the state of one governed proposal. Guarded by the space's
// lock.
type approval struct {
	id        string // the proposal's
	rule      *approvalRule
	proposer  string // runtime id
	proposerM *member
	call      []byte   // the proposal's method and params, compact (callOf)
	to        []string // the proposal's to
	step      *space.ApprovalStep
	escalated bool
	votes     []string // the members who approved, in order
	deadline  time.Time
	state     string
	by, msg   string // who settled it and why
}

// approvalTable is a space's policy and its governed proposals.
type approvalTable struct {
	rules []*approvalRule
	byID  map[string]*approval
	order []*approval // oldest first, for eviction
	// notifier reaches the approvers a proposal awaits (notify.go); nil
	// without notify.webhook. Set before the server serves.
	notifier *notify.Notifier
}

// newApprovalTable compiles the space's rules. The config compiled when it
// was loaded, so an error here is a bug.
func newApprovalTable(cfg *space.Config) (approvalTable, error) {
	t := approvalTable{byID: map[string]*approval{}}
	for _, r := range cfg.Approvals {
		p, err := capability.Compile([]json.RawMessage{r.Proposal})
		if err != nil {
			return t, fmt.Errorf("approval rule %s: %w", r.Name, err)
		}
		q, err := capability.Compile([]json.RawMessage{r.Request})
		if err != nil {
			return t, fmt.Errorf("approval rule %s: %w", r.Name, err)
		}
		t.rules = append(t.rules, &approvalRule{cfg: r, proposal: p, request: q})
	}
	return t, nil
}

// approver reports whether id approves in some step of some rule of cfg.
func approver(cfg *space.Config, id string) bool {
	for _, r := range cfg.Approvals {
		if slices.Contains(r.Approvers, id) || r.Escalate != nil && slices.Contains(r.Escalate.Approvers, id) {
			return true
		}
	}
	return false
}

// open reports whether a still takes approvals.
func (a *approval) open() bool {
	return a.state == protocol.ApprovalAwaiting || a.state == protocol.ApprovalEscalated
}

// proposed starts the approval of a proposal that a rule governs (the
// first that matches it).
func (sp *liveSpace) proposed(o origin, env *protocol.Envelope, now time.Time) (outcome, *refusal) {
	t := &sp.approvals
	if len(t.rules) == 0 {
		return relayed, nil
	}
	var rule *approvalRule
	for _, r := range t.rules {
		if _, ok := r.proposal.MatchTo(env.Kind, env.To, env.Payload); ok {
			rule = r
			break
		}
	}
	if rule == nil {
		return relayed, nil
	}
	call, err := callOf(env.Payload)
	if err != nil {
		return outcome{}, refuse(ErrorInvalidEnvelope, "mcp/proposal: "+err.Error())
	}
	sp.mu.Lock()
	defer sp.mu.Unlock()
	if _, dup := t.byID[env.ID]; dup {
		return outcome{}, refuse(ErrorInvalidEnvelope, "a proposal with id "+env.ID+" is already governed by rule "+t.byID[env.ID].rule.cfg.Name)
	}
	if !t.evictLocked() {
		return outcome{}, refuse(ErrorLimitExceeded, fmt.Sprintf("%d proposals of this space await approval already", maxApprovals))
	}
	a := &approval{
		id: env.ID, rule: rule, proposer: o.id, proposerM: o.m, call: call, to: slices.Clone(env.To),
		step: &rule.cfg.ApprovalStep, state: protocol.ApprovalAwaiting,
	}
	if w := a.step.Within; w > 0 {
		a.deadline = now.Add(w)
	}
	t.byID[a.id] = a
	t.order = append(t.order, a)
	sp.notifyLocked(a, now)
	return outcome{relay: true, then: func() { sp.announce(a) }}, nil
}

// evictLocked makes room for one more governed proposal: the oldest settled
// ones go; false when all that are kept still await.
func (t *approvalTable) evictLocked() bool {
	if len(t.order) < maxApprovals {
		return true
	}
	i := slices.IndexFunc(t.order, func(a *approval) bool { return !a.open() && a.state != protocol.ApprovalApproved })
	if i < 0 {
		return false
	}
	delete(t.byID, t.order[i].id)
	t.order = slices.Delete(t.order, i, i+1)
	return true
}

// callOf is what an approval binds of a JSON-RPC payload: its method and
// params, compact. Its id and jsonrpc are not: a fulfiller numbers its own
// request.
func callOf(payload json.RawMessage) ([]byte, error) {
	var p struct {
		Method string          `json:"method"`
		Params json.RawMessage `json:"params"`
	}
	if err := json.Unmarshal(payload, &p); err != nil {
		return nil, err
	}
	var buf bytes.Buffer
	buf.WriteString(strconv.Quote(p.Method))
	if len(p.Params) > 0 {
		buf.WriteByte(' ')
		if err := json.Compact(&buf, p.Params); err != nil {
			return nil, err
		}
	}
	return buf.Bytes(), nil
}

// governed returns the governed proposal env names in correlation_id, if
// any. mu must be held.
func (t *approvalTable) governed(env *protocol.Envelope) *approval {
	for _, c := range env.CorrelationID {
		if a := t.byID[c]; a != nil {
			return a
		}
	}
	return nil
}

// approve counts an approval/approve: once per approver of the proposal's
// rule now, never its proposer's.
func (sp *liveSpace) approve(o origin, env *protocol.Envelope, _ time.Time) (outcome, *refusal) {
	if len(env.CorrelationID) != 1 {
		return outcome{}, refuse(ErrorInvalidEnvelope, "approval/approve names the proposal it approves in correlation_id, and only it")
	}
	sp.mu.Lock()
	defer sp.mu.Unlock()
	a := sp.approvals.byID[env.CorrelationID[0]]
	switch {
	case a == nil:
		return outcome{}, refuse(ErrorInvalidRequest, "no proposal "+env.CorrelationID[0]+" awaits approval")
	case !a.open():
		return outcome{}, refuse(ErrorInvalidRequest, "proposal "+a.id+" is "+a.state+": it takes no approval")
	case o.m == a.proposerM:
		return outcome{}, refuse(ErrorNotApprover, "a proposer's own approval does not count")
	case !slices.Contains(a.step.Approvers, o.m.name):
		return outcome{}, refuse(ErrorNotApprover, fmt.Sprintf("%s is not an approver of proposal %s (rule %s: %v)", o.m.name, a.id, a.rule.cfg.Name, a.step.Approvers))
	case slices.Contains(a.votes, o.m.name):
		return outcome{}, refuse(ErrorInvalidRequest, o.m.name+" has approved proposal "+a.id+" already: an approval counts once")
	}
	a.votes = append(a.votes, o.m.name)
	if len(a.votes) >= a.step.Required {
		a.state = protocol.ApprovalApproved
	}
	return outcome{relay: true, then: func() { sp.announce(a) }}, nil
}

// settle ends a governed proposal on an mcp/reject from one of its
// approvers now (rejected) or an mcp/withdraw from its proposer
// (withdrawn); other rejections are relayed and change nothing.
func (sp *liveSpace) settle(o origin, env *protocol.Envelope, _ time.Time) (outcome, *refusal) {
	if len(sp.approvals.rules) == 0 {
		return relayed, nil
	}
	sp.mu.Lock()
	defer sp.mu.Unlock()
	a := sp.approvals.governed(env)
	if a == nil || !a.open() && a.state != protocol.ApprovalApproved {
		return relayed, nil
	}
	var p struct {
		Reason string `json:"reason"`
	}
	_ = env.DecodePayload(&p) // the reason is optional; the envelope was validated
	switch {
	case env.Kind == protocol.KindMCPWithdraw && o.m == a.proposerM:
		a.state = protocol.ApprovalWithdrawn
	case env.Kind == protocol.KindMCPReject && slices.Contains(a.step.Approvers, o.m.name) && o.m != a.proposerM:
		a.state = protocol.ApprovalRejected
	default:
		return relayed, nil
	}
	a.by, a.msg = o.id, p.Reason
	return outcome{relay: true, then: func() { sp.announce(a) }}, nil
}

// fulfilment checks an mcp/request against the policy: one that names a
// governed proposal goes only once it is approved, and only as it was
// approved (its payload and to); one that names none is refused when a
// rule that always asks matches its shape.
func (sp *liveSpace) fulfilment(_ origin, env *protocol.Envelope, _ time.Time) (outcome, *refusal) {
	t := &sp.approvals
	if len(t.rules) == 0 {
		return relayed, nil // the hot path of spaces without a policy
	}
	sp.mu.Lock()
	defer sp.mu.Unlock()
	if a := t.governed(env); a != nil {
		if a.state != protocol.ApprovalApproved {
			msg := fmt.Sprintf("proposal %s is %s (rule %s", a.id, a.state, a.rule.cfg.Name)
			if a.open() {
				msg += fmt.Sprintf(": %d more of %v must approve", a.step.Required-len(a.votes), a.step.Approvers)
			}
			return outcome{}, refuse(ErrorApprovalRequired, msg+")")
		}
		if call, err := callOf(env.Payload); err != nil || !bytes.Equal(call, a.call) || !slices.Equal(env.To, a.to) {
			return outcome{}, refuse(ErrorApprovalMismatch, "the request differs from proposal "+a.id+" as approved (its method, params and to must be the same)")
		}
		a.state = protocol.ApprovalFulfilled
		a.by = env.From
		return outcome{relay: true, then: func() { sp.announce(a) }}, nil
	}
	for _, r := range t.rules {
		if !r.cfg.AlwaysAsk {
			continue
		}
		if _, ok := r.request.MatchTo(env.Kind, env.To, env.Payload); ok {
			return outcome{}, refuse(ErrorApprovalRequired, "rule "+r.cfg.Name+" always asks: propose it (mcp/proposal) for approval")
		}
	}
	return relayed, nil
}

// expireApprovals settles or escalates the governed proposals whose time
// has passed. The watchdog calls it.
func (sp *liveSpace) expireApprovals(now time.Time) {
	if len(sp.approvals.rules) == 0 {
		return
	}
	sp.mu.Lock()
	defer sp.mu.Unlock()
	for _, a := range sp.approvals.order {
		if !a.open() || a.deadline.IsZero() || now.Before(a.deadline) {
			continue
		}
		if r := a.rule.cfg; r.Then == space.ThenEscalate && !a.escalated {
			a.escalated, a.step, a.votes, a.state = true, r.Escalate, nil, protocol.ApprovalEscalated
			a.deadline = time.Time{}
			if w := a.step.Within; w > 0 {
				a.deadline = now.Add(w)
			}
			sp.notifyLocked(a, now)
		} else {
			a.state = protocol.ApprovalTimedOut
		}
		sp.broadcastLocked(sp.approvalEnvelope(a), nil)
	}
}

// announce tells the space a's state as it is now.
func (sp *liveSpace) announce(a *approval) {
	sp.mu.Lock()
	defer sp.mu.Unlock()
	sp.broadcastLocked(sp.approvalEnvelope(a), nil)
}

// approvalEnvelope is the system/approval of a's state. mu must be held.
func (sp *liveSpace) approvalEnvelope(a *approval) delivery {
	p := protocol.Approval{
		Proposal: a.id, Rule: a.rule.cfg.Name, Reason: a.rule.cfg.Reason, State: a.state, Proposer: a.proposer,
		Approvers: slices.Clone(a.step.Approvers), Required: a.step.Required, ApprovedBy: slices.Clone(a.votes),
		By: a.by, Message: a.msg,
	}
	if p.ApprovedBy == nil {
		p.ApprovedBy = []string{}
	}
	if a.open() {
		p.Remaining = a.step.Required - len(a.votes)
		if !a.deadline.IsZero() {
			p.Deadline = protocol.FormatTime(a.deadline)
		}
	}
	return sp.systemEnvelope(protocol.KindSystemApproval, nil, p, a.id)
}
