package lineclient

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	"github.com/mew-protocol/mew/capability"
	"github.com/mew-protocol/mew/internal/clip"
	"github.com/mew-protocol/mew/internal/feed"
	"github.com/mew-protocol/mew/internal/summary"
	"github.com/mew-protocol/mew/internal/termtext"
	"github.com/mew-protocol/mew/protocol"
)

// show prints an envelope readably. The feed reads it, as the terminal UI
// reads it; what the user sent is taken in but not printed again.
func (lc *lineClient) show(env *protocol.Envelope) {
	self := lc.p.ID()
	if env.From != self {
		lc.noticeReaction(env)
	}
	lc.mu.Lock()
	defer lc.mu.Unlock()
	for _, ev := range lc.feed.Read(env) {
		if text := lc.take(ev, self); text != "" {
			lc.printf("%s", text)
		}
	}
}

// take follows one event and returns the line it prints, if any. lc.mu
// is held.
func (lc *lineClient) take(ev feed.Event, self string) string {
	env := ev.Envelope()
	switch ev := ev.(type) {
	case *feed.Presence:
		lc.presenceLocked(ev, self)
		return "* " + ev.Participant + " " + ev.Event
	case *feed.SystemError:
		return "! " + ev.Code + ": " + ev.Message
	case *feed.Request:
		if !ev.Listing && ev.ID != "" && (ev.From != self || lc.typed[ev.ID]) {
			lc.rememberLocked(ev, self)
		}
		return ""
	case *feed.Response:
		return lc.responseLocked(ev)
	case *feed.ReasoningStarted:
		lc.reasonings[ev.Reasoning] = &reasoning{from: ev.From}
		lc.rorder = append(lc.rorder, ev.Reasoning)
		lc.disp.status(lc.statusLocked())
		return ""
	case *feed.ReasoningStep:
		if r := lc.reasonings[ev.Reasoning]; r != nil {
			r.thoughts = ev.Thoughts
			switch {
			case ev.Thought != nil:
				r.doing = preview(summary.Step(ev.Thought), 60)
			case ev.Calling != "":
				r.doing = "calling " + ev.Calling
			}
			lc.disp.status(lc.statusLocked())
		}
		return ""
	case *feed.ReasoningEnded:
		return lc.endLocked(ev)
	case *feed.Malformed:
		if ev.From == self {
			return ""
		}
		return "! " + ev.From + " sent a " + ev.Kind + " that cannot be read: " + clip.Runes(ev.Err.Error(), 200)
	}
	if env.From == self {
		return "" // own echoes
	}
	switch ev := ev.(type) {
	case *feed.Chat:
		if !env.IsBroadcast() && !env.AddressedTo(self) {
			return ev.From + " → " + strings.Join(ev.To, ",") + ": " + ev.Text
		}
		return ev.From + ": " + ev.Text
	case *feed.Granted, *feed.Revoked, *feed.GrantAcked, *feed.Control, *feed.Elicitation, *feed.Other:
		return "  " + env.From + " " + env.Kind + " " + preview(string(env.Payload), 200)
	}
	// The rest a person need not read: the welcome (OnWelcome takes it in),
	// proposals (propose prints them, numbered) and their settling,
	// acknowledgements, streams, bookkeeping; a spoofed gateway kind is not
	// believed.
	return ""
}

// rememberLocked keeps a request until its response comes. lc.mu is held.
func (lc *lineClient) rememberLocked(ev *feed.Request, self string) {
	from := ev.From
	if from == "" {
		from = self
	}
	if _, seen := lc.calls[ev.ID]; !seen {
		lc.corder = append(lc.corder, ev.ID)
	}
	lc.calls[ev.ID] = call{from: from, to: strings.Join(ev.To, ","), what: describeCall(ev.Method, ev.Params)}
	if len(lc.corder) > maxOpen {
		delete(lc.calls, lc.corder[0])
		lc.corder = lc.corder[1:]
	}
}

// responseLocked returns the line of a response paired with a request
// shown: "  calc → agent: 5  (add {"a":2,"b":3})". My own requests but
// those typed as JSON (/approve shows its result), listings and requests
// sent before I joined have none. lc.mu is held.
func (lc *lineClient) responseLocked(ev *feed.Response) string {
	c, known := lc.calls[ev.Request]
	if ev.Request == "" || ev.Listing || !known {
		return ""
	}
	delete(lc.calls, ev.Request)
	lc.corder = slices.DeleteFunc(lc.corder, func(s string) bool { return s == ev.Request })
	result := summarize(ev.Result)
	if ev.Error != nil {
		result = "error: " + ev.Error.Message
	}
	text := "  " + ev.From + " → " + c.from + ": " + result
	if c.what != "" {
		text += "  (" + c.what + ")"
	}
	return text
}

// statusLocked is the status line: each open reasoning, as "assistant is
// thinking · 2 thoughts · calling calculator/add". lc.mu is held.
func (lc *lineClient) statusLocked() string {
	var parts []string
	for _, id := range lc.rorder {
		r := lc.reasonings[id]
		s := termtext.Line(r.from) + " is thinking"
		if r.thoughts > 0 {
			s += " · " + plural(r.thoughts, "thought")
		}
		if r.doing != "" {
			s += " · " + termtext.Line(r.doing)
		}
		parts = append(parts, s)
	}
	return strings.Join(parts, "  |  ")
}

