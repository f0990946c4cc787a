package tui

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"net/url"
	"strings"
	"time"

	tea "charm.land/bubbletea/v2"
	"github.com/charmbracelet/x/ansi"

	"github.com/mew-protocol/mew/internal/clip"
	"github.com/mew-protocol/mew/internal/termtext"
	"github.com/mew-protocol/mew/protocol"
)

// Elicitation (docs/bridge.md): a bridged server asks for input during a
// call; the bridge asks the space with an elicitation/request addressed to
// the caller. The UI shows each as a card in the transcript and, to a user
// whose capabilities allow elicitation/response to that bridge, offers it
// in a dialog like a proposal's: a form from the requested schema (or the
// link of a URL elicitation), answered with accept, decline or cancel.
// The answer is an elicitation/response, the envelope the SDK sends; the
// bridge closes the elicitation with elicitation/done (whoever answered) or
// refuses an answer with elicitation/refused.

// maxElicits bounds the elicitations the model remembers.
const maxElicits = 256

// elicit is an elicitation/request seen in the space, numbered from 1.
type elicit struct {
	n    int
	id   string   // the elicitation/request's envelope id
	from string   // the bridge that asked
	to   []string // the callers it is for
	req  protocol.ElicitationRequest
	form *form

	forMe     bool   // addressed to the user
	mayAnswer bool   // the user's capabilities allow an answer to from
	noCall    bool   // it names no call to from seen here
	postponed bool   // Esc: out of the dialog until /review
	sending   bool   // an answer of the user's is on its way
	answerID  string // that answer's envelope id
	refused   string // why the user's last answer was not used
	settled   bool   // elicitation/done came
	outcome   string // how it ended: "accepted by you", "timed out: …"
	cursor    int    // the form's field that has the keys
}

// open reports whether the user may still answer it.
func (e *elicit) open() bool { return e.mayAnswer && !e.settled && !e.sending }

// key is the elicitation's id, by which its book finds it.
func (e *elicit) key() string { return e.id }

// messages of the elicitation's commands.
type (
	elicitSentMsg struct {
		e      *elicit
		action string
		err    error
	}
	openedMsg struct {
		e   *elicit
		err error
	}
)

// questions is the elicitations the user may answer: every one seen (the
// book) and the one the form dialog offers. It owns that state, takes the
// form's keys, sends the answers and draws the dialog; the root hands it
// the elicitations' events and their commands' answers.
type questions struct {
	e    *env
	book book[*elicit] // every elicitation seen, numbered from 1 (the latest maxElicits)
	dlg  *elicit       // the elicitation the dialog offers, when no proposal's shows
}

func newQuestions(e *env) questions { return questions{e: e, book: newBook[*elicit](maxElicits)} }

// showing reports whether the form dialog is open.
func (q *questions) showing() bool { return q.dlg != nil }

// request takes in an elicitation/request; waiting reports whether one of
// ids is a call to target the UI saw and that is still waiting: what a
// bridge's elicitation must be for.
func (q *questions) request(env *protocol.Envelope, waiting func(target string, ids []string) bool) {
	if env.ID == "" || q.book.byID[env.ID] != nil {
		return
	}
	var req protocol.ElicitationRequest
	if err := env.DecodePayload(&req); err != nil {
		q.e.note(fmt.Sprintf("%s sent an elicitation that cannot be read: %s", q.e.who(env.From), termtext.Line(clip.Runes(err.Error(), 200))), true)
		return
	}
	e := &elicit{n: q.book.next(), id: env.ID, from: env.From, to: env.To, req: req}
	switch req.Mode {
	case protocol.ElicitationModeForm, "":
		e.form = parseForm(req.RequestedSchema)
	case protocol.ElicitationModeURL:
		e.form = &form{}
	default:
		e.form = &form{unusable: "it asks in mode " + termtext.Line(clip.Runes(req.Mode, 20)) + ", which this UI does not know"}
	}
	me := q.e.me()
	e.forMe = len(env.To) > 0 && env.AddressedTo(me)
	probe := []byte(`{"action":"decline"}`)
	e.mayAnswer = env.From != me && q.e.sp.CanSend(protocol.KindElicitationResponse, []string{env.From}, probe)
	e.noCall = !waiting(env.From, env.CorrelationID)
	q.book.put(e)
	q.e.add(&elicitEntry{e: e})
	q.open()
}

