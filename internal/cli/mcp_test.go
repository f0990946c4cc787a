package cli

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mew-protocol/mew/internal/testutil"
)

// mcpCall is a call of a tool of one of the built-in servers (args run
// it) and what the first item of its answer must hold.
type mcpCall struct {
	args []string
	tool string
	in   map[string]any
	want string
}

// check makes the call on cs.
func (c mcpCall) check(ctx context.Context, t *testing.T, cs *mcp.ClientSession) {
	t.Helper()
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: c.tool, Arguments: c.in})
	if err != nil || res.IsError || len(res.Content) == 0 {
		t.Errorf("%v %s: %+v, %v", c.args, c.tool, res, err)
		return
	}
	if text, ok := res.Content[0].(*mcp.TextContent); !ok || !strings.Contains(text.Text, c.want) {
		t.Errorf("%v %s: %+v, want %q", c.args, c.tool, res.Content[0], c.want)
	}
}

// TestMCPServersOverStdio runs the built binary's servers as an MCP host
// would: a subprocess spoken to over stdio.
func TestMCPServersOverStdio(t *testing.T) {
	dir := t.TempDir()
	for _, tc := range []mcpCall{
		{[]string{"mcp", "calculator"}, "add", map[string]any{"a": 2, "b": 3}, "5"},
		{[]string{"mcp", "filesystem", filepath.Join(dir, "files")}, "write_file", map[string]any{"path": "hello.txt", "content": "hi"}, "wrote 2 bytes to hello.txt"},
		{[]string{"mcp", "cat-maze"}, "view", map[string]any{}, "Level 1/10: First Pounce\n⬛⬛⬛⬛⬛⬛⬛\n⬛🐈🟩"},
	} {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		cs, err := mcp.NewClient(&mcp.Implementation{Name: "test"}, nil).Connect(ctx, &mcp.CommandTransport{Command: exec.Command(mewBinary(t), tc.args...)}, nil)
		if err != nil {
			cancel()
			t.Fatalf("%v: %v", tc.args, err)
		}
		tc.check(ctx, t, cs)
		cs.Close()
		cancel()
	}
	if out, err := mew(t, dir, "mcp", "list"); err != nil || !strings.Contains(out, "calculator") || !strings.Contains(out, "cat-maze") {
		t.Errorf("mcp list: %v %s", err, out)
	}
	if out, err := mew(t, dir, "mcp", "filesystem"); err == nil {
		t.Errorf("filesystem without a directory: %s", out)
	}
}

// TestMCPUnknownServer: a name that is not one of the servers is an error
// that names it and the known ones, with a non-zero exit, so that a bridge
// started on it fails instead of restarting a command that printed help.
func TestMCPUnknownServer(t *testing.T) {
	t.Parallel()
	for _, args := range [][]string{{"mcp", "cat-mazes"}, {"mcp", "ship-server", "x"}} {
		stdout, _, err := run(t, Options{}, args...)
		if err == nil || !strings.Contains(err.Error(), `no MCP server "`+args[1]+`"`) ||
			!strings.Contains(err.Error(), "calculator, cat-maze, filesystem") {
			t.Errorf("mew %s: %v", strings.Join(args, " "), err)
		}
		if stdout != "" {
			t.Errorf("mew %s printed %q", strings.Join(args, " "), stdout)
		}
	}
	// The binary exits 1 with the error on standard error.
	c := exec.Command(mewBinary(t), "mcp", "nope")
	out, err := c.CombinedOutput()
	if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() != 1 || !strings.Contains(string(out), `mew: mcp: no MCP server "nope"`) {
		t.Errorf("mew mcp nope: %v: %s", err, out)
	}
}

// TestMCPServersOverHTTP runs the built binary's servers with --http as an
// MCP host reaches them over streamable HTTP: a tool call, completion/complete
// (nothing to complete: an empty list, not "method not found"), and a clean
// exit on SIGINT.
func TestMCPServersOverHTTP(t *testing.T) {
	dir := t.TempDir()
	for _, tc := range []mcpCall{
		{[]string{"mcp", "calculator"}, "multiply", map[string]any{"a": 6, "b": 7}, "42"},
		{[]string{"mcp", "filesystem", filepath.Join(dir, "files")}, "write_file", map[string]any{"path": "a.txt", "content": "abc"}, "wrote 3 bytes to a.txt"},
	} {
		t.Run(tc.args[1], func(t *testing.T) {
			cmd := exec.Command(mewBinary(t), append(tc.args, "--http", "127.0.0.1:0")...)
			url, exited, logs := startLogging(t, cmd, regexp.MustCompile(`url=(http://\S+)`))
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			cs, err := mcp.NewClient(&mcp.Implementation{Name: "test"}, nil).Connect(ctx, &mcp.StreamableClientTransport{Endpoint: url}, nil)
			if err != nil {
				t.Fatalf("%v\n%s", err, logs)
			}
			tc.check(ctx, t, cs)
			if cs.InitializeResult().Capabilities.Completions == nil {
				t.Error("no completions capability")
			}
			comp, err := cs.Complete(ctx, &mcp.CompleteParams{Ref: &mcp.CompleteReference{Type: "ref/prompt", Name: "p"}, Argument: mcp.CompleteParamsArgument{Name: "a", Value: "x"}})
			if err != nil || comp.Completion.Values == nil || len(comp.Completion.Values) != 0 {
				t.Errorf("complete: %+v, %v", comp, err)
			}
			_ = cs.Close()
			interrupt(t, cmd, exited, logs, 15*time.Second)
		})
	}
}

// interrupt stops cmd, the built binary, with SIGINT as a person's Ctrl-C
// would, and fails the test unless it exits cleanly within d; past d it is
// killed. exited gets cmd.Wait's error; logs is its output, for the
// failure message.
func interrupt(t *testing.T, cmd *exec.Cmd, exited <-chan error, logs fmt.Stringer, d time.Duration) {
	t.Helper()
	what := "mew " + strings.Join(cmd.Args[1:], " ")
	if err := cmd.Process.Signal(syscall.SIGINT); err != nil && !errors.Is(err, os.ErrProcessDone) {
		t.Errorf("SIGINT to %s: %v", what, err)
	}
	select {
	case err := <-exited:
		if err != nil {
			t.Errorf("%s after SIGINT: %v\n%s", what, err, logs)
		}
	case <-time.After(d):
		_ = cmd.Process.Kill()
		<-exited
		t.Errorf("%s did not stop on SIGINT\n%s", what, logs)
	}
}

// startLogging starts cmd, collects its standard error and returns the
// first submatch of re in it, a channel that gets cmd.Wait's error, and the
// log. The process is killed at the end of the test if still running.
func startLogging(t *testing.T, cmd *exec.Cmd, re *regexp.Regexp) (string, <-chan error, *testutil.Buffer) {
	t.Helper()
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	logs := &testutil.Buffer{}
	found := make(chan string, 1)
	exited := make(chan error, 1)
	done := make(chan struct{})
	go func() {
		defer close(done)
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
			_, _ = logs.Write(append(sc.Bytes(), '\n'))
			if m := re.FindStringSubmatch(sc.Text()); m != nil {
				select {
				case found <- m[1]:
				default:
				}
			}
		}
		exited <- cmd.Wait()
	}()
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		<-done
	})
	select {
	case s := <-found:
		return s, exited, logs
	case err := <-exited:
		t.Fatalf("exited: %v\n%s", err, logs)
	case <-time.After(60 * time.Second):
		t.Fatalf("%s not logged\n%s", re, logs)
	}
	return "", nil, nil
}
