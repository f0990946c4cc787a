package tui

import (
	"slices"

	tea "charm.land/bubbletea/v2"

	"github.com/mew-protocol/mew/internal/feed"
	"github.com/mew-protocol/mew/protocol"
)

// roster is who is in the space besides the user, from the welcome and
// the presence events; it owns that and /participants.
type roster struct {
	e    *env
	here map[string]bool // participants present, me excluded
}

func newRoster(e *env) *roster { return &roster{e: e, here: map[string]bool{}} }

// ids are the participants present, sorted.
func (r *roster) ids() []string { return sortedKeys(r.here) }

// has reports whether id is present.
func (r *roster) has(id string) bool { return r.here[id] }

// welcome takes in the participants a welcome lists.
func (r *roster) welcome(w *protocol.Welcome) {
	me := r.e.me()
	clear(r.here)
	for _, p := range w.Participants {
		if p.ID != me {
			r.here[p.ID] = true
		}
	}
}

// presence takes in a join or a leave.
func (r *roster) presence(ev *feed.Presence) {
	switch ev.Event {
	case protocol.PresenceJoin:
		r.here[ev.Participant] = true
	case protocol.PresenceLeave:
		delete(r.here, ev.Participant)
	}
}

func (r *roster) cmdParticipants([]string) tea.Cmd {
	ids := r.ids()
	if len(ids) == 0 {
		r.e.note("nobody else is here", false)
		return nil
	}
	r.e.note("in the space besides you: "+names(ids), false)
	return nil
}

// chatAcks is the user's latest chats, by id, whose entries mark the
// acknowledgements their addressees send.
type chatAcks struct {
	mine  map[string]*chatEntry
	order []string
}

// keep remembers a chat of the user's, letting the oldest go past
// maxUnacked.
func (c *chatAcks) keep(ce *chatEntry) {
	if c.mine == nil {
		c.mine = map[string]*chatEntry{}
	}
	c.mine[ce.id] = ce
	c.order = append(c.order, ce.id)
	if len(c.order) > maxUnacked {
		delete(c.mine, c.order[0])
		c.order = c.order[1:]
	}
}

// acked marks an addressee's acknowledgement under the chats of the
// user's it names.
func (c *chatAcks) acked(ev *feed.ChatAcked, me string) {
	for _, id := range ev.Chats {
		if ce := c.mine[id]; ce != nil && ev.From != me && addressee(ce.to, ev.From) && !slices.Contains(ce.acks, ev.From) && len(ce.acks) < 32 {
			ce.acks = append(ce.acks, ev.From)
			ce.cache = nil
		}
	}
}
