package gateway

import (
	"bytes"
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"time"

	"github.com/mew-protocol/mew/capability"
	"github.com/mew-protocol/mew/gateway/cluster"
	"github.com/mew-protocol/mew/gateway/internal/clusterlink"
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
	// phase is what the proposal waits for: 0 the rule's approvers, 1 the
	// escalation's, 2 (approved) its fulfilment. Each phase ends once
	// (approvalEnd); in a cluster the first end any node stores wins.
	phase    int
	votes    []string // the members who approved in this phase, in order
	deadline time.Time
	state    string
	by, msg  string // who settled it and why
	// ending is set while an end of the phase asked of the space's link is
	// not applied yet (on a cluster, until the cluster has chosen it); a
	// fulfilment waits for it.
	ending bool
}

// approvalEnd is how a phase of a governed proposal ends: its new state,
// who ended it and why, the approvers counted (approved), the escalation's
// deadline (escalated).
type approvalEnd struct {
	phase    int
	state    string
	by, msg  string
	votes    []string
	deadline time.Time
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
	rule := t.ruleFor(env)
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
	t.addLocked(a)
	sp.link.approvalLocked(a)
	sp.notifyLocked(a, now) // by the node that governs it first, once in the space
	return outcome{relay: true, then: sp.announceLater(a)}, nil
}

// ruleFor is the rule that governs the proposal env, if any: the first
// that matches it.
func (t *approvalTable) ruleFor(env *protocol.Envelope) *approvalRule {
	for _, r := range t.rules {
		if _, ok := r.proposal.MatchTo(env.Kind, env.To, env.Payload); ok {
			return r
		}
	}
	return nil
}

// addLocked keeps a, governed: the caller made room (evictLocked).
func (t *approvalTable) addLocked(a *approval) {
	t.byID[a.id] = a
	t.order = append(t.order, a)
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
// params, the params as one spelling of their JSON value (members sorted,
// no white space, numbers as written), so that a fulfiller that decodes and
// encodes them again carries the same call. Its id and jsonrpc are not
// bound: a fulfiller numbers its own request.
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
		dec := json.NewDecoder(bytes.NewReader(p.Params))
		dec.UseNumber() // 9007199254740993 stays itself
		var v any
		if err := dec.Decode(&v); err != nil {
			return nil, err
		}
		canon, err := json.Marshal(v) // maps marshal with their keys sorted
		if err != nil {
			return nil, err
		}
		buf.WriteByte(' ')
		buf.Write(canon)
	}
	return buf.Bytes(), nil
}

// callParts is the method and params of a call as callOf wrote it.
func callParts(call []byte) (method string, params []byte) {
	q, err := strconv.QuotedPrefix(string(call))
	if err != nil {
		return "", nil
	}
	method, _ = strconv.Unquote(q)
	return method, bytes.TrimPrefix(call[len(q):], []byte(" "))
}

// maxListedApprovals bounds GET /console/approvals.
const maxListedApprovals = 200

// approvalItem is a governed proposal as GET /console/approvals lists it:
// the proposal as it was made (its method, params and to, which a
// fulfilment must repeat) and its state.
type approvalItem struct {
	Envelope protocol.Envelope `json:"envelope"`
	State    protocol.Approval `json:"state"`
}

// openApprovals lists the governed proposals that await approvers or, once
// approved, their fulfilment: the latest maxListedApprovals, oldest first,
// so that a page opened later (from a webhook's link) shows what awaits.
func (sp *liveSpace) openApprovals() []approvalItem {
	type open struct {
		id, proposer string
		to           []string
		call         []byte
		state        protocol.Approval
	}
	var found []open
	sp.mu.Lock()
	for i := len(sp.approvals.order) - 1; i >= 0 && len(found) < maxListedApprovals; i-- {
		a := sp.approvals.order[i]
		if a.open() || a.state == protocol.ApprovalApproved {
			found = append(found, open{a.id, a.proposer, a.to, a.call, approvalState(a)})
		}
	}
	sp.mu.Unlock()
	// The payloads are built outside the lock: a page polling this costs
	// the space's senders nothing but the scan. (call and to are never
	// changed in place, only replaced.)
	list := make([]approvalItem, 0, len(found))
	for _, f := range slices.Backward(found) {
		method, params := callParts(f.call)
		payload, err := json.Marshal(struct {
			JSONRPC string          `json:"jsonrpc"`
			Method  string          `json:"method"`
			Params  json.RawMessage `json:"params,omitempty"`
		}{"2.0", method, params})
		if err != nil {
			continue // its params were compacted from JSON: they marshal
		}
		list = append(list, approvalItem{
			Envelope: protocol.Envelope{Protocol: protocol.Version, ID: f.id, Kind: protocol.KindMCPProposal, From: f.proposer, To: f.to, Payload: payload},
			State:    f.state,
		})
	}
	return list
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
	sp.voteLocked(a, o.m.name)
	sp.link.approvalVoteLocked(a, o.m.name)
	return outcome{relay: true, then: sp.announceLater(a)}, nil
}

