package llm

import (
	"cmp"
	"encoding/json"
	"strconv"
	"strings"
	"unicode/utf8"
)

// accumulator assembles a streamed answer and reports its pieces.
type accumulator struct {
	names     *toolNames
	emit      func(Delta)
	chunks    int
	content   strings.Builder
	reasoning strings.Builder
	calls     []*callParts
	byWire    map[int64]int // the server's index → position in calls
	finish    string
	model     string
	usage     Usage
}

type callParts struct {
	id, name string
	args     strings.Builder
}

func (a *accumulator) add(ch *wireChunk) {
	a.chunks++
	if a.model == "" {
		a.model = ch.Model
	}
	if ch.Usage != nil {
		a.usage = ch.Usage.usage()
	}
	for _, c := range ch.Choices {
		if c.Index != 0 {
			continue
		}
		if r := c.Delta.reasoning(); r != "" {
			a.reasoning.WriteString(r)
			a.send(Delta{Reasoning: r})
		}
		if s := text(c.Delta.Content); s != "" {
			a.content.WriteString(s)
			a.send(Delta{Content: s})
		}
		for _, tc := range c.Delta.ToolCalls {
			if tc.Type != "" && tc.Type != "function" {
				continue // a custom tool, which no request of ours offers
			}
			pos, ok := a.byWire[tc.Index]
			// A new id at a known index is a new call: some servers
			// send every call whole at index 0.
			if !ok || (tc.ID != "" && a.calls[pos].id != "" && tc.ID != a.calls[pos].id) {
				pos = len(a.calls)
				a.calls = append(a.calls, &callParts{})
				a.byWire[tc.Index] = pos
			}
			call := a.calls[pos]
			args := argumentText(tc.Function.Arguments)
			d := ToolCallDelta{Index: pos, Arguments: args}
			if call.id == "" && tc.ID != "" {
				call.id, d.ID = tc.ID, tc.ID
			}
			if call.name == "" && tc.Function.Name != "" {
				call.name = a.names.caller(tc.Function.Name)
				d.Name = call.name
			}
			call.args.WriteString(args)
			if d.ID != "" || d.Name != "" || d.Arguments != "" {
				a.send(Delta{ToolCall: &d})
			}
		}
		if c.FinishReason != "" {
			a.finish = c.FinishReason
		}
	}
}

func (a *accumulator) send(d Delta) {
	if a.emit != nil {
		a.emit(d)
	}
}

func (a *accumulator) response() *Response {
	r := &Response{
		Content:      a.content.String(),
		Reasoning:    a.reasoning.String(),
		FinishReason: FinishReason(a.finish),
		Usage:        a.usage,
		Model:        a.model,
	}
	for i, c := range a.calls {
		id := c.id
		if id == "" {
			id = "call_" + strconv.Itoa(i)
		}
		r.ToolCalls = append(r.ToolCalls, ToolCall{ID: id, Name: c.name, Arguments: arguments(c.args.String())})
	}
	settle(r)
	return r
}

// settle makes the finish reason agree with the tool calls: some servers
// say "stop", or nothing, for an answer that calls tools.
func settle(r *Response) {
	if len(r.ToolCalls) > 0 && (r.FinishReason == "" || r.FinishReason == FinishStop) {
		r.FinishReason = FinishToolCalls
	}
	if r.FinishReason == "" {
		r.FinishReason = FinishStop
	}
}

// arguments makes a model's argument text valid JSON: {} for nothing, the
// text itself when it is JSON, else the text as a JSON string.
func arguments(s string) json.RawMessage {
	t := strings.TrimSpace(s)
	if t == "" {
		return json.RawMessage("{}")
	}
	if json.Valid([]byte(t)) {
		return json.RawMessage(t)
	}
	b, _ := json.Marshal(s) // a string always marshals
	return b
}

// wireArguments is the inverse of arguments, for sending a call back.
func wireArguments(raw json.RawMessage) string {
	return cmp.Or(argumentText(raw), "{}")
}

// speakerName makes a message's Name one the API accepts.
func speakerName(s string) string {
	w := sanitizeName(s)
	if w == "" {
		return "user"
	}
	return w
}

// toolNames maps the caller's tool names to names the API accepts
// (^[a-zA-Z0-9_-]{1,64}$) and back.
type toolNames struct {
	toWire, fromWire map[string]string
}

func newToolNames(names []string) *toolNames {
	n := &toolNames{toWire: map[string]string{}, fromWire: map[string]string{}}
	// Names that are already fine keep themselves, so that they never
	// collide with a rewritten one.
	for _, name := range names {
		if sanitizeName(name) == name && name != "" {
			n.toWire[name], n.fromWire[name] = name, name
		}
	}
	for _, name := range names {
		if _, done := n.toWire[name]; done {
			continue
		}
		base := sanitizeName(name)
		if base == "" {
			base = "tool"
		}
		w := base
		for i := 2; ; i++ {
			if _, taken := n.fromWire[w]; !taken {
				break
			}
			suffix := "_" + strconv.Itoa(i)
			w = base[:min(len(base), 64-len(suffix))] + suffix
		}
		n.toWire[name], n.fromWire[w] = w, name
	}
	return n
}

func (n *toolNames) wire(name string) string {
	if w, ok := n.toWire[name]; ok {
		return w
	}
	return name
}

func (n *toolNames) caller(wire string) string {
	if c, ok := n.fromWire[wire]; ok {
		return c
	}
	return wire
}

// sanitizeName replaces each character outside [a-zA-Z0-9_-] with '_' and
// cuts the result to 64 bytes.
func sanitizeName(s string) string {
	var b strings.Builder
	for _, r := range s {
		if r < utf8.RuneSelf && (r == '_' || r == '-' || r >= '0' && r <= '9' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z') {
			b.WriteRune(r)
		} else {
			b.WriteByte('_')
		}
		if b.Len() == 64 {
			break
		}
	}
	return b.String()
}
