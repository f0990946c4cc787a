package participant

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"

	"github.com/mew-protocol/mew/client"
	"github.com/mew-protocol/mew/protocol"
)

// ApprovalError is how a proposal of this participant ended when the
// space's approval policy settled it without an answer (docs/approvals.md):
// timed out, or withdrawn by its proposer elsewhere. (A rejection comes as a
// *RejectedError, from the approver's mcp/reject.) A timed-out one also
// matches ErrProposalTimedOut.
type ApprovalError struct {
	Approval protocol.Approval // the gateway's last word on the proposal
}

// Error says how the proposal ended and under which rule.
func (e *ApprovalError) Error() string {
	a := e.Approval
	s := fmt.Sprintf("proposal %s %s under approval rule %s", a.Proposal, strings.ReplaceAll(a.State, "_", " "), a.Rule)
	if len(a.ApprovedBy) > 0 {
		s += fmt.Sprintf(" (approved by %s of the %d needed)", strings.Join(a.ApprovedBy, ", "), a.Required)
	}
	return s
}

// Unwrap makes a timed-out proposal match ErrProposalTimedOut.
func (e *ApprovalError) Unwrap() error {
	if e.Approval.State == protocol.ApprovalTimedOut {
		return ErrProposalTimedOut
	}
	return nil
}

// maxApprovalBook bounds the approvals a participant remembers.
const maxApprovalBook = 1024

// approvalBook keeps the last state of the governed proposals seen, oldest
// forgotten first.
type approvalBook struct {
	mu    sync.Mutex
	last  map[string]protocol.Approval
	order []string
}

func (b *approvalBook) put(a protocol.Approval) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.last == nil {
		b.last = make(map[string]protocol.Approval)
	}
	if _, seen := b.last[a.Proposal]; !seen {
		if len(b.order) >= maxApprovalBook {
			delete(b.last, b.order[0])
			b.order = b.order[1:]
		}
		b.order = append(b.order, a.Proposal)
	}
	b.last[a.Proposal] = a
}

// ApprovalOf returns the last state the gateway announced of the proposal
// with envelope id id under the space's approval policy, if it governs it
// and the participant saw it (the last 1024 such proposals).
func (p *Participant) ApprovalOf(id string) (protocol.Approval, bool) {
	b := &p.pending.approvals
	b.mu.Lock()
	defer b.mu.Unlock()
	a, ok := b.last[id]
	return a, ok
}

// Approve gives the participant's approval to the proposal with envelope
// id id, which the space's approval policy governs (approval/approve,
// docs/approvals.md). The gateway counts it, or refuses it (a system/error
// the client reports): the participant is no approver of the proposal now,
// proposed it, approved it already, or the proposal takes no approval.
func (p *Participant) Approve(ctx context.Context, id string) error {
	if id == "" {
		return errors.New("participant: approve: no proposal id")
	}
	if _, err := p.send(ctx, protocol.KindApprovalApprove, nil, []string{id}, struct{}{}); err != nil {
		return fmt.Errorf("participant: approve proposal %s: %w", id, err)
	}
	return nil
}

// OnApproval calls f with each state the gateway announces of a proposal
// the space's approval policy governs, anyone's: awaiting (who, how many
// more), approved, rejected, timed out, escalated, withdrawn, fulfilled.
// Handlers run on the client's dispatch goroutine and must not block.
func (p *Participant) OnApproval(f func(protocol.Approval)) (remove func()) {
	t := &p.pending
	return addHandler(t, &t.approvalHandlers, f)
}

// onSystemApproval records the gateway's word on a governed proposal, tells
// the handlers and the proposal's caller, and ends the caller's wait when
// the proposal ended without an answer to come.
func (p *Participant) onSystemApproval(env *protocol.Envelope) {
	if !client.FromGateway(env) {
		return // only the gateway speaks for the policy
	}
	var a protocol.Approval
	if err := env.DecodePayload(&a); err != nil || a.Proposal == "" {
		p.log.Warn("ignoring a system/approval that cannot be read", "id", env.ID, "err", err)
		return
	}
	t := &p.pending
	t.approvals.put(a)
	t.hmu.Lock()
	handlers := t.approvalHandlers
	t.hmu.Unlock()
	for _, h := range handlers {
		p.guard("OnApproval", func() { h.f(a) })
	}
	t.mu.Lock()
	c := t.calls[a.Proposal]
	t.mu.Unlock()
	if c == nil || !c.proposal {
		return
	}
	if c.onApproval != nil {
		p.guard("RequestOptions.OnApproval", func() { c.onApproval(a) })
	}
	if a.State == protocol.ApprovalTimedOut || a.State == protocol.ApprovalWithdrawn {
		t.finish(c, callOutcome{err: &ApprovalError{Approval: a}})
	}
}
