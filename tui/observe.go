package tui

import (
	"encoding/json"
	"fmt"
	"slices"

	tea "charm.land/bubbletea/v2"

	"github.com/mew-protocol/mew/internal/clip"
	"github.com/mew-protocol/mew/internal/feed"
	"github.com/mew-protocol/mew/internal/summary"
	"github.com/mew-protocol/mew/internal/termtext"
	"github.com/mew-protocol/mew/protocol"
)

// observe takes in an envelope seen in the space: the transcript's
// entries, and what the board shows. The envelope is read by the feed,
// as the line client reads it; this file routes its events to the
// components that own what they change.
func (m *Model) observe(env *protocol.Envelope) tea.Cmd {
	if env == nil {
		return nil
	}
	if m.tr.showRaw() {
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
		refresh = m.board.take(ev, m.e.me(), m.e.now()) || refresh
	}
	if refresh {
		cmds = append(cmds, m.board.refresh(m.width))
	}
	return tea.Batch(cmds...)
}

// take draws one event.
func (m *Model) take(ev feed.Event) tea.Cmd {
	env := ev.Envelope()
	e := m.e
	me := e.me()
	switch ev := ev.(type) {
	case *feed.Welcome:
		m.welcome(ev.Payload)
	case *feed.Presence:
		m.roster.presence(ev)
		if ev.Participant != me {
			m.add(&presenceEntry{who: ev.Participant, event: ev.Event})
		}
	case *feed.SystemError:
		m.ledger.refused(env, ev.Code)
		m.asks.systemError(env, &protocol.SystemError{Error: ev.Code, Message: ev.Message})
		m.add(&errorEntry{code: ev.Code, message: ev.Message, attempted: ev.AttemptedKind})
	case *feed.Chat:
		m.chatSeen(ev)
	case *feed.ChatAcked:
		// An addressee's acknowledgement of a chat of mine is marked under it.
		m.acks.acked(ev, me)
	case *feed.Request:
		m.request(ev)
	case *feed.Response:
		if ev.Listing {
			m.tools.listed(ev.Env, ev.Request)
		} else {
			m.calls.answer(ev)
		}
	case *feed.Proposal:
		if ev.From == "" {
			return nil
		}
		return m.props.propose(env)
	case *feed.ProposalSettled:
		m.props.settled(ev)
	case *feed.Approval:
		return m.props.policy(ev)
	case *feed.Approve:
		if n := m.props.number(ev.Proposal); n > 0 && ev.From != me {
			e.note(fmt.Sprintf("%s approves proposal #%d", e.who(ev.From), n), false)
		}
	case *feed.ReasoningStarted:
		m.add(m.live.started(ev, e.now()))
		return m.tick()
	case *feed.ReasoningStep:
		if m.live.step(ev) {
			return m.tick()
		}
	case *feed.ReasoningEnded:
		m.live.ended(ev, e.now())
	case *feed.GrantAcked:
		m.ledger.acked(env)
	case *feed.Granted:
		if ev.From != me {
			e.note(fmt.Sprintf("%s granted %s capabilities", termtext.Line(ev.From), termtext.Line(ev.Recipient)), false)
		}
	case *feed.Revoked:
		if ev.From != me {
			e.note(fmt.Sprintf("%s revoked capabilities of %s", termtext.Line(ev.From), termtext.Line(ev.Recipient)), false)
		}
	case *feed.Control:
		if ce := controlEntry(e, ev); ce != nil {
			m.add(ce)
		}
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
			m.asks.request(env, m.calls.waiting)
		case protocol.KindElicitationDone:
			m.asks.done(env)
		case protocol.KindElicitationRefused:
			m.asks.refused(env)
		}
		// elicitation/response: elicitation/done says who answered, and how
	case *feed.Malformed:
		e.note(fmt.Sprintf("%s sent a %s that cannot be read: %s", e.who(ev.From), termtext.Line(ev.Kind), termtext.Line(clip.Runes(ev.Err.Error(), 200))), true)
	case *feed.Other:
		m.add(&otherEntry{from: ev.From, kind: ev.Kind, payload: summary.Compact(ev.Payload)})
	}
	// Bookkeeping: a person need not read it; /verbose shows it.
	return nil
}

// chatSeen draws a chat; the user's own are kept for their
// acknowledgements, and the latest addressed to the user for /ack.
func (m *Model) chatSeen(ev *feed.Chat) {
	me := m.e.me()
	ce := &chatEntry{id: ev.ID, from: ev.From, to: ev.To}
	ce.text, ce.folded = fold(ev.Text)
	m.add(ce)
	if ev.From == me && ev.ID != "" {
		m.acks.keep(ce)
	}
	if ev.From != me && ev.ID != "" && ev.Env.AddressedTo(me) {
		m.cmds.chatToMe(sentChat{id: ev.ID, to: []string{ev.From}, text: ev.Text})
	}
}

// controlEntry draws a participant steering others: a pause or resume as a
// line of its own, the other controls as any kind is drawn; nil for a
// reasoning/cancel (its reasoner's answer ends the reasoning).
func controlEntry(e *env, ev *feed.Control) entry {
	switch ev.Kind {
	case protocol.KindParticipantPause:
		text := fmt.Sprintf("%s paused %s", e.who(ev.From), e.whoList(ev.To))
		if ev.TimeoutSeconds > 0 {
			text += fmt.Sprintf(" for %d s", ev.TimeoutSeconds)
		}
		if ev.Reason != "" {
			text += ": " + termtext.Line(ev.Reason)
		}
		return &presenceEntry{who: text, event: ""}
	case protocol.KindParticipantResume:
		return &presenceEntry{who: fmt.Sprintf("%s resumed %s", e.who(ev.From), e.whoList(ev.To)), event: ""}
	case protocol.KindReasoningCancel:
		return nil
	}
	return &otherEntry{from: ev.From, kind: ev.Kind, payload: summary.Compact(ev.Env.Payload)}
}

// welcome takes in a system/welcome: who is here, what the user may send.
func (m *Model) welcome(w *protocol.Welcome) {
	m.cmds.welcomed(w.You.Capabilities)
	m.roster.welcome(w)
	m.conn = Connected
	if !m.joined {
		m.joined = true
		m.e.note(fmt.Sprintf("joined %s as %s · type a message, @id to address someone, /help for commands",
			termtext.Line(m.e.o.SpaceName), termtext.Line(m.e.me())), false)
	}
}

// request shows an mcp/request, to be paired with its response; listings
// and the UI's own quiet requests are not shown.
func (m *Model) request(ev *feed.Request) {
	env := ev.Env
	m.tools.noteListing(env, ev.Method)
	if ev.Listing || m.props.quietRequest(env) {
		return
	}
	e := &requestEntry{from: ev.From, to: ev.To, call: describeCall(ev.Method, ev.Params)}
	m.calls.add(ev.ID, e)
	m.add(e)
	e.forPr = m.props.number(ev.Proposal)
}

// addressee reports whether from is one of to (a broadcast request may be
// answered by anyone).
func addressee(to []string, from string) bool {
	return len(to) == 0 || slices.Contains(to, from)
}
