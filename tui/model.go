package tui

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"charm.land/bubbles/v2/key"
	tea "charm.land/bubbletea/v2"
	"github.com/charmbracelet/x/ansi"

	"github.com/mew-protocol/mew/internal/clip"
	"github.com/mew-protocol/mew/internal/feed"
	"github.com/mew-protocol/mew/internal/termtext"
	"github.com/mew-protocol/mew/protocol"
)

// Options configures a Model.
type Options struct {
	// Space is where the model acts; required.
	Space Space
	// SpaceName is the space's id, for the status bar.
	SpaceName string
	// DefaultTargets are the recipients of a chat typed without @id
	// (none: everyone).
	DefaultTargets []string
	// Context bounds what the model does in the space (default: Background).
	Context context.Context
	// Now is the clock (default time.Now); tests set a fixed one.
	Now func() time.Time
	// Tick schedules the next redraw of live lines (default tea.Tick); tests
	// set one that returns nil.
	Tick func(d time.Duration, f func(time.Time) tea.Msg) tea.Cmd
	// Styles are the colours (default DefaultStyles).
	Styles *Styles
	// History seeds the input's history, oldest first.
	History []string
	// Keys are the global key bindings (default DefaultKeyMap).
	Keys *KeyMap
	// Intro are lines to show a newcomer: the first lines of the
	// transcript, and again in /help (mew demo's "what to try").
	Intro []string
	// Open opens a URL elicitation's link for the user (their browser);
	// nil: the link is written in the transcript instead.
	Open func(ctx context.Context, url string) error
}

// Model is the terminal UI's state: a tea.Model. It is owned by the program's
// goroutine (or a test's); it is not safe for concurrent use.
type Model struct {
	o    Options
	sp   Space
	ctx  context.Context
	st   Styles
	keys KeyMap
	now  func() time.Time

	width, height int
	conn          ConnState
	connErr       error
	joined        bool

	tr       transcript
	verbose  bool
	thoughts bool // /thinking: reasonings show their latest thoughts

	feed   *feed.Reader    // reads the envelopes, as the line client does
	roster map[string]bool // participants present, me excluded
	calls  calls           // the requests shown, until answered
	live   thinking        // the reasonings in progress

	props book[*proposal] // every proposal seen, numbered from 1 (the latest maxProposals)
	dlg   *dialog

	asks  book[*elicit] // every elicitation seen, numbered from 1 (the latest maxElicits)
	eform *elicit       // the elicitation the dialog offers, when no proposal's shows

	board  boardState
	ledger ledger

	in   input
	hint string // completions offered, in the status bar until the next key

	noMouse bool // /mouse: the terminal's own selection instead of the wheel
	theme   int  // counts /theme's switches, for the entries' caches
	find    finding

	lastToMe sentChat          // the latest chat addressed to me, for /ack (to: its sender)
	target0  []string          // /target's choice (nil: the space config's)
	rpcID    int               // JSON-RPC ids of /envelope's calls
	myCaps   []json.RawMessage // what the welcome says I may send
	quiet    map[string]int    // the UI's own requests in flight, not shown (diff.go)

	myChats     map[string]*chatEntry // my latest chats by id, for their acknowledgements
	myChatOrder []string

	toolLists   map[string]string            // tools/list request ids → the participant listed
	toolSchemas map[string]map[string]string // participant → tool → argument skeleton
}

// bounds of what the model remembers.
const (
	maxRequests  = 1024
	maxProposals = 1024
)

// New returns a model for o.
func New(o Options) *Model {
	m := &Model{
		o: o, sp: o.Space, ctx: o.Context, now: o.Now,
		width: 80, height: 24,
		feed: feed.NewReader(), roster: map[string]bool{}, calls: newCalls(), live: newThinking(),
		props: newBook[*proposal](maxProposals), asks: newBook[*elicit](maxElicits), quiet: map[string]int{}, myChats: map[string]*chatEntry{},
	}
	if m.ctx == nil {
		m.ctx = context.Background()
	}
	if m.now == nil {
		m.now = time.Now
	}
	if o.Styles != nil {
		m.st = *o.Styles
	} else {
		m.st = DefaultStyles()
	}
	m.keys = DefaultKeyMap()
	if o.Keys != nil {
		m.keys = *o.Keys
	}
	m.in.history = append([]string(nil), o.History...)
	m.in.hpos = len(m.in.history)
	if len(o.Intro) > 0 {
		m.note(strings.Join(o.Intro, "\n"), false)
	}
	return m
}

