package tui

import (
	"fmt"
	"strconv"
	"strings"

	tea "charm.land/bubbletea/v2"

	"github.com/mew-protocol/mew/internal/clip"
	"github.com/mew-protocol/mew/internal/feed"
	"github.com/mew-protocol/mew/internal/termtext"
	"github.com/mew-protocol/mew/protocol"
)

// approvals is the proposals the user may decide: every one seen (the
// book), the dialog that offers the oldest awaiting them, and the reads of
// the files a write would replace. It owns that state, takes the dialog's
// keys, carries out the decisions and draws the dialog; the root hands it
// the proposals' events and their commands' answers.
type approvals struct {
	e      *env
	grants grantRecorder // where a grant made with an approval is recorded

	book  book[*proposal] // every proposal seen, numbered from 1 (the latest maxProposals)
	dlg   *dialog
	quiet map[string]int // the UI's own requests in flight, not shown (diff.go)
}

// grantRecorder keeps the grants the user makes: the ledger.
type grantRecorder interface{ made(g *grant) }

func newApprovals(e *env, grants grantRecorder) approvals {
	return approvals{e: e, grants: grants, book: newBook[*proposal](maxProposals), quiet: map[string]int{}}
}

// messages of the approvals' commands.
type (
	decidedMsg struct {
		p      *proposal
		action string // "approved", "rejected"
		reason string
		err    error
	}
	toolsMsg struct {
		p     *proposal
		tools []string
		err   error
	}
	grantSentMsg struct {
		g   *grant
		err error
	}
)

// showing reports whether the dialog is open: it has the keys.
func (a *approvals) showing() bool { return a.dlg != nil }

// pending returns the proposals awaiting the user's decision, oldest first.
func (a *approvals) pending() []*proposal { return a.book.stillOpen() }

// number is the number of the proposal id, 0 if it is not known.
func (a *approvals) number(id string) int {
	if p := a.book.byID[id]; p != nil {
		return p.n
	}
	return 0
}

// propose takes in another participant's proposal.
func (a *approvals) propose(env *protocol.Envelope) tea.Cmd {
	if a.book.byID[env.ID] != nil {
		return nil
	}
	p := newProposal(a.book.next(), env)
	me := a.e.me()
	p.askMe = env.From != me && (env.AddressedTo(me) || a.e.sp.CanSend(protocol.KindMCPRequest, env.To, env.Payload))
	a.book.put(p)
	a.e.add(&proposalEntry{p: p})
	return a.openDialog()
}

// settled says how a proposal was settled: approved, rejected, withdrawn
// or given up.
func (a *approvals) settled(ev *feed.ProposalSettled) {
	p := a.book.byID[ev.Proposal]
	if p == nil || p.settled {
		return
	}
	by := a.e.who(ev.By)
	var out string
	switch ev.Outcome {
	case feed.Approved:
		out = "approved by " + by
		if ev.Edited {
			out += " with edited arguments"
		}
	case feed.Rejected:
		out = "rejected by " + by
		if ev.Reason != "" {
			out += ": " + termtext.Line(ev.Reason)
		}
		if ev.Message != "" {
			out += " (" + termtext.Line(clip.Runes(ev.Message, 200)) + ")"
		}
	case feed.TimedOut:
		// Not a rejection: nobody was there to decide.
		out = "timed out: nobody decided in time, so " + by + " withdrew it"
	default:
		out = "withdrawn by " + by
		if ev.Reason != "" {
			out += ": " + termtext.Line(ev.Reason)
		}
	}
	a.settle(p, out)
}

// policy takes in the gateway's word on a proposal the space's approval
// policy governs: whether it awaits the user's approval now (they approve
// in its rule's current step and have not yet), may be carried out by the
// user (approved), or ended without an answer to come.
func (a *approvals) policy(ev *feed.Approval) tea.Cmd {
	p := a.book.byID[ev.Proposal]
	if p == nil || p.settled {
		return nil
	}
	p.policy = ev
	me := a.e.me()
	switch ev.State {
	case protocol.ApprovalAwaiting, protocol.ApprovalEscalated:
		p.askMe = ev.AwaitsFrom(me)
	case protocol.ApprovalApproved:
		p.askMe = p.from != me && a.e.sp.CanSend(protocol.KindMCPRequest, p.to, p.payload)
	case protocol.ApprovalFulfilled:
		return nil // the request that carried it out settles it
	default: // rejected, withdrawn, timed out
		out := termtext.Line(strings.ReplaceAll(ev.State, "_", " "))
		if ev.By != "" {
			out += " by " + a.e.who(ev.By)
		}
		if ev.Message != "" {
			out += ": " + termtext.Line(clip.Runes(ev.Message, 200))
		}
		if ev.State == protocol.ApprovalTimedOut {
			out = "timed out: not enough approvals in time (rule " + termtext.Line(ev.Rule) + ")"
		}
		a.settle(p, out)
		return a.openDialog()
	}
	if a.dlg != nil && a.dlg.p == p && !p.askMe {
		a.dlg = nil
	}
	return a.openDialog()
}