// done takes in an elicitation/done: only the bridge that asked may
// close its elicitation.
func (q *questions) done(env *protocol.Envelope) {
	e := q.of(env)
	if e == nil || e.settled {
		return
	}
	var d protocol.ElicitationDone
	_ = env.DecodePayload(&d)
	switch d.Status {
	case protocol.ElicitationAnswered:
		verb := map[string]string{protocol.ElicitationAccept: "accepted", protocol.ElicitationDecline: "declined", protocol.ElicitationCancel: "cancelled"}[d.Action]
		if verb == "" {
			verb = "answered"
		}
		e.outcome = verb + " by " + q.e.who(d.By)
	case protocol.ElicitationExpired:
		e.outcome = "timed out: " + termtext.Line(clip.Runes(cmp.Or(d.Reason, "nobody answered in time"), 200))
	default:
		e.outcome = "cancelled: " + termtext.Line(clip.Runes(cmp.Or(d.Reason, "the call ended"), 200))
	}
	e.settled, e.sending = true, false
	if q.dlg == e {
		q.dlg = nil
		q.open()
	}
}

// refused takes in an elicitation/refused addressed to the user: the
// answer was not used, and the elicitation is open again.
func (q *questions) refused(env *protocol.Envelope) {
	e := q.of(env)
	if e == nil || e.settled || !env.AddressedTo(q.e.me()) || len(env.To) == 0 {
		return
	}
	var r protocol.ElicitationRefused
	_ = env.DecodePayload(&r)
	e.sending = false
	e.refused = termtext.Line(clip.Runes(cmp.Or(r.Reason, "refused"), 300))
	e.postponed = false
	q.open()
}

// of finds the elicitation an envelope of its bridge correlates to.
func (q *questions) of(env *protocol.Envelope) *elicit {
	for _, id := range env.CorrelationID {
		if e := q.book.byID[id]; e != nil && e.from == env.From {
			return e
		}
	}
	return nil
}

// systemError takes in a system/error about the user's answer (the
// gateway refused it).
func (q *questions) systemError(env *protocol.Envelope, se *protocol.SystemError) {
	for _, e := range q.book.all {
		if e.sending && e.answerID != "" && env.CorrelatesWith(e.answerID) {
			e.sending = false
			e.refused = "the gateway refused the answer: " + termtext.Line(clip.Runes(cmp.Or(se.Message, se.Error), 200))
			e.postponed = true // not offered again at once: the user may not answer
		}
	}
}

// pending are the elicitations the user may answer, oldest first.
func (q *questions) pending() []*elicit { return q.book.stillOpen() }

// review brings the postponed elicitations back and offers the oldest.
func (q *questions) review() {
	for _, e := range q.pending() {
		e.postponed = false
	}
	q.open()
}

// open offers the oldest elicitation awaiting the user, if none is
// offered.
func (q *questions) open() {
	if q.dlg != nil {
		return
	}
	for _, e := range q.pending() {
		if !e.postponed {
			q.dlg = e
			e.cursor = 0
			return
		}
	}
}

// key handles a key while an elicitation's dialog shows: the form takes
// it, and the component does what the user asked.
func (q *questions) key(k tea.KeyPressMsg) tea.Cmd {
	e := q.dlg
	switch e.press(k) {
	case askLater:
		e.postponed = true
		q.dlg = nil
		q.open()
	case askDecline:
		return q.answer(e, protocol.ElicitationDecline, nil)
	case askCancel:
		return q.answer(e, protocol.ElicitationCancel, nil)
	case askAccept:
		return q.accept(e)
	case askOpen:
		return q.openLink(e)
	}
	return nil
}

// paste types pasted text in the field that has the keys.
func (q *questions) paste(text string) {
	if fs := q.dlg.form.fields; q.dlg.cursor < len(fs) {
		fs[q.dlg.cursor].typeText(text)
	}
}

// What a key in an elicitation's dialog asks of the model.
const (
	askNone    = iota // the form took it
	askLater          // Esc: ask again later
	askDecline        // Ctrl+D
	askCancel         // Ctrl+X
	askAccept         // Enter: send the form
	askOpen           // o: open the link of a URL elicitation
)

