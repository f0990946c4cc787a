package tui

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	tea "charm.land/bubbletea/v2"

	"github.com/mew-protocol/mew/internal/termtext"
	"github.com/mew-protocol/mew/protocol"
)

// dialogStep is where the approval dialog stands.
type dialogStep int

const (
	stepChoose     dialogStep = iota // Yes / Grant / No / Later
	stepScope                        // what the grant covers
	stepLifetime                     // how long it lasts
	stepReason                       // why No: the code
	stepReasonText                   // why No: the user's words
	stepEdit                         // the arguments, edited before fulfilling
)

// dialog is the approval dialog of one proposal.
type dialog struct {
	p      *proposal
	step   dialogStep
	cursor int
	scopes []grantScope // offered at stepScope
	scope  int          // the scope chosen
	reason int          // the reason code chosen
	ed     input        // the editor of stepEdit and stepReasonText
	edErr  string       // why the edited arguments cannot be sent
}

// choices of stepChoose, by their ids; a dialog offers those of its menu.
var choices = []string{"Yes", "Grant…", "No", "Edit…", "Later", "Approve"}

// ids of choices.
const (
	choiceYes = iota
	choiceGrant
	choiceNo
	choiceEdit
	choiceLater
	choiceApprove // under the space's approval policy: counted, not carried out
)

// menu is the choices d offers: under the space's approval policy an
// approver approves or says no, and whoever may carry the proposal out
// does so once it is approved, as approved.
func (d *dialog) menu() []int {
	if pol := d.p.policy; pol != nil {
		if pol.State == protocol.ApprovalApproved {
			return []int{choiceYes, choiceNo, choiceLater}
		}
		return []int{choiceApprove, choiceNo, choiceLater}
	}
	return []int{choiceYes, choiceGrant, choiceNo, choiceEdit, choiceLater}
}

// rejectReasons are the reason codes offered for No.
var rejectReasons = []string{
	protocol.ReasonDisagree, protocol.ReasonUnsafe, protocol.ReasonPolicy,
	protocol.ReasonInappropriate, protocol.ReasonIncapable, protocol.ReasonOther,
}

// openDialog shows the oldest proposal awaiting the user, if no dialog is
// open; for a tool call it lists the target's tools (for the grant scopes).
func (a *approvals) openDialog() tea.Cmd {
	if a.dlg != nil {
		return nil
	}
	for _, p := range a.pending() {
		if p.postponed {
			continue
		}
		a.dlg = &dialog{p: p}
		if p.tool == "" || p.tools != nil || p.toolsErr != nil || len(p.to) != 1 {
			if len(p.to) != 1 && p.toolsErr == nil && p.tools == nil {
				p.toolsErr = fmt.Errorf("proposed to %d participants", len(p.to))
			}
			return nil
		}
		sp, ctx, target := a.e.sp, a.e.ctx, p.to[0]
		return func() tea.Msg {
			ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
			defer cancel()
			tools, err := sp.ToolsOf(ctx, target)
			return toolsMsg{p: p, tools: tools, err: err}
		}
	}
	return nil
}

// decision is what a key in the dialog asks of the approvals: nothing
// more (the dialog moved on by itself), or to approve, reject or postpone
// the proposal.
type decision struct {
	act    int             // actNone, actApprove, actReject, actLater
	grant  *grantChoice    // approve: the grant made with it, if any
	params json.RawMessage // approve: the edited arguments, if any
	reason string          // reject: the reason code
	words  string          // reject: the user's words
}

// acts of a decision.
const (
	actNone = iota
	actApprove
	actReject
	actLater
	actCount // approve under the space's policy
)

// key handles a key while the dialog shows: the dialog takes it, and
// the component does what it decided.
func (a *approvals) key(k tea.KeyPressMsg) tea.Cmd {
	d := a.dlg
	switch dec := d.key(k, a.e.now()); dec.act {
	case actApprove:
		return a.approve(d.p, dec.grant, dec.params)
	case actReject:
		return a.reject(d.p, dec.reason, dec.words)
	case actLater:
		d.p.postponed = true
		a.dlg = nil
		return a.openDialog()
	case actCount:
		return a.count(d.p)
	}
	return nil
}

