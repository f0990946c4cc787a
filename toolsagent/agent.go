package toolsagent

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/google/uuid"

	"github.com/mew-protocol/mew/agent"
	"github.com/mew-protocol/mew/internal/clip"
	"github.com/mew-protocol/mew/llm"
)

// DefaultConnectTimeout bounds starting and initializing one MCP server.
const DefaultConnectTimeout = 60 * time.Second

// Errors a call may fail with (besides *ArgumentError).
var (
	// ErrUnknownTool: the definition has no tool of that name.
	ErrUnknownTool = errors.New("toolsagent: unknown tool")
	// ErrTimeout: the call ran longer than Definition.Timeout.
	ErrTimeout = errors.New("toolsagent: the call timed out")
	// ErrClosed: the agent was closed.
	ErrClosed = errors.New("toolsagent: closed")
)

// Options configures an Agent.
type Options struct {
	// Definition is what the agent serves; required.
	Definition *Definition
	// Provider is the model; nil means the one Definition.Model selects
	// (agent.Config.Provider with Getenv).
	Provider llm.Provider
	// Getenv reads the environment: the OPENAI_* variables when Provider is
	// nil, and ${VAR} in the servers' env and headers. Nil means os.Getenv.
	Getenv func(string) string
	// Environ is the environment the stdio servers start with, before their
	// env entries; nil means os.Environ().
	Environ []string
	// Logger receives diagnostics, and the stdio servers' standard error
	// line by line; nil means none.
	Logger *slog.Logger
	// ConnectTimeout bounds starting and initializing each MCP server
	// (default DefaultConnectTimeout).
	ConnectTimeout time.Duration
}

// Agent runs the calls of a tools agent: each fills its tool's prompt and
// runs a fresh headless ReAct session (agent.Run) with the tools the agent
// may use without approval. Serve it with ServeMCP, ServeStreamableHTTP or
// ServeSpace. It is safe for concurrent use.
type Agent struct {
	def      *Definition
	provider llm.Provider
	log      *slog.Logger
	servers  []*serverConn             // connected MCP servers with PermissionNever
	sem      chan struct{}             // bounds the calls run at once
	space    atomic.Pointer[spaceConn] // set while ServeSpace runs
	history  history

	ctx       context.Context // cancelled by Close: ends the calls
	cancel    context.CancelFunc
	closeOnce sync.Once
}

// New checks the options, selects the model and connects the MCP servers
// that may be used without approval (the others are never started), each
// within Options.ConnectTimeout. A server that fails to start is an error.
func New(ctx context.Context, opts Options) (*Agent, error) {
	d := opts.Definition
	if d == nil {
		return nil, errors.New("toolsagent: no definition")
	}
	if len(d.Tools) == 0 {
		return nil, errors.New("toolsagent: the definition has no tools")
	}
	for _, t := range d.Tools {
		if msg := checkToolName(t.Name); msg != "" {
			return nil, fmt.Errorf("toolsagent: tool %q: %s", t.Name, msg)
		}
	}
	getenv := opts.Getenv
	if getenv == nil {
		getenv = os.Getenv
	}
	log := opts.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	provider := opts.Provider
	if provider == nil {
		p, err := d.Model.Provider(getenv)
		if err != nil {
			return nil, fmt.Errorf("toolsagent: %w", err)
		}
		provider = p
	}
	timeout := opts.ConnectTimeout
	if timeout <= 0 {
		timeout = DefaultConnectTimeout
	}
	n := d.MaxConcurrentCalls
	if n <= 0 {
		n = DefaultMaxConcurrentCalls
	}
	actx, cancel := context.WithCancel(context.Background())
	a := &Agent{def: d, provider: provider, log: log, sem: make(chan struct{}, n), ctx: actx, cancel: cancel}
	a.history.max = d.Model.HistoryLength
	if a.history.max == 0 {
		a.history.max = agent.DefaultHistoryLength
	}
	environ := opts.Environ
	if environ == nil {
		environ = os.Environ()
	}
	for _, s := range d.Servers {
		if s.Permission != PermissionNever {
			log.Info("toolsagent: not starting an MCP server whose calls need approval", "server", s.Name, "permission", s.Permission)
			continue
		}
		sc, err := connectServer(ctx, s, serverEnv{dir: d.Dir, getenv: getenv, environ: environ}, log, timeout)
		if err != nil {
			_ = a.Close()
			return nil, err
		}
		a.servers = append(a.servers, sc)
	}
	return a, nil
}

// Definition returns the agent's definition.
func (a *Agent) Definition() *Definition { return a.def }

