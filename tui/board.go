package tui

import (
	"fmt"
	"slices"
	"strings"
	"time"

	tea "charm.land/bubbletea/v2"
	"github.com/charmbracelet/x/ansi"

	"github.com/mew-protocol/mew/internal/clip"
	"github.com/mew-protocol/mew/internal/feed"
	"github.com/mew-protocol/mew/internal/termtext"
	"github.com/mew-protocol/mew/protocol"
)

// boardMode is whether the side board shows.
type boardMode int

const (
	boardAuto   boardMode = iota // docked on terminals at least boardAutoWidth wide
	boardOpen                    // docked, or stacked above the input on narrow terminals
	boardClosed                  // hidden
)

// Sizes of the board.
const (
	boardWidth     = 42  // docked, the separator included (as the reference's)
	boardAutoWidth = 120 // auto shows it from this terminal width
	boardDockWidth = 100 // below this an open board is stacked
	maxUnacked     = 64  // chats of mine awaiting an acknowledgement, remembered
)

// boardState is the side board: whether it shows, and what it shows
// besides the roster, the proposals, the reasonings and the ledger, which
// it reads through small interfaces from the components that own them. It
// owns its mode, draws itself and takes /board and /streams.
type boardState struct {
	e       *env
	present people         // who is here: the roster
	props   awaiting       // the proposals awaiting the user
	live    reasoningsOf   // the reasonings in progress
	ledger  grantDescriber // what a grant allows, in words

	mode     boardMode
	statuses map[string]protocol.Status // the latest participant/status per sender
	streams  []openStream
	unacked  []sentChat
	grants   []LedgerGrant    // the ledger as last read for the board
	paused   map[string]pause // participants paused, by id
}

// pause is a participant/pause in force: who asked, and until when (zero:
// until resumed).
type pause struct {
	by    string
	until time.Time
}

type openStream struct{ id, what string }

type sentChat struct {
	id   string
	to   []string
	text string
}

// The board's sources: small interfaces over the components that own what
// it shows.
type (
	people interface {
		ids() []string
		has(id string) bool
	}
	awaiting     interface{ pending() []*proposal }
	reasoningsOf interface {
		of(from string) []*reasoningEntry
	}
	grantDescriber interface{ what(g LedgerGrant) string }
)

// docked reports whether the board shows beside the transcript on a
// screen width columns wide.
func (b *boardState) docked(width int) bool {
	switch b.mode {
	case boardAuto:
		return width >= boardAutoWidth
	case boardOpen:
		return width >= boardDockWidth
	}
	return false
}

// stacked reports whether the board shows above the input.
func (b *boardState) stacked(width int) bool { return b.mode == boardOpen && width < boardDockWidth }

// shows reports whether the board shows, docked or stacked.
func (b *boardState) shows(width int) bool { return b.docked(width) || b.stacked(width) }

// mainWidth is the transcript's column: the screen, or what the docked
// board leaves of it.
func (b *boardState) mainWidth(width int) int {
	if b.docked(width) {
		return max(width-boardWidth, 20)
	}
	return width
}

// textWidth is the width transcript lines are drawn to: the main column,
// less the gap kept before the docked board's separator. Drawing to the
// whole column and cutting the gap off afterwards lost the last character
// of every full line.
func (b *boardState) textWidth(width int) int {
	if b.docked(width) {
		return b.mainWidth(width) - 1
	}
	return b.mainWidth(width)
}

// toggle shows the board if it is hidden and hides it otherwise, and
// reads the ledger for it when it shows.
func (b *boardState) toggle(width int) tea.Cmd {
	if b.shows(width) {
		b.mode = boardClosed
	} else {
		b.mode = boardOpen
	}
	return b.refresh(width)
}

// showGrants takes in the ledger as last read.
func (b *boardState) showGrants(gs []LedgerGrant) { b.grants = gs }

// forgetGrant leaves out a grant the user revoked.
func (b *boardState) forgetGrant(id string) {
	b.grants = slices.DeleteFunc(slices.Clone(b.grants), func(x LedgerGrant) bool { return x.ID == id })
}

// lastUnacked is the latest of the user's chats still awaiting an
// acknowledgement.
func (b *boardState) lastUnacked() (sentChat, bool) {
	if n := len(b.unacked); n > 0 {
		return b.unacked[n-1], true
	}
	return sentChat{}, false
}

