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

// target returns the participant args name first, or notes the usage.
func (c *commands) target(args []string, usage string) (string, []string, bool) {
	if len(args) == 0 || args[0] == "" {
		c.e.note(usage, true)
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

// countThenReason reads args as an optional positive count, then the
// words of a reason: "30 busy" for /pause, "2000 too long" for /compact.
func countThenReason(args []string) (n int, reason string) {
	i := 0
	if len(args) > 0 {
		if v, err := strconv.Atoi(args[0]); err == nil && v > 0 {
			n, i = v, 1
		}
	}
	return n, reasonOf(args, i, "")
}

func (c *commands) cmdPause(args []string) tea.Cmd {
	p, rest, ok := c.target(args, "/pause <participant> [timeout seconds] [reason]")
	if !ok {
		return nil
	}
	var pl protocol.Pause
	pl.TimeoutSeconds, pl.Reason = countThenReason(rest)
	return c.e.control(protocol.KindParticipantPause, []string{p}, nil, pl)
}

func (c *commands) cmdResume(args []string) tea.Cmd {
	p, rest, ok := c.target(args, "/resume <participant> [reason]")
	if !ok {
		return nil
	}
	return c.e.control(protocol.KindParticipantResume, []string{p}, nil, protocol.Resume{Reason: reasonOf(rest, 0, "")})
}

func (c *commands) cmdStatus(args []string) tea.Cmd {
	p, rest, ok := c.target(args, "/status <participant> [fields…]")
	if !ok {
		return nil
	}
	return c.e.control(protocol.KindParticipantRequestStatus, []string{p}, nil, protocol.RequestStatus{Fields: rest})
}

func (c *commands) cmdForget(args []string) tea.Cmd {
	p, rest, ok := c.target(args, "/forget <participant> [oldest|newest] [n]")
	if !ok {
		return nil
	}
	pl := protocol.Forget{Direction: protocol.ForgetOldest}
	if len(rest) > 0 {
		if rest[0] != "oldest" && rest[0] != "newest" {
			c.e.note("/forget <participant> [oldest|newest] [n]", true)
			return nil
		}
		pl.Direction = rest[0]
	}
	if len(rest) > 1 {
		n, err := strconv.Atoi(rest[1])
		if err != nil || n < 1 {
			c.e.note("/forget: n is a count of entries", true)
			return nil
		}
		pl.Entries = n
	}
	return c.e.control(protocol.KindParticipantForget, []string{p}, nil, pl)
}

func (c *commands) cmdCompact(args []string) tea.Cmd {
	p, rest, ok := c.target(args, "/compact <participant> [target tokens] [reason]")
	if !ok {
		return nil
	}
	var pl protocol.Compact
	pl.TargetTokens, pl.Reason = countThenReason(rest)
	return c.e.control(protocol.KindParticipantCompact, []string{p}, nil, pl)
}

func (c *commands) cmdClearParticipant(args []string) tea.Cmd {
	p, rest, ok := c.target(args, "/clear <participant> [reason] (/ui-clear empties the transcript)")
	if !ok {
		return nil
	}
	return c.e.control(protocol.KindParticipantClear, []string{p}, nil, protocol.Clear{Reason: reasonOf(rest, 0, "")})
}

func (c *commands) cmdRestart(args []string) tea.Cmd {
	p, rest, ok := c.target(args, "/restart <participant> [mode] [reason]")
	if !ok {
		return nil
	}
	pl := protocol.Restart{Reason: reasonOf(rest, 1, "")}
	if len(rest) > 0 {
		pl.Mode = rest[0]
	}
	return c.e.control(protocol.KindParticipantRestart, []string{p}, nil, pl)
}

func (c *commands) cmdShutdown(args []string) tea.Cmd {
	p, rest, ok := c.target(args, "/shutdown <participant> [reason]")
	if !ok {
		return nil
	}
	return c.e.control(protocol.KindParticipantShutdown, []string{p}, nil, protocol.Shutdown{Reason: reasonOf(rest, 0, "")})
}

// cmdAck acknowledges the latest chat addressed to me (/ack [status]).
func (c *commands) cmdAck(args []string) tea.Cmd {
	last := c.lastToMe
	if last.id == "" {
		c.e.note("no chat to you to acknowledge", true)
		return nil
	}
	status := reasonOf(args, 0, "received")
	c.lastToMe = sentChat{}
	// Said at once: an acknowledgement is bookkeeping the transcript does
	// not show, so without this line /ack looked like it did nothing.
	c.e.note("acknowledged "+termtext.Line(last.to[0])+"'s chat: "+termtext.Line(status), false)
	return c.e.control(protocol.KindChatAcknowledge, []string{last.to[0]}, []string{last.id}, protocol.ChatAcknowledge{Status: status})
}

// cmdCancel cancels the open reasoning (reasoning/cancel with its
// context), or else my latest chat (chat/cancel).
func (c *commands) cmdCancel(args []string) tea.Cmd {
	reason := reasonOf(args, 0, "cleared")
	if id, r, ok := c.live.latest(); ok {
		env, err := protocol.New(protocol.KindReasoningCancel, protocol.ReasoningCancel{Reason: reason})
		if err != nil {
			c.e.note(err.Error(), true)
			return nil
		}
		env.To, env.Context = []string{r.from}, id
		return c.e.send("cancelling the reasoning of "+termtext.Line(r.from), env)
	}
	if last, ok := c.board.lastUnacked(); ok {
		return c.e.control(protocol.KindChatCancel, last.to, []string{last.id}, protocol.ChatCancel{Reason: reason})
	}
	c.e.note("nothing to cancel: no reasoning open, no chat of yours awaiting an answer", true)
	return nil
}

// cmdTarget shows or sets where chats typed without @id go.
func (c *commands) cmdTarget(args []string) tea.Cmd {
	switch {
	case len(args) == 0 || args[0] == "show":
	case args[0] == "none":
		c.target0 = []string{}
	default:
		ids := make([]string, len(args))
		for i, a := range args {
			ids[i] = strings.TrimPrefix(a, "@")
		}
		c.target0 = ids
	}
	to := c.defaultTargets()
	if len(to) == 0 {
		c.e.note("chats without @id go to everyone", false)
	} else {
		c.e.note("chats without @id go to "+names(to), false)
	}
	return nil
}

// defaultTargets are /target's choice, else the space config's.
func (c *commands) defaultTargets() []string {
	if c.target0 != nil {
		return c.target0
	}
	return c.e.o.DefaultTargets
}

// cmdStream is /stream request <p> <upload|download> [description…] and
// /stream close <stream id> [reason].
func (c *commands) cmdStream(args []string) tea.Cmd {
	usage := "/stream request <participant> <upload|download> [description…] · /stream close <stream id> [reason]"
	if len(args) < 2 {
		c.e.note(usage, true)
		return nil
	}
	switch args[0] {
	case "request":
		if len(args) < 3 || (args[2] != protocol.DirectionUpload && args[2] != protocol.DirectionDownload) {
			c.e.note(usage, true)
			return nil
		}
		return c.e.control(protocol.KindStreamRequest, []string{strings.TrimPrefix(args[1], "@")}, nil,
			protocol.StreamRequest{Direction: args[2], Description: reasonOf(args, 3, "")})
	case "close":
		return c.e.control(protocol.KindStreamClose, nil, nil, protocol.StreamClose{StreamID: args[1], Reason: reasonOf(args, 2, protocol.StreamCloseComplete)})
	}
	c.e.note(usage, true)
	return nil
}

// cmdEnvelope is /envelope mcp/request tools/call <p> <tool> [json args].
func (c *commands) cmdEnvelope(args []string) tea.Cmd {
	usage := "/envelope mcp/request tools/call <participant> <tool> [JSON arguments]"
	if len(args) < 4 || args[0] != protocol.KindMCPRequest || (args[1] != "tools/call" && args[1] != "tool/call") {
		c.e.note(usage, true)
		return nil
	}
	var params = map[string]any{"name": args[3]}
	if len(args) > 4 {
		raw := json.RawMessage(strings.Join(args[4:], " "))
		var obj map[string]any
		if json.Unmarshal(raw, &obj) != nil || obj == nil {
			c.e.note("/envelope: the arguments are not a JSON object", true)
			return nil
		}
		params["arguments"] = raw
	}
	c.rpcID++
	return c.e.control(protocol.KindMCPRequest, []string{strings.TrimPrefix(args[2], "@")}, nil,
		map[string]any{"jsonrpc": "2.0", "id": c.rpcID, "method": "tools/call", "params": params})
}

// cmdCapabilities lists what the gateway lets me send.
func (c *commands) cmdCapabilities([]string) tea.Cmd {
	if len(c.caps) == 0 {
		c.e.note("the gateway has not said what you may send", false)
		return nil
	}
	lines := []string{"you may send:"}
	for _, x := range c.caps {
		lines = append(lines, "  "+termtext.Line(summary.Compact(x)))
	}
	c.e.note(strings.Join(lines, "\n"), false)
	return nil
}

// controlCommands are the reference's controls; /help lists them on one
// line, /help CONTROL says how each is used.
func (c *commands) controlCommands() []command {
	return []command{
		{"pause", "<p> [seconds] [reason]", "participant/pause", c.cmdPause},
		{"resume", "<p> [reason]", "participant/resume", c.cmdResume},
		{"status", "<p> [fields…]", "participant/request-status", c.cmdStatus},
		{"forget", "<p> [oldest|newest] [n]", "participant/forget", c.cmdForget},
		{"compact", "<p> [target tokens] [reason]", "participant/compact", c.cmdCompact},
		{"clear", "<p> [reason]", "participant/clear (/ui-clear empties the transcript)", c.cmdClearParticipant},
		{"restart", "<p> [mode] [reason]", "participant/restart", c.cmdRestart},
		{"shutdown", "<p> [reason]", "participant/shutdown", c.cmdShutdown},
		{"ack", "[status]", "chat/acknowledge of the latest chat to you (default received)", c.cmdAck},
		{"cancel", "[reason]", "reasoning/cancel of the open reasoning, else chat/cancel of your latest chat", c.cmdCancel},
		{"target", "[show|none|ids…]", "where chats without @id go", c.cmdTarget},
		{"stream", "request <p> <upload|download> [text] | close <id> [reason]", "stream/request, stream/close", c.cmdStream},
		{"streams", "", "the open streams", c.board.cmdStreams},
		{"envelope", "mcp/request tools/call <p> <tool> [JSON]", "a tool call of your own", c.cmdEnvelope},
		{"capabilities", "", "what the gateway lets you send", c.cmdCapabilities},
	}
}

// controlHelp is /help's line of controls.
func (c *commands) controlHelp() string {
	var names []string
	for _, x := range c.controls {
		names = append(names, "/"+x.name)
	}
	return "Controls (/help NAME for one): " + strings.Join(names, " ")
}
