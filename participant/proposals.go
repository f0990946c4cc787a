package participant

import (
	"encoding/json"
	"errors"
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/mew-protocol/mew/protocol"
)

// A proposal is settled once: carried out (approved), rejected, withdrawn by
// its proposer, or timed out. The participant follows every proposal of the
// space, so that a decision taken by someone else settles it here too, and
// refuses a second decision (Fulfill, Reject) with a *ProposalSettledError.

const (
	// defaultProposalTimeout is how long a proposal nobody decided stays
	// open (Options.ProposalTimeout).
	defaultProposalTimeout = 10 * time.Minute
	// settledRetention is how long a settled proposal is remembered, so
	// that a late decision is told how it was settled rather than that no
	// such proposal exists.
	settledRetention = 10 * time.Minute
)

// ErrProposalSettled: the proposal was settled already (approved, rejected,
// withdrawn or timed out); a proposal is decided once. The error is a
// *ProposalSettledError that says how.
var ErrProposalSettled = errors.New("participant: proposal already settled")

// Settlement is how a proposal was settled, or Open.
type Settlement int

// Settlements of a proposal.
const (
	// Open: nobody has decided yet.
	Open Settlement = iota
	// Approved: someone carried the proposal out, sending the proposed
	// request to its addressees, correlated to it (Fulfill does that).
	Approved
	// Rejected: someone sent an mcp/reject of it.
	Rejected
	// Withdrawn: its proposer withdrew it (mcp/withdraw).
	Withdrawn
	// TimedOut: its proposer gave up waiting (mcp/withdraw with reason
	// "timeout"), or nobody decided within Options.ProposalTimeout.
	TimedOut
)

// String returns "open", "approved", "rejected", "withdrawn" or "timed out".
func (s Settlement) String() string {
	switch s {
	case Open:
		return "open"
	case Approved:
		return "approved"
	case Rejected:
		return "rejected"
	case Withdrawn:
		return "withdrawn"
	case TimedOut:
		return "timed out"
	}
	return "Settlement(" + strconv.Itoa(int(s)) + ")"
}

// ProposalStatus says whether and how a proposal was settled.
type ProposalStatus struct {
	Settlement Settlement
	// By is who settled it: the participant who carried it out or rejected
	// it, the proposer who withdrew it; "" for Open and for a proposal that
	// timed out unanswered.
	By string
	// Reason is the rejection's or the withdrawal's reason, if it gave one.
	Reason string
	// At is when this participant learnt of the settlement.
	At time.Time
}

// withdrawal reports whether the proposer settled it by withdrawing.
func (st ProposalStatus) withdrawal() bool {
	return st.Settlement == Withdrawn || (st.Settlement == TimedOut && st.By != "")
}

// ProposalSettledError is the refusal of a decision on a proposal that was
// settled already. errors.Is(err, ErrProposalSettled) holds, and
// errors.Is(err, ErrProposalWithdrawn) when its proposer withdrew it.
type ProposalSettledError struct {
	ProposalID string
	Status     ProposalStatus
}

// Error says how the proposal was settled, such as "participant: proposal
// ID was already approved by human".
func (e *ProposalSettledError) Error() string {
	st := e.Status
	s := "participant: proposal " + e.ProposalID + " was already " + st.Settlement.String()
	switch {
	case st.Settlement == TimedOut && st.By != "":
		s += " (withdrawn by its proposer " + st.By + ")"
	case st.Settlement == Withdrawn:
		s += " by its proposer " + st.By
	case st.By != "":
		s += " by " + st.By
	}
	if st.Reason != "" && st.Reason != "timeout" {
		s += ": " + st.Reason
	}
	return s
}

// Is reports ErrProposalSettled, and ErrProposalWithdrawn for a proposal
// its proposer withdrew.
func (e *ProposalSettledError) Is(target error) bool {
	return target == ErrProposalSettled || (target == ErrProposalWithdrawn && e.Status.withdrawal())
}

// Status returns whether and how the proposal was settled. A proposal open
// past Options.ProposalTimeout has timed out.
func (pr *Proposal) Status() ProposalStatus {
	pr.mu.Lock()
	defer pr.mu.Unlock()
	return pr.statusLocked(time.Now())
}

// statusLocked settles an open proposal whose time has passed. pr.mu is
// held.
func (pr *Proposal) statusLocked(now time.Time) ProposalStatus {
	if pr.status.Settlement == Open && !pr.expires.IsZero() && !now.Before(pr.expires) {
		pr.status = ProposalStatus{Settlement: TimedOut, At: now}
	}
	return pr.status
}

// settle records how the proposal was settled, unless it was settled
// before; only the proposer's withdrawal is noted even then, for
// WithdrawReason and Withdrawn.
func (pr *Proposal) settle(st ProposalStatus) {
	pr.mu.Lock()
	defer pr.mu.Unlock()
	if st.withdrawal() && !pr.isWithdrawn {
		pr.isWithdrawn, pr.reason = true, st.Reason
		close(pr.withdrawn)
	}
	switch {
	case pr.statusLocked(st.At).Settlement == Open:
		pr.status = st
	case pr.claimed != 0 && pr.shadow.Settlement == Open:
		// Our own decision is in flight and may yet fail to go out: keep
		// the space's for unclaim.
		pr.shadow = st
	}
}

