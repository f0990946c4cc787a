package agent

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/mew-protocol/mew/llm"
	"github.com/mew-protocol/mew/protocol"
)

// maxSummary bounds the question quoted in reasoning/start.
const maxSummary = 200

// answer handles one chat: reasoning, the ReAct loop and the final chat.
func (a *Agent) answer(it *item) {
	env := it.env
	ctx, cancel := context.WithCancelCause(a.ctx)
	defer cancel(nil)
	r := &run{question: env.ID, cancel: cancel}
	if a.cfg.ReasoningEnabled {
		r.reasoning = protocol.NewID()
	}
	a.mu.Lock()
	a.active = r
	a.mu.Unlock()
	defer func() {
		a.mu.Lock()
		a.active = nil
		a.mu.Unlock()
	}()
	if it.floor {
		a.claimFloor(ctx, r)
	}

	if r.reasoning != "" {
		start := &protocol.Envelope{ID: r.reasoning, CorrelationID: []string{env.ID}}
		if err := a.send(ctx, start, protocol.KindReasoningStart, protocol.Reasoning{
			Message: "Thinking about: " + summary(it.text),
			Input:   it.text,
		}); err != nil {
			a.log.Warn("agent: reasoning/start not sent", "err", err)
		}
		r.trace = a.openTrace(ctx, r.reasoning)
	}

	text, err := a.react(ctx, r, env.From, it.text)
	a.waitUnpaused(ctx) // a paused participant may not chat; a cancel ends the wait
	if a.ctx.Err() != nil {
		return // closing: send nothing more
	}
	var y *yieldedError
	if errors.As(context.Cause(ctx), &y) {
		a.yielded(r, y)
		return
	}
	var cancelled *cancelledError
	if errors.As(context.Cause(ctx), &cancelled) {
		a.log.Info("agent: answer cancelled", "chat", env.ID, "reason", cancelled.reason)
		a.conclude(r, "cancelled", map[string]any{
			"message":   "Cancelled: " + cancelled.reason,
			"cancelled": true,
			"reason":    cancelled.reason,
		})
		return
	}
	if err != nil {
		a.log.Warn("agent: no answer", "chat", env.ID, "err", err)
		a.conclude(r, "", protocol.Reasoning{Message: "Failed: " + err.Error()})
		text = "Sorry, I could not answer: " + err.Error()
	} else {
		a.conclude(r, "", protocol.Reasoning{Message: "Answer: " + summary(text)})
		a.remember(llm.Message{Role: llm.RoleUser, Content: it.text, Name: env.From},
			llm.Message{Role: llm.RoleAssistant, Content: text})
	}
	reply := &protocol.Envelope{ID: protocol.NewID(), To: []string{env.From}, CorrelationID: []string{env.ID}}
	a.sentAnswer(reply.ID)
	if err := a.send(a.ctx, reply, protocol.KindChat, protocol.Chat{Text: text}); err != nil {
		a.log.Warn("agent: answer not sent", "chat", env.ID, "err", err)
	}
}

// step is one round of tool calls, for the scratchpad and the respond
// prompt.
type step struct {
	reasoning    string
	calls        []llm.ToolCall
	observations []string
}

