package tui

import (
	"context"
	"fmt"
	"strings"
	"time"

	tea "charm.land/bubbletea/v2"
	"github.com/charmbracelet/x/ansi"

	"github.com/mew-protocol/mew/internal/termtext"
	"github.com/mew-protocol/mew/protocol"
)

// dialogStep is where the approval dialog stands.
type dialogStep int

const (
	stepChoose   dialogStep = iota // Yes / Grant / No / Later
	stepScope                      // what the grant covers
	stepLifetime                   // how long it lasts
	stepReason                     // why No
)

// dialog is the approval dialog of one proposal.
type dialog struct {
	p      *proposal
	step   dialogStep
	cursor int
	scopes []grantScope // offered at stepScope
	scope  int          // the scope chosen
}

// choices of stepChoose.
var choices = []string{"Yes", "Grant…", "No", "Later"}

// rejectReasons are the reason codes offered for No.
var rejectReasons = []string{
	protocol.ReasonDisagree, protocol.ReasonUnsafe, protocol.ReasonPolicy,
	protocol.ReasonInappropriate, protocol.ReasonIncapable, protocol.ReasonOther,
}

// openDialog shows the oldest proposal awaiting the user, if no dialog is
// open; for a tool call it lists the target's tools (for the grant scopes).
func (m *Model) openDialog() tea.Cmd {
	if m.dlg != nil {
		return nil
	}
	for _, p := range m.pending() {
		if p.postponed {
			continue
		}
		m.dlg = &dialog{p: p}
		if p.tool == "" || p.tools != nil || p.toolsErr != nil || len(p.to) != 1 {
			if len(p.to) != 1 && p.toolsErr == nil && p.tools == nil {
				p.toolsErr = fmt.Errorf("proposed to %d participants", len(p.to))
			}
			return nil
		}
		sp, ctx, target := m.sp, m.ctx, p.to[0]
		return func() tea.Msg {
			ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
			defer cancel()
			tools, err := sp.ToolsOf(ctx, target)
			return toolsMsg{p: p, tools: tools, err: err}
		}
	}
	return nil
}

// dialogKey handles a key while the dialog shows.
func (m *Model) dialogKey(k tea.KeyPressMsg) tea.Cmd {
	d := m.dlg
	n := d.options()
	key := k.String()
	switch key {
	case "up", "left", "shift+tab":
		d.cursor = (d.cursor + n - 1) % n
		return nil
	case "down", "right", "tab":
		d.cursor = (d.cursor + 1) % n
		return nil
	case "enter":
		return m.choose(d.cursor)
	case "esc":
		if d.step == stepChoose {
			return m.choose(3)
		}
		d.back()
		return nil
	}
	if d.step == stepChoose {
		switch key {
		case "y":
			return m.choose(0)
		case "g":
			return m.choose(1)
		case "n":
			return m.choose(2)
		case "l":
			return m.choose(3)
		}
	}
	if len(key) == 1 && key[0] >= '1' && key[0] <= '9' {
		if i := int(key[0] - '1'); i < n {
			return m.choose(i)
		}
	}
	return nil
}

// options is the number of choices at the dialog's step.
func (d *dialog) options() int {
	switch d.step {
	case stepScope:
		return len(d.scopes)
	case stepLifetime:
		return len(lifetimes)
	case stepReason:
		return len(rejectReasons)
	}
	return len(choices)
}

// back returns to the previous step.
func (d *dialog) back() {
	switch d.step {
	case stepLifetime:
		d.step, d.cursor = stepScope, d.scope
	default:
		d.step, d.cursor = stepChoose, 0
	}
}

// choose acts on choice i of the dialog's step.
func (m *Model) choose(i int) tea.Cmd {
	d := m.dlg
	p := d.p
	switch d.step {
	case stepChoose:
		switch i {
		case 0:
			return m.approve(p, nil)
		case 1:
			d.scopes = p.scopes()
			d.step, d.cursor = stepScope, firstUsable(d.scopes)
		case 2:
			d.step, d.cursor = stepReason, 0
		case 3:
			p.postponed = true
			m.dlg = nil
			return m.openDialog()
		}
	case stepScope:
		if d.scopes[i].err != nil {
			d.cursor = i
			return nil // not offered; its line says why
		}
		d.scope = i
		d.step, d.cursor = stepLifetime, 1
	case stepLifetime:
		life := lifetimes[i]
		if life.none {
			return m.approve(p, nil)
		}
		s := d.scopes[d.scope]
		g := &grant{id: protocol.NewID(), recipient: p.from, what: s.label, life: life, made: m.now()}
		return m.approve(p, &grantChoice{g: g, pattern: s.pattern})
	case stepReason:
		return m.reject(p, rejectReasons[i])
	}
	return nil
}

// firstUsable is the index of the first scope that can be granted.
func firstUsable(s []grantScope) int {
	for i, x := range s {
		if x.err == nil {
			return i
		}
	}
	return 0
}

// grantChoice is a grant to send with an approval.
type grantChoice struct {
	g       *grant
	pattern []byte
}