// claim settles an open proposal as this participant's decision before it
// is sent, so that a second decision taken meanwhile is refused; serial
// (from requestTable.claims) names the claim for unclaim and done. It
// returns the *ProposalSettledError of a proposal settled already.
func (pr *Proposal) claim(st ProposalStatus, serial uint64) error {
	pr.mu.Lock()
	defer pr.mu.Unlock()
	if cur := pr.statusLocked(st.At); cur.Settlement != Open {
		return &ProposalSettledError{ProposalID: pr.ID(), Status: cur}
	}
	pr.status, pr.claimed = st, serial
	return nil
}

// unclaim undoes a decision that never reached the space (not sent, or
// refused by the gateway): the proposal is open again, or settled as
// someone else settled it meanwhile.
func (pr *Proposal) unclaim(serial uint64) {
	pr.mu.Lock()
	defer pr.mu.Unlock()
	if pr.claimed == serial {
		pr.status, pr.shadow, pr.claimed = pr.shadow, ProposalStatus{}, 0
	}
}

// done ends the claim of a decision that went out: it stays settled.
func (pr *Proposal) done(serial uint64) {
	pr.mu.Lock()
	defer pr.mu.Unlock()
	if pr.claimed == serial {
		pr.shadow, pr.claimed = ProposalStatus{}, 0
	}
}

// trackLocked remembers a proposal seen in the space. It keeps at most
// maxTrackedProposals: settled ones are forgotten settledRetention after
// their settlement, and when it is full the oldest settled one goes first,
// then the oldest. t.mu is held.
func (t *requestTable) trackLocked(pr *Proposal, now time.Time) {
	if len(t.order) >= maxTrackedProposals/2 {
		t.order = slices.DeleteFunc(t.order, func(id string) bool {
			st := t.proposals[id].Status()
			if st.Settlement != Open && now.Sub(st.At) >= settledRetention {
				delete(t.proposals, id)
				return true
			}
			return false
		})
	}
	if len(t.order) >= maxTrackedProposals {
		i := slices.IndexFunc(t.order, func(id string) bool { return t.proposals[id].Status().Settlement != Open })
		if i < 0 {
			i = 0
		}
		delete(t.proposals, t.order[i])
		t.order = slices.Delete(t.order, i, i+1)
	}
	t.proposals[pr.ID()] = pr
	t.order = append(t.order, pr.ID())
}

// PendingProposals returns the proposals of other participants seen in the
// space that nobody has settled yet, oldest first.
func (p *Participant) PendingProposals() []*Proposal {
	t := &p.pending
	t.mu.Lock()
	defer t.mu.Unlock()
	var open []*Proposal
	for _, id := range t.order {
		if pr := t.proposals[id]; pr.Status().Settlement == Open {
			open = append(open, pr)
		}
	}
	return open
}

// isNotificationPayload reports whether an mcp/request's payload is an MCP
// notification (such as notifications/cancelled), which carries nothing
// out.
func isNotificationPayload(payload []byte) bool {
	var m struct {
		Method string `json:"method"`
	}
	_ = json.Unmarshal(payload, &m)
	return isNotification(m.Method)
}

// Proposal is another participant's mcp/proposal, as OnProposal handlers
// receive it: an MCP operation that the proposer may not perform and asks
// someone with the capability to fulfil (Fulfill) or to reject (Reject).
type Proposal struct {
	// Envelope is the proposal as it arrived; it must not be modified.
	Envelope *protocol.Envelope
	// Method and Params are the proposed JSON-RPC method and params.
	Method string
	Params json.RawMessage

	mu          sync.Mutex
	withdrawn   chan struct{} // closed when the proposer withdraws it
	isWithdrawn bool
	reason      string         // the withdrawal's
	expires     time.Time      // when it times out if still open
	status      ProposalStatus // how it was settled; Open until then
	claimed     uint64         // serial of this participant's own decision in flight, 0 if none
	shadow      ProposalStatus // someone else's settlement seen while claimed
}

// ID returns the proposal's envelope id.
func (pr *Proposal) ID() string { return pr.Envelope.ID }

// From returns the proposer.
func (pr *Proposal) From() string { return pr.Envelope.From }

// To returns the participants the operation is proposed to.
func (pr *Proposal) To() []string { return slices.Clone(pr.Envelope.To) }

// ToolName returns the tool of a tools/call proposal, "" for other methods.
func (pr *Proposal) ToolName() string {
	if pr.Method != "tools/call" {
		return ""
	}
	var p struct {
		Name string `json:"name"`
	}
	_ = json.Unmarshal(pr.Params, &p)
	return p.Name
}

// Withdrawn returns a channel that is closed when the proposer withdraws
// the proposal (only the proposer's mcp/withdraw counts).
func (pr *Proposal) Withdrawn() <-chan struct{} { return pr.withdrawn }

// WithdrawReason returns the withdrawal's reason and whether the proposer
// withdrew the proposal, even after it was settled otherwise (a withdrawal
// with reason "timeout" counts, though Status calls it TimedOut).
func (pr *Proposal) WithdrawReason() (reason string, withdrawn bool) {
	pr.mu.Lock()
	defer pr.mu.Unlock()
	return pr.reason, pr.isWithdrawn
}

// FulfilledBy returns the participant seen carrying the proposal out
// (sending an mcp/request correlated to it, to its addressees), "" if it
// was not. It is Status().By when the proposal was Approved.
func (pr *Proposal) FulfilledBy() string {
	pr.mu.Lock()
	defer pr.mu.Unlock()
	if pr.status.Settlement == Approved {
		return pr.status.By
	}
	return ""
}
