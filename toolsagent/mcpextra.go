package toolsagent

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mew-protocol/mew/agent"
)

// maxCompletions bounds the values one completion/complete answers (MCP's
// own limit).
const maxCompletions = 100

// progress reports the steps of one MCP tool call: progress notifications
// (when the client sent a token), counted in model answers against the
// iteration limit as total, and log messages (the go-sdk drops those below
// the level the client set, and all of them when it set none).
type progress struct {
	ctx   context.Context
	log   func(string)
	req   *mcp.CallToolRequest
	token any
	total float64
	at    float64
	name  string
}

func (a *Agent) newProgress(ctx context.Context, req *mcp.CallToolRequest) *progress {
	limit := a.def.Model.MaxIterations
	if limit <= 0 {
		limit = agent.DefaultMaxIterations
	}
	return &progress{ctx: ctx, req: req, token: req.Params.GetProgressToken(), total: float64(limit), name: req.Params.Name,
		log: func(msg string) { a.log.Debug("toolsagent: not sent to the MCP client", "msg", msg) }}
}

// notify sends one notification of progress at (which only grows) and a
// log message.
func (p *progress) notify(at float64, msg string) {
	if p.req.Session == nil {
		return
	}
	if p.token != nil && at > p.at {
		p.at = at
		if err := p.req.Session.NotifyProgress(p.ctx, &mcp.ProgressNotificationParams{ProgressToken: p.token, Progress: at, Total: p.total, Message: msg}); err != nil {
			p.log(err.Error())
		}
	}
	//lint:ignore SA1019 MCP logging is deprecated in 2026-07-28 but part of 2025-11-25, which mew serves too
	if err := p.req.Session.Log(p.ctx, &mcp.LoggingMessageParams{Level: "info", Logger: p.name, Data: msg}); err != nil {
		p.log(err.Error())
	}
}

func (p *progress) start(msg string) { p.notify(0.5, msg) }

// step reports a step: a model answer N is at N; a tool step of answer N
// halfway from where the count is to N+1, so that every step counts.
func (p *progress) step(s Step) {
	at := float64(s.N)
	if s.Kind == StepTool || at <= p.at {
		at = p.at + (float64(s.N)+1-p.at)/2
	}
	p.notify(min(at, p.total), s.Summary())
}

// done reports the end: progress reaches the total.
func (p *progress) done() {
	if p.token != nil && p.req.Session != nil && p.total > p.at {
		p.at = p.total
		if err := p.req.Session.NotifyProgress(p.ctx, &mcp.ProgressNotificationParams{ProgressToken: p.token, Progress: p.total, Total: p.total, Message: "Done."}); err != nil {
			p.log(err.Error())
		}
	}
}

// toolPrompt is the MCP prompt of a tool: its name and description, and
// its top-level parameters as arguments.
func toolPrompt(t *Tool) *mcp.Prompt {
	p := &mcp.Prompt{Name: t.Name, Description: t.Description}
	if t.Parameters == nil {
		return p
	}
	for _, prop := range t.Parameters.Properties {
		arg := &mcp.PromptArgument{Name: prop.Name, Required: slices.Contains(t.Parameters.Required, prop.Name)}
		if b := schemaBase(prop.Schema); b != nil {
			arg.Title, arg.Description = b.Title, b.Description
		}
		p.Arguments = append(p.Arguments, arg)
	}
	return p
}

// schemaBase returns the annotations of a parameter's schema.
func schemaBase(s Schema) *SchemaBase {
	switch s := s.(type) {
	case *StringSchema:
		return &s.SchemaBase
	case *NumberSchema:
		return &s.SchemaBase
	case *BooleanSchema:
		return &s.SchemaBase
	case *ArraySchema:
		return &s.SchemaBase
	case *ObjectSchema:
		return &s.SchemaBase
	}
	return nil
}

// promptHandler answers prompts/get of a tool: the filled template as one
// user message. Prompt arguments are strings: one whose parameter is not a
// string is read as JSON (3, true, ["a"]) when it parses, else as the
// string it is. Arguments that do not fit are refused as invalid params.
func (a *Agent) promptHandler(t *Tool) mcp.PromptHandler {
	return func(_ context.Context, req *mcp.GetPromptRequest) (*mcp.GetPromptResult, error) {
		args := map[string]json.RawMessage{}
		for name, v := range req.Params.Arguments {
			raw, _ := json.Marshal(v)
			if t.Parameters != nil {
				if s, ok := t.Parameters.Property(name); ok && s.Type() != TypeString && json.Valid([]byte(v)) {
					raw = json.RawMessage(v)
				}
			}
			args[name] = raw
		}
		body, err := json.Marshal(args)
		if err != nil {
			return nil, fmt.Errorf("toolsagent: %w", err)
		}
		text, err := t.Fill(body)
		var argErr *ArgumentError
		if errors.As(err, &argErr) {
			return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: strings.TrimPrefix(argErr.Error(), "toolsagent: ")}
		} else if err != nil {
			return nil, err
		}
		return &mcp.GetPromptResult{Description: t.Description, Messages: []*mcp.PromptMessage{{Role: "user", Content: &mcp.TextContent{Text: text}}}}, nil
	}
}

// complete answers completion/complete: for a prompt (a tool) and one of
// its parameters, the parameter's enum values, else its examples (else
// true and false for a boolean), that start with the value typed (case
// ignored). Anything else completes to nothing.
func (a *Agent) complete(_ context.Context, req *mcp.CompleteRequest) (*mcp.CompleteResult, error) {
	res := &mcp.CompleteResult{Completion: mcp.CompletionResultDetails{Values: []string{}}}
	if req.Params == nil || req.Params.Ref == nil || req.Params.Ref.Type != "ref/prompt" {
		return res, nil
	}
	var values []string
	for _, t := range a.def.Tools {
		if t.Name != req.Params.Ref.Name || t.Parameters == nil {
			continue
		}
		if s, ok := t.Parameters.Property(req.Params.Argument.Name); ok {
			values = candidates(s)
		}
	}
	typed := strings.ToLower(req.Params.Argument.Value)
	for _, v := range values {
		if strings.HasPrefix(strings.ToLower(v), typed) && !slices.Contains(res.Completion.Values, v) {
			res.Completion.Values = append(res.Completion.Values, v)
		}
	}
	res.Completion.Total = len(res.Completion.Values)
	if len(res.Completion.Values) > maxCompletions {
		res.Completion.Values = res.Completion.Values[:maxCompletions]
		res.Completion.HasMore = true
	}
	return res, nil
}

// candidates are the values a parameter suggests, as text.
func candidates(s Schema) []string {
	switch s := s.(type) {
	case *StringSchema:
		if len(s.Enum) > 0 {
			return s.Enum
		}
		return s.Examples
	case *NumberSchema:
		nums := s.Enum
		if len(nums) == 0 {
			nums = s.Examples
		}
		out := make([]string, len(nums))
		for i, n := range nums {
			out[i] = formatNumber(n)
		}
		return out
	case *BooleanSchema:
		return []string{"true", "false"}
	}
	return nil
}
