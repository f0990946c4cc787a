package tui

import (
	"context"
	"fmt"
	"strings"
	"time"

	"charm.land/bubbles/v2/key"
	tea "charm.land/bubbletea/v2"
	"github.com/charmbracelet/x/ansi"

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

// Model is the terminal UI's state: a tea.Model. It is a thin root over
// components that own their state and its updates (the transcript, the
// roster, the calls and reasonings in progress, the proposals and their
// dialog, the elicitations and their form, the board, the ledger, the
// prompt and the command line): it routes messages and keys to them and
// lays out the frame. It is owned by the program's goroutine (or a
// test's); it is not safe for concurrent use.
type Model struct {
	e    *env // what the components share; the root owns it
	keys KeyMap

	width, height int
	conn          ConnState
	connErr       error
	joined        bool
	noMouse       bool // /mouse: the terminal's own selection instead of the wheel

	feed   *feed.Reader // reads the envelopes, as the line client does
	tr     transcript
	roster *roster
	calls  calls    // the requests shown, until answered
	live   thinking // the reasonings in progress
	props  approvals
	asks   questions
	board  boardState
	ledger ledger
	acks   chatAcks
	tools  toolCatalog
	prompt prompt
	cmds   *commands
}

// bounds of what the model remembers.
const (
	maxRequests  = 1024
	maxProposals = 1024
)

// New returns a model for o.
func New(o Options) *Model {
	e := &env{o: o, sp: o.Space, ctx: o.Context, now: o.Now}
	if e.ctx == nil {
		e.ctx = context.Background()
	}
	if e.now == nil {
		e.now = time.Now
	}
	if o.Styles != nil {
		e.st = *o.Styles
	} else {
		e.st = DefaultStyles()
	}
	m := &Model{e: e, keys: DefaultKeyMap(), width: 80, height: 24, feed: feed.NewReader(), calls: newCalls(), live: newThinking()}
	if o.Keys != nil {
		m.keys = *o.Keys
	}
	e.add = m.add
	// The components are wired to each other through small interfaces, by
	// pointers into this Model, which is never copied.
	m.tr = transcript{e: e}
	m.roster = newRoster(e)
	m.ledger = ledger{e: e, shown: &m.board}
	m.props = newApprovals(e, &m.ledger)
	m.asks = newQuestions(e)
	m.board = boardState{e: e, present: m.roster, props: &m.props, live: &m.live, ledger: &m.ledger}
	m.cmds = newCommands(e, m.roster, &m.live, &m.board, m.uiCommands())
	m.prompt = newPrompt(o.History)
	if len(o.Intro) > 0 {
		e.note(strings.Join(o.Intro, "\n"), false)
	}
	return m
}

// uiCommands are the UI's own slash commands between /help and /exit, in
// /help's order, each bound to the component that owns it.
func (m *Model) uiCommands() []command {
	return []command{
		{"proposals", "", "the proposals awaiting your decision", m.props.cmdProposals},
		{"review", "", "reopen the dialog for postponed proposals", m.cmdReview},
		{"approve", "[N]", "fulfil proposal N (default: the oldest) once", m.props.cmdApprove},
		{"reject", "[N] [code] [text]", "reject N: a reason code and your words", m.props.cmdReject},
		{"grants", "", "the grants in force, with time left", m.ledger.cmdGrants},
		{"revoke", "N", "revoke grant N of /grants", m.ledger.cmdRevoke},
		{"find", "[text]", "the lines holding text (Ctrl+F; n/N move, Esc ends)", func(args []string) tea.Cmd {
			return m.tr.cmdFind(args, m.renderCtx(), m.viewHeight())
		}},
		{"participants", "", "who is in the space", m.roster.cmdParticipants},
		{"verbose", "", "every envelope as JSON too (toggle)", m.tr.cmdVerbose},
		{"thinking", "", "the agents' latest thoughts (toggle)", m.tr.cmdThinking},
		{"board", "[open|close|auto]", "the side board (F2; auto: from 120 columns)", func(args []string) tea.Cmd {
			return m.board.cmdBoard(args, m.width)
		}},
		{"theme", "[dark|light]", "the colours for a dark or a light terminal", m.cmdTheme},
		{"mouse", "", "the wheel scrolls, or the terminal selects (toggle)", m.cmdMouse},
		{"ui-clear", "", "clear the transcript", m.tr.cmdClear},
	}
}

// History returns the input lines submitted, oldest first, the seeded ones
// included.
func (m *Model) History() []string { return m.prompt.history() }

// Init starts nothing: the space's events arrive as messages.
func (m *Model) Init() tea.Cmd { return nil }

// messages of the root's own commands.
type (
	sentMsg struct {
		what string
		err  error
	}
	tickMsg time.Time
)

// Update handles a message: the root's own, or routed to the component
// whose command it answers.
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
			m.e.note(text+" (Ctrl+C to leave)", true)
		}
	case decidedMsg:
		return m, m.props.decided(msg)
	case elicitSentMsg:
		m.asks.sent(msg)
	case openedMsg:
		m.asks.opened(msg)
	case grantSentMsg:
		m.props.grantSent(msg)
	case ledgerMsg:
		return m, m.ledger.got(msg) // which shows the board what it read
	case boardGrantsMsg:
		m.board.got(msg)
	case sentMsg:
		if msg.err != nil {
			m.e.note(msg.what+" failed: "+termtext.Line(msg.err.Error()), true)
		}
	case toolsMsg:
		return m, m.props.gotTools(msg)
	case oldFileMsg:
		m.props.gotOldFile(msg)
	case tickMsg:
		m.live.ticked()
		return m, m.tick()
	case tea.PasteMsg:
		switch {
		case m.props.showing():
			m.props.paste(msg.Content)
		case m.asks.showing():
			m.asks.paste(msg.Content)
		default:
			m.prompt.paste(msg.Content)
		}
	case tea.KeyPressMsg:
		return m, m.key(msg)
	case tea.MouseWheelMsg:
		switch msg.Button {
		case tea.MouseWheelUp:
			m.tr.scroll(3)
		case tea.MouseWheelDown:
			m.tr.scroll(-3)
		}
		m.clampOffset()
	}
	return m, nil
}

