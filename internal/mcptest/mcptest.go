package mcptest

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Environment variables that make a test binary run the server (Main).
const (
	// EnvMode selects the server: "normal", "silent" (never answers),
	// "garbage" (writes a line that is not JSON-RPC, then reads its input
	// forever), "exit" (writes to standard error and exits with 7) or
	// "huge" (normal, with a tool "huge" whose answer is mb MiB long).
	EnvMode = "MEW_TESTSERVER_MODE"
	// EnvLifetime, a Go duration, makes a normal server exit with status 2
	// after that long.
	EnvLifetime = "MEW_TESTSERVER_LIFETIME"
	// EnvRevisions, a comma-separated list, narrows the MCP revisions the
	// server speaks (NewFor).
	EnvRevisions = "MEW_TESTSERVER_REVISIONS"
)

// Name is the server's name in its serverInfo.
const Name = "mew-test-server"

// CodedError is the JSON-RPC error code of the "coded" tool.
const CodedError = -31999

// ToolNames are the tools the server starts with, in the order it lists
// them (by name).
var ToolNames = []string{"add", "add_tool", "ask", "ask_url", "coded", "crash", "cwd", "echo", "env", "fail", "garble", "pid", "slow", "stderr"}

// Main runs the server that the environment asks for (EnvMode) on the
// process's standard input and output and returns the exit status.
func Main() int {
	switch os.Getenv(EnvMode) {
	case "silent":
		_, _ = io.Copy(io.Discard, os.Stdin)
		return 0
	case "garbage":
		fmt.Println("this is not JSON-RPC {{{")
		_, _ = io.Copy(io.Discard, os.Stdin)
		return 0
	case "exit":
		fmt.Fprintln(os.Stderr, "mcptest: refusing to start")
		return 7
	}
	if d, err := time.ParseDuration(os.Getenv(EnvLifetime)); err == nil && d > 0 {
		time.AfterFunc(d, func() {
			fmt.Fprintln(os.Stderr, "mcptest: lifetime over")
			os.Exit(2)
		})
	}
	var mu sync.Mutex // stdout is shared by the SDK and the garble tool
	out := &lockedWriter{mu: &mu, w: os.Stdout}
	var revisions []string
	if v := os.Getenv(EnvRevisions); v != "" {
		revisions = strings.Split(v, ",")
	}
	s := NewFor(out, revisions...)
	if os.Getenv(EnvMode) == "huge" {
		addHugeTool(s)
	}
	if err := s.Run(context.Background(), &mcp.IOTransport{Reader: os.Stdin, Writer: out}); err != nil {
		fmt.Fprintln(os.Stderr, "mcptest:", err)
		return 1
	}
	return 0
}

// lockedWriter serializes writes to one writer.
type lockedWriter struct {
	mu *sync.Mutex
	w  io.Writer
}

func (l *lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}

func (l *lockedWriter) Close() error { return nil }

type echoIn struct {
	Text string `json:"text" jsonschema:"the text to echo"`
}

type addIn struct {
	A float64 `json:"a"`
	B float64 `json:"b"`
}

type addOut struct {
	Sum float64 `json:"sum"`
}

type slowIn struct {
	MS int `json:"ms" jsonschema:"how long to take, in milliseconds"`
}

type nameIn struct {
	Name string `json:"name"`
}

type empty struct{}

// New returns the server. stdout, when not nil, is what the garble tool
// writes its garbage to (the server's output).
func New(stdout io.Writer) *mcp.Server { return NewFor(stdout) }