// take keeps what the board shows up to date with an event; it reports
// whether the grants' ledger should be read again. The feed has read the
// event's envelope; a participant/status, bookkeeping to the transcript,
// is read here, and one that does not decode is left out.
func (b *boardState) take(ev feed.Event, me string, now time.Time) bool {
	env := ev.Envelope()
	switch ev := ev.(type) {
	case *feed.Bookkeeping:
		var s protocol.Status
		if ev.Kind == protocol.KindParticipantStatus && env.DecodePayload(&s) == nil && ev.From != "" {
			if b.statuses == nil {
				b.statuses = map[string]protocol.Status{}
			}
			if len(b.statuses) < 1024 || b.present.has(ev.From) {
				b.statuses[ev.From] = s
			}
		}
	case *feed.Control:
		if ev.Kind == protocol.KindParticipantPause || ev.Kind == protocol.KindParticipantResume {
			b.pause(ev, now)
		}
	case *feed.StreamOpened:
		b.streams = append(b.streams, openStream{id: ev.Stream, what: "for " + names(ev.To)})
		if len(b.streams) > 64 {
			b.streams = b.streams[1:]
		}
	case *feed.StreamClosed:
		b.streams = slices.DeleteFunc(b.streams, func(x openStream) bool { return x.id == ev.Stream })
	case *feed.Chat:
		if ev.From == me && ev.ID != "" && len(ev.To) > 0 {
			b.unacked = append(b.unacked, sentChat{id: ev.ID, to: ev.To, text: ev.Text})
			if len(b.unacked) > maxUnacked {
				b.unacked = b.unacked[1:]
			}
		}
	case *feed.ChatAcked:
		for i, c := range b.unacked {
			if env.CorrelatesWith(c.id) && addressee(c.to, ev.From) {
				b.unacked = append(b.unacked[:i], b.unacked[i+1:]...)
				break
			}
		}
	case *feed.Granted, *feed.Revoked, *feed.GrantAcked:
		return true
	case *feed.Welcome:
		return env.To == nil || env.AddressedTo(me)
	}
	return false
}

// pause follows a participant/pause or resume of the participants it
// names.
func (b *boardState) pause(ev *feed.Control, now time.Time) {
	if b.paused == nil {
		b.paused = map[string]pause{}
	}
	for _, id := range ev.To {
		if ev.Kind == protocol.KindParticipantResume {
			delete(b.paused, id)
			continue
		}
		ps := pause{by: ev.From}
		if ev.TimeoutSeconds > 0 {
			ps.until = now.Add(time.Duration(ev.TimeoutSeconds) * time.Second)
		}
		if len(b.paused) < 1024 {
			b.paused[id] = ps
		}
	}
}

// boardGrantsMsg brings the ledger read for the board.
type boardGrantsMsg struct {
	grants []LedgerGrant
	err    error
}

// got takes in the ledger read for the board; one that could not be read
// leaves the grants shown as they were.
func (b *boardState) got(msg boardGrantsMsg) {
	if msg.err == nil {
		b.grants = msg.grants
	}
}

// refresh reads the ledger for the board, when it shows on a screen
// width columns wide.
func (b *boardState) refresh(width int) tea.Cmd {
	if !b.shows(width) {
		return nil
	}
	f := b.e.fetchGrants(0)
	return func() tea.Msg {
		lm, _ := f().(ledgerMsg)
		return boardGrantsMsg{grants: lm.grants, err: lm.err}
	}
}