// key handles a key press: the global keys, then the dialog's, the
// form's, the search's or the prompt's.
func (m *Model) key(k tea.KeyPressMsg) tea.Cmd {
	km := &m.keys
	switch {
	case key.Matches(k, km.Quit):
		return tea.Quit
	case key.Matches(k, km.PageUp):
		m.tr.scroll(max(m.viewHeight()-1, 1))
	case key.Matches(k, km.PageDown):
		m.tr.scroll(-max(m.viewHeight()-1, 1))
	case key.Matches(k, km.LineUp):
		m.tr.scroll(1)
	case key.Matches(k, km.LineDown):
		m.tr.scroll(-1)
	case key.Matches(k, km.Board):
		cmd := m.board.toggle(m.width)
		m.clampOffset()
		return cmd
	case m.props.showing():
		return m.props.key(k)
	case m.asks.showing():
		return m.asks.key(k)
	case k.String() == "ctrl+f":
		m.prompt.set("/find ")
		return nil
	case m.tr.findKey(k, m.prompt.empty(), m.renderCtx(), m.viewHeight()):
		return nil
	case key.Matches(k, km.Submit):
		line := m.prompt.submit()
		m.tr.toEnd()
		cmd := m.cmds.submit(line)
		m.clampOffset() // a command may change what the transcript shows (/thinking, /board)
		return cmd
	case k.String() == "tab":
		m.prompt.complete(m.cmds.names(), m.roster.ids(), &m.tools)
		return nil
	default:
		m.prompt.key(k)
		return nil
	}
	m.clampOffset()
	return nil
}

// cmdReview is /review: the postponed proposals and elicitations offered
// again, the proposals first.
func (m *Model) cmdReview([]string) tea.Cmd {
	cmd, any := m.props.review()
	m.asks.review()
	switch {
	case any:
		return cmd
	case len(m.asks.pending()) == 0:
		m.e.note("no proposals await your decision", false)
	}
	return nil
}

// cmdTheme is /theme: the colours of the whole screen.
func (m *Model) cmdTheme(args []string) tea.Cmd {
	themes := Themes()
	if len(args) == 0 {
		m.e.note("/theme "+strings.Join(sortedKeys(themes), "|"), false)
		return nil
	}
	f, ok := themes[strings.ToLower(args[0])]
	if !ok {
		m.e.note("no theme "+termtext.Line(args[0])+"; /theme lists them", true)
		return nil
	}
	m.e.st = f()
	m.e.theme++
	m.e.note("theme "+strings.ToLower(args[0]), false)
	return nil
}

// cmdMouse is /mouse: the wheel scrolls, or the terminal selects.
func (m *Model) cmdMouse([]string) tea.Cmd {
	m.noMouse = !m.noMouse
	if m.noMouse {
		m.e.note("mouse off: the terminal selects text; PgUp/PgDn scroll", false)
	} else {
		m.e.note("mouse on: the wheel scrolls (Shift+drag selects in most terminals)", false)
	}
	return nil
}

