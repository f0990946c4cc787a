package agent

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/mew-protocol/mew/internal/clip"
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
	text = fitAnswer(text)
	reply := &protocol.Envelope{ID: protocol.NewID(), To: []string{env.From}, CorrelationID: []string{env.ID}}
	a.sentAnswer(reply.ID)
	if err := a.send(a.ctx, reply, protocol.KindChat, protocol.Chat{Text: text}); err != nil {
		a.log.Warn("agent: answer not sent", "chat", env.ID, "err", err)
	}
}

// maxAnswerBytes bounds the text of one answer: a quarter of the gateway's
// default envelope limit (1 MiB), which leaves room for the envelope and
// for a gateway configured lower than its default.
const maxAnswerBytes = 256 << 10

// fitAnswer cuts an answer too long for a chat, saying so in it: the asker
// learns what happened instead of waiting for a chat the gateway refuses.
func fitAnswer(text string) string {
	if len(text) <= maxAnswerBytes {
		return text
	}
	kept := clip.Bytes(text, maxAnswerBytes-200)
	return kept + fmt.Sprintf("\n\n[The answer was %d KB, more than a chat carries; it is cut here, after %d KB.]", (len(text)+1023)/1024, len(kept)/1024)
}

// react runs the ReAct loop and returns the model's final text.
func (a *Agent) react(ctx context.Context, r *run, asker, question string) (string, error) {
	tools := a.modelTools(ctx, r.reasoning)
	ask := question
	if a.cfg.Prompts.Reason != "" {
		ask = render(a.cfg.Prompts.Reason, map[string]string{"input": question, "tools": toolList(llmTools(tools))})
	}
	system := llm.Message{Role: llm.RoleSystem, Content: a.systemPrompt()}
	user := llm.Message{Role: llm.RoleUser, Content: ask, Name: asker}
	msgs := append([]llm.Message{system}, a.fitHistory(ctx, system, user)...)
	msgs = append(msgs, user)
	opts := RunOptions{
		Provider:        a.provider,
		Model:           a.cfg.Model,
		Messages:        msgs,
		Objective:       question,
		Tools:           tools,
		MaxIterations:   a.cfg.MaxIterations,
		ReasoningFormat: a.cfg.ReasoningFormat,
		Prompts:         a.cfg.Prompts,
		BeforeStep: func(ctx context.Context) error {
			if !a.waitUnpaused(ctx) { // a pause stops the work between steps
				return fmt.Errorf("agent: %w", context.Cause(ctx))
			}
			return nil
		},
		OnResponse: func(resp *llm.Response) { a.thought(ctx, r, resp) },
		OnObservation: func(call llm.ToolCall, out string) {
			r.trace.write(ctx, traceEvent{Type: "observation", Tool: call.Name, Text: out})
		},
	}
	if r.trace != nil {
		opts.OnDelta = r.trace.delta(ctx)
	}
	return Run(ctx, opts)
}

// thought sends a reasoning/thought for one answer of the model.
func (a *Agent) thought(ctx context.Context, r *run, resp *llm.Response) {
	if r.reasoning == "" {
		return
	}
	msg, action := "Answering.", "respond"
	var input any
	if len(resp.ToolCalls) > 0 {
		names := make([]string, len(resp.ToolCalls))
		calls := make([]map[string]any, len(resp.ToolCalls))
		for i, c := range resp.ToolCalls {
			names[i] = c.Name
			calls[i] = map[string]any{"name": c.Name, "arguments": c.Arguments}
		}
		msg, action, input = "Calling "+strings.Join(names, ", ")+".", "tool_call", calls
	}
	payload := protocol.Reasoning{Message: msg, Reasoning: cmp.Or(resp.Reasoning, resp.Content), Action: action}
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
	if p := cmp.Or(a.cfg.Prompts.System, a.cfg.SystemPrompt); p != "" {
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