// Close ends the calls under way (they fail with ErrClosed) and stops the
// MCP servers. It does not wait for the servers being served: end them
// first (cancel the contexts of ServeMCP, ServeStreamableHTTP and
// ServeSpace).
func (a *Agent) Close() error {
	var errs []error
	a.closeOnce.Do(func() {
		a.cancel()
		for _, s := range a.servers {
			if err := s.close(); err != nil {
				errs = append(errs, err)
			}
		}
	})
	return errors.Join(errs...)
}

// Step kinds.
const (
	// StepModel is an answer of the model: tool calls, or the final text.
	StepModel = "model"
	// StepTool is the result of one tool call.
	StepTool = "tool"
)

// Step is one step of a call's run, as CallOptions.OnStep receives it.
type Step struct {
	// Kind is StepModel or StepTool.
	Kind string
	// N numbers the model's answers from 1; a tool step has the number of
	// the answer that called it.
	N int
	// Text is the model's reasoning or text (StepModel), or the tool's
	// result (StepTool).
	Text string
	// Calls are the tools the model called; none in its final answer.
	Calls []llm.ToolCall
	// Tool and Arguments name the call a StepTool answers.
	Tool      string
	Arguments json.RawMessage
}

// Summary describes the step in one line.
func (s Step) Summary() string {
	switch {
	case s.Kind == StepTool:
		return fmt.Sprintf("%s returned: %s", s.Tool, clip.Mark(strings.Join(strings.Fields(s.Text), " "), 200))
	case len(s.Calls) > 0:
		names := make([]string, len(s.Calls))
		for i, c := range s.Calls {
			names[i] = c.Name
		}
		return "Calling " + strings.Join(names, ", ") + "."
	}
	return "Answering."
}

// CallOptions tunes one call.
type CallOptions struct {
	// ContextID names the call's session (in logs, reasoning and the
	// result); empty means a new random id.
	ContextID string
	// OnStart, when set, is told the filled prompt and the names of the
	// tools offered to the model once the arguments passed their checks,
	// before the model is asked, on the calling goroutine.
	OnStart func(prompt string, tools []string)
	// OnStep, when set, is told each step as it happens, on the calling
	// goroutine.
	OnStep func(Step)
}

// Result is what a call answered.
type Result struct {
	// Text is the model's final answer, the tool result.
	Text string
	// ContextID names the call's session.
	ContextID string
	// Prompt is the filled prompt the session started with.
	Prompt string
	// Tools are the names of the tools the model was offered.
	Tools []string
	// Steps counts the model's answers.
	Steps int
	// Structured is the answer as a compact JSON object that fits the
	// tool's output schema; nil for a tool without one.
	Structured json.RawMessage
}

// Call runs the tool name with args (a JSON object): it checks the
// arguments (an *ArgumentError lists every violation), fills the prompt
// and runs a fresh headless session, its own context id and no history
// (unless Definition.SharedHistory), with the tools the agent may use
// without approval, for at most Definition.Model.MaxIterations model calls
// and Definition.Timeout. It returns the model's final answer (for a tool
// with an output schema, also as Result.Structured; an answer that does not
// fit the schema fails with an *OutputError). ctx ends
// the call early; a call that ran out of time fails with ErrTimeout, and
// one under way when the agent closes with ErrClosed.
func (a *Agent) Call(ctx context.Context, name string, args json.RawMessage, opts CallOptions) (*Result, error) {
	t, ok := a.def.Tool(name)
	if !ok {
		return nil, fmt.Errorf("%w: %q", ErrUnknownTool, name)
	}
	prompt, err := t.Fill(args)
	if err != nil {
		return nil, err
	}
	id := opts.ContextID
	if id == "" {
		id = uuid.NewString()
	}
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	stop := context.AfterFunc(a.ctx, func() { cancel(ErrClosed) })
	defer stop()
	timeout := a.def.Timeout
	if timeout <= 0 {
		timeout = DefaultTimeout
	}
	ctx, cancelTimeout := context.WithTimeoutCause(ctx, timeout, ErrTimeout)
	defer cancelTimeout()

	select {
	case a.sem <- struct{}{}:
		defer func() { <-a.sem }()
	case <-ctx.Done():
		return nil, a.failure(ctx, name, timeout, ctx.Err())
	}
	log := a.log.With("tool", name, "context", id)
	tools := a.tools(ctx)
	res := &Result{ContextID: id, Prompt: prompt, Tools: make([]string, len(tools))}
	for i, tl := range tools {
		res.Tools[i] = tl.Name
	}
	log.Info("toolsagent: call", "tools", len(tools))
	if opts.OnStart != nil {
		opts.OnStart(prompt, res.Tools)
	}
	step := func(s Step) {
		if opts.OnStep != nil {
			opts.OnStep(s)
		}
	}
	user := llm.Message{Role: llm.RoleUser, Content: prompt}
	msgs := append([]llm.Message{{Role: llm.RoleSystem, Content: a.systemPrompt()}}, a.history.get(a.def.SharedHistory)...)
	msgs = append(msgs, user)
	text, err := agent.Run(ctx, agent.RunOptions{
		Provider:        a.provider,
		Model:           a.def.Model.Model,
		Messages:        msgs,
		Objective:       prompt,
		Tools:           tools,
		MaxIterations:   a.def.Model.MaxIterations,
		ReasoningFormat: a.def.Model.ReasoningFormat,
		Prompts:         a.def.Model.Prompts,
		OnResponse: func(resp *llm.Response) {
			res.Steps++
			text := resp.Content
			if len(resp.ToolCalls) > 0 && resp.Reasoning != "" {
				text = resp.Reasoning
			}
			step(Step{Kind: StepModel, N: res.Steps, Text: text, Calls: resp.ToolCalls})
		},
		OnObservation: func(call llm.ToolCall, out string) {
			step(Step{Kind: StepTool, N: res.Steps, Text: out, Tool: call.Name, Arguments: call.Arguments})
		},
	})
	if err != nil {
		err = a.failure(ctx, name, timeout, err)
		log.Info("toolsagent: call failed", "err", err)
		return nil, err
	}
	if a.def.SharedHistory {
		a.history.add(user, llm.Message{Role: llm.RoleAssistant, Content: text})
	}
	if res.Structured, err = t.Structured(text); err != nil {
		log.Info("toolsagent: call failed", "err", err)
		return nil, err
	}
	res.Text = text
	log.Info("toolsagent: call done", "steps", res.Steps)
	return res, nil
}

