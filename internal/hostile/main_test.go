package hostile

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"go.uber.org/goleak"

	"github.com/mew-protocol/mew/internal/cli"
)

// The environment that makes the test binary something else than the tests.
const (
	// envRole is "mew" (the mew command, args as given) or "mcp" (the
	// hostile stdio MCP server).
	envRole = "MEW_HOSTILE_ROLE"
	// envStderrLines, for the MCP server: how many tiny lines it writes to
	// its standard error, as fast as it can, once it has started.
	envStderrLines = "MEW_HOSTILE_STDERR_LINES"
	// envDetach, for the MCP server: a file to write the pid of a child
	// it starts in a session of its own (setsid), as a daemon does.
	envDetach = "MEW_HOSTILE_DETACH"
)

func TestMain(m *testing.M) {
	switch os.Getenv(envRole) {
	case "mew":
		os.Exit(runMew())
	case "mcp":
		os.Exit(runMCP())
	}
	goleak.VerifyTestMain(m)
}

// runMew runs the mew command with the process's arguments, as cmd/mew does.
func runMew() int {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	root := cli.NewRoot(cli.Options{Stdout: os.Stdout, Stderr: os.Stderr})
	root.SetArgs(os.Args[1:])
	if err := root.ExecuteContext(ctx); err != nil {
		fmt.Fprintf(os.Stderr, "mew: %v\n", err)
		return 1
	}
	return 0
}

// bigIn is the argument of the hostile server's "big" tool.
type bigIn struct {
	Bytes int `json:"bytes" jsonschema:"how many bytes of text to answer with"`
}

// textIn is the argument of its "echo" tool.
type textIn struct {
	Text string `json:"text"`
}

// hostileServer is the MCP server the tests bridge: "echo" and "pid"
// behave, "big" answers with as many bytes as it is asked for.
func hostileServer() *mcp.Server {
	s := mcp.NewServer(&mcp.Implementation{Name: "hostile", Version: "1.0.0"}, nil)
	mcp.AddTool(s, &mcp.Tool{Name: "echo", Description: "Echo the text"},
		func(_ context.Context, _ *mcp.CallToolRequest, in textIn) (*mcp.CallToolResult, any, error) {
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: in.Text}}}, nil, nil
		})
	mcp.AddTool(s, &mcp.Tool{Name: "big", Description: "Answer with bytes bytes of text"},
		func(_ context.Context, _ *mcp.CallToolRequest, in bigIn) (*mcp.CallToolResult, any, error) {
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: strings.Repeat("b", in.Bytes)}}}, nil, nil
		})
	mcp.AddTool(s, &mcp.Tool{Name: "pid", Description: "Answer the server's process id"},
		func(context.Context, *mcp.CallToolRequest, struct{}) (*mcp.CallToolResult, any, error) {
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: strconv.Itoa(os.Getpid())}}}, nil, nil
		})
	return s
}

// runMCP serves hostileServer on standard input and output, after writing
// envStderrLines tiny lines to standard error.
func runMCP() int {
	if n, err := strconv.Atoi(os.Getenv(envStderrLines)); err == nil && n > 0 {
		go floodStderr(n)
	}
	if path := os.Getenv(envDetach); path != "" {
		if err := detach(path); err != nil {
			fmt.Fprintln(os.Stderr, "hostile mcp:", err)
			return 1
		}
	}
	if err := hostileServer().Run(context.Background(), &mcp.StdioTransport{}); err != nil {
		fmt.Fprintln(os.Stderr, "hostile mcp:", err)
		return 1
	}
	return 0
}

// floodStderr writes n lines of one byte to standard error, a write each,
// then, after a pause, reports how long that took.
func floodStderr(n int) {
	start := time.Now()
	line := []byte("e\n")
	for range n {
		if _, err := os.Stderr.Write(line); err != nil {
			return
		}
	}
	took := time.Since(start)
	// After a pause, so that this line is not one of those left out.
	time.Sleep(1500 * time.Millisecond)
	fmt.Fprintf(os.Stderr, "hostile mcp: wrote %d lines in %v\n", n, took)
}

// detach starts `sleep 600` in a session of its own, writes its pid to
// path and leaves it running: it escapes the server's process group.
func detach(path string) error {
	cmd := exec.Command("sleep", "600")
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("starting the detached child: %w", err)
	}
	if err := os.WriteFile(path, []byte(strconv.Itoa(cmd.Process.Pid)), 0o600); err != nil {
		return fmt.Errorf("writing its pid: %w", err)
	}
	return cmd.Process.Release()
}
