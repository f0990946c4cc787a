package tui

import (
	"context"
	"strings"
	"time"

	tea "charm.land/bubbletea/v2"
	"github.com/charmbracelet/x/ansi"

	"github.com/mew-protocol/mew/internal/termtext"
	"github.com/mew-protocol/mew/protocol"
)

// env is what the components share: the options, the space and the
// context to act in it, the clock, the colours, and the transcript's door
// (add), by which a component tells the user something without reaching
// into the transcript. The root makes one and owns it; the components keep
// a pointer to it and change nothing in it but through /theme.
type env struct {
	o     Options
	sp    Space
	ctx   context.Context
	now   func() time.Time
	st    Styles
	theme int // counts /theme's switches, for the entries' caches

	// add appends an entry to the transcript: the root's, which knows how
	// wide the transcript is drawn.
	add func(entry)
}

// note adds a line of the program's own.
func (e *env) note(text string, isErr bool) { e.add(&noteEntry{text: text, error: isErr}) }

// me is the user's participant id.
func (e *env) me() string { return e.sp.Me() }

// who is id as the transcript says it: "you" for the user.
func (e *env) who(id string) string {
	if id == e.me() {
		return "you"
	}
	return termtext.Line(id)
}

// whoList is ids as the transcript says them ("you" for the user), or
// "everyone".
func (e *env) whoList(ids []string) string {
	if len(ids) == 0 {
		return "everyone"
	}
	out := make([]string, len(ids))
	for i, id := range ids {
		out[i] = e.who(id)
	}
	return strings.Join(out, ", ")
}

// send sends env from a command goroutine; the answer is a sentMsg.
func (e *env) send(what string, env *protocol.Envelope) tea.Cmd {
	sp, ctx := e.sp, e.ctx
	return func() tea.Msg { return sentMsg{what: what, err: sp.Send(ctx, env)} }
}

// control sends an envelope of kind with payload to to, correlated to corr
// when it is not empty.
func (e *env) control(kind string, to []string, corr []string, payload any) tea.Cmd {
	env, err := protocol.New(kind, payload)
	if err != nil {
		e.note(err.Error(), true)
		return nil
	}
	env.To, env.CorrelationID = to, corr
	return e.send(kind, env)
}

// fetchGrants returns a command that reads the ledger; revoke is carried
// to the answer (ledgerMsg).
func (e *env) fetchGrants(revoke int) tea.Cmd {
	sp, ctx := e.sp, e.ctx
	return func() tea.Msg {
		ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		defer cancel()
		gs, err := sp.Grants(ctx)
		return ledgerMsg{grants: gs, err: err, revoke: revoke}
	}
}

// choice draws one option of a dialog, highlighted when it is the
// cursor's.
func (e *env) choice(label string, active bool) string {
	if active {
		return e.st.ChoiceActive.Render("▸ " + label + " ")
	}
	return e.st.Choice.Render("  " + label + " ")
}

// box draws a dialog's body in a box as wide as the screen (w), titled.
func (e *env) box(title string, body []string, w int) []string {
	inner := max(w-4, 10)
	bs := e.st.Dialog
	top := bs.Render("╭─" + title + strings.Repeat("─", max(w-4-ansi.StringWidth(title), 0)) + "─╮")
	out := []string{ansi.Truncate(top, w, "")}
	for _, l := range body {
		pad := max(inner-ansi.StringWidth(l), 0)
		out = append(out, bs.Render("│ ")+l+strings.Repeat(" ", pad)+bs.Render(" │"))
	}
	return append(out, bs.Render("╰"+strings.Repeat("─", max(w-2, 0))+"╯"))
}