// settle records how a proposal was settled; the dialog moves on if it
// showed it.
func (a *approvals) settle(p *proposal, outcome string) {
	p.settled, p.outcome = true, outcome
	if a.dlg != nil && a.dlg.p == p {
		a.dlg = nil
		if !p.deciding && outcome != "" {
			a.e.note(fmt.Sprintf("proposal #%d was %s", p.n, outcome), false)
		}
	}
}

// gotTools takes in the target's tools, for the grant scopes, and reads
// the file a write would replace.
func (a *approvals) gotTools(msg toolsMsg) tea.Cmd {
	msg.p.tools, msg.p.toolsErr = msg.tools, msg.err
	if msg.tools == nil && msg.err == nil {
		msg.p.tools = []string{}
	}
	return a.readOldFile(msg.p)
}

// grantSent takes in a grant that could not be sent.
func (a *approvals) grantSent(msg grantSentMsg) {
	if msg.err != nil {
		msg.g.state = "refused: " + termtext.Line(msg.err.Error())
		a.e.note(fmt.Sprintf("grant #%d was not sent: %s", msg.g.n, termtext.Line(msg.err.Error())), true)
	}
}

// paste puts pasted text in the dialog's editor, when it has one.
func (a *approvals) paste(text string) {
	switch a.dlg.step {
	case stepEdit:
		a.dlg.ed.insert(text)
	case stepReasonText:
		a.dlg.ed.insert(strings.ReplaceAll(text, "\n", " "))
	}
}

// review brings the postponed proposals back and opens the dialog; it
// reports whether any proposal awaits the user.
func (a *approvals) review() (tea.Cmd, bool) {
	for _, p := range a.pending() {
		p.postponed = false
	}
	if len(a.pending()) == 0 {
		return nil, false
	}
	return a.openDialog(), true
}

func (a *approvals) cmdProposals([]string) tea.Cmd {
	var lines []string
	for _, p := range a.book.all {
		if p.askMe && !p.settled {
			state := "awaiting you"
			switch {
			case p.deciding:
				state = "deciding…"
			case p.postponed:
				state = "postponed"
			}
			lines = append(lines, fmt.Sprintf("  #%d %s · %s", p.n, p.title(), state))
		}
	}
	if len(lines) == 0 {
		a.e.note("no proposals await your decision", false)
		return nil
	}
	a.e.note("proposals awaiting your decision (/approve N, /reject N, /review):\n"+strings.Join(lines, "\n"), false)
	return nil
}

// pick returns the proposal numbered by args[0] (default: the oldest
// awaiting the user) and the remaining arguments.
func (a *approvals) pick(args []string) (*proposal, []string) {
	if len(args) > 0 {
		n, err := strconv.Atoi(strings.TrimPrefix(args[0], "#"))
		if err == nil {
			for _, p := range a.book.all {
				if p.n == n {
					return p, args[1:]
				}
			}
			a.e.note(fmt.Sprintf("no proposal #%d", n), true)
			return nil, nil
		}
	}
	if pend := a.pending(); len(pend) > 0 {
		return pend[0], args
	}
	a.e.note("no proposals await your decision", true)
	return nil, nil
}

// pickOpen is pick for a decision by command: a proposal settled already
// is refused with a line saying how; the dialog showing the one picked
// closes.
func (a *approvals) pickOpen(args []string) (*proposal, []string) {
	p, rest := a.pick(args)
	if p == nil {
		return nil, nil
	}
	if p.settled {
		a.e.note(fmt.Sprintf("proposal #%d was already %s", p.n, p.outcome), true)
		return nil, nil
	}
	if a.dlg != nil && a.dlg.p == p {
		a.dlg = nil
	}
	return p, rest
}

func (a *approvals) cmdApprove(args []string) tea.Cmd {
	p, _ := a.pickOpen(args)
	if p == nil {
		return nil
	}
	if p.policy != nil && p.policy.State != protocol.ApprovalApproved {
		return a.count(p) // under the policy: an approval, not the call
	}
	return a.approve(p, nil, nil)
}

func (a *approvals) cmdReject(args []string) tea.Cmd {
	p, rest := a.pickOpen(args)
	if p == nil {
		return nil
	}
	reason, message := protocol.ReasonDisagree, ""
	if len(rest) > 0 {
		reason, message = rest[0], strings.Join(rest[1:], " ")
	}
	return a.reject(p, reason, message)
}