// History returns the input lines submitted, oldest first, the seeded ones
// included.
func (m *Model) History() []string { return append([]string(nil), m.in.history...) }

// Init starts nothing: the space's events arrive as messages.
func (m *Model) Init() tea.Cmd { return nil }

// messages of the model's own commands.
type (
	decidedMsg struct {
		p      *proposal
		action string // "approved", "rejected"
		reason string
		err    error
	}
	sentMsg struct {
		what string
		err  error
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
	tickMsg time.Time
)

// Update handles a message.
func (m *Model) Update(msg tea.Msg) (tea.Model, tea.Cmd) {
	switch msg := msg.(type) {
	case tea.WindowSizeMsg:
		m.width, m.height = max(msg.Width, 20), max(msg.Height, 6)
		m.clampOffset()
	case Envelope:
		return m, m.observe(msg.Env)
	case Connection:
		m.conn = msg.State
		if msg.State == Disconnected {
			m.connErr = msg.Err
			text := "disconnected"
			if msg.Err != nil {
				text += ": " + termtext.Line(msg.Err.Error())
			}
			m.note(text+" (Ctrl+C to leave)", true)
		}
	case decidedMsg:
		return m, m.decided(msg)
	case elicitSentMsg:
		m.elicitSent(msg)
	case openedMsg:
		if msg.err != nil {
			m.note("could not open the link: "+termtext.Line(msg.err.Error())+"; open it yourself: "+termtext.Line(clip.Runes(msg.e.req.URL, 2000)), true)
		}
	case grantSentMsg:
		if msg.err != nil {
			msg.g.state = "refused: " + termtext.Line(msg.err.Error())
			m.note(fmt.Sprintf("grant #%d was not sent: %s", msg.g.n, termtext.Line(msg.err.Error())), true)
		}
	case ledgerMsg:
		return m, m.gotLedger(msg)
	case boardGrantsMsg:
		if msg.err == nil {
			m.board.grants = msg.grants
		}
	case sentMsg:
		if msg.err != nil {
			m.note(msg.what+" failed: "+termtext.Line(msg.err.Error()), true)
		}
	case toolsMsg:
		msg.p.tools, msg.p.toolsErr = msg.tools, msg.err
		if msg.tools == nil && msg.err == nil {
			msg.p.tools = []string{}
		}
		return m, m.readOldFile(msg.p)
	case oldFileMsg:
		m.gotOldFile(msg)
	case tickMsg:
		m.live.ticking = false
		return m, m.tick()
	case tea.PasteMsg:
		switch {
		case m.dlg == nil && m.eform != nil:
			if fs := m.eform.form.fields; m.eform.cursor < len(fs) {
				fs[m.eform.cursor].typeText(msg.Content)
			}
		case m.dlg == nil:
			m.in.insert(msg.Content)
		case m.dlg.step == stepEdit:
			m.dlg.ed.insert(msg.Content)
		case m.dlg.step == stepReasonText:
			m.dlg.ed.insert(strings.ReplaceAll(msg.Content, "\n", " "))
		}
	case tea.KeyPressMsg:
		return m, m.key(msg)
	case tea.MouseWheelMsg:
		switch msg.Button {
		case tea.MouseWheelUp:
			m.tr.offset += 3
		case tea.MouseWheelDown:
			m.tr.offset -= 3
		}
		m.clampOffset()
	}
	return m, nil
}

// key handles a key press.
func (m *Model) key(k tea.KeyPressMsg) tea.Cmd {
	km := &m.keys
	switch {
	case key.Matches(k, km.Quit):
		return tea.Quit
	case key.Matches(k, km.PageUp):
		m.tr.offset += max(m.viewHeight()-1, 1)
	case key.Matches(k, km.PageDown):
		m.tr.offset -= max(m.viewHeight()-1, 1)
	case key.Matches(k, km.LineUp):
		m.tr.offset++
	case key.Matches(k, km.LineDown):
		m.tr.offset--
	case key.Matches(k, km.Board):
		m.toggleBoard()
		return m.refreshBoardGrants()
	case m.dlg != nil:
		return m.dialogKey(k)
	case m.eform != nil:
		return m.elicitKey(k)
	case k.String() == "ctrl+f":
		m.in.set("/find ")
		return nil
	case m.findKey(k):
		return nil
	case key.Matches(k, km.Submit):
		m.hint = ""
		return m.submit(m.in.submit())
	case k.String() == "tab":
		m.complete()
		return nil
	default:
		m.hint = ""
		m.in.key(k)
		return nil
	}
	m.clampOffset()
	return nil
}

// add appends an entry to the transcript.
func (m *Model) add(e entry) { m.tr.add(e, m.renderCtx()) }

// note adds a line of the program's own.
func (m *Model) note(text string, isErr bool) { m.add(&noteEntry{text: text, error: isErr}) }

func (m *Model) me() string { return m.sp.Me() }

// tick keeps the live lines' clocks moving while a reasoning is open.
func (m *Model) tick() tea.Cmd {
	if m.live.ticking || len(m.live.byID) == 0 {
		return nil
	}
	m.live.ticking = true
	t := m.o.Tick
	if t == nil {
		t = func(d time.Duration, f func(time.Time) tea.Msg) tea.Cmd { return tea.Tick(d, f) }
	}
	return t(500*time.Millisecond, func(at time.Time) tea.Msg { return tickMsg(at) })
}

// chat sends a chat.
func (m *Model) chat(text string, to []string) tea.Cmd {
	env, err := protocol.New(protocol.KindChat, protocol.Chat{Text: text})
	if err != nil {
		m.note(err.Error(), true)
		return nil
	}
	env.To = to
	return m.send("chat", env)
}

// send sends env from a command goroutine.
func (m *Model) send(what string, env *protocol.Envelope) tea.Cmd {
	sp, ctx := m.sp, m.ctx
	return func() tea.Msg { return sentMsg{what: what, err: sp.Send(ctx, env)} }
}

// RevokeOnExit returns the capability/revoke envelopes of the grants the
// user made for this session that are still in force; Run sends them when
// the UI ends.
func (m *Model) RevokeOnExit() []*protocol.Envelope { return m.ledger.sessionRevokes(m.now()) }

// renderCtx returns what the renderers need.
func (m *Model) renderCtx() *renderCtx {
	return &renderCtx{width: m.textWidth(), theme: m.theme, st: &m.st, me: m.me(), now: m.now(), thoughts: m.thoughts}
}

// viewHeight is the number of transcript lines on screen.
func (m *Model) viewHeight() int {
	return max(m.height-1-len(m.bottom())-len(m.stackLines()), 1)
}

// clampOffset keeps the transcript's scrolling within what it can show.
func (m *Model) clampOffset() { m.tr.clamp(m.viewHeight(), m.renderCtx()) }

// stackLines is the board when it is stacked above the input (a third of
// the screen at most), with a rule above it.
func (m *Model) stackLines() []string {
	if !m.stacked() {
		return nil
	}
	rule := m.st.Dim.Render(strings.Repeat("─", m.width))
	return append([]string{rule}, m.boardLines(m.width, max(m.height/3, 3))...)
}

// bottom returns the lines under the transcript: the dialog or the input.
func (m *Model) bottom() []string {
	if lines, _, ok := m.modal(); ok {
		return lines
	}
	return make([]string, min(m.in.rows(), maxInputRows)) // the input's lines; frame draws them
}

// modal returns the dialog that has the keys, drawn, and its cursor:
// a proposal's first, then an elicitation's; false when the input has
// them.
func (m *Model) modal() ([]string, *tea.Cursor, bool) {
	switch {
	case m.dlg != nil:
		l, c := m.dialogLines()
		return l, c, true
	case m.eform != nil:
		l, c := m.elicitDialogLines()
		return l, c, true
	}
	return nil, nil, false
}

// maxInputRows bounds the input's lines on screen; a longer text scrolls.
const maxInputRows = 8

// View draws the screen.
func (m *Model) View() tea.View {
	content, cursor := m.frame()
	v := tea.NewView(content)
	v.AltScreen = true
	if !m.noMouse {
		v.MouseMode = tea.MouseModeCellMotion // the wheel scrolls the transcript
	}
	if cursor != nil {
		v.Cursor = cursor
	}
	return v
}

// frame draws the screen as lines, exactly height of them, and returns the
// cursor, if it shows.
func (m *Model) frame() (string, *tea.Cursor) {
	bottom, dcur, modal := m.modal()
	if !modal {
		bottom = m.bottom()
	}
	stack := m.stackLines()
	vh := max(m.height-1-len(bottom)-len(stack), 1)
	lines := m.tr.tail(vh, m.renderCtx())
	end := len(lines) - m.tr.offset
	start := max(end-vh, 0)
	shown := lines[start:max(end, start)]
	out := make([]string, 0, m.height)
	for _, l := range shown {
		out = append(out, m.highlight(l))
	}
	for len(out) < vh {
		out = append(out, "")
	}
	if m.docked() {
		mw := m.mainWidth()
		board := m.boardLines(boardWidth-2, vh)
		sep := m.st.Dim.Render("│")
		for i, l := range out {
			l = ansi.Truncate(l, m.textWidth(), "") // drawn to fit: a no-op but for the search highlight's styling
			b := ""
			if i < len(board) {
				b = board[i]
			}
			out[i] = l + strings.Repeat(" ", mw-ansi.StringWidth(l)) + sep + " " + b
		}
	}
	out = append(out, stack...)
	var cursor *tea.Cursor
	if !modal {
		prompt := m.st.Prompt.Render("> ")
		lines, col, row := m.in.view(prompt, 2, m.width, maxInputRows)
		cursor = tea.NewCursor(col, len(out)+row)
		out = append(out, lines...)
	} else {
		if dcur != nil {
			cursor = tea.NewCursor(dcur.X, len(out)+dcur.Y)
		}
		out = append(out, bottom...)
	}
	out = append(out, m.statusBar())
	for i, l := range out {
		out[i] = ansi.Truncate(l, m.width, "")
	}
	return strings.Join(out, "\n"), cursor
}

// statusBar is the last line: connection, space, me, pending proposals,
// modes.
func (m *Model) statusBar() string {
	sb := m.st.StatusBar
	conn := m.st.StatusOK.Render(" ● " + m.conn.String())
	if m.conn != Connected {
		conn = m.st.StatusBad.Render(" ○ " + m.conn.String())
	}
	parts := []string{termtext.Line(m.o.SpaceName), "me " + termtext.Line(m.me())}
	if n := len(m.pending()); n > 0 {
		parts = append(parts, plural(n, "proposal")+" pending")
	}
	if n := len(m.pendingElicits()); n > 0 {
		parts = append(parts, plural(n, "question")+" pending")
	}
	if n := len(m.live.byID); n > 0 {
		parts = append(parts, fmt.Sprintf("%d thinking", n))
	}
	if to := m.defaultTargets(); len(to) > 0 {
		parts = append(parts, "to "+names(to))
	}
	if p, ok := m.board.pausedNow(m.me(), m.now()); ok {
		parts = append(parts, p)
	}
	if m.verbose {
		parts = append(parts, "verbose")
	}
	if m.tr.offset > 0 {
		parts = append(parts, fmt.Sprintf("↑ %d lines back", m.tr.offset))
	}
	if f := m.findStatus(); f != "" {
		parts = append(parts, f)
	}
	if m.hint != "" {
		parts = append(parts, termtext.Line(m.hint))
	}
	left := conn + sb.Render(" · "+strings.Join(parts, " · "))
	right := sb.Render("/help · Ctrl+C quit ")
	gap := m.width - ansi.StringWidth(left) - ansi.StringWidth(right)
	if gap < 1 {
		return ansi.Truncate(left, m.width, "…")
	}
	return left + sb.Render(strings.Repeat(" ", gap)) + right
}
