package auditlog

import (
	"encoding/json"
	"strconv"
	"strings"

	"github.com/mew-protocol/mew/internal/clip"
	"github.com/mew-protocol/mew/internal/summary"
	"github.com/mew-protocol/mew/internal/termtext"
	"github.com/mew-protocol/mew/protocol"
)

// Describe says in one line what an envelope carries, for people: a chat's
// text, the tool a request calls and with what, a tool result, what a
// reasoning step is doing (see internal/summary), an error's message.
// Peer text is made safe for a terminal and cut to a readable length.
func Describe(e *protocol.Envelope) string {
	var s string
	switch e.Kind {
	case protocol.KindChat:
		var c protocol.Chat
		_ = e.DecodePayload(&c)
		s = fold(c.Text)
	case protocol.KindMCPRequest, protocol.KindMCPProposal:
		s = describeCall(e.Payload)
	case protocol.KindMCPResponse:
		var m struct {
			Result json.RawMessage `json:"result"`
			Error  *struct {
				Message string `json:"message"`
			} `json:"error"`
		}
		_ = json.Unmarshal(e.Payload, &m)
		if m.Error != nil {
			s = "error: " + fold(m.Error.Message)
		} else {
			text, isErr := summary.Result(m.Result)
			s = fold(text)
			if isErr {
				s = "error: " + s
			}
		}
	case protocol.KindReasoningStart, protocol.KindReasoningThought, protocol.KindReasoningConclusion:
		var p protocol.Reasoning
		_ = e.DecodePayload(&p)
		s = summary.Step(&p)
		if e.Kind == protocol.KindReasoningStart && p.Message == "" {
			s = "starts reasoning"
		}
	case protocol.KindSystemError:
		var p protocol.SystemError
		_ = e.DecodePayload(&p)
		s = fold(p.Error + ": " + p.Message)
	case protocol.KindCapabilityGrant:
		var p protocol.Grant
		_ = e.DecodePayload(&p)
		s = "to " + p.Recipient + ": " + compactList(p.Capabilities)
		if p.TTLSeconds > 0 {
			s += " for " + strconv.FormatInt(p.TTLSeconds, 10) + " s"
		} else if p.ExpiresAt != "" {
			s += " until " + p.ExpiresAt
		}
	case protocol.KindSystemPresence:
		var p protocol.Presence
		_ = e.DecodePayload(&p)
		s = p.Participant.ID + " " + p.Event
	default:
		s = summary.Compact(e.Payload)
	}
	return termtext.Line(clip.Mark(s, 200))
}

// describeCall shows an MCP call: "tools/call add {"a":2}".
func describeCall(payload json.RawMessage) string {
	var m struct {
		Method string          `json:"method"`
		Params json.RawMessage `json:"params"`
	}
	_ = json.Unmarshal(payload, &m)
	if m.Method != "tools/call" {
		return strings.TrimSpace(m.Method + " " + summary.Compact(m.Params))
	}
	var p struct {
		Name      string          `json:"name"`
		Arguments json.RawMessage `json:"arguments"`
	}
	_ = json.Unmarshal(m.Params, &p)
	return strings.TrimSpace("tools/call " + p.Name + " " + summary.Compact(p.Arguments))
}

func compactList(list []json.RawMessage) string {
	parts := make([]string, len(list))
	for i, c := range list {
		parts[i] = summary.Compact(c)
	}
	return strings.Join(parts, ", ")
}

func fold(s string) string { return strings.Join(strings.Fields(s), " ") }