// voteLocked counts name's approval of a in its phase, and asks for the
// phase's end when it completes the quorum. mu must be held.
func (sp *liveSpace) voteLocked(a *approval, name string) {
	if slices.Contains(a.votes, name) {
		return
	}
	a.votes = append(a.votes, name)
	if len(a.votes) == a.step.Required {
		sp.endLocked(a, approvalEnd{phase: a.phase, state: protocol.ApprovalApproved, votes: slices.Clone(a.votes)})
	}
}

// endLocked asks the space's link to end a's phase as e says: on one node
// it ends now, on a cluster once the cluster has chosen among the ends its
// nodes asked for. mu must be held.
func (sp *liveSpace) endLocked(a *approval, e approvalEnd) {
	if !sp.link.approvalEndLocked(a, e) {
		a.ending = true
	}
}

// applyEndLocked ends a's phase as e says, unless that phase has ended
// already; it reports whether it did. mu must be held.
func (sp *liveSpace) applyEndLocked(a *approval, e approvalEnd) bool {
	if e.phase != a.phase || !a.open() && a.state != protocol.ApprovalApproved {
		return false
	}
	a.ending = false
	switch e.state {
	case protocol.ApprovalEscalated:
		a.phase, a.step, a.votes, a.state, a.deadline = 1, a.rule.cfg.Escalate, nil, e.state, e.deadline
		return true
	case protocol.ApprovalApproved:
		a.phase, a.votes = 2, e.votes
	}
	a.state, a.by, a.msg = e.state, e.by, e.msg
	return true
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
	var state string
	switch {
	case env.Kind == protocol.KindMCPWithdraw && o.m == a.proposerM:
		state = protocol.ApprovalWithdrawn
	case env.Kind == protocol.KindMCPReject && slices.Contains(a.step.Approvers, o.m.name) && o.m != a.proposerM:
		state = protocol.ApprovalRejected
	default:
		return relayed, nil
	}
	if sp.endLocked(a, approvalEnd{phase: a.phase, state: state, by: o.id, msg: p.Reason}); a.ending {
		return relayed, nil // announced when the cluster has chosen
	}
	return outcome{relay: true, then: sp.announceLater(a)}, nil
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
		if a.state != protocol.ApprovalApproved || a.ending {
			msg := fmt.Sprintf("proposal %s is %s (rule %s", a.id, a.state, a.rule.cfg.Name)
			switch {
			case a.ending:
				msg += ", being settled by the gateway's nodes: try again in a moment"
			case a.open():
				msg += fmt.Sprintf(": %d more of %v must approve", a.step.Required-len(a.votes), a.step.Approvers)
			}
			return outcome{}, refuse(ErrorApprovalRequired, msg+")")
		}
		if call, err := callOf(env.Payload); err != nil || !bytes.Equal(call, a.call) || !slices.Equal(env.To, a.to) {
			return outcome{}, refuse(ErrorApprovalMismatch, "the request differs from proposal "+a.id+" as approved (its method, params and to must be the same)")
		}
		sp.endLocked(a, approvalEnd{phase: 2, state: protocol.ApprovalFulfilled, by: env.From})
		if a.ending {
			// On a cluster: relayed now, as a fulfilment is everywhere;
			// the fulfilment is announced when the cluster has it.
			return relayed, nil
		}
		return outcome{relay: true, then: sp.announceLater(a)}, nil
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
		if !a.open() || a.ending || a.deadline.IsZero() || now.Before(a.deadline) {
			continue
		}
		e := approvalEnd{phase: a.phase, state: protocol.ApprovalTimedOut}
		if r := a.rule.cfg; r.Then == space.ThenEscalate && a.phase == 0 {
			e.state = protocol.ApprovalEscalated
			if w := r.Escalate.Within; w > 0 {
				e.deadline = now.Add(w)
			}
		}
		if sp.endLocked(a, e); !a.ending { // on a cluster: applied, and notified, when the cluster has chosen
			if a.state == protocol.ApprovalEscalated {
				sp.notifyLocked(a, now)
			}
			sp.broadcastLocked(sp.approvalEnvelope(a), nil)
		}
	}
}

// announceLater returns what tells the space a's state once the envelope
// that changed it is relayed, called with mu held at the change. If a has
// since moved to another state or phase (an end applied meanwhile, which
// announced itself), it says nothing: a state older than one already
// announced would read as going back.
func (sp *liveSpace) announceLater(a *approval) func() {
	state, phase := a.state, a.phase
	return func() {
		sp.mu.Lock()
		defer sp.mu.Unlock()
		if a.state == state && a.phase == phase {
			sp.broadcastLocked(sp.approvalEnvelope(a), nil)
		}
	}
}