// endLocked forgets a reasoning, updates the status and returns the one
// line left of it: "  (assistant reasoned: 2 thoughts, used
// calculator/add)", or why it stopped. A reasoning whose reasoner left, or
// one let go for too many open, leaves none. lc.mu is held.
func (lc *lineClient) endLocked(ev *feed.ReasoningEnded) string {
	if _, open := lc.reasonings[ev.Reasoning]; !open {
		return ""
	}
	delete(lc.reasonings, ev.Reasoning)
	lc.rorder = slices.DeleteFunc(lc.rorder, func(s string) bool { return s == ev.Reasoning })
	lc.disp.status(lc.statusLocked())
	switch {
	case ev.Cause == feed.Left || ev.Cause == feed.Evicted:
		return ""
	case ev.Cancelled:
		s := "  (" + ev.Reasoner + " stopped thinking: cancelled"
		if ev.Reason != "" {
			s += ": " + ev.Reason
		}
		return s + ")"
	}
	s := "  (" + ev.Reasoner + " reasoned: " + plural(ev.Thoughts, "thought")
	if len(ev.Tools) > 0 {
		s += ", used " + strings.Join(ev.Tools, ", ")
	}
	return s + ")"
}

// presenceLocked follows who joins and leaves. lc.mu is held.
func (lc *lineClient) presenceLocked(ev *feed.Presence, self string) {
	switch ev.Event {
	case protocol.PresenceJoin:
		if ev.Participant != self {
			lc.roster[ev.Participant] = mayChat(ev.Payload.Participant.Capabilities)
		}
	case protocol.PresenceLeave:
		delete(lc.roster, ev.Participant)
	}
}

// welcome starts the roster over from a system/welcome.
func (lc *lineClient) welcome(w *protocol.Welcome) {
	lc.mu.Lock()
	defer lc.mu.Unlock()
	clear(lc.roster)
	for _, p := range w.Participants {
		if p.ID != w.You.ID {
			lc.roster[p.ID] = mayChat(p.Capabilities)
		}
	}
}

// mayChat reports whether capabilities allow sending a chat.
func mayChat(caps []json.RawMessage) bool {
	set, err := capability.Compile(caps)
	return err == nil && set.Allows(protocol.KindChat, []byte(`{"text":"?"}`))
}

// plural is "1 thought", "2 thoughts".
func plural(n int, thing string) string {
	if n == 1 {
		return "1 " + thing
	}
	return fmt.Sprintf("%d %ss", n, thing)
}

// expectReaction notes a chat of mine to everyone about to be sent and
// returns its number for hint; 0 when hints are off.
func (lc *lineClient) expectReaction() int {
	if lc.hintAfter <= 0 {
		return 0
	}
	lc.mu.Lock()
	defer lc.mu.Unlock()
	lc.hintGen++
	lc.awaiting = true
	return lc.hintGen
}

// reacted notes that my chat to everyone needs no hint.
func (lc *lineClient) reacted() {
	lc.mu.Lock()
	lc.awaiting = false
	lc.mu.Unlock()
}

// noticeReaction ends the wait for a reaction to my chat to everyone when
// another participant says something, acknowledges, reasons or proposes.
func (lc *lineClient) noticeReaction(env *protocol.Envelope) {
	switch env.Kind {
	case protocol.KindChat, protocol.KindChatAcknowledge, protocol.KindReasoningStart, protocol.KindMCPProposal:
		if env.From != "" && !strings.HasPrefix(env.From, "system:") {
			lc.reacted()
		}
	}
}

// hint says why chat number gen got no answer, when it got none: nobody
// was addressed and no one took it up. It names the participants present
// that may chat, the ones a person would address.
func (lc *lineClient) hint(gen int) {
	lc.mu.Lock()
	if gen != lc.hintGen || !lc.awaiting {
		lc.mu.Unlock()
		return
	}
	lc.awaiting = false
	var who []string
	for id, chats := range lc.roster {
		if chats && !lc.human(id) {
			who = append(who, id)
		}
	}
	lc.mu.Unlock()
	slices.Sort(who)
	wait := lc.hintAfter.String()
	if len(who) == 0 {
		lc.printf("no one answered within %s, and no one here can: the space has no agent connected", wait)
		return
	}
	lc.printf("no one answered within %s: address an agent with @name (agents here: %s)", wait, strings.Join(who, ", "))
}

// human reports whether the space's configuration, when known, has id as a
// person: a participant the space does not start or bridge.
func (lc *lineClient) human(id string) bool {
	if lc.cfg == nil {
		return false
	}
	p := lc.cfg.Participant(id)
	return p != nil && p.Command == "" && p.MCPServer == nil && !p.AutoConnect
}

// describeCall shows an MCP call: "tools/call add {"a":2}".
func describeCall(method string, params json.RawMessage) string {
	if method != "tools/call" {
		return strings.TrimSpace(method + " " + preview(string(params), 120))
	}
	var p struct {
		Name      string          `json:"name"`
		Arguments json.RawMessage `json:"arguments"`
	}
	_ = json.Unmarshal(params, &p)
	return p.Name + " " + preview(string(p.Arguments), 200)
}

// summarize shows a tool result on one line: its text (see summary.Result),
// "error: " first when it is one.
func summarize(raw json.RawMessage) string {
	text, isErr := summary.Result(raw)
	if isErr {
		return "error: " + preview(text, 300)
	}
	return preview(text, 300)
}

// preview folds s's white space and cuts it to n bytes, marking the cut.
func preview(s string, n int) string { return clip.Mark(strings.Join(strings.Fields(s), " "), n) }