// add appends an entry to the transcript, drawn as wide as it shows.
func (m *Model) add(e entry) { m.tr.add(e, m.renderCtx()) }

// tick keeps the live lines' clocks moving while a reasoning is open.
func (m *Model) tick() tea.Cmd { return m.live.tick(m.e.o.Tick) }

// RevokeOnExit returns the capability/revoke envelopes of the grants the
// user made for this session that are still in force; Run sends them when
// the UI ends.
func (m *Model) RevokeOnExit() []*protocol.Envelope { return m.ledger.sessionRevokes(m.e.now()) }

// renderCtx returns what the renderers need.
func (m *Model) renderCtx() *renderCtx {
	return &renderCtx{width: m.board.textWidth(m.width), theme: m.e.theme, st: &m.e.st, me: m.e.me(), now: m.e.now(), thoughts: m.tr.showThoughts()}
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
	if !m.board.stacked(m.width) {
		return nil
	}
	rule := m.e.st.Dim.Render(strings.Repeat("─", m.width))
	return append([]string{rule}, m.board.lines(m.width, max(m.height/3, 3))...)
}

// bottom returns the lines under the transcript: the dialog or the input.
func (m *Model) bottom() []string {
	if lines, _, ok := m.modal(); ok {
		return lines
	}
	return make([]string, m.prompt.rows(maxInputRows)) // the input's lines; frame draws them
}

// modal returns the dialog that has the keys, drawn, and its cursor:
// a proposal's first, then an elicitation's; false when the input has
// them.
func (m *Model) modal() ([]string, *tea.Cursor, bool) {
	switch {
	case m.props.showing():
		l, c := m.props.view(m.width, m.height)
		return l, c, true
	case m.asks.showing():
		l, c := m.asks.view(m.width, m.height)
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
	end := len(lines) - m.tr.scrolled()
	start := max(end-vh, 0)
	shown := lines[start:max(end, start)]
	out := make([]string, 0, m.height)
	for _, l := range shown {
		out = append(out, m.tr.highlight(l))
	}
	for len(out) < vh {
		out = append(out, "")
	}
	if m.board.docked(m.width) {
		mw := m.board.mainWidth(m.width)
		board := m.board.lines(boardWidth-2, vh)
		sep := m.e.st.Dim.Render("│")
		for i, l := range out {
			l = ansi.Truncate(l, m.board.textWidth(m.width), "") // drawn to fit: a no-op but for the search highlight's styling
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
		prompt := m.e.st.Prompt.Render("> ")
		lines, col, row := m.prompt.view(prompt, 2, m.width, maxInputRows)
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
	sb := m.e.st.StatusBar
	conn := m.e.st.StatusOK.Render(" ● " + m.conn.String())
	if m.conn != Connected {
		conn = m.e.st.StatusBad.Render(" ○ " + m.conn.String())
	}
	parts := []string{termtext.Line(m.e.o.SpaceName), "me " + termtext.Line(m.e.me())}
	if n := len(m.props.pending()); n > 0 {
		parts = append(parts, plural(n, "proposal")+" pending")
	}
	if n := len(m.asks.pending()); n > 0 {
		parts = append(parts, plural(n, "question")+" pending")
	}
	if n := m.live.open(); n > 0 {
		parts = append(parts, fmt.Sprintf("%d thinking", n))
	}
	if to := m.cmds.defaultTargets(); len(to) > 0 {
		parts = append(parts, "to "+names(to))
	}
	if p, ok := m.board.pausedNow(m.e.me(), m.e.now()); ok {
		parts = append(parts, p)
	}
	if m.tr.showRaw() {
		parts = append(parts, "verbose")
	}
	if n := m.tr.scrolled(); n > 0 {
		parts = append(parts, fmt.Sprintf("↑ %d lines back", n))
	}
	if f := m.tr.findStatus(); f != "" {
		parts = append(parts, f)
	}
	if h := m.prompt.offered(); h != "" {
		parts = append(parts, termtext.Line(h))
	}
	left := conn + sb.Render(" · "+strings.Join(parts, " · "))
	right := sb.Render("/help · Ctrl+C quit ")
	gap := m.width - ansi.StringWidth(left) - ansi.StringWidth(right)
	if gap < 1 {
		return ansi.Truncate(left, m.width, "…")
	}
	return left + sb.Render(strings.Repeat(" ", gap)) + right
}