// count gives the user's approval of p under the space's policy: the
// gateway counts it, and p is carried out once enough approvers gave
// theirs.
func (a *approvals) count(p *proposal) tea.Cmd {
	p.deciding = true
	a.dlg = nil
	sp, ctx := a.e.sp, a.e.ctx
	return tea.Batch(func() tea.Msg {
		return decidedMsg{p: p, action: "counted", err: sp.Approve(ctx, p.id)}
	}, a.openDialog())
}

// key handles a key of the dialog's; now dates a grant chosen.
func (d *dialog) key(k tea.KeyPressMsg, now time.Time) decision {
	if d.step == stepEdit || d.step == stepReasonText {
		return d.editorKey(k)
	}
	n := d.options()
	key := k.String()
	switch key {
	case "up", "left", "shift+tab":
		d.cursor = (d.cursor + n - 1) % n
		return decision{}
	case "down", "right", "tab":
		d.cursor = (d.cursor + 1) % n
		return decision{}
	case "enter":
		return d.choose(d.cursor, now)
	case "esc":
		if d.step == stepChoose {
			return decision{act: actLater}
		}
		d.back()
		return decision{}
	}
	if d.step == stepChoose {
		for i, c := range d.menu() {
			if len(key) == 1 && strings.ToLower(choices[c][:1]) == key {
				return d.choose(i, now) // a choice's initial
			}
		}
	}
	if len(key) == 1 && key[0] >= '1' && key[0] <= '9' {
		if i := int(key[0] - '1'); i < n {
			return d.choose(i, now)
		}
	}
	return decision{}
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
	return len(d.menu())
}

// back returns to the previous step.
func (d *dialog) back() {
	switch d.step {
	case stepLifetime:
		d.step, d.cursor = stepScope, d.scope
	case stepReasonText:
		d.step, d.cursor = stepReason, d.reason
	default:
		d.step, d.cursor = stepChoose, 0
	}
}

// choose acts on choice i of the dialog's step.
func (d *dialog) choose(i int, now time.Time) decision {
	p := d.p
	switch d.step {
	case stepChoose:
		switch d.menu()[i] {
		case choiceApprove:
			return decision{act: actCount}
		case choiceYes:
			return decision{act: actApprove}
		case choiceGrant:
			d.scopes = p.scopes()
			d.step, d.cursor = stepScope, firstUsable(d.scopes)
		case choiceNo:
			d.step, d.cursor = stepReason, 0
		case choiceEdit:
			d.step, d.edErr = stepEdit, ""
			d.ed = input{}
			d.ed.insert(p.editable())
			d.ed.pos = 0
		case choiceLater:
			return decision{act: actLater}
		}
	case stepScope:
		if d.scopes[i].err != nil {
			d.cursor = i
			return decision{} // not offered; its line says why
		}
		d.scope = i
		d.step, d.cursor = stepLifetime, 1
	case stepLifetime:
		life := lifetimes[i]
		if life.none {
			return decision{act: actApprove}
		}
		s := d.scopes[d.scope]
		g := &grant{id: protocol.NewID(), recipient: p.from, what: s.label, life: life, made: now}
		return decision{act: actApprove, grant: &grantChoice{g: g, pattern: s.pattern}}
	case stepReason:
		d.reason = i
		d.step = stepReasonText
		d.ed = input{}
	}
	return decision{}
}

