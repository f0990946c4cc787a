package agent

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/mew-protocol/mew/llm"
	"github.com/mew-protocol/mew/participant"
)

// ToolName returns the name under which the agent offers tool of participant
// to its model: "<participant>/<tool>". SplitToolName reverses it by cutting
// at the first "/", so the participant id must not contain "/" (nor be empty):
// such an id gives an error wrapping ErrAmbiguousToolName, and its tools are
// not offered. Tool names may contain anything but must not be empty.
func ToolName(participantID, tool string) (string, error) {
	if participantID == "" || strings.Contains(participantID, "/") {
		return "", fmt.Errorf("%w: participant id %q must be non-empty and contain no \"/\"", ErrAmbiguousToolName, participantID)
	}
	if tool == "" {
		return "", fmt.Errorf("%w: empty tool name of participant %q", ErrAmbiguousToolName, participantID)
	}
	return participantID + "/" + tool, nil
}

// SplitToolName returns the participant and the tool of a name made by
// ToolName; ok is false when name is not one.
func SplitToolName(name string) (participantID, tool string, ok bool) {
	participantID, tool, ok = strings.Cut(name, "/")
	if !ok || participantID == "" || tool == "" {
		return "", "", false
	}
	return participantID, tool, true
}

// modelTools returns the discovered tools of the other participants as the
// model sees them, after waiting (at most Config.DiscoveryWait) for the
// discoveries under way.
func (a *Agent) modelTools(ctx context.Context) []llm.Tool {
	if a.cfg.DiscoveryWait > 0 {
		wctx, cancel := context.WithTimeout(ctx, a.cfg.DiscoveryWait)
		if err := a.p.WaitForPendingDiscoveries(wctx); err != nil && ctx.Err() == nil {
			a.log.Info("agent: tool discovery still under way; using the tools known so far", "err", err)
		}
		cancel()
	}
	var tools []llm.Tool
	for _, t := range a.p.AvailableTools() {
		name, err := ToolName(t.Participant, t.Name)
		if err != nil {
			a.log.Warn("agent: tool not offered to the model", "participant", t.Participant, "tool", t.Name, "err", err)
			continue
		}
		desc := t.Description
		if desc == "" {
			desc = t.Name
		}
		tools = append(tools, llm.Tool{
			Name:        name,
			Description: fmt.Sprintf("%s (tool %q of participant %q)", desc, t.Name, t.Participant),
			Parameters:  t.InputSchema,
		})
	}
	return tools
}

// callTool runs one tool call of the model and returns what the model is
// told: the tool's text, or the error as text. err is non-nil only when ctx
// ended.
func (a *Agent) callTool(ctx context.Context, offered map[string]bool, call llm.ToolCall) (string, error) {
	pid, tool, ok := SplitToolName(call.Name)
	if !ok || !offered[call.Name] {
		return fmt.Sprintf("Error: unknown tool %q", call.Name), nil
	}
	args := call.Arguments
	if len(args) == 0 {
		args = json.RawMessage(`{}`)
	}
	var obj map[string]json.RawMessage
	if err := json.Unmarshal(args, &obj); err != nil || obj == nil {
		return fmt.Sprintf("Error: the arguments of %s must be a JSON object, got %s", call.Name, args), nil
	}
	payload := map[string]any{
		"method": "tools/call",
		"params": map[string]any{"name": tool, "arguments": obj},
	}
	res, err := a.p.Request(ctx, pid, payload)
	if err != nil {
		if ctx.Err() != nil {
			return "", fmt.Errorf("agent: tool %s: %w", call.Name, context.Cause(ctx))
		}
		var rej *participant.RejectedError
		if errors.As(err, &rej) {
			return "Error: the call was proposed and " + rej.Error(), nil
		}
		return "Error: " + err.Error(), nil
	}
	return resultText(res), nil
}

// resultText turns a tools/call result into text for the model: the text
// items of its content, "Error: " first when isError is set, the raw JSON when
// there is no text.
func resultText(raw json.RawMessage) string {
	var r struct {
		Content []participant.Content `json:"content"`
		IsError bool                  `json:"isError"`
	}
	if err := json.Unmarshal(raw, &r); err != nil {
		return string(raw)
	}
	var texts []string
	for _, c := range r.Content {
		if c.Type == "text" {
			texts = append(texts, c.Text)
		}
	}
	text := strings.Join(texts, "\n")
	if len(texts) == 0 {
		text = string(raw)
	}
	if r.IsError {
		return "Error: " + text
	}
	return text
}
