package tui

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	tea "charm.land/bubbletea/v2"

	"github.com/mew-protocol/mew/internal/termtext"
	"github.com/mew-protocol/mew/protocol"
)

// command is a slash command: its name, its arguments and its help for
// /help, and what it does, bound to the component that owns it.
type command struct {
	name, args, help string
	run              func(args []string) tea.Cmd
}

// commands is the command line: it parses a line submitted and runs it as
// a slash command, sends it as a JSON envelope, or sends it as a chat to
// its @ids or the default targets. It owns the command table (the
// components' commands, which the root gives it, and its own: /help, /exit
// and the reference's controls), the default targets, the JSON-RPC ids of
// /envelope, what the welcome says the user may send, and the latest chat
// to the user (for /ack).
type commands struct {
	e       *env
	present people          // who is here: the roster
	live    latestReasoning // the reasonings in progress, for /cancel
	board   chatsAndStreams // the user's chats awaiting an answer, the open streams

	ui       []command         // the UI's commands, in /help's order
	controls []command         // the reference's controls
	target0  []string          // /target's choice (nil: the space config's)
	rpcID    int               // JSON-RPC ids of /envelope's calls
	caps     []json.RawMessage // what the welcome says I may send
	lastToMe sentChat          // the latest chat addressed to me, for /ack (to: its sender)
}

// What the command line reads of other components.
type (
	latestReasoning interface {
		latest() (string, *reasoningEntry, bool)
	}
	chatsAndStreams interface {
		lastUnacked() (sentChat, bool)
		cmdStreams(args []string) tea.Cmd
	}
)

// newCommands returns the command line; ui are the components' commands,
// in /help's order, which /help and /exit frame.
func newCommands(e *env, present people, live latestReasoning, board chatsAndStreams, ui []command) *commands {
	c := &commands{e: e, present: present, live: live, board: board}
	c.ui = append([]command{{"help", "", "this list", c.cmdHelp}}, ui...)
	c.ui = append(c.ui, command{"exit", "", "leave (also /quit, Ctrl+C)", func([]string) tea.Cmd { return tea.Quit }})
	c.controls = c.controlCommands()
	return c
}

// all are the UI's commands and the controls.
func (c *commands) all() []command {
	return append(slices.Clip(c.ui), c.controls...)
}

// names are the commands' names, for completion.
func (c *commands) names() []string {
	var out []string
	for _, x := range c.all() {
		out = append(out, x.name)
	}
	return out
}

// welcomed takes in what the welcome says the user may send.
func (c *commands) welcomed(caps []json.RawMessage) { c.caps = caps }

// chatToMe takes in the latest chat addressed to the user.
func (c *commands) chatToMe(sc sentChat) { c.lastToMe = sc }

// submit acts on a line typed: a command, a JSON envelope, or a chat.
func (c *commands) submit(line string) tea.Cmd {
	switch {
	case line == "":
		return nil
	case strings.HasPrefix(line, "/"):
		f := strings.Fields(line[1:])
		if len(f) == 0 {
			return c.cmdHelp(nil)
		}
		name := strings.ToLower(f[0])
		switch name { // the reference's names
		case "quit", "q":
			name = "exit"
		case "ui", "ui-board":
			name = "board"
		}
		for _, x := range c.all() {
			if x.name == name {
				return x.run(f[1:])
			}
		}
		c.e.note("unknown command /"+termtext.Line(f[0])+"; /help lists them", true)
		return nil
	case strings.HasPrefix(line, "{"):
		var env protocol.Envelope
		if err := json.Unmarshal([]byte(line), &env); err == nil && env.Kind != "" {
			return c.e.send(env.Kind, &env)
		}
	}
	to, text := c.targets(line)
	return c.chat(text, to)
}

// chat sends a chat.
func (c *commands) chat(text string, to []string) tea.Cmd {
	env, err := protocol.New(protocol.KindChat, protocol.Chat{Text: text})
	if err != nil {
		c.e.note(err.Error(), true)
		return nil
	}
	env.To = to
	return c.e.send("chat", env)
}

// targets splits a chat line into its leading @ids and its text; without
// any, the default targets.
func (c *commands) targets(line string) ([]string, string) {
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
		return c.defaultTargets(), line
	}
	if rest == "" {
		rest = line
	}
	return to, rest
}

func (c *commands) cmdHelp(args []string) tea.Cmd {
	if len(args) > 0 {
		name := strings.TrimPrefix(args[0], "/")
		for _, x := range c.all() {
			if x.name == name {
				c.e.note(fmt.Sprintf("/%s %s\n    %s", x.name, x.args, x.help), false)
				return nil
			}
		}
	}
	var b strings.Builder
	b.WriteString("Type to chat, @id first to address someone; JSON with a kind is an envelope.\n")
	for _, x := range c.ui {
		fmt.Fprintf(&b, "  /%-25s %s\n", strings.TrimSpace(x.name+" "+x.args), x.help)
	}
	b.WriteString(c.controlHelp() + "\n")
	b.WriteString("Keys: Enter send · Alt+Enter new line · Tab complete · ↑/↓ history · PgUp/PgDn scroll · F2 board\n")
	b.WriteString("Dialog: 1/y Yes · 2/g Grant · 3/n No · 4/e Edit · Esc later · ←/→ and Enter")
	if len(c.e.o.Intro) > 0 {
		b.WriteString("\n" + strings.Join(c.e.o.Intro, "\n"))
	}
	c.e.note(b.String(), false)
	return nil
}