// press handles a key of the elicitation's form.
func (e *elicit) press(k tea.KeyPressMsg) int {
	fields := e.form.fields
	var fd *formField
	if e.cursor < len(fields) {
		fd = fields[e.cursor]
	}
	switch k.String() {
	case "esc":
		return askLater
	case "ctrl+d":
		return askDecline
	case "ctrl+x":
		return askCancel
	case "enter":
		return askAccept
	case "tab", "down":
		if len(fields) > 0 {
			e.cursor = (e.cursor + 1) % len(fields)
		}
		return askNone
	case "shift+tab", "up":
		if len(fields) > 0 {
			e.cursor = (e.cursor + len(fields) - 1) % len(fields)
		}
		return askNone
	case "o":
		if e.req.Mode == protocol.ElicitationModeURL {
			return askOpen
		}
	}
	if fd == nil {
		return askNone
	}
	switch k.String() {
	case "left":
		fd.step(-1)
	case "right":
		fd.step(1)
	case "space":
		if fd.kind == fieldBool || fd.kind == fieldEnum {
			fd.toggle()
		} else {
			fd.typeText(" ")
		}
	case "backspace":
		fd.backspace()
	case "ctrl+u":
		fd.text, fd.err = nil, ""
	default:
		if k.Text != "" {
			fd.typeText(k.Text)
		}
	}
	return askNone
}

// accept answers e with the form filled, once every field is right (the
// first wrong one gets the keys).
func (q *questions) accept(e *elicit) tea.Cmd {
	if e.req.Mode == protocol.ElicitationModeURL {
		return q.answer(e, protocol.ElicitationAccept, nil)
	}
	if e.form.unusable != "" {
		return nil // only decline or cancel
	}
	content, ok := e.form.content()
	if !ok {
		for i, fd := range e.form.fields {
			if fd.err != "" {
				e.cursor = i
				break
			}
		}
		return nil
	}
	return q.answer(e, protocol.ElicitationAccept, content)
}

// answer sends the user's answer to e's bridge.
func (q *questions) answer(e *elicit, action string, content map[string]any) tea.Cmd {
	resp := protocol.ElicitationResponse{Action: action}
	if content != nil {
		raw, err := json.Marshal(content)
		if err != nil {
			e.refused = termtext.Line(err.Error())
			return nil
		}
		resp.Content = raw
	}
	env, err := protocol.New(protocol.KindElicitationResponse, resp)
	if err != nil {
		e.refused = termtext.Line(err.Error())
		return nil
	}
	env.ID, env.To, env.CorrelationID = protocol.NewID(), []string{e.from}, []string{e.id}
	e.sending, e.answerID, e.refused = true, env.ID, ""
	q.dlg = nil
	q.open()
	sp, ctx := q.e.sp, q.e.ctx
	return func() tea.Msg { return elicitSentMsg{e: e, action: action, err: sp.Send(ctx, env)} }
}

// sent takes in the outcome of sending an answer.
func (q *questions) sent(msg elicitSentMsg) {
	if msg.err == nil || msg.e.settled {
		return
	}
	msg.e.sending = false
	msg.e.refused = "not sent: " + termtext.Line(clip.Runes(msg.err.Error(), 200))
	q.open()
}

// opened takes in the outcome of opening a link.
func (q *questions) opened(msg openedMsg) {
	if msg.err != nil {
		q.e.note("could not open the link: "+termtext.Line(msg.err.Error())+"; open it yourself: "+termtext.Line(clip.Runes(msg.e.req.URL, 2000)), true)
	}
}

// openLink opens a URL elicitation's link with the opener (the user's
// browser) and accepts it; without an opener, the link is written in the
// transcript for the user to open. Only http and https links are opened.
func (q *questions) openLink(e *elicit) tea.Cmd {
	if !e.forMe {
		return nil // the link is for the person it is addressed to
	}
	u, err := url.Parse(e.req.URL)
	if err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" {
		e.refused = "the link is not an http(s) URL; it is not opened"
		return nil
	}
	accept := q.answer(e, protocol.ElicitationAccept, nil)
	if q.e.o.Open == nil {
		q.e.note("open this link: "+termtext.Line(clip.Runes(e.req.URL, 2000)), false)
		return accept
	}
	open, ctx, link := q.e.o.Open, q.e.ctx, u.String()
	return tea.Batch(func() tea.Msg {
		ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
		defer cancel()
		return openedMsg{e: e, err: open(ctx, link)}
	}, accept)
}

