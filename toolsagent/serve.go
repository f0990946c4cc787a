package toolsagent

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strings"

	"github.com/google/uuid"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mew-protocol/mew/internal/mcpserve"
)

// MetaContextID is the _meta member of a tool result that names the call's
// session (Result.ContextID).
const MetaContextID = "mew/contextId"

// HTTPPath is where ServeStreamableHTTP serves MCP.
const HTTPPath = mcpserve.Path

// NewMCPServer returns an MCP server (the go-sdk's) for the agent's tools:
// serverInfo is the definition's name and version, instructions its
// description, and each tool lists its parameters as inputSchema. Run it
// on any transport; ServeMCP and ServeStreamableHTTP do.
//
// A call with invalid arguments is answered isError, the text listing
// every violation and _meta[MetaViolations] holding them as [{"path",
// "message"}], so that the calling model can correct itself (MCP
// 2025-11-25). A call that runs answers the model's final text, with
// _meta[MetaContextID]; one that fails (the model, the timeout, the
// iterations) answers isError with the reason. A client that sent a
// progress token gets a progress notification at the start and at each
// step, with the iteration limit as total; a client that set a logging
// level gets each step as a log message too; notifications/cancelled stops
// the call.
//
// Each tool is also a prompt of the same name whose arguments are the
// tool's top-level parameters: prompts/get returns the filled template,
// and completion/complete offers a parameter's enum values (else its
// examples, or true and false) that start with what was typed.
func (a *Agent) NewMCPServer() (*mcp.Server, error) {
	return a.newMCPServer(context.Background())
}

// newMCPServer is NewMCPServer whose calls also end with serve.
func (a *Agent) newMCPServer(serve context.Context) (*mcp.Server, error) {
	d := a.def
	s := mcp.NewServer(&mcp.Implementation{Name: d.Name, Version: d.Version}, mcpserve.Options(&mcp.ServerOptions{
		Instructions: d.Description,
		Logger:       a.log,
		Capabilities: &mcp.ServerCapabilities{
			Tools: &mcp.ToolCapabilities{}, Prompts: &mcp.PromptCapabilities{},
			//lint:ignore SA1019 MCP logging is deprecated in 2026-07-28 but part of 2025-11-25, which mew serves too
			Completions: &mcp.CompletionCapabilities{}, Logging: &mcp.LoggingCapabilities{},
		},
		CompletionHandler: a.complete,
	}))
	for _, t := range d.Tools {
		schema, err := t.InputSchema()
		if err != nil {
			return nil, err
		}
		out, err := t.OutputSchema()
		if err != nil {
			return nil, err
		}
		tool := &mcp.Tool{Name: t.Name, Description: t.Description, InputSchema: schema}
		if out != nil { // a nil json.RawMessage in the interface would be "outputSchema": null
			tool.OutputSchema = out
		}
		if err := addTool(s, tool, a.mcpHandler(serve, t.Name)); err != nil {
			return nil, err
		}
		s.AddPrompt(toolPrompt(t), a.promptHandler(t))
	}
	return s, nil
}

// addTool adds a tool, turning the SDK's panic on a bad tool into an
// error (the loader's checks should make it impossible).
func addTool(s *mcp.Server, t *mcp.Tool, h mcp.ToolHandler) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("toolsagent: tool %s: %v", t.Name, r)
		}
	}()
	s.AddTool(t, h)
	return nil
}

// mcpHandler answers tools/call of one tool.
func (a *Agent) mcpHandler(serve context.Context, name string) mcp.ToolHandler {
	return func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		ctx, cancel := context.WithCancel(ctx)
		defer cancel()
		stop := context.AfterFunc(serve, cancel)
		defer stop()

		pr := a.newProgress(ctx, req)
		id := uuid.NewString()
		res, err := a.Call(ctx, name, req.Params.Arguments, CallOptions{
			ContextID: id,
			OnStart:   func(string, []string) { pr.start(fmt.Sprintf("Running %s (context %s).", name, id)) },
			OnStep:    pr.step,
		})
		var argErr *ArgumentError
		switch {
		case errors.As(err, &argErr):
			return refusedArguments(argErr, id), nil
		case err != nil:
			r := &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: err.Error()}}, IsError: true, Meta: mcp.Meta{MetaContextID: id}}
			return r, nil
		}
		pr.done()
		if res.Structured != nil {
			// The object, checked against the output schema, and the same
			// JSON as text for clients that read only text.
			return &mcp.CallToolResult{
				Content:           []mcp.Content{&mcp.TextContent{Text: string(res.Structured)}},
				StructuredContent: res.Structured,
				Meta:              mcp.Meta{MetaContextID: id},
			}, nil
		}
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: res.Text}}, Meta: mcp.Meta{MetaContextID: id}}, nil
	}
}

// MetaViolations is the _meta member of a refused call's result that lists
// the violations, [{"path", "message"}], and MetaMoreViolations how many
// more there were.
const (
	MetaViolations     = "mew/violations"
	MetaMoreViolations = "mew/moreViolations"
)

// refusedArguments is the result of a call whose arguments do not fit the
// tool's parameters: isError, so that the calling model reads why.
func refusedArguments(e *ArgumentError, id string) *mcp.CallToolResult {
	type violation struct {
		Path    string `json:"path"`
		Message string `json:"message"`
	}
	vs := make([]violation, len(e.Violations))
	for i, v := range e.Violations {
		vs[i] = violation(v)
	}
	meta := mcp.Meta{MetaContextID: id, MetaViolations: vs}
	if e.More > 0 {
		meta[MetaMoreViolations] = e.More
	}
	return &mcp.CallToolResult{
		Content: []mcp.Content{&mcp.TextContent{Text: strings.TrimPrefix(e.Error(), "toolsagent: ")}},
		IsError: true,
		Meta:    meta,
	}
}

// ServeMCP serves the tools over one MCP transport (such as
// &mcp.StdioTransport{}) until the client disconnects or ctx ends; the
// calls under way end with it.
func (a *Agent) ServeMCP(ctx context.Context, t mcp.Transport) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	s, err := a.newMCPServer(ctx)
	if err != nil {
		return err
	}
	if err := s.Run(ctx, t); err != nil && !errors.Is(err, context.Canceled) && !errors.Is(err, mcp.ErrConnectionClosed) {
		return fmt.Errorf("toolsagent: mcp: %w", err)
	}
	return nil
}

// ServeStreamableHTTP serves the tools over MCP's streamable HTTP
// transport at HTTPPath on l until ctx ends, then closes the sessions
// (ending their calls) and the listener. Requests from a browser page of
// another site are refused, and so are requests to a loopback address
// under another host name (DNS rebinding).
func (a *Agent) ServeStreamableHTTP(ctx context.Context, l net.Listener) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	s, err := a.newMCPServer(ctx)
	if err != nil {
		_ = l.Close()
		return err
	}
	if err := mcpserve.ServeHTTP(ctx, l, s, a.log); err != nil {
		return fmt.Errorf("toolsagent: %w", err)
	}
	return nil
}
