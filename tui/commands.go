package tui

import (
	"encoding/json"
	"fmt"
	"strconv"
	"strings"

	tea "charm.land/bubbletea/v2"

	"github.com/mew-protocol/mew/internal/termtext"
	"github.com/mew-protocol/mew/protocol"
)

// command is a slash command.
type command struct {
	name, args, help string
	run              func(m *Model, args []string) tea.Cmd
}

// uiCommands are the UI's own slash commands, in /help's order (a function,
// not a table built at init, so that /help may list the table it is in).
func uiCommands() []command {
	return []command{
		{"help", "", "this list", (*Model).cmdHelp},
		{"proposals", "", "the proposals awaiting your decision", (*Model).cmdProposals},
		{"review", "", "reopen the dialog for postponed proposals", (*Model).cmdReview},
		{"approve", "[N]", "fulfil proposal N (default: the oldest) once", (*Model).cmdApprove},
		{"reject", "[N] [code] [text]", "reject N: a reason code and your words", (*Model).cmdReject},
		{"grants", "", "the grants in force, with time left", (*Model).cmdGrants},
		{"revoke", "N", "revoke grant N of /grants", (*Model).cmdRevoke},
		{"find", "[text]", "the lines holding text (Ctrl+F; n/N move, Esc ends)", (*Model).cmdFind},
		{"participants", "", "who is in the space", (*Model).cmdParticipants},
		{"verbose", "", "every envelope as JSON too (toggle)", (*Model).cmdVerbose},
		{"thinking", "", "the agents' latest thoughts (toggle)", (*Model).cmdThinking},
		{"board", "[open|close|auto]", "the side board (F2; auto: from 120 columns)", (*Model).cmdBoard},
		{"theme", "[dark|light]", "the colours for a dark or a light terminal", (*Model).cmdTheme},
		{"mouse", "", "the wheel scrolls, or the terminal selects (toggle)", (*Model).cmdMouse},
		{"ui-clear", "", "clear the transcript", (*Model).cmdClear},
		{"exit", "", "leave (also /quit, Ctrl+C)", func(*Model, []string) tea.Cmd { return tea.Quit }},
	}
}

// allCommands are the UI's commands and the controls.
func allCommands() []command {
	return append(uiCommands(), controlCommands()...)
}

// submit acts on a line typed: a command, a JSON envelope, or a chat.
func (m *Model) submit(line string) tea.Cmd {
	m.tr.offset = 0
	switch {
	case line == "":
		return nil
	case strings.HasPrefix(line, "/"):
		f := strings.Fields(line[1:])
		if len(f) == 0 {
			return m.cmdHelp(nil)
		}
		name := strings.ToLower(f[0])
		switch name { // the reference's names
		case "quit", "q":
			name = "exit"
		case "ui", "ui-board":
			name = "board"
		}
		for _, c := range allCommands() {
			if c.name == name {
				return c.run(m, f[1:])
			}
		}
		m.note("unknown command /"+termtext.Line(f[0])+"; /help lists them", true)
		return nil
	case strings.HasPrefix(line, "{"):
		var env protocol.Envelope
		if err := json.Unmarshal([]byte(line), &env); err == nil && env.Kind != "" {
			return m.send(env.Kind, &env)
		}
	}
	to, text := m.targets(line)
	return m.chat(text, to)
}

// targets splits a chat line into its leading @ids and its text; without
// any, the default targets.
func (m *Model) targets(line string) ([]string, string) {
	var to []string
	rest := line
	for strings.HasPrefix(rest, "@") {
		word, after, _ := strings.Cut(rest, " ")
		id := strings.TrimRight(word[1:], ",:")
		if id == "" {
			break
		}
		to = append(to, id)
		rest = strings.TrimLeft(after, " ")
	}
	if len(to) == 0 {
		return m.defaultTargets(), line
	}
	if rest == "" {
		rest = line
	}
	return to, rest
}

func (m *Model) cmdHelp(args []string) tea.Cmd {
	if len(args) > 0 {
		name := strings.TrimPrefix(args[0], "/")
		for _, c := range allCommands() {
			if c.name == name {
				m.note(fmt.Sprintf("/%s %s\n    %s", c.name, c.args, c.help), false)
				return nil
			}
		}
	}
	var b strings.Builder
	b.WriteString("Type to chat, @id first to address someone; JSON with a kind is an envelope.\n")
	for _, c := range uiCommands() {
		fmt.Fprintf(&b, "  /%-25s %s\n", strings.TrimSpace(c.name+" "+c.args), c.help)
	}
	b.WriteString(controlHelp() + "\n")
	b.WriteString("Keys: Enter send · Alt+Enter new line · Tab complete · ↑/↓ history · PgUp/PgDn scroll · F2 board\n")
	b.WriteString("Dialog: 1/y Yes · 2/g Grant · 3/n No · 4/e Edit · Esc later · ←/→ and Enter")
	if len(m.o.Intro) > 0 {
		b.WriteString("\n" + strings.Join(m.o.Intro, "\n"))
	}
	m.note(b.String(), false)
	return nil
}