// elicitEntry shows an elicitation in the transcript, with its outcome.
type elicitEntry struct{ e *elicit }

func (x *elicitEntry) lines(rc *renderCtx) []string {
	e := x.e
	head := rc.st.Proposal.Render(fmt.Sprintf("?%d ", e.n)) + rc.st.speaker(e.from).Render(termtext.Line(e.from)) +
		rc.st.Dim.Render(" asks "+askedWho(rc.me, e.to)+forWhat(&e.req)+": ")
	out := wrapText(head+termtext.Line(clip.Runes(e.req.Message, 400)), rc.width, indent)
	var detail string
	switch {
	case e.req.Mode == protocol.ElicitationModeURL:
		detail = "link: " + termtext.Line(clip.Runes(e.req.URL, 300))
	case e.form.unusable != "":
		detail = "form: cannot be filled here: " + e.form.unusable
	case len(e.form.fields) > 0:
		var labels []string
		for _, fd := range e.form.fields {
			l := fd.label
			if fd.required {
				l += "*"
			}
			labels = append(labels, l)
		}
		detail = "form: " + strings.Join(labels, ", ")
	}
	if detail != "" {
		out = append(out, wrapText(indent+rc.st.Dim.Render(detail), rc.width, indent+"  ")...)
	}
	if e.noCall {
		out = append(out, wrapText(indent+rc.st.Error.Render("⚠ names no call to "+termtext.Line(e.from)+" seen here"), rc.width, indent)...)
	}
	var status string
	switch {
	case e.settled:
		status = rc.outcome(e.outcome, "accepted")
	case e.sending:
		status = rc.st.Dim.Render("answering…")
	case e.mayAnswer && e.postponed:
		status = rc.st.Proposal.Render("postponed: /review to answer")
	case e.mayAnswer:
		status = rc.st.Proposal.Render("awaiting your answer")
	default:
		status = rc.st.Dim.Render("awaiting an answer")
	}
	out = append(out, wrapText(indent+status, rc.width, indent)...)
	if e.refused != "" && !e.settled {
		out = append(out, wrapText(indent+rc.st.Error.Render("your answer was not used: "+e.refused), rc.width, indent+"  ")...)
	}
	return out
}

// askedWho is "you", "agent" or "agent, you".
func askedWho(me string, to []string) string {
	if len(to) == 0 {
		return "everyone"
	}
	out := make([]string, len(to))
	for i, id := range to {
		out[i] = termtext.Line(id)
		if id == me {
			out[i] = "you"
		}
	}
	return strings.Join(out, ", ")
}

// forWhat is " (for ask)": the call the input is for.
func forWhat(r *protocol.ElicitationRequest) string {
	if r.Name == "" {
		return ""
	}
	return " (for " + termtext.Line(clip.Runes(r.Name, 80)) + ")"
}

