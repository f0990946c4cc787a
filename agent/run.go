package agent

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/mew-protocol/mew/llm"
)

// Tool is a tool a Run may call: what the model sees, and how to call it.
type Tool struct {
	llm.Tool
	// Call runs the tool with the model's arguments (a JSON object) and
	// returns what the model is told. An error is told to the model as
	// "Error: ..." so that it can react, unless the run's context ended:
	// then the run stops.
	Call func(ctx context.Context, arguments json.RawMessage) (string, error)
}

// RunOptions configures one ReAct run: a conversation, tools, and what to
// tell about each step.
type RunOptions struct {
	// Provider is the model; required.
	Provider llm.Provider
	// Model, when set, overrides the provider's model.
	Model string
	// Messages is the conversation so far: usually a system prompt, the
	// history and the question.
	Messages []llm.Message
	// Objective is the question, for the Act and Respond prompts.
	Objective string
	// Tools the model may call.
	Tools []Tool
	// MaxIterations bounds the model calls (default 10).
	MaxIterations int
	// ReasoningFormat is FormatNative (default) or FormatScratchpad.
	ReasoningFormat string
	// Prompts.Act and Prompts.Respond are used as Config describes them;
	// the other prompts belong to the caller's Messages.
	Prompts Prompts
	// BeforeStep, when set, runs before each model call; an error stops
	// the run with it (the agent waits there while paused).
	BeforeStep func(ctx context.Context) error
	// OnDelta, when set, receives the model's output as it is generated:
	// the model is then called in streaming mode.
	OnDelta func(llm.Delta)
	// OnResponse, when set, is called with each answer of the model,
	// before its tool calls run.
	OnResponse func(resp *llm.Response)
	// OnObservation, when set, is called with each tool result.
	OnObservation func(call llm.ToolCall, result string)
}

// step is one round of tool calls, for the scratchpad and the respond
// prompt.
type step struct {
	reasoning    string
	calls        []llm.ToolCall
	observations []string
}

// Run runs the ReAct loop: it asks the model, runs the tools it calls, gives
// it the results, and asks again, until the model answers without calling a
// tool (its text is the result), MaxIterations model calls were made
// (ErrMaxIterations), the model fails, or ctx ends (an error wrapping
// context.Cause(ctx)). A call of a tool not in Tools is answered to the
// model as an error.
func Run(ctx context.Context, opts RunOptions) (string, error) {
	if opts.Provider == nil {
		return "", ErrNoProvider
	}
	if opts.MaxIterations <= 0 {
		opts.MaxIterations = DefaultMaxIterations
	}
	tools := make([]llm.Tool, len(opts.Tools))
	byName := make(map[string]Tool, len(opts.Tools))
	for i, t := range opts.Tools {
		tools[i] = t.Tool
		byName[t.Name] = t
	}
	base := opts.Messages[:len(opts.Messages):len(opts.Messages)]
	msgs := base // the conversation of the native format
	var steps []step
	for i := 0; i < opts.MaxIterations; i++ {
		if opts.BeforeStep != nil {
			if err := opts.BeforeStep(ctx); err != nil {
				return "", err
			}
		}
		if opts.ReasoningFormat == FormatScratchpad && len(steps) > 0 {
			msgs = append(base, llm.Message{Role: llm.RoleUser, Content: scratchpad(steps)})
		}
		resp, err := opts.complete(ctx, llm.Request{Model: opts.Model, Messages: msgs, Tools: tools})
		if err != nil {
			return "", err
		}
		if len(resp.ToolCalls) == 0 {
			if opts.Prompts.Respond != "" && len(steps) > 0 {
				return opts.respond(ctx, base, steps)
			}
			return opts.final(resp)
		}
		s := step{reasoning: cmp.Or(resp.Reasoning, resp.Content), calls: resp.ToolCalls}
		msgs = append(msgs, llm.Message{Role: llm.RoleAssistant, Content: resp.Content, ToolCalls: resp.ToolCalls})
		for _, call := range resp.ToolCalls {
			out, err := callOne(ctx, byName, call)
			if err != nil {
				return "", err
			}
			s.observations = append(s.observations, out)
			msgs = append(msgs, llm.Message{Role: llm.RoleTool, Content: out, ToolCallID: call.ID})
			if opts.OnObservation != nil {
				opts.OnObservation(call, out)
			}
		}
		steps = append(steps, s)
		if opts.Prompts.Act != "" {
			msgs = append(msgs, llm.Message{Role: llm.RoleUser, Content: render(opts.Prompts.Act, map[string]string{
				"objective": opts.Objective, "observation": strings.Join(s.observations, "\n"), "tools": toolList(tools),
			})})
		}
	}
	return "", fmt.Errorf("%w (%d)", ErrMaxIterations, opts.MaxIterations)
}

// callOne runs one tool call; err is non-nil only when ctx ended.
func callOne(ctx context.Context, tools map[string]Tool, call llm.ToolCall) (string, error) {
	t, ok := tools[call.Name]
	if !ok || t.Call == nil {
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
	out, err := t.Call(ctx, args)
	if err != nil {
		if ctx.Err() != nil {
			return "", fmt.Errorf("agent: tool %s: %w", call.Name, context.Cause(ctx))
		}
		return "Error: " + err.Error(), nil
	}
	return out, nil
}

// respond asks the model, without tools, for the answer that
// Prompts.Respond describes.
func (o *RunOptions) respond(ctx context.Context, base []llm.Message, steps []step) (string, error) {
	var obs []string
	for _, s := range steps {
		obs = append(obs, s.observations...)
	}
	prompt := render(o.Prompts.Respond, map[string]string{
		"input": o.Objective, "objective": o.Objective, "observation": strings.Join(obs, "\n"),
	})
	msgs := append(base, llm.Message{Role: llm.RoleUser, Content: prompt})
	resp, err := o.complete(ctx, llm.Request{Model: o.Model, Messages: msgs})
	if err != nil {
		return "", err
	}
	return o.final(resp)
}

// final returns the text of the model's last answer.
func (o *RunOptions) final(resp *llm.Response) (string, error) {
	if strings.TrimSpace(resp.Content) == "" {
		return "", fmt.Errorf("model %s: empty answer (finish reason %q)", o.Provider.Name(), resp.FinishReason)
	}
	return resp.Content, nil
}

// complete asks the model, streaming when OnDelta is set, and tells
// OnResponse.
func (o *RunOptions) complete(ctx context.Context, req llm.Request) (*llm.Response, error) {
	var resp *llm.Response
	var err error
	if o.OnDelta == nil {
		resp, err = o.Provider.Complete(ctx, req)
	} else {
		resp, err = o.Provider.Stream(ctx, req, o.OnDelta)
	}
	if err != nil {
		if ctx.Err() != nil {
			return nil, fmt.Errorf("agent: %w", context.Cause(ctx))
		}
		return nil, fmt.Errorf("model %s: %w", o.Provider.Name(), err)
	}
	if resp == nil {
		return nil, fmt.Errorf("model %s: %w", o.Provider.Name(), errors.New("no answer"))
	}
	if o.OnResponse != nil {
		o.OnResponse(resp)
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