// editorKey handles a key while the dialog's editor has them: Enter sends
// (the edited call, or the rejection with the words typed), Esc goes back,
// Alt+Enter or Ctrl+J starts a new line of the arguments.
func (d *dialog) editorKey(k tea.KeyPressMsg) decision {
	switch k.String() {
	case "esc":
		d.back()
		return decision{}
	case "enter":
		if d.step == stepReasonText {
			return decision{act: actReject, reason: rejectReasons[d.reason], words: strings.TrimSpace(d.ed.value())}
		}
		params, err := d.p.editedParams(d.ed.value())
		if err != nil {
			d.edErr = err.Error()
			return decision{}
		}
		return decision{act: actApprove, params: params}
	case "up", "down":
		if d.step == stepReasonText {
			return decision{} // no history here
		}
		d.ed.vertical(map[string]int{"up": -1, "down": 1}[k.String()])
		return decision{}
	}
	if d.step == stepReasonText && (k.String() == "alt+enter" || k.String() == "ctrl+j" || k.String() == "shift+enter") {
		return decision{} // one line of words
	}
	d.ed.key(k)
	d.edErr = ""
	return decision{}
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

// approve fulfils p, after sending the grant gc when there is one, with
// params in place of p's own when they are not nil (edited). The dialog
// moves on to the next proposal at once.
func (a *approvals) approve(p *proposal, gc *grantChoice, params json.RawMessage) tea.Cmd {
	p.deciding = true
	a.dlg = nil
	sp, ctx := a.e.sp, a.e.ctx
	fulfil := func() tea.Msg {
		if params != nil {
			return decidedMsg{p: p, action: "approved", reason: "edited", err: sp.FulfillWith(ctx, p.id, params)}
		}
		return decidedMsg{p: p, action: "approved", err: sp.Fulfill(ctx, p.id)}
	}
	var cmds []tea.Cmd
	if gc != nil {
		a.grants.made(gc.g)
		env, err := grantEnvelope(gc.g, gc.pattern)
		if err != nil {
			p.deciding = false
			a.e.note("cannot grant: "+err.Error(), true)
			return nil
		}
		a.e.note(fmt.Sprintf("granted: %s may call %s, %s (/grants lists the grants in force)",
			termtext.Line(gc.g.recipient), gc.g.what, gc.g.life.label), false)
		g := gc.g
		// The grant goes first, then the fulfilment, in one command, so
		// that the proposer holds the capability when its call returns.
		cmds = append(cmds, func() tea.Msg {
			if err := sp.Send(ctx, env); err != nil {
				return tea.BatchMsg{
					func() tea.Msg { return grantSentMsg{g: g, err: err} },
					fulfil,
				}
			}
			return fulfil()
		})
	} else {
		cmds = append(cmds, fulfil)
	}
	cmds = append(cmds, a.openDialog())
	return tea.Batch(cmds...)
}

// reject declines p with a reason code and the user's words, if any.
func (a *approvals) reject(p *proposal, reason, message string) tea.Cmd {
	p.deciding = true
	a.dlg = nil
	sp, ctx := a.e.sp, a.e.ctx
	shown := reason
	if message != "" {
		shown += " (" + termtext.Line(message) + ")"
	}
	return tea.Batch(func() tea.Msg {
		return decidedMsg{p: p, action: "rejected", reason: shown, err: sp.Reject(ctx, p.id, reason, message)}
	}, a.openDialog())
}

// decided takes in the outcome of a decision.
func (a *approvals) decided(msg decidedMsg) tea.Cmd {
	p := msg.p
	p.deciding = false
	if msg.action == "counted" { // an approval under the policy: the gateway says what follows
		if msg.err != nil {
			p.postponed = true
			a.e.note(fmt.Sprintf("could not approve proposal #%d: %s", p.n, termtext.Line(msg.err.Error())), true)
		} else {
			p.askMe = false
			a.e.note(fmt.Sprintf("your approval of proposal #%d is given", p.n), false)
		}
		return a.openDialog()
	}
	switch {
	case msg.err == nil:
		if !p.settled {
			out := msg.action + " by you"
			switch {
			case msg.reason == "edited":
				out += " with edited arguments"
			case msg.reason != "":
				out += ": " + msg.reason
			}
			a.settle(p, out)
		}
	case settledText(msg.err) != "":
		if !p.settled {
			a.settle(p, settledText(msg.err))
		}
		a.e.note(fmt.Sprintf("proposal #%d was already %s", p.n, termtext.Line(settledText(msg.err))), false)
	case p.settled:
		// it was carried out; the target's answer was an error, shown with
		// the request
	default:
		p.postponed = true // back in the queue, out of the dialog: /review or /approve
		a.e.note(fmt.Sprintf("could not %s proposal #%d: %s", strings.TrimSuffix(msg.action, "d"), p.n, termtext.Line(msg.err.Error())), true)
	}
	return a.openDialog()
}

// view draws the dialog as a box w columns wide on a screen h lines
// high, and returns where its editor's cursor is (nil: no editor),
// counted from its top line.
func (a *approvals) view(w, h int) ([]string, *tea.Cursor) {
	d := a.dlg
	p := d.p
	inner := max(w-4, 10)
	st := &a.e.st
	var body []string
	var cursor *tea.Cursor
	add := func(s string) {
		body = append(body, wrapText(s, inner, "  ")...)
	}
	add(st.DialogTitle.Render(p.title()))
	preview := p.preview()
	room := max(h-16, 6) // the transcript keeps a third of the screen or so
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
		if p.policy != nil {
			add(st.Dim.Render(policyLine(p.policy)))
		}
		var opts []string
		for i, c := range d.menu() {
			label := fmt.Sprintf("%d %s", i+1, choices[c])
			if c == choiceLater {
				label = "Esc " + choices[c]
			}
			opts = append(opts, a.e.choice(label, i == d.cursor))
		}
		add(strings.Join(opts, "  "))
	case stepScope:
		add(fmt.Sprintf("Fulfil it, and let %s call without asking again:", termtext.Line(p.from)))
		for i, s := range d.scopes {
			label := fmt.Sprintf("%d %s", i+1, s.label)
			if s.err != nil {
				label += " — " + termtext.Line(s.err.Error())
			}
			add(a.e.choice(label, i == d.cursor))
		}
		add(st.Dim.Render("Enter choose · Esc back"))
	case stepLifetime:
		add(fmt.Sprintf("Grant %s for how long?", d.scopes[d.scope].label))
		for i, l := range lifetimes {
			add(a.e.choice(fmt.Sprintf("%d %s", i+1, l.label), i == d.cursor))
		}
		add(st.Dim.Render("Enter choose · Esc back"))
	case stepReason:
		add("Reject it because:")
		for i, r := range rejectReasons {
			add(a.e.choice(fmt.Sprintf("%d %s", i+1, r), i == d.cursor))
		}
		add(st.Dim.Render("Enter choose · Esc back"))
	case stepReasonText:
		add(fmt.Sprintf("Reject it as %s. Your words to %s (optional):", rejectReasons[d.reason], termtext.Line(p.from)))
		lines, cx, cy := d.ed.view(st.Prompt.Render("> "), 2, inner, 1)
		cursor = tea.NewCursor(2+cx, 1+len(body)+cy)
		body = append(body, lines...)
		add(st.Dim.Render("Enter send · Esc back"))
	case stepEdit:
		what := "arguments"
		if p.tool == "" {
			what = "params"
		}
		add(fmt.Sprintf("Edit the %s (a JSON object), then fulfil:", what))
		lines, cx, cy := d.ed.view("  ", 2, inner, max(h/2-4, 3))
		cursor = tea.NewCursor(2+cx, 1+len(body)+cy)
		body = append(body, lines...)
		if d.edErr != "" {
			add(st.Error.Render(termtext.Line(d.edErr)))
		}
		add(st.Dim.Render("Enter fulfil · Alt+Enter new line · Esc back"))
	}
	title := fmt.Sprintf(" proposal #%d", p.n)
	if n := len(a.pending()); n > 1 {
		title += fmt.Sprintf(" · %d awaiting you", n)
	}
	return a.e.box(title+" ", body, w), cursor
}