// view draws the elicitation's dialog as a box w columns wide on a
// screen h lines high, and where the cursor of its text field is.
func (q *questions) view(w, h int) ([]string, *tea.Cursor) {
	e := q.dlg
	inner := max(w-4, 10)
	st := &q.e.st
	var body []string
	var cursor *tea.Cursor
	add := func(s string) { body = append(body, wrapText(s, inner, "  ")...) }
	add(st.DialogTitle.Render(termtext.Line(e.from) + " asks " + askedWho(q.e.me(), e.to) + forWhat(&e.req)))
	// The message gets a few lines: the form must fit below it (the card
	// in the transcript has the rest).
	var msg []string
	for _, l := range strings.Split(strings.TrimRight(termtext.Clean(clip.Runes(e.req.Message, 1000)), "\n"), "\n") {
		msg = append(msg, wrapText("  "+l, inner, "  ")...)
	}
	if most := max(min(h/6, 8), 2); len(msg) > most {
		msg = append(msg[:most-1], "  …")
	}
	body = append(body, msg...)
	if e.noCall {
		add(st.Error.Render("⚠ this names no call to " + termtext.Line(e.from) + " seen here; answer only if you expect it"))
	}
	body = append(body, "")
	var keys string
	switch {
	case e.req.Mode == protocol.ElicitationModeURL:
		add("  " + termtext.Line(clip.Runes(e.req.URL, 600)))
		if u, err := url.Parse(e.req.URL); err == nil && u.Host != "" {
			add(st.Dim.Render("  the link goes to " + termtext.Line(u.Host)))
		}
		if e.forMe {
			keys = "o open it and accept · Enter accept · Ctrl+D decline · Ctrl+X cancel · Esc later"
		} else {
			add(st.Dim.Render("  the link is for " + askedWho(q.e.me(), e.to) + " to open"))
			keys = "Enter accept · Ctrl+D decline · Ctrl+X cancel · Esc later"
		}
	case e.form.unusable != "":
		add(st.Error.Render("This form cannot be filled here: " + e.form.unusable))
		keys = "Ctrl+D decline · Ctrl+X cancel · Esc later"
	default:
		lw := 0
		for _, fd := range e.form.fields {
			lw = max(lw, ansi.StringWidth(fd.label)+2)
		}
		lw = min(lw, 24)
		// What is left of the screen, less the keys, the status bar and a
		// few lines of the transcript, is the fields'.
		lo, hi := fieldWindow(e.form.fields, e.cursor, max(h-12-len(body), 2))
		if lo > 0 {
			add(st.Dim.Render(fmt.Sprintf("  ↑ %d more fields", lo)))
		}
		for i, fd := range e.form.fields[lo:hi] {
			i += lo
			label := fd.label
			if fd.required {
				label += " *"
			}
			label = ansi.Truncate(label, lw, "…")
			mark := "  "
			if i == e.cursor {
				mark = st.Prompt.Render("▸ ")
			}
			val := fd.shown()
			room := max(inner-4-lw-2, 8)
			if ansi.StringWidth(val) > room {
				val = "…" + ansi.TruncateLeft(val, ansi.StringWidth(val)-room+1, "")
			}
			line := mark + label + strings.Repeat(" ", lw-ansi.StringWidth(label)) + "  " + val
			if i == e.cursor && (fd.kind == fieldString || fd.kind == fieldNumber || fd.kind == fieldInteger) {
				cursor = tea.NewCursor(2+ansi.StringWidth(line), 1+len(body))
			}
			if h := fd.hint(); h != "" && i == e.cursor {
				line += "  " + st.Dim.Render(h)
			}
			body = append(body, ansi.Truncate(line, inner, "…"))
			// One line each, so that fieldWindow counts them right.
			if fd.desc != "" && i == e.cursor {
				body = append(body, ansi.Truncate(st.Dim.Render("    "+fd.desc), inner, "…"))
			}
			if fd.err != "" {
				body = append(body, ansi.Truncate(st.Error.Render("    ! "+fd.err), inner, "…"))
			}
		}
		if hi < len(e.form.fields) {
			add(st.Dim.Render(fmt.Sprintf("  ↓ %d more fields", len(e.form.fields)-hi)))
		}
		if len(e.form.fields) == 0 {
			add(st.Dim.Render("  (no fields: accept answers yes)"))
		}
		keys = "Enter accept · Ctrl+D decline · Ctrl+X cancel · Tab next field · Esc later"
	}
	if e.refused != "" {
		add(st.Error.Render("Your answer was not used: " + e.refused))
	}
	body = append(body, "")
	add(st.Dim.Render(keys))
	title := fmt.Sprintf(" elicitation ?%d", e.n)
	if n := len(q.pending()); n > 1 {
		title += fmt.Sprintf(" · %d awaiting you", n)
	}
	return q.e.box(title+" ", body, w), cursor
}

// fieldWindow is the range of fields shown in room lines, the cursor's
// among them: a field takes a line, and one more for its error and, with
// the cursor, for its description.
func fieldWindow(fields []*formField, cursor, room int) (lo, hi int) {
	if len(fields) == 0 {
		return 0, 0
	}
	cost := func(i int) int {
		n := 1
		if fields[i].err != "" {
			n++
		}
		if i == cursor && fields[i].desc != "" {
			n++
		}
		return n
	}
	lo, hi = cursor, cursor+1
	used := cost(cursor)
	for grew := true; grew; {
		grew = false
		if hi < len(fields) && used+cost(hi) <= room {
			used += cost(hi)
			hi++
			grew = true
		}
		if lo > 0 && used+cost(lo-1) <= room {
			lo--
			used += cost(lo)
			grew = true
		}
	}
	return lo, hi
}
