package tui

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	tea "charm.land/bubbletea/v2"

	"github.com/mew-protocol/mew/internal/clip"
	"github.com/mew-protocol/mew/internal/feed"
	"github.com/mew-protocol/mew/internal/summary"
	"github.com/mew-protocol/mew/internal/termtext"
	"github.com/mew-protocol/mew/protocol"
)

// observe takes in an envelope seen in the space: the transcript's
// entries, and what the board shows. The envelope is read by the feed,
// as the line client reads it; this file draws the events.
func (m *Model) observe(env *protocol.Envelope) tea.Cmd {
	if env == nil {
		return nil
	}
	if m.verbose {
		if b, err := json.Marshal(env); err == nil {
			m.add(newRawEntry(env.ID, string(b)))
		}
	}
	var cmds []tea.Cmd
	refresh := false
	for _, ev := range m.feed.Read(env) {
		if _, ok := ev.(*feed.Spoofed); ok {
			// The SDK drops these; never trust one that got through. /verbose
			// shows it raw.
			return nil
		}
		cmds = append(cmds, m.take(ev))
		refresh = m.board.take(ev, m.me(), m.now(), m.roster) || refresh
	}
	if refresh {
		cmds = append(cmds, m.refreshBoardGrants())
	}
	return tea.Batch(cmds...)
}

// take draws one event.
func (m *Model) take(ev feed.Event) tea.Cmd {
	env := ev.Envelope()
	me := m.me()
	switch ev := ev.(type) {
	case *feed.Welcome:
		m.welcome(ev.Payload)
	case *feed.Presence:
		switch ev.Event {
		case protocol.PresenceJoin:
			m.roster[ev.Participant] = true
		case protocol.PresenceLeave:
			delete(m.roster, ev.Participant)
		}
		if ev.Participant != me {
			m.add(&presenceEntry{who: ev.Participant, event: ev.Event})
		}
	case *feed.SystemError:
		m.ledger.refused(env, ev.Code)
		m.elicitError(env, &protocol.SystemError{Error: ev.Code, Message: ev.Message})
		m.add(&errorEntry{code: ev.Code, message: ev.Message, attempted: ev.AttemptedKind})
	case *feed.Chat:
		m.chatSeen(ev)
	case *feed.ChatAcked:
		// An addressee's acknowledgement of a chat of mine is marked under it.
		for _, id := range ev.Chats {
			if ce := m.myChats[id]; ce != nil && ev.From != me && addressee(ce.to, ev.From) && !slices.Contains(ce.acks, ev.From) && len(ce.acks) < 32 {
				ce.acks = append(ce.acks, ev.From)
				ce.cache = nil
			}
		}
	case *feed.Request:
		m.request(ev)
	case *feed.Response:
		m.response(ev)
	case *feed.Proposal:
		if ev.From == "" {
			return nil
		}
		return m.propose(env)
	case *feed.ProposalSettled:
		m.proposalSettled(ev)
	case *feed.ReasoningStarted:
		m.add(m.live.started(ev, m.now()))
		return m.tick()
	case *feed.ReasoningStep:
		if m.live.step(ev) {
			return m.tick()
		}
	case *feed.ReasoningEnded:
		m.live.ended(ev, m.now())
	case *feed.GrantAcked:
		m.ledger.acked(env)
	case *feed.Granted:
		if ev.From != me {
			m.note(fmt.Sprintf("%s granted %s capabilities", termtext.Line(ev.From), termtext.Line(ev.Recipient)), false)
		}
	case *feed.Revoked:
		if ev.From != me {
			m.note(fmt.Sprintf("%s revoked capabilities of %s", termtext.Line(ev.From), termtext.Line(ev.Recipient)), false)
		}
	case *feed.Control:
		m.controlSeen(ev)
	case *feed.StreamOpened:
		m.add(&streamEntry{text: fmt.Sprintf("stream %s opened for %s", termtext.Line(ev.Stream), names(ev.To))})
	case *feed.StreamClosed:
		text := "stream " + termtext.Line(ev.Stream) + " closed"
		if ev.Reason != "" {
			text += ": " + termtext.Line(ev.Reason)
		}
		m.add(&streamEntry{text: text})
	case *feed.Elicitation:
		switch ev.Kind {
		case protocol.KindElicitationRequest:
			return m.elicitRequest(env)
		case protocol.KindElicitationDone:
			m.elicitDone(env)
		case protocol.KindElicitationRefused:
			m.elicitRefused(env)
		}
		// elicitation/response: elicitation/done says who answered, and how
	case *feed.Malformed:
		m.note(fmt.Sprintf("%s sent a %s that cannot be read: %s", m.who(ev.From), termtext.Line(ev.Kind), termtext.Line(clip.Runes(ev.Err.Error(), 200))), true)
	case *feed.Other:
		m.add(&otherEntry{from: ev.From, kind: ev.Kind, payload: summary.Compact(ev.Payload)})
	}
	// Bookkeeping: a person need not read it; /verbose shows it.
	return nil
}