// NewFor is New speaking only the given MCP revisions (none: every one
// the go-sdk speaks).
func NewFor(stdout io.Writer, revisions ...string) *mcp.Server {
	s := mcp.NewServer(&mcp.Implementation{Name: Name, Version: "1.0.0"}, &mcp.ServerOptions{PageSize: 2, SupportedProtocolVersions: revisions})
	addElicitingTools(s)
	text := func(s string) *mcp.CallToolResult {
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: s}}}
	}
	mcp.AddTool(s, &mcp.Tool{Name: "echo", Description: "Echo the text back"},
		func(_ context.Context, _ *mcp.CallToolRequest, in echoIn) (*mcp.CallToolResult, any, error) {
			return text(in.Text), nil, nil
		})
	mcp.AddTool(s, &mcp.Tool{Name: "add", Description: "Add two numbers"},
		func(_ context.Context, _ *mcp.CallToolRequest, in addIn) (*mcp.CallToolResult, addOut, error) {
			return nil, addOut{Sum: in.A + in.B}, nil
		})
	mcp.AddTool(s, &mcp.Tool{Name: "fail", Description: "Fail as a tool: a result with isError"},
		func(context.Context, *mcp.CallToolRequest, empty) (*mcp.CallToolResult, any, error) {
			return nil, nil, fmt.Errorf("the tool failed on purpose")
		})
	s.AddTool(&mcp.Tool{Name: "coded", Description: "Fail with a JSON-RPC error of its own", InputSchema: json.RawMessage(`{"type":"object"}`)},
		func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return nil, &jsonrpc.Error{Code: CodedError, Message: "coded failure", Data: json.RawMessage(`{"detail":"on purpose"}`)}
		})
	mcp.AddTool(s, &mcp.Tool{Name: "slow", Description: "Take ms milliseconds, or stop when cancelled"},
		func(ctx context.Context, _ *mcp.CallToolRequest, in slowIn) (*mcp.CallToolResult, any, error) {
			fmt.Fprintln(os.Stderr, "mcptest: slow call started")
			t := time.NewTimer(time.Duration(in.MS) * time.Millisecond)
			defer t.Stop()
			select {
			case <-t.C:
				return text("slept " + strconv.Itoa(in.MS) + "ms"), nil, nil
			case <-ctx.Done():
				fmt.Fprintln(os.Stderr, "mcptest: slow call cancelled")
				return nil, nil, ctx.Err()
			}
		})
	mcp.AddTool(s, &mcp.Tool{Name: "crash", Description: "Exit the process with status 3"},
		func(context.Context, *mcp.CallToolRequest, empty) (*mcp.CallToolResult, any, error) {
			fmt.Fprintln(os.Stderr, "mcptest: crashing on demand")
			os.Exit(3)
			return nil, nil, nil
		})
	mcp.AddTool(s, &mcp.Tool{Name: "add_tool", Description: "Add a tool named name (the tool list changes)"},
		func(_ context.Context, _ *mcp.CallToolRequest, in nameIn) (*mcp.CallToolResult, any, error) {
			mcp.AddTool(s, &mcp.Tool{Name: in.Name, Description: "A tool added at run time"},
				func(context.Context, *mcp.CallToolRequest, empty) (*mcp.CallToolResult, any, error) {
					return text("I am " + in.Name), nil, nil
				})
			return text("added " + in.Name), nil, nil
		})
	mcp.AddTool(s, &mcp.Tool{Name: "env", Description: "Return the environment variable name"},
		func(_ context.Context, _ *mcp.CallToolRequest, in nameIn) (*mcp.CallToolResult, any, error) {
			return text(os.Getenv(in.Name)), nil, nil
		})
	mcp.AddTool(s, &mcp.Tool{Name: "cwd", Description: "Return the working directory"},
		func(context.Context, *mcp.CallToolRequest, empty) (*mcp.CallToolResult, any, error) {
			wd, err := os.Getwd()
			return text(wd), nil, err
		})
	mcp.AddTool(s, &mcp.Tool{Name: "pid", Description: "Return the process id"},
		func(context.Context, *mcp.CallToolRequest, empty) (*mcp.CallToolResult, any, error) {
			return text(strconv.Itoa(os.Getpid())), nil, nil
		})
	mcp.AddTool(s, &mcp.Tool{Name: "garble", Description: "Write a line that is not JSON-RPC to the output"},
		func(context.Context, *mcp.CallToolRequest, empty) (*mcp.CallToolResult, any, error) {
			if stdout != nil {
				_, _ = io.WriteString(stdout, "\n}} garbage, not JSON-RPC {{\n")
			}
			return text("garbled"), nil, nil
		})
	mcp.AddTool(s, &mcp.Tool{Name: "stderr", Description: "Write the text to standard error"},
		func(_ context.Context, _ *mcp.CallToolRequest, in echoIn) (*mcp.CallToolResult, any, error) {
			fmt.Fprintln(os.Stderr, in.Text)
			return text("written"), nil, nil
		})

	s.AddResource(&mcp.Resource{URI: "test://hello", Name: "hello", Description: "A greeting", MIMEType: "text/plain"},
		func(_ context.Context, req *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
			return &mcp.ReadResourceResult{Contents: []*mcp.ResourceContents{{URI: req.Params.URI, MIMEType: "text/plain", Text: "hello, world"}}}, nil
		})
	s.AddResourceTemplate(&mcp.ResourceTemplate{URITemplate: "test://items/{id}", Name: "item", MIMEType: "text/plain"},
		func(_ context.Context, req *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
			id := req.Params.URI[len("test://items/"):]
			return &mcp.ReadResourceResult{Contents: []*mcp.ResourceContents{{URI: req.Params.URI, MIMEType: "text/plain", Text: "item " + id}}}, nil
		})
	s.AddPrompt(&mcp.Prompt{Name: "greet", Description: "Greet someone", Arguments: []*mcp.PromptArgument{{Name: "name", Required: true}}},
		func(_ context.Context, req *mcp.GetPromptRequest) (*mcp.GetPromptResult, error) {
			return &mcp.GetPromptResult{
				Description: "A greeting",
				Messages:    []*mcp.PromptMessage{{Role: "user", Content: &mcp.TextContent{Text: "Say hello to " + req.Params.Arguments["name"]}}},
			}, nil
		})
	return s
}