// approve fulfils p, after sending the grant gc when there is one. The
// dialog moves on to the next proposal at once.
func (m *Model) approve(p *proposal, gc *grantChoice) tea.Cmd {
	p.deciding = true
	m.dlg = nil
	sp, ctx := m.sp, m.ctx
	var cmds []tea.Cmd
	if gc != nil {
		gc.g.n = len(m.grants) + 1
		m.grants = append(m.grants, gc.g)
		env, err := grantEnvelope(gc.g, gc.pattern)
		if err != nil {
			p.deciding = false
			m.note("cannot grant: "+err.Error(), true)
			return nil
		}
		m.note(fmt.Sprintf("granted: %s may call %s, %s (/grants lists the grants in force)",
			termtext.Line(gc.g.recipient), gc.g.what, gc.g.life.label), false)
		g := gc.g
		// The grant goes first, then the fulfilment, in one command, so
		// that the proposer holds the capability when its call returns.
		cmds = append(cmds, func() tea.Msg {
			if err := sp.Send(ctx, env); err != nil {
				return tea.BatchMsg{
					func() tea.Msg { return grantSentMsg{g: g, err: err} },
					func() tea.Msg { return decidedMsg{p: p, action: "approved", err: sp.Fulfill(ctx, p.id)} },
				}
			}
			return decidedMsg{p: p, action: "approved", err: sp.Fulfill(ctx, p.id)}
		})
	} else {
		cmds = append(cmds, func() tea.Msg {
			return decidedMsg{p: p, action: "approved", err: sp.Fulfill(ctx, p.id)}
		})
	}
	cmds = append(cmds, m.openDialog())
	return tea.Batch(cmds...)
}

// reject declines p with reason.
func (m *Model) reject(p *proposal, reason string) tea.Cmd {
	p.deciding = true
	m.dlg = nil
	sp, ctx := m.sp, m.ctx
	return tea.Batch(func() tea.Msg {
		return decidedMsg{p: p, action: "rejected", reason: reason, err: sp.Reject(ctx, p.id, reason)}
	}, m.openDialog())
}

// decided takes in the outcome of a decision.
func (m *Model) decided(msg decidedMsg) tea.Cmd {
	p := msg.p
	p.deciding = false
	switch {
	case msg.err == nil:
		if !p.settled {
			out := msg.action + " by you"
			if msg.reason != "" {
				out += ": " + msg.reason
			}
			m.settle(p, out)
		}
	case settledText(msg.err) != "":
		if !p.settled {
			m.settle(p, settledText(msg.err))
		}
		m.note(fmt.Sprintf("proposal #%d was already %s", p.n, termtext.Line(settledText(msg.err))), false)
	case p.settled:
		// it was carried out; the target's answer was an error, shown with
		// the request
	default:
		p.postponed = true // back in the queue, out of the dialog: /review or /approve
		m.note(fmt.Sprintf("could not %s proposal #%d: %s", strings.TrimSuffix(msg.action, "d"), p.n, termtext.Line(msg.err.Error())), true)
	}
	return m.openDialog()
}

// dialogLines draws the dialog as a box as wide as the screen.
func (m *Model) dialogLines() []string {
	d := m.dlg
	p := d.p
	w := m.width
	inner := max(w-4, 10)
	st := m.st
	var body []string
	add := func(s string) {
		body = append(body, wrapText(s, inner, "  ")...)
	}
	add(st.DialogTitle.Render(p.title()))
	preview := p.preview()
	room := max(m.height/2-6, 3)
	if len(preview) > room {
		more := len(preview) - room + 1
		preview = append(preview[:room-1], fmt.Sprintf("… %d more lines: PgUp reads them in the transcript", more))
	}
	for _, l := range preview {
		add("  " + l)
	}
	body = append(body, "")
	switch d.step {
	case stepChoose:
		var opts []string
		for i, c := range choices {
			label := fmt.Sprintf("%d %s", i+1, c)
			if i == 3 {
				label = "Esc " + c
			}
			opts = append(opts, m.choice(label, i == d.cursor))
		}
		add(strings.Join(opts, "  "))
	case stepScope:
		add(fmt.Sprintf("Fulfil it, and let %s call without asking again:", termtext.Line(p.from)))
		for i, s := range d.scopes {
			label := fmt.Sprintf("%d %s", i+1, s.label)
			if s.err != nil {
				label += " — " + termtext.Line(s.err.Error())
			}
			add(m.choice(label, i == d.cursor))
		}
		add(st.Dim.Render("Enter choose · Esc back"))
	case stepLifetime:
		add(fmt.Sprintf("Grant %s for how long?", d.scopes[d.scope].label))
		for i, l := range lifetimes {
			add(m.choice(fmt.Sprintf("%d %s", i+1, l.label), i == d.cursor))
		}
		add(st.Dim.Render("Enter choose · Esc back"))
	case stepReason:
		add("Reject it because:")
		for i, r := range rejectReasons {
			add(m.choice(fmt.Sprintf("%d %s", i+1, r), i == d.cursor))
		}
		add(st.Dim.Render("Enter choose · Esc back"))
	}
	title := fmt.Sprintf(" proposal #%d", p.n)
	if n := len(m.pending()); n > 1 {
		title += fmt.Sprintf(" · %d awaiting you", n)
	}
	title += " "
	bs := st.Dialog
	top := bs.Render("╭─" + title + strings.Repeat("─", max(w-4-ansi.StringWidth(title), 0)) + "─╮")
	out := []string{ansi.Truncate(top, w, "")}
	for _, l := range body {
		pad := max(inner-ansi.StringWidth(l), 0)
		out = append(out, bs.Render("│ ")+l+strings.Repeat(" ", pad)+bs.Render(" │"))
	}
	return append(out, bs.Render("╰"+strings.Repeat("─", max(w-2, 0))+"╯"))
}

// choice draws one option, highlighted when it is the cursor's.
func (m *Model) choice(label string, active bool) string {
	if active {
		return m.st.ChoiceActive.Render("▸ " + label + " ")
	}
	return m.st.Choice.Render("  " + label + " ")
}
