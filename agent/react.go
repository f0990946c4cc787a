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
func (a *Agent) answer(env *protocol.Envelope) {
	var chat protocol.Chat
	if err := env.DecodePayload(&chat); err != nil || strings.TrimSpace(chat.Text) == "" {
		a.log.Warn("agent: chat without text ignored", "chat", env.ID, "err", err)
		return
	}
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

	if r.reasoning != "" {
		start := &protocol.Envelope{ID: r.reasoning, CorrelationID: []string{env.ID}}
		if err := a.send(ctx, start, protocol.KindReasoningStart, protocol.Reasoning{
			Message: "Thinking about: " + summary(chat.Text),
			Input:   chat.Text,
		}); err != nil {
			a.log.Warn("agent: reasoning/start not sent", "err", err)
		}
	}

	text, err := a.react(ctx, r, env.From, chat.Text)
	a.waitUnpaused(ctx) // a paused participant may not chat; a cancel ends the wait
	if a.ctx.Err() != nil {
		return // closing: send nothing more
	}
	var cancelled *cancelledError
	if errors.As(context.Cause(ctx), &cancelled) {
		a.log.Info("agent: answer cancelled", "chat", env.ID, "reason", cancelled.reason)
		a.conclude(r, map[string]any{
			"message":   "Cancelled: " + cancelled.reason,
			"cancelled": true,
			"reason":    cancelled.reason,
		})
		return
	}
	if err != nil {
		a.log.Warn("agent: no answer", "chat", env.ID, "err", err)
		a.conclude(r, protocol.Reasoning{Message: "Failed: " + err.Error()})
		text = "Sorry, I could not answer: " + err.Error()
	} else {
		a.conclude(r, protocol.Reasoning{Message: "Answer: " + summary(text)})
		a.remember(llm.Message{Role: llm.RoleUser, Content: chat.Text, Name: env.From},
			llm.Message{Role: llm.RoleAssistant, Content: text})
	}
	reply := &protocol.Envelope{ID: protocol.NewID(), To: []string{env.From}, CorrelationID: []string{env.ID}}
	a.sentAnswer(reply.ID)
	if err := a.send(a.ctx, reply, protocol.KindChat, protocol.Chat{Text: text}); err != nil {
		a.log.Warn("agent: answer not sent", "chat", env.ID, "err", err)
	}
}

// react runs the ReAct loop and returns the model's final text.
func (a *Agent) react(ctx context.Context, r *run, asker, question string) (string, error) {
	tools := a.modelTools(ctx)
	offered := make(map[string]bool, len(tools))
	for _, t := range tools {
		offered[t.Name] = true
	}
	msgs := []llm.Message{{Role: llm.RoleSystem, Content: a.systemPrompt()}}
	msgs = append(msgs, a.recentHistory()...)
	msgs = append(msgs, llm.Message{Role: llm.RoleUser, Content: question, Name: asker})

	for i := 0; i < a.cfg.MaxIterations; i++ {
		if !a.waitUnpaused(ctx) { // a pause stops the work between steps
			return "", fmt.Errorf("agent: %w", context.Cause(ctx))
		}
		resp, err := a.provider.Complete(ctx, llm.Request{Model: a.cfg.Model, Messages: msgs, Tools: tools})
		if err != nil {
			if ctx.Err() != nil {
				return "", fmt.Errorf("agent: %w", context.Cause(ctx))
			}
			return "", fmt.Errorf("model %s: %w", a.provider.Name(), err)
		}
		if len(resp.ToolCalls) == 0 {
			a.thought(ctx, r, resp, "respond", nil)
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
		msgs = append(msgs, llm.Message{Role: llm.RoleAssistant, Content: resp.Content, ToolCalls: resp.ToolCalls})
		for _, call := range resp.ToolCalls {
			out, err := a.callTool(ctx, offered, call)
			if err != nil {
				return "", err
			}
			msgs = append(msgs, llm.Message{Role: llm.RoleTool, Content: out, ToolCallID: call.ID})
		}
	}
	return "", fmt.Errorf("%w (%d)", ErrMaxIterations, a.cfg.MaxIterations)
}

// thought sends a reasoning/thought for one answer of the model.
func (a *Agent) thought(ctx context.Context, r *run, resp *llm.Response, action string, input any) {
	if r.reasoning == "" {
		return
	}
	text := resp.Reasoning
	if text == "" {
		text = resp.Content
	}
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
}

// conclude sends reasoning/conclusion when reasoning is on.
func (a *Agent) conclude(r *run, payload any) {
	if r.reasoning == "" {
		return
	}
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

// systemPrompt returns Config.SystemPrompt or the default prompt.
func (a *Agent) systemPrompt() string {
	if a.cfg.SystemPrompt != "" {
		return a.cfg.SystemPrompt
	}
	name := a.cfg.Name
	if name == "" {
		name = a.p.ID()
	}
	return fmt.Sprintf("You are %s, a helpful assistant in a MEW Protocol space shared by people, agents and tools. "+
		"Use the available tools when they help, and answer concisely.", name)
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