// approvalEnvelope is the system/approval of a's state. mu must be held.
func (sp *liveSpace) approvalEnvelope(a *approval) delivery {
	return sp.systemEnvelope(protocol.KindSystemApproval, nil, approvalState(a), a.id)
}

// approvalState is a's state as system/approval says it. mu must be held.
func approvalState(a *approval) protocol.Approval {
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
	return p
}

// --- governed proposals across the nodes of a cluster (the space's
// clusterlink.Link decodes the records and checks that they fit their keys) ---

// remoteGovernedLocked keeps a proposal governed on another node (or, when
// this node governs one of that id too, takes the cluster's: the first
// stored wins), and tells this node's participants (self: this node stored
// it, and its announcement is the one in the cluster's history). mu must
// be held.
func (sp *liveSpace) remoteGovernedLocked(rec cluster.Approval, self bool) clusterlink.Governed {
	t := &sp.approvals
	i := slices.IndexFunc(t.rules, func(r *approvalRule) bool { return r.cfg.Name == rec.Rule })
	pm := sp.members[rec.ProposerName]
	switch {
	case i < 0:
		sp.srv.opts.Logger.Warn("cluster: a proposal governed by a rule this node does not have", "space", sp.id, "proposal", rec.Proposal, "rule", rec.Rule)
		return clusterlink.NotGoverned
	case pm == nil:
		return clusterlink.ProposerUnknown
	}
	a := t.byID[rec.Proposal]
	if a != nil && a.proposerM == pm && string(a.call) == rec.Call {
		return clusterlink.NotGoverned // ours, come back
	}
	if a != nil {
		sp.srv.opts.Logger.Warn("cluster: two proposals of one id; the one stored first governs", "space", sp.id, "proposal", rec.Proposal)
	} else {
		if !t.evictLocked() {
			sp.srv.opts.Logger.Warn("cluster: a governed proposal over the limit", "space", sp.id, "proposal", rec.Proposal)
			return clusterlink.NotGoverned
		}
		a = &approval{id: rec.Proposal}
		t.addLocked(a)
	}
	rule := t.rules[i]
	*a = approval{
		id: rec.Proposal, rule: rule, proposer: rec.Proposer, proposerM: pm, call: []byte(rec.Call), to: rec.To,
		step: &rule.cfg.ApprovalStep, deadline: rec.Deadline, state: protocol.ApprovalAwaiting,
	}
	sp.announceApprovalLocked(a, self)
	return clusterlink.GovernedNow
}

// remoteVoteLocked counts approval v, made on another node (self: stored
// by this node, come back), and tells this node's participants. known is
// false when its proposal is not known here yet. mu must be held.
func (sp *liveSpace) remoteVoteLocked(v cluster.ApprovalVote, self bool) (known bool) {
	a := sp.approvals.byID[v.Proposal]
	if a == nil {
		return false
	}
	m := sp.members[v.Approver]
	if v.Phase != a.phase || !a.open() || m == nil || m == a.proposerM || !slices.Contains(a.step.Approvers, v.Approver) || slices.Contains(a.votes, v.Approver) {
		return true // a phase ended, or counted already (ours)
	}
	sp.voteLocked(a, v.Approver)
	sp.announceApprovalLocked(a, self)
	return true
}

// remoteEndLocked applies en, the end of a phase stored first in the
// cluster (self: by this node), as every node does, and tells this node's
// participants; the node whose escalation won tells the new approvers.
// known is false when its proposal is not known here yet. mu must be
// held.
func (sp *liveSpace) remoteEndLocked(en cluster.ApprovalEnd, self bool) (known bool) {
	a := sp.approvals.byID[en.Proposal]
	if a == nil {
		return false
	}
	if !sp.applyEndLocked(a, approvalEnd{phase: en.Phase, state: en.State, by: en.By, msg: en.Message, votes: en.Votes, deadline: en.Deadline}) {
		return true
	}
	if en.State == protocol.ApprovalEscalated && self {
		sp.notifyLocked(a, sp.srv.now())
	}
	sp.announceApprovalLocked(a, self)
	return true
}

// announceApprovalLocked tells this node's participants a's state, changed
// in the cluster (self: by this node, whose announcement is the one in
// the cluster's history). mu must be held.
func (sp *liveSpace) announceApprovalLocked(a *approval, self bool) {
	d := sp.approvalEnvelope(a)
	if !self {
		d = remote(d) // in the history once: the other node's
	}
	sp.broadcastLocked(d, nil)
}