func (m *Model) cmdProposals([]string) tea.Cmd {
	var lines []string
	for _, p := range m.props.all {
		if p.askMe && !p.settled {
			state := "awaiting you"
			switch {
			case p.deciding:
				state = "deciding…"
			case p.postponed:
				state = "postponed"
			}
			lines = append(lines, fmt.Sprintf("  #%d %s · %s", p.n, p.title(), state))
		}
	}
	if len(lines) == 0 {
		m.note("no proposals await your decision", false)
		return nil
	}
	m.note("proposals awaiting your decision (/approve N, /reject N, /review):\n"+strings.Join(lines, "\n"), false)
	return nil
}

func (m *Model) cmdReview([]string) tea.Cmd {
	n := 0
	for _, p := range m.pending() {
		if p.postponed {
			p.postponed = false
			n++
		}
	}
	// Postponed elicitations come back too, after the proposals.
	for _, e := range m.pendingElicits() {
		e.postponed = false
	}
	m.openElicit()
	if len(m.pending()) == 0 && len(m.pendingElicits()) > 0 {
		return nil
	}
	if len(m.pending()) == 0 {
		m.note("no proposals await your decision", false)
		return nil
	}
	return m.openDialog()
}

// pick returns the proposal numbered by args[0] (default: the oldest
// awaiting the user) and the remaining arguments.
func (m *Model) pick(args []string) (*proposal, []string) {
	if len(args) > 0 {
		n, err := strconv.Atoi(strings.TrimPrefix(args[0], "#"))
		if err == nil {
			for _, p := range m.props.all {
				if p.n == n {
					return p, args[1:]
				}
			}
			m.note(fmt.Sprintf("no proposal #%d", n), true)
			return nil, nil
		}
	}
	if pend := m.pending(); len(pend) > 0 {
		return pend[0], args
	}
	m.note("no proposals await your decision", true)
	return nil, nil
}

func (m *Model) cmdApprove(args []string) tea.Cmd {
	p, _ := m.pick(args)
	if p == nil {
		return nil
	}
	if p.settled {
		m.note(fmt.Sprintf("proposal #%d was already %s", p.n, p.outcome), true)
		return nil
	}
	if m.dlg != nil && m.dlg.p == p {
		m.dlg = nil
	}
	return m.approve(p, nil, nil)
}

func (m *Model) cmdReject(args []string) tea.Cmd {
	p, rest := m.pick(args)
	if p == nil {
		return nil
	}
	if p.settled {
		m.note(fmt.Sprintf("proposal #%d was already %s", p.n, p.outcome), true)
		return nil
	}
	reason, message := protocol.ReasonDisagree, ""
	if len(rest) > 0 {
		reason, message = rest[0], strings.Join(rest[1:], " ")
	}
	if m.dlg != nil && m.dlg.p == p {
		m.dlg = nil
	}
	return m.reject(p, reason, message)
}

func (m *Model) cmdParticipants([]string) tea.Cmd {
	ids := sortedKeys(m.roster)
	if len(ids) == 0 {
		m.note("nobody else is here", false)
		return nil
	}
	m.note("in the space besides you: "+names(ids), false)
	return nil
}

func (m *Model) cmdVerbose([]string) tea.Cmd {
	m.verbose = !m.verbose
	if m.verbose {
		m.note("verbose: every envelope is shown as JSON too", false)
	} else {
		m.note("verbose off", false)
	}
	return nil
}

func (m *Model) cmdThinking([]string) tea.Cmd {
	m.thoughts = !m.thoughts
	m.clampOffset()
	if m.thoughts {
		m.note("thinking: the agents' latest thoughts show under their reasoning lines", false)
	} else {
		m.note("thinking hidden", false)
	}
	return nil
}

func (m *Model) cmdTheme(args []string) tea.Cmd {
	themes := Themes()
	if len(args) == 0 {
		m.note("/theme "+strings.Join(sortedKeys(themes), "|"), false)
		return nil
	}
	f, ok := themes[strings.ToLower(args[0])]
	if !ok {
		m.note("no theme "+termtext.Line(args[0])+"; /theme lists them", true)
		return nil
	}
	m.st = f()
	m.theme++
	m.note("theme "+strings.ToLower(args[0]), false)
	return nil
}

func (m *Model) cmdMouse([]string) tea.Cmd {
	m.noMouse = !m.noMouse
	if m.noMouse {
		m.note("mouse off: the terminal selects text; PgUp/PgDn scroll", false)
	} else {
		m.note("mouse on: the wheel scrolls (Shift+drag selects in most terminals)", false)
	}
	return nil
}

func (m *Model) cmdClear([]string) tea.Cmd {
	m.tr.reset()
	return nil
}
