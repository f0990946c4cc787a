package tui

import (
	"encoding/json"
	"strconv"
	"strings"

	tea "charm.land/bubbletea/v2"

	"github.com/mew-protocol/mew/internal/summary"
	"github.com/mew-protocol/mew/internal/termtext"
	"github.com/mew-protocol/mew/protocol"
)

// The reference's control commands: each sends one envelope to the
// participant named first, with the payload the arguments make.

// control sends an envelope of kind with payload to to, correlated to corr
// when it is not empty.
func (m *Model) control(kind string, to []string, corr []string, payload any) tea.Cmd {
	env, err := protocol.New(kind, payload)
	if err != nil {
		m.note(err.Error(), true)
		return nil
	}
	env.To, env.CorrelationID = to, corr
	return m.send(kind, env)
}

// target returns the participant args name first, or notes the usage.
func (m *Model) target(args []string, usage string) (string, []string, bool) {
	if len(args) == 0 || args[0] == "" {
		m.note(usage, true)
		return "", nil, false
	}
	return strings.TrimPrefix(args[0], "@"), args[1:], true
}

// reasonOf is the words of args from i on, or def.
func reasonOf(args []string, i int, def string) string {
	if len(args) > i {
		return strings.Join(args[i:], " ")
	}
	return def
}

func (m *Model) cmdPause(args []string) tea.Cmd {
	p, rest, ok := m.target(args, "/pause <participant> [timeout seconds] [reason]")
	if !ok {
		return nil
	}
	var pl protocol.Pause
	i := 0
	if len(rest) > 0 {
		if n, err := strconv.Atoi(rest[0]); err == nil && n > 0 {
			pl.TimeoutSeconds, i = n, 1
		}
	}
	pl.Reason = reasonOf(rest, i, "")
	return m.control(protocol.KindParticipantPause, []string{p}, nil, pl)
}

func (m *Model) cmdResume(args []string) tea.Cmd {
	p, rest, ok := m.target(args, "/resume <participant> [reason]")
	if !ok {
		return nil
	}
	return m.control(protocol.KindParticipantResume, []string{p}, nil, protocol.Resume{Reason: reasonOf(rest, 0, "")})
}

func (m *Model) cmdStatus(args []string) tea.Cmd {
	p, rest, ok := m.target(args, "/status <participant> [fields…]")
	if !ok {
		return nil
	}
	return m.control(protocol.KindParticipantRequestStatus, []string{p}, nil, protocol.RequestStatus{Fields: rest})
}

func (m *Model) cmdForget(args []string) tea.Cmd {
	p, rest, ok := m.target(args, "/forget <participant> [oldest|newest] [n]")
	if !ok {
		return nil
	}
	pl := protocol.Forget{Direction: protocol.ForgetOldest}
	if len(rest) > 0 {
		if rest[0] != "oldest" && rest[0] != "newest" {
			m.note("/forget <participant> [oldest|newest] [n]", true)
			return nil
		}
		pl.Direction = rest[0]
	}
	if len(rest) > 1 {
		n, err := strconv.Atoi(rest[1])
		if err != nil || n < 1 {
			m.note("/forget: n is a count of entries", true)
			return nil
		}
		pl.Entries = n
	}
	return m.control(protocol.KindParticipantForget, []string{p}, nil, pl)
}

func (m *Model) cmdCompact(args []string) tea.Cmd {
	p, rest, ok := m.target(args, "/compact <participant> [target tokens] [reason]")
	if !ok {
		return nil
	}
	var pl protocol.Compact
	i := 0
	if len(rest) > 0 {
		if n, err := strconv.Atoi(rest[0]); err == nil && n > 0 {
			pl.TargetTokens, i = n, 1
		}
	}
	pl.Reason = reasonOf(rest, i, "")
	return m.control(protocol.KindParticipantCompact, []string{p}, nil, pl)
}

func (m *Model) cmdClearParticipant(args []string) tea.Cmd {
	p, rest, ok := m.target(args, "/clear <participant> [reason] (/ui-clear empties the transcript)")
	if !ok {
		return nil
	}
	return m.control(protocol.KindParticipantClear, []string{p}, nil, protocol.Clear{Reason: reasonOf(rest, 0, "")})
}