// failure explains why a call failed: its timeout, the agent closing, a
// cancellation, or err.
func (a *Agent) failure(ctx context.Context, tool string, timeout time.Duration, err error) error {
	if ctx.Err() != nil {
		switch cause := context.Cause(ctx); {
		case errors.Is(cause, ErrTimeout):
			return fmt.Errorf("%w: %s ran for %s", ErrTimeout, tool, timeout)
		case errors.Is(cause, ErrClosed):
			return fmt.Errorf("%w: %s was stopped", ErrClosed, tool)
		default:
			return fmt.Errorf("toolsagent: %s: cancelled: %w", tool, cause)
		}
	}
	return fmt.Errorf("toolsagent: %s: %w", tool, err)
}

// systemPrompt returns the configured system prompt or the default one.
func (a *Agent) systemPrompt() string {
	m := a.def.Model
	if m.Prompts.System != "" {
		return m.Prompts.System
	}
	if m.SystemPrompt != "" {
		return m.SystemPrompt
	}
	var b strings.Builder
	fmt.Fprintf(&b, "You are %s", a.def.Name)
	if a.def.Description != "" {
		fmt.Fprintf(&b, ": %s", strings.TrimSpace(a.def.Description))
	}
	b.WriteString("\nA program calls you as a tool: each request comes from it, not from a person in a conversation. " +
		"Do what the request asks, using your tools when they help, then answer with the result alone, " +
		"as the caller should receive it. Nobody can answer questions back: when something is missing or " +
		"impossible, say so plainly in the answer.")
	return b.String()
}

// tools returns the tools the model may call: the MCP servers' and, in a
// space, the participants' that may be used without approval. A name
// given twice keeps its first tool.
func (a *Agent) tools(ctx context.Context) []agent.Tool {
	var all []agent.Tool
	for _, s := range a.servers {
		all = append(all, s.modelTools(ctx)...)
	}
	if sp := a.space.Load(); sp != nil {
		all = append(all, sp.modelTools(ctx)...)
	}
	seen := make(map[string]bool, len(all))
	out := all[:0]
	for _, t := range all {
		if seen[t.Name] {
			a.log.Warn("toolsagent: two tools have the same name; offering the first", "tool", t.Name)
			continue
		}
		seen[t.Name] = true
		out = append(out, t)
	}
	return out
}

// history is the conversation the calls share with
// Definition.SharedHistory.
type history struct {
	mu   sync.Mutex
	max  int // messages kept; negative means none
	msgs []llm.Message
}

func (h *history) get(shared bool) []llm.Message {
	if !shared {
		return nil
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	return append([]llm.Message(nil), h.msgs...)
}

func (h *history) add(msgs ...llm.Message) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.max <= 0 {
		return
	}
	h.msgs = append(h.msgs, msgs...)
	if over := len(h.msgs) - h.max; over > 0 {
		h.msgs = append([]llm.Message(nil), h.msgs[over:]...)
	}
}
