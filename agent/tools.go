package agent

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/mew-protocol/mew/llm"
	"github.com/mew-protocol/mew/participant"
	"github.com/mew-protocol/mew/protocol"
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
// discoveries under way. Each is called with participant.RequestWith, as a
// step of reasoning (the id of its reasoning/start; "" when there is none).
func (a *Agent) modelTools(ctx context.Context, reasoning string) []Tool {
	if a.cfg.DiscoveryWait > 0 {
		wctx, cancel := context.WithTimeout(ctx, a.cfg.DiscoveryWait)
		if err := a.p.WaitForPendingDiscoveries(wctx); err != nil && ctx.Err() == nil {
			a.log.Info("agent: tool discovery still under way; using the tools known so far", "err", err)
		}
		cancel()
	}
	var tools []Tool
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
		pid, tool := t.Participant, t.Name
		tools = append(tools, Tool{
			Tool: llm.Tool{
				Name:        name,
				Description: fmt.Sprintf("%s (tool %q of participant %q)", desc, t.Name, t.Participant),
				Parameters:  t.InputSchema,
			},
			Call: func(ctx context.Context, args json.RawMessage) (string, error) {
				return a.callTool(ctx, pid, tool, reasoning, args)
			},
		})
	}
	return tools
}

// llmTools returns what the model sees of tools.
func llmTools(tools []Tool) []llm.Tool {
	out := make([]llm.Tool, len(tools))
	for i, t := range tools {
		out[i] = t.Tool
	}
	return out
}

// callTool calls tool of participant pid with participant.RequestWith: a
// request, or a proposal when the agent may only propose. Its context is the
// reasoning it is a step of (spec 3.5.1: the reasoning/start id is the
// context of what follows), which ties the call to that reasoning for
// everyone reading the space or its log.
func (a *Agent) callTool(ctx context.Context, pid, tool, reasoning string, args json.RawMessage) (string, error) {
	payload := map[string]any{
		"method": "tools/call",
		"params": map[string]any{"name": tool, "arguments": args},
	}
	res, err := a.requestTelling(ctx, pid, tool, reasoning, payload)
	if err != nil {
		var rej *participant.RejectedError
		var ae *participant.ApprovalError
		switch {
		case ctx.Err() != nil:
		case errors.As(err, &ae):
			return "", fmt.Errorf("the call of %s on %s needed approval under the space's rule %s, and it ended %s: %w",
				tool, pid, ae.Approval.Rule, strings.ReplaceAll(ae.Approval.State, "_", " "), err)
		case errors.As(err, &rej):
			// Who said no, why and in their words, for the model to pass on
			// (the offline model reads this wording: llm rejectionText).
			why := ""
			if rej.Reason != "" && rej.Reason != "unknown" {
				why = " (reason: " + rej.Reason + ")"
			}
			if rej.Message != "" {
				why += `: "` + rej.Message + `"`
			}
			return "", fmt.Errorf("%s rejected the proposal to call %s on %s%s", rej.By, tool, pid, why)
		case errors.Is(err, participant.ErrProposalTimedOut):
			// Words for the person, not a deadline's error string: nobody
			// said no, nobody was there to say yes.
			return "", fmt.Errorf("the call of %s on %s needs someone's approval, and nobody approved or rejected it within %s, so the request was withdrawn; it can be asked again when someone is there to review it",
				tool, pid, a.p.ProposalTimeout().Round(time.Second))
		}
		return "", err
	}
	return textForModel(res), nil
}

// requestTelling is RequestWith, telling the space (a reasoning/thought in
// the call's reasoning) how the call's proposal stands under the space's
// approval policy while it waits: "waiting for 2 of 3 approvers" rather
// than silence. The request runs on a goroutine of its own, which ends
// when it returns; this one says what the gateway announces meanwhile.
func (a *Agent) requestTelling(ctx context.Context, pid, tool, reasoning string, payload any) (json.RawMessage, error) {
	if reasoning == "" {
		// Nowhere to say it (reasoning is off): no goroutine to tell.
		return a.p.RequestWith(ctx, pid, payload, participant.RequestOptions{})
	}
	states := make(chan protocol.Approval, 8)
	type answer struct {
		res json.RawMessage
		err error
	}
	done := make(chan answer, 1)
	go func() {
		res, err := a.p.RequestWith(ctx, pid, payload, participant.RequestOptions{
			Context: reasoning,
			// On the client's dispatch goroutine: never wait there.
			OnApproval: func(ap protocol.Approval) {
				select {
				case states <- ap:
				default:
				}
			},
		})
		done <- answer{res, err}
	}()
	for {
		select {
		case ap := <-states:
			a.approvalThought(ctx, reasoning, tool, pid, ap)
		case ans := <-done:
			return ans.res, ans.err
		}
	}
}

// approvalThought says, in reasoning, how a proposal of the agent stands:
// who must approve it and how many more, or that it was approved.
func (a *Agent) approvalThought(ctx context.Context, reasoning, tool, pid string, ap protocol.Approval) {
	var msg string
	switch ap.State {
	case protocol.ApprovalAwaiting, protocol.ApprovalEscalated:
		msg = fmt.Sprintf("Waiting for %d of %d approvers (%s) to approve calling %s on %s, under the space's rule %s.",
			ap.Remaining, len(ap.Approvers), strings.Join(ap.Approvers, ", "), tool, pid, ap.Rule)
		if ap.State == protocol.ApprovalEscalated {
			msg = "Escalated. " + msg
		}
		if ap.Reason != "" {
			msg += " The rule says: " + ap.Reason + "."
		}
	case protocol.ApprovalApproved:
		msg = fmt.Sprintf("Approved by %s; waiting for someone to carry out %s on %s.", strings.Join(ap.ApprovedBy, ", "), tool, pid)
	default:
		return // the call ends, and says how
	}
	env := &protocol.Envelope{Context: reasoning}
	if err := a.send(ctx, env, protocol.KindReasoningThought, protocol.Reasoning{Message: msg, Action: "await_approval"}); err != nil {
		a.log.Warn("agent: reasoning/thought not sent", "err", err)
	}
}

// textForModel turns a tools/call result into text for the model: the text
// items of its content, "Error: " first when isError is set, the raw JSON when
// there is no text.
func textForModel(raw json.RawMessage) string {
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