func (m *Model) cmdRestart(args []string) tea.Cmd {
	p, rest, ok := m.target(args, "/restart <participant> [mode] [reason]")
	if !ok {
		return nil
	}
	pl := protocol.Restart{Reason: reasonOf(rest, 1, "")}
	if len(rest) > 0 {
		pl.Mode = rest[0]
	}
	return m.control(protocol.KindParticipantRestart, []string{p}, nil, pl)
}

func (m *Model) cmdShutdown(args []string) tea.Cmd {
	p, rest, ok := m.target(args, "/shutdown <participant> [reason]")
	if !ok {
		return nil
	}
	return m.control(protocol.KindParticipantShutdown, []string{p}, nil, protocol.Shutdown{Reason: reasonOf(rest, 0, "")})
}

// cmdAck acknowledges the latest chat addressed to me (/ack [status]).
func (m *Model) cmdAck(args []string) tea.Cmd {
	c := m.lastToMe
	if c.id == "" {
		m.note("no chat to you to acknowledge", true)
		return nil
	}
	status := reasonOf(args, 0, "received")
	m.lastToMe = sentChat{}
	// Said at once: an acknowledgement is bookkeeping the transcript does
	// not show, so without this line /ack looked like it did nothing.
	m.note("acknowledged "+termtext.Line(c.to[0])+"'s chat: "+termtext.Line(status), false)
	return m.control(protocol.KindChatAcknowledge, []string{c.to[0]}, []string{c.id}, protocol.ChatAcknowledge{Status: status})
}

// cmdCancel cancels the open reasoning (reasoning/cancel with its
// context), or else my latest chat (chat/cancel).
func (m *Model) cmdCancel(args []string) tea.Cmd {
	reason := reasonOf(args, 0, "cleared")
	if id, r, ok := m.live.latest(); ok {
		env, err := protocol.New(protocol.KindReasoningCancel, protocol.ReasoningCancel{Reason: reason})
		if err != nil {
			m.note(err.Error(), true)
			return nil
		}
		env.To, env.Context = []string{r.from}, id
		return m.send("cancelling the reasoning of "+termtext.Line(r.from), env)
	}
	if n := len(m.board.unacked); n > 0 {
		c := m.board.unacked[n-1]
		return m.control(protocol.KindChatCancel, c.to, []string{c.id}, protocol.ChatCancel{Reason: reason})
	}
	m.note("nothing to cancel: no reasoning open, no chat of yours awaiting an answer", true)
	return nil
}

// cmdTarget shows or sets where chats typed without @id go.
func (m *Model) cmdTarget(args []string) tea.Cmd {
	switch {
	case len(args) == 0 || args[0] == "show":
	case args[0] == "none":
		m.target0 = []string{}
	default:
		ids := make([]string, len(args))
		for i, a := range args {
			ids[i] = strings.TrimPrefix(a, "@")
		}
		m.target0 = ids
	}
	to := m.defaultTargets()
	if len(to) == 0 {
		m.note("chats without @id go to everyone", false)
	} else {
		m.note("chats without @id go to "+names(to), false)
	}
	return nil
}

// defaultTargets are /target's choice, else the space config's.
func (m *Model) defaultTargets() []string {
	if m.target0 != nil {
		return m.target0
	}
	return m.o.DefaultTargets
}

// cmdStream is /stream request <p> <upload|download> [description…] and
// /stream close <stream id> [reason].
func (m *Model) cmdStream(args []string) tea.Cmd {
	usage := "/stream request <participant> <upload|download> [description…] · /stream close <stream id> [reason]"
	if len(args) < 2 {
		m.note(usage, true)
		return nil
	}
	switch args[0] {
	case "request":
		if len(args) < 3 || (args[2] != protocol.DirectionUpload && args[2] != protocol.DirectionDownload) {
			m.note(usage, true)
			return nil
		}
		return m.control(protocol.KindStreamRequest, []string{strings.TrimPrefix(args[1], "@")}, nil,
			protocol.StreamRequest{Direction: args[2], Description: reasonOf(args, 3, "")})
	case "close":
		return m.control(protocol.KindStreamClose, nil, nil, protocol.StreamClose{StreamID: args[1], Reason: reasonOf(args, 2, protocol.StreamCloseComplete)})
	}
	m.note(usage, true)
	return nil
}

