package cli

import (
	"context"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// TestMCPServersOverStdio runs the built binary's servers as an MCP host
// would: a subprocess spoken to over stdio.
func TestMCPServersOverStdio(t *testing.T) {
	dir := t.TempDir()
	for _, tc := range []struct {
		args []string
		tool string
		in   map[string]any
		want string
	}{
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
		res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: tc.tool, Arguments: tc.in})
		if err != nil || res.IsError || len(res.Content) == 0 || !strings.Contains(res.Content[0].(*mcp.TextContent).Text, tc.want) {
			t.Errorf("%v %s: %+v, %v", tc.args, tc.tool, res, err)
		}
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