// lines draws the board: width columns (the separator not included), at
// most height lines.
func (b *boardState) lines(width, height int) []string {
	st := &b.e.st
	var out []string
	head := func(s string) {
		if len(out) > 0 {
			out = append(out, "")
		}
		out = append(out, st.DialogTitle.Render(s))
	}
	add := func(s string) { out = append(out, ansi.Truncate(s, width, "…")) }
	now := b.e.now()

	head("PARTICIPANTS")
	ids := b.present.ids()
	if len(ids) == 0 {
		add(st.Dim.Render("nobody else is here"))
	}
	for _, id := range ids {
		add(st.speaker(id).Render("● "+termtext.Line(id)) + st.Dim.Render(b.participantState(id, now)))
	}
	if pend := b.props.pending(); len(pend) > 0 {
		head(fmt.Sprintf("AWAITING YOU (%d)", len(pend)))
		for _, p := range pend {
			add(st.Proposal.Render(fmt.Sprintf("#%d ", p.n)) + p.title())
		}
	}
	if gs := b.inForce(now); len(gs) > 0 {
		head("GRANTS IN FORCE")
		for _, g := range gs {
			add(termtext.Line(g.To) + st.Dim.Render(" · "+shortLife(g, now)))
			add("  " + b.ledger.what(g))
		}
	}
	if len(b.unacked) > 0 {
		head("YOUR CHATS AWAITING ACK")
		from := max(len(b.unacked)-5, 0)
		for _, c := range b.unacked[from:] {
			add("→ " + names(c.to) + ": " + termtext.Line(clip.Runes(c.text, 60)))
		}
	}
	if len(b.streams) > 0 {
		head("STREAMS")
		for _, s := range b.streams {
			add(termtext.Line(s.id) + " " + s.what)
		}
	}
	if len(out) > height {
		out = append(out[:height-1], st.Dim.Render("…"))
	}
	return out
}

// participantState is what participant id is doing, for the board:
// thinking, its status, its context use.
func (b *boardState) participantState(id string, now time.Time) string {
	var parts []string
	if rs := b.live.of(id); len(rs) > 0 {
		r, s := rs[0], "thinking"
		if r.thoughts > 0 {
			s += " · " + plural(r.thoughts, "thought")
		}
		if r.doing != "" {
			s += " · " + r.doing
		}
		parts = append(parts, s)
	}
	if p, ok := b.pausedNow(id, now); ok {
		parts = append(parts, p)
	}
	if s, ok := b.statuses[id]; ok {
		if s.Status != "" && s.Status != "active" {
			parts = append(parts, termtext.Line(s.Status))
		}
		if s.MaxTokens > 0 {
			parts = append(parts, fmt.Sprintf("context %d%%", s.Tokens*100/s.MaxTokens))
		}
	}
	if len(parts) == 0 {
		return ""
	}
	return "  " + strings.Join(parts, " · ")
}

// inForce are the grants in force as the board last read them, those
// expired since left out.
func (b *boardState) inForce(now time.Time) []LedgerGrant {
	var out []LedgerGrant
	for _, g := range b.grants {
		if g.ExpiresAt.IsZero() || now.Before(g.ExpiresAt) {
			out = append(out, g)
		}
	}
	return out
}

// shortLife is a grant's time left in a few characters.
func shortLife(g LedgerGrant, now time.Time) string {
	if g.ExpiresAt.IsZero() {
		return "until revoked"
	}
	left := g.ExpiresAt.Sub(now)
	if left >= time.Minute {
		return fmt.Sprintf("%dm left", int(left.Minutes()))
	}
	return fmt.Sprintf("%ds left", int(left.Seconds()))
}

// cmdBoard is /board and /ui board [open|close|auto] on a screen width
// columns wide: the board shown, hidden, or left to the terminal's width.
func (b *boardState) cmdBoard(args []string, width int) tea.Cmd {
	if len(args) > 0 && args[0] == "board" { // /ui board …
		args = args[1:]
	}
	if len(args) == 0 {
		return b.toggle(width)
	}
	switch args[0] {
	case "open":
		b.mode = boardOpen
	case "close":
		b.mode = boardClosed
	case "auto":
		b.mode = boardAuto
	default:
		b.e.note("/board [open|close|auto]", true)
		return nil
	}
	return b.refresh(width)
}

// cmdStreams lists the open streams.
func (b *boardState) cmdStreams([]string) tea.Cmd {
	if len(b.streams) == 0 {
		b.e.note("no open streams", false)
		return nil
	}
	lines := []string{"open streams:"}
	for _, s := range b.streams {
		lines = append(lines, "  "+termtext.Line(s.id)+" "+s.what)
	}
	b.e.note(strings.Join(lines, "\n"), false)
	return nil
}

// pausedNow says whether id is paused at now, as "paused" or "paused · 25s
// left".
func (b *boardState) pausedNow(id string, now time.Time) (string, bool) {
	p, ok := b.paused[id]
	if !ok || (!p.until.IsZero() && !now.Before(p.until)) {
		return "", false
	}
	if p.until.IsZero() {
		return "paused", true
	}
	return fmt.Sprintf("paused · %ds left", int(p.until.Sub(now).Seconds()+0.5)), true
}