// cmdStreams lists the open streams.
func (m *Model) cmdStreams([]string) tea.Cmd {
	if len(m.board.streams) == 0 {
		m.note("no open streams", false)
		return nil
	}
	lines := []string{"open streams:"}
	for _, s := range m.board.streams {
		lines = append(lines, "  "+termtext.Line(s.id)+" "+s.what)
	}
	m.note(strings.Join(lines, "\n"), false)
	return nil
}

// cmdEnvelope is /envelope mcp/request tools/call <p> <tool> [json args].
func (m *Model) cmdEnvelope(args []string) tea.Cmd {
	usage := "/envelope mcp/request tools/call <participant> <tool> [JSON arguments]"
	if len(args) < 4 || args[0] != protocol.KindMCPRequest || (args[1] != "tools/call" && args[1] != "tool/call") {
		m.note(usage, true)
		return nil
	}
	var params = map[string]any{"name": args[3]}
	if len(args) > 4 {
		raw := json.RawMessage(strings.Join(args[4:], " "))
		var obj map[string]any
		if json.Unmarshal(raw, &obj) != nil || obj == nil {
			m.note("/envelope: the arguments are not a JSON object", true)
			return nil
		}
		params["arguments"] = raw
	}
	m.rpcID++
	return m.control(protocol.KindMCPRequest, []string{strings.TrimPrefix(args[2], "@")}, nil,
		map[string]any{"jsonrpc": "2.0", "id": m.rpcID, "method": "tools/call", "params": params})
}

// cmdCapabilities lists what the gateway lets me send.
func (m *Model) cmdCapabilities([]string) tea.Cmd {
	if len(m.myCaps) == 0 {
		m.note("the gateway has not said what you may send", false)
		return nil
	}
	lines := []string{"you may send:"}
	for _, c := range m.myCaps {
		lines = append(lines, "  "+termtext.Line(summary.Compact(c)))
	}
	m.note(strings.Join(lines, "\n"), false)
	return nil
}

// controlCommands are the reference's controls; /help lists them on one
// line, /help CONTROL says how each is used.
func controlCommands() []command {
	return []command{
		{"pause", "<p> [seconds] [reason]", "participant/pause", (*Model).cmdPause},
		{"resume", "<p> [reason]", "participant/resume", (*Model).cmdResume},
		{"status", "<p> [fields…]", "participant/request-status", (*Model).cmdStatus},
		{"forget", "<p> [oldest|newest] [n]", "participant/forget", (*Model).cmdForget},
		{"compact", "<p> [target tokens] [reason]", "participant/compact", (*Model).cmdCompact},
		{"clear", "<p> [reason]", "participant/clear (/ui-clear empties the transcript)", (*Model).cmdClearParticipant},
		{"restart", "<p> [mode] [reason]", "participant/restart", (*Model).cmdRestart},
		{"shutdown", "<p> [reason]", "participant/shutdown", (*Model).cmdShutdown},
		{"ack", "[status]", "chat/acknowledge of the latest chat to you (default received)", (*Model).cmdAck},
		{"cancel", "[reason]", "reasoning/cancel of the open reasoning, else chat/cancel of your latest chat", (*Model).cmdCancel},
		{"target", "[show|none|ids…]", "where chats without @id go", (*Model).cmdTarget},
		{"stream", "request <p> <upload|download> [text] | close <id> [reason]", "stream/request, stream/close", (*Model).cmdStream},
		{"streams", "", "the open streams", (*Model).cmdStreams},
		{"envelope", "mcp/request tools/call <p> <tool> [JSON]", "a tool call of your own", (*Model).cmdEnvelope},
		{"capabilities", "", "what the gateway lets you send", (*Model).cmdCapabilities},
	}
}

// controlHelp is /help's line of controls.
func controlHelp() string {
	var names []string
	for _, c := range controlCommands() {
		names = append(names, "/"+c.name)
	}
	return "Controls (/help NAME for one): " + strings.Join(names, " ")
}