// chatSeen draws a chat; the user's own are kept for their
// acknowledgements, and the latest addressed to the user for /ack.
func (m *Model) chatSeen(ev *feed.Chat) {
	me := m.me()
	ce := &chatEntry{id: ev.ID, from: ev.From, to: ev.To}
	ce.text, ce.folded = fold(ev.Text)
	m.add(ce)
	if ev.From == me && ev.ID != "" {
		m.myChats[ev.ID] = ce
		m.myChatOrder = append(m.myChatOrder, ev.ID)
		if len(m.myChatOrder) > maxUnacked {
			delete(m.myChats, m.myChatOrder[0])
			m.myChatOrder = m.myChatOrder[1:]
		}
	}
	if ev.From != me && ev.ID != "" && ev.Env.AddressedTo(me) {
		m.lastToMe = sentChat{id: ev.ID, to: []string{ev.From}, text: ev.Text}
	}
}

// controlSeen draws a participant steering others: a pause or resume as a
// line of its own, the other controls as any kind is drawn.
func (m *Model) controlSeen(ev *feed.Control) {
	switch ev.Kind {
	case protocol.KindParticipantPause:
		text := fmt.Sprintf("%s paused %s", m.who(ev.From), whoList(m, ev.To))
		if ev.TimeoutSeconds > 0 {
			text += fmt.Sprintf(" for %d s", ev.TimeoutSeconds)
		}
		if ev.Reason != "" {
			text += ": " + termtext.Line(ev.Reason)
		}
		m.add(&presenceEntry{who: text, event: ""})
	case protocol.KindParticipantResume:
		m.add(&presenceEntry{who: fmt.Sprintf("%s resumed %s", m.who(ev.From), whoList(m, ev.To)), event: ""})
	case protocol.KindReasoningCancel:
		// asked of a reasoning; its reasoner's answer ends it
	default:
		m.add(&otherEntry{from: ev.From, kind: ev.Kind, payload: summary.Compact(ev.Env.Payload)})
	}
}

// welcome takes in a system/welcome: who is here.
func (m *Model) welcome(w *protocol.Welcome) {
	me := m.me()
	m.myCaps = w.You.Capabilities
	clear(m.roster)
	for _, p := range w.Participants {
		if p.ID != me {
			m.roster[p.ID] = true
		}
	}
	m.conn = Connected
	if !m.joined {
		m.joined = true
		m.note(fmt.Sprintf("joined %s as %s · type a message, @id to address someone, /help for commands",
			termtext.Line(m.o.SpaceName), termtext.Line(me)), false)
	}
}

// whoList is ids as the transcript says them ("you" for the user), or
// "everyone".
func whoList(m *Model, ids []string) string {
	if len(ids) == 0 {
		return "everyone"
	}
	out := make([]string, len(ids))
	for i, id := range ids {
		out[i] = m.who(id)
	}
	return strings.Join(out, ", ")
}

// who is id as the transcript says it: "you" for the user.
func (m *Model) who(id string) string {
	if id == m.me() {
		return "you"
	}
	return termtext.Line(id)
}

// request shows an mcp/request, to be paired with its response; listings
// and the UI's own quiet requests are not shown.
func (m *Model) request(ev *feed.Request) {
	env := ev.Env
	m.noteListing(env, ev.Method)
	if ev.Listing || m.quietRequest(env) {
		return
	}
	e := &requestEntry{from: ev.From, to: ev.To, call: describeCall(ev.Method, ev.Params)}
	m.calls.add(ev.ID, e)
	m.add(e)
	if p := m.props.byID[ev.Proposal]; p != nil {
		e.forPr = p.n
	}
}

// response shows an mcp/response under the request it answers.
func (m *Model) response(ev *feed.Response) {
	if ev.Listing {
		m.toolsListed(ev.Env, ev.Request)
		return
	}
	m.calls.answer(ev)
}

// addressee reports whether from is one of to (a broadcast request may be
// answered by anyone).
func addressee(to []string, from string) bool {
	return len(to) == 0 || slices.Contains(to, from)
}

// propose takes in another participant's proposal.
func (m *Model) propose(env *protocol.Envelope) tea.Cmd {
	if m.props.byID[env.ID] != nil {
		return nil
	}
	p := newProposal(m.props.next(), env)
	me := m.me()
	p.askMe = env.From != me && (env.AddressedTo(me) || m.sp.CanSend(protocol.KindMCPRequest, env.To, env.Payload))
	m.props.put(p)
	m.add(&proposalEntry{p: p})
	return m.openDialog()
}

// proposalSettled says how a proposal was settled: approved, rejected,
// withdrawn or given up.
func (m *Model) proposalSettled(ev *feed.ProposalSettled) {
	p := m.props.byID[ev.Proposal]
	if p == nil || p.settled {
		return
	}
	by := m.who(ev.By)
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
	m.settle(p, out)
}

// settle records how a proposal was settled; the dialog moves on if it
// showed it.
func (m *Model) settle(p *proposal, outcome string) {
	p.settled, p.outcome = true, outcome
	if m.dlg != nil && m.dlg.p == p {
		m.dlg = nil
		if !p.deciding && outcome != "" {
			m.note(fmt.Sprintf("proposal #%d was %s", p.n, outcome), false)
		}
	}
}

// pending returns the proposals awaiting the user's decision, oldest first.
func (m *Model) pending() []*proposal { return m.props.stillOpen() }
