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
	if out, err := mew(t, dir, "mcp", "list"); err != nil || !strings.Contains(out, "calculator") {
		t.Errorf("mcp list: %v %s", err, out)
	}
	if out, err := mew(t, dir, "mcp", "filesystem"); err == nil {
		t.Errorf("filesystem without a directory: %s", out)
	}
}