// react runs the ReAct loop and returns the model's final text.
func (a *Agent) react(ctx context.Context, r *run, asker, question string) (string, error) {
	tools := a.modelTools(ctx)
	offered := make(map[string]bool, len(tools))
	for _, t := range tools {
		offered[t.Name] = true
	}
	ask := question
	if a.cfg.Prompts.Reason != "" {
		ask = render(a.cfg.Prompts.Reason, map[string]string{"input": question, "tools": toolList(tools)})
	}
	system := llm.Message{Role: llm.RoleSystem, Content: a.systemPrompt()}
	user := llm.Message{Role: llm.RoleUser, Content: ask, Name: asker}
	base := append([]llm.Message{system}, a.fitHistory(ctx, system, user)...)
	base = append(base, user)

	msgs := base // the conversation of the native format
	var steps []step
	for i := 0; i < a.cfg.MaxIterations; i++ {
		if !a.waitUnpaused(ctx) { // a pause stops the work between steps
			return "", fmt.Errorf("agent: %w", context.Cause(ctx))
		}
		if a.cfg.ReasoningFormat == FormatScratchpad && len(steps) > 0 {
			msgs = append(base[:len(base):len(base)], llm.Message{Role: llm.RoleUser, Content: scratchpad(steps)})
		}
		resp, err := a.complete(ctx, r, llm.Request{Model: a.cfg.Model, Messages: msgs, Tools: tools})
		if err != nil {
			return "", err
		}
		if len(resp.ToolCalls) == 0 {
			a.thought(ctx, r, resp, "respond", nil)
			if a.cfg.Prompts.Respond != "" && len(steps) > 0 {
				return a.respond(ctx, r, base, question, steps)
			}
			if strings.TrimSpace(resp.Content) == "" {
				return "", fmt.Errorf("model %s: empty answer (finish reason %q)", a.provider.Name(), resp.FinishReason)
			}
			return resp.Content, nil
		}
		calls := make([]map[string]any, len(resp.ToolCalls))
		for j, c := range resp.ToolCalls {
			calls[j] = map[string]any{"name": c.Name, "arguments": c.Arguments}
		}
		a.thought(ctx, r, resp, "tool_call", calls)
		s := step{reasoning: firstNonEmpty(resp.Reasoning, resp.Content), calls: resp.ToolCalls}
		msgs = append(msgs, llm.Message{Role: llm.RoleAssistant, Content: resp.Content, ToolCalls: resp.ToolCalls})
		for _, call := range resp.ToolCalls {
			out, err := a.callTool(ctx, offered, call)
			if err != nil {
				return "", err
			}
			s.observations = append(s.observations, out)
			msgs = append(msgs, llm.Message{Role: llm.RoleTool, Content: out, ToolCallID: call.ID})
			r.trace.write(ctx, traceEvent{Type: "observation", Tool: call.Name, Text: out})
		}
		steps = append(steps, s)
		if a.cfg.Prompts.Act != "" {
			msgs = append(msgs, llm.Message{Role: llm.RoleUser, Content: render(a.cfg.Prompts.Act, map[string]string{
				"objective": question, "observation": strings.Join(s.observations, "\n"), "tools": toolList(tools),
			})})
		}
	}
	return "", fmt.Errorf("%w (%d)", ErrMaxIterations, a.cfg.MaxIterations)
}

// respond asks the model, without tools, for the answer that
// Prompts.Respond describes.
func (a *Agent) respond(ctx context.Context, r *run, base []llm.Message, question string, steps []step) (string, error) {
	var obs []string
	for _, s := range steps {
		obs = append(obs, s.observations...)
	}
	prompt := render(a.cfg.Prompts.Respond, map[string]string{
		"input": question, "objective": question, "observation": strings.Join(obs, "\n"),
	})
	msgs := append(base[:len(base):len(base)], llm.Message{Role: llm.RoleUser, Content: prompt})
	resp, err := a.complete(ctx, r, llm.Request{Model: a.cfg.Model, Messages: msgs})
	if err != nil {
		return "", err
	}
	if strings.TrimSpace(resp.Content) == "" {
		return "", fmt.Errorf("model %s: empty answer (finish reason %q)", a.provider.Name(), resp.FinishReason)
	}
	return resp.Content, nil
}

// complete asks the model, streaming its output into the reasoning trace
// when one is open.
func (a *Agent) complete(ctx context.Context, r *run, req llm.Request) (*llm.Response, error) {
	var resp *llm.Response
	var err error
	if r.trace == nil {
		resp, err = a.provider.Complete(ctx, req)
	} else {
		resp, err = a.provider.Stream(ctx, req, r.trace.delta(ctx))
		r.trace.flush(ctx)
	}
	if err != nil {
		if ctx.Err() != nil {
			return nil, fmt.Errorf("agent: %w", context.Cause(ctx))
		}
		return nil, fmt.Errorf("model %s: %w", a.provider.Name(), err)
	}
	return resp, nil
}

