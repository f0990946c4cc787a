package studio

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/mew-protocol/mew/llm"
	"github.com/mew-protocol/mew/toolsagent"
)

// event is one line of a run's stream.
type event struct {
	// Event is start, model, tool, result or error.
	Event string `json:"event"`
	// N numbers the model's answers; a tool step has the answer's number.
	N int `json:"n,omitempty"`
	// Prompt and Tools (start): the filled prompt, the tools offered.
	Prompt   string   `json:"prompt,omitempty"`
	Tools    []string `json:"tools,omitempty"`
	Provider string   `json:"provider,omitempty"`
	// Text is the model's reasoning or answer, a tool's result, the final
	// answer, or what went wrong.
	Text string `json:"text,omitempty"`
	// Calls are the tools a model step called.
	Calls []call `json:"calls,omitempty"`
	// Tool and Arguments name the call a tool step answers; Failed says it
	// failed.
	Tool      string          `json:"tool,omitempty"`
	Arguments json.RawMessage `json:"arguments,omitempty"`
	Failed    bool            `json:"failed,omitempty"`
	// Violations (error) list what is wrong with the arguments.
	Violations []violation `json:"violations,omitempty"`
	// Tokens counts the tokens of a model step, or of the whole run.
	Tokens *tokens `json:"tokens,omitempty"`
	// MS is the time since the run started, in milliseconds.
	MS int64 `json:"ms"`
	// Steps counts the model's answers (result).
	Steps int `json:"steps,omitempty"`
}

// tokens counts a model's tokens, as the server reports them.
type tokens struct {
	Prompt     int `json:"prompt"`
	Completion int `json:"completion"`
	Total      int `json:"total"`
}

func tokensOf(u llm.Usage) *tokens {
	return &tokens{Prompt: u.PromptTokens, Completion: u.CompletionTokens, Total: u.TotalTokens}
}

type call struct {
	Name      string          `json:"name"`
	Arguments json.RawMessage `json:"arguments"`
}

// counted is the model with a count of the tokens it reported, for the
// steps and the run's total.
type counted struct {
	llm.Provider
	mu          sync.Mutex
	last, total llm.Usage
}

func (p *counted) Complete(ctx context.Context, req llm.Request) (*llm.Response, error) {
	r, err := p.Provider.Complete(ctx, req)
	p.note(r)
	return r, err
}

func (p *counted) Stream(ctx context.Context, req llm.Request, onDelta func(llm.Delta)) (*llm.Response, error) {
	r, err := p.Provider.Stream(ctx, req, onDelta)
	p.note(r)
	return r, err
}

func (p *counted) note(r *llm.Response) {
	if r == nil {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	p.last = r.Usage
	p.total.PromptTokens += r.Usage.PromptTokens
	p.total.CompletionTokens += r.Usage.CompletionTokens
	p.total.TotalTokens += r.Usage.TotalTokens
}

func (p *counted) usage() (last, total llm.Usage) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.last, p.total
}

// stream writes a run's events as JSON lines, flushing each.
type stream struct {
	w     http.ResponseWriter
	enc   *json.Encoder
	now   func() time.Time
	start time.Time
}

func (s *stream) send(e event) {
	e.MS = s.now().Sub(s.start).Milliseconds()
	if err := s.enc.Encode(e); err != nil {
		return // the page left; the request's context ends the run
	}
	if f, ok := s.w.(http.Flusher); ok {
		f.Flush()
	}
}

// handleRun runs one call of the page's tool through toolsagent.Agent.Call,
// as `mew agent mcp` does for a tools/call, streaming its steps. One run
// at a time: the runs start MCP servers and spend model tokens.
func (s *Server) handleRun(w http.ResponseWriter, r *http.Request) {
	req, ok := decode(w, r)
	if !ok {
		return
	}
	select {
	case s.running <- struct{}{}:
		defer func() { <-s.running }()
	default:
		fail(w, http.StatusConflict, errors.New("studio: a run is under way"))
		return
	}
	c, ok := s.loadable(w, req.Tools, http.StatusUnprocessableEntity)
	if !ok {
		return
	}
	def := c.def
	def.Dir = s.dir()
	tool, found := def.Tool(req.Tool)
	if !found {
		fail(w, http.StatusNotFound, fmt.Errorf("%w: %q", toolsagent.ErrUnknownTool, req.Tool))
		return
	}
	w.Header().Set("Content-Type", "application/x-ndjson")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(http.StatusOK)
	out := &stream{w: w, enc: json.NewEncoder(w), now: s.opts.Now, start: s.opts.Now()}
	// Arguments that Call would refuse stop here, before the servers start.
	if _, err := tool.Fill(req.Args); err != nil {
		out.send(failure(err, nil))
		return
	}
	s.run(r.Context(), out, def, req.Tool, req.Args)
}

// failure is the error event for err.
func failure(err error, total *tokens) event {
	e := event{Event: "error", Text: err.Error(), Tokens: total}
	var argErr *toolsagent.ArgumentError
	if errors.As(err, &argErr) {
		for _, v := range argErr.Violations {
			e.Violations = append(e.Violations, violation{Path: v.Path, Message: v.Message})
		}
	}
	return e
}

// run carries out the call, sending its events.
func (s *Server) run(ctx context.Context, out *stream, def *toolsagent.Definition, name string, args json.RawMessage) {
	provider := s.opts.Provider
	if provider == nil {
		getenv := s.opts.Getenv
		p, err := def.Model.Provider(getenv)
		if err != nil {
			out.send(failure(err, nil))
			return
		}
		provider = p
	}
	model := &counted{Provider: provider}
	a, err := toolsagent.New(ctx, toolsagent.Options{
		Definition: def, Provider: model, Getenv: s.opts.Getenv, Environ: s.opts.Environ,
		Logger: s.log, ConnectTimeout: s.opts.ConnectTimeout,
	})
	if err != nil {
		out.send(failure(err, nil))
		return
	}
	defer func() { _ = a.Close() }()
	res, err := a.Call(ctx, name, args, toolsagent.CallOptions{
		OnStart: func(prompt string, tools []string) {
			out.send(event{Event: "start", Prompt: prompt, Tools: tools, Provider: provider.Name()})
		},
		OnStep: func(st toolsagent.Step) {
			if st.Kind == toolsagent.StepTool {
				failed := strings.HasPrefix(st.Text, "Error: ")
				text := st.Text
				if failed {
					text = llm.PlainToolError(text)
				}
				out.send(event{Event: "tool", N: st.N, Tool: st.Tool, Arguments: st.Arguments, Text: text, Failed: failed})
				return
			}
			last, _ := model.usage()
			calls := make([]call, len(st.Calls))
			for i, c := range st.Calls {
				calls[i] = call{Name: c.Name, Arguments: c.Arguments}
			}
			out.send(event{Event: "model", N: st.N, Text: st.Text, Calls: calls, Tokens: tokensOf(last)})
		},
	})
	_, total := model.usage()
	if err != nil {
		out.send(failure(err, tokensOf(total)))
		return
	}
	out.send(event{Event: "result", Text: res.Text, Steps: res.Steps, Tokens: tokensOf(total)})
}