// scratchpad writes the steps so far as one text (ReasoningFormat
// "scratchpad").
func scratchpad(steps []step) string {
	var b strings.Builder
	b.WriteString("Previous actions and observations:\n")
	for _, s := range steps {
		if s.reasoning != "" {
			b.WriteString("\nReasoning: " + s.reasoning)
		}
		for i, c := range s.calls {
			fmt.Fprintf(&b, "\nAction: tool\nTool used: %s\nArguments: %s\nObservation: %s\n", c.Name, c.Arguments, s.observations[i])
		}
	}
	b.WriteString("\nBased on the above, continue with the request: call another tool or give the answer.")
	return b.String()
}

// firstNonEmpty returns the first of its arguments that is not empty.
func firstNonEmpty(s ...string) string {
	for _, v := range s {
		if v != "" {
			return v
		}
	}
	return ""
}

// thought sends a reasoning/thought for one answer of the model.
func (a *Agent) thought(ctx context.Context, r *run, resp *llm.Response, action string, input any) {
	if r.reasoning == "" {
		return
	}
	text := firstNonEmpty(resp.Reasoning, resp.Content)
	msg := "Answering."
	if action == "tool_call" {
		names := make([]string, len(resp.ToolCalls))
		for i, c := range resp.ToolCalls {
			names[i] = c.Name
		}
		msg = "Calling " + strings.Join(names, ", ") + "."
	}
	payload := protocol.Reasoning{Message: msg, Reasoning: text, Action: action}
	if input != nil {
		raw, err := json.Marshal(input)
		if err == nil {
			payload.ActionInput = raw
		}
	}
	env := &protocol.Envelope{Context: r.reasoning}
	if err := a.send(ctx, env, protocol.KindReasoningThought, payload); err != nil {
		a.log.Warn("agent: reasoning/thought not sent", "err", err)
	}
	r.trace.write(ctx, traceEvent{Type: "thought", Text: msg, Action: action})
}

// conclude sends reasoning/conclusion when reasoning is on, and closes the
// trace with reason ("" means complete).
func (a *Agent) conclude(r *run, reason string, payload any) {
	if r.reasoning == "" {
		return
	}
	r.trace.close(a.ctx, reason)
	env := &protocol.Envelope{Context: r.reasoning}
	if err := a.send(a.ctx, env, protocol.KindReasoningConclusion, payload); err != nil {
		a.log.Warn("agent: reasoning/conclusion not sent", "err", err)
	}
}

// send sets kind and payload on env and sends it, bounded by sendTimeout.
func (a *Agent) send(ctx context.Context, env *protocol.Envelope, kind string, payload any) error {
	env.Protocol = protocol.Version
	env.Kind = kind
	if err := env.SetPayload(payload); err != nil {
		return fmt.Errorf("agent: %s: %w", kind, err)
	}
	ctx, cancel := context.WithTimeout(ctx, sendTimeout)
	defer cancel()
	if err := a.p.Send(ctx, env); err != nil {
		return fmt.Errorf("agent: %s: %w", kind, err)
	}
	return nil
}

// systemPrompt returns the configured system prompt or the default one.
func (a *Agent) systemPrompt() string {
	if p := firstNonEmpty(a.cfg.Prompts.System, a.cfg.SystemPrompt); p != "" {
		return p
	}
	return fmt.Sprintf("You are %s, a helpful assistant in a MEW Protocol space shared by people, agents and tools. "+
		"Use the available tools when they help, and answer concisely.", a.displayName())
}

// summary shortens text for a reasoning message.
func summary(text string) string {
	text = strings.Join(strings.Fields(text), " ")
	if len(text) <= maxSummary {
		return text
	}
	cut := maxSummary
	for cut > 0 && text[cut]&0xC0 == 0x80 { // not inside a UTF-8 sequence
		cut--
	}
	return text[:cut] + "…"
}
