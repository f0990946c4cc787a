package bridge_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mew-protocol/mew/bridge"
	"github.com/mew-protocol/mew/internal/testutil"
	"github.com/mew-protocol/mew/participant"
)

// The npm reference server "everything" through the bridge: its tools
// (listed exactly as it wrote them), a call, a resource and prompts.
func TestBridgeNPMEverything(t *testing.T) {
	bin := npmServer(t, "mcp-server-everything")
	g := startSpace(t, "")
	b := startBridge(t, g, bridge.Options{Server: bridge.Server{Command: bin, Env: []string{"MEW_BRIDGE_PROBE=from-the-bridge"}}})
	human := join(t, g, "human", participant.Options{})
	ctx := testutil.Context(t, 60*time.Second)

	tools, err := human.DiscoverTools(ctx, "files")
	if err != nil {
		t.Fatal(err)
	}
	if !slices.ContainsFunc(tools, func(tl participant.DiscoveredTool) bool { return tl.Name == "echo" }) || len(tools) != len(b.Tools()) {
		t.Fatalf("discovered %d tools (bridge: %d), no echo", len(tools), len(b.Tools()))
	}
	// The listing is the server's own, members the go-sdk does not know
	// included.
	raw, err := human.Request(ctx, "files", map[string]any{"method": "tools/list"})
	if err != nil || !strings.Contains(string(raw), `"execution"`) || strings.Contains(string(raw), `"ttlMs"`) {
		t.Errorf("tools/list is not the server's own: %.300s, %v", raw, err)
	}

	if r := callTool(t, human, "echo", map[string]any{"message": "hello from mew"}); !strings.Contains(r.text(), "hello from mew") || r.IsError {
		t.Errorf("echo: %+v", r)
	}
	if r := callTool(t, human, "get-env", map[string]any{}); !strings.Contains(r.text(), "from-the-bridge") {
		t.Errorf("the server's environment lacks the bridge's entry: %.200s", r.text())
	}
	// (The TypeScript SDK answers an unknown tool with a tool error.)
	if raw, err := human.Request(ctx, "files", call("no-such-tool", nil)); rpcCode(err) == 0 && !strings.Contains(string(raw), `"isError":true`) {
		t.Errorf("unknown tool: %s, %v, want an error", raw, err)
	}

	if len(b.Resources()) == 0 || len(b.Prompts()) == 0 {
		t.Fatalf("resources %d, prompts %d", len(b.Resources()), len(b.Prompts()))
	}
	uri := b.Resources()[0].URI
	raw, err = human.Request(ctx, "files", map[string]any{"method": "resources/read", "params": map[string]any{"uri": uri}})
	if err != nil || !strings.Contains(string(raw), `"contents"`) {
		t.Errorf("resources/read %s: %.200s, %v", uri, raw, err)
	}
	raw, err = human.Request(ctx, "files", map[string]any{"method": "prompts/get", "params": map[string]any{"name": "args-prompt", "arguments": map[string]any{"city": "Lisbon"}}})
	if err != nil || !strings.Contains(string(raw), "Lisbon") {
		t.Errorf("prompts/get: %.300s, %v", raw, err)
	}
	if strings.Contains(b.logs.String(), "token") && strings.Contains(b.logs.String(), "files-token") {
		t.Error("the token is in the log")
	}
}

// An untrusted agent proposes to write a file with the filesystem server;
// a human fulfils the proposal and the file appears. The agent cannot
// write on its own.
func TestBridgeNPMFilesystemProposalFulfilled(t *testing.T) {
	bin := npmServer(t, "mcp-server-filesystem")
	dir := t.TempDir()
	dir, err := filepath.EvalSymlinks(dir)
	if err != nil {
		t.Fatal(err)
	}
	g := startSpace(t, "")
	b := startBridge(t, g, bridge.Options{Server: bridge.Server{Command: bin, Args: []string{dir}}})
	if !slices.ContainsFunc(b.Tools(), func(tl *mcp.Tool) bool { return tl.Name == "write_file" }) {
		t.Fatalf("no write_file among %d tools", len(b.Tools()))
	}
	human := join(t, g, "human", participant.Options{})
	agent := join(t, g, "agent", participant.Options{})
	if agent.CanSend("mcp/request", []byte(`{"method":"tools/call","params":{"name":"write_file"}}`)) {
		t.Fatal("the agent may call write_file directly; the test needs it untrusted")
	}
	approved := make(chan string, 1)
	human.OnProposal(func(pr *participant.Proposal) {
		if pr.From() != "agent" || pr.ToolName() != "write_file" {
			return
		}
		go func() {
			_, err := human.Fulfill(testutil.Context(t, 30*time.Second), pr)
			if err != nil {
				approved <- "error: " + err.Error()
				return
			}
			approved <- pr.ID()
		}()
	})

	target := filepath.Join(dir, "note.txt")
	raw, err := agent.Request(testutil.Context(t, 30*time.Second), "files", call("write_file", map[string]any{"path": target, "content": "written through a proposal\n"}))
	if err != nil {
		t.Fatalf("the agent's proposal: %v", err)
	}
	var res toolResult
	if err := json.Unmarshal(raw, &res); err != nil || res.IsError {
		t.Fatalf("write_file result %s", raw)
	}
	if got := <-approved; strings.HasPrefix(got, "error") {
		t.Fatalf("fulfilment: %s", got)
	}
	data, err := os.ReadFile(target)
	if err != nil || string(data) != "written through a proposal\n" {
		t.Fatalf("the file holds %q, %v", data, err)
	}
	// And it reads back through the bridge.
	if r := callTool(t, human, "read_text_file", map[string]any{"path": target}); !strings.Contains(r.text(), "written through a proposal") {
		t.Errorf("read_text_file: %+v", r)
	}
	if r := callTool(t, human, "list_directory", map[string]any{"path": dir}); !strings.Contains(r.text(), "note.txt") {
		t.Errorf("list_directory: %+v", r)
	}
	// Outside the allowed directory the server refuses, as a tool error.
	if r := callTool(t, human, "read_text_file", map[string]any{"path": "/etc/hostname"}); !r.IsError {
		t.Errorf("reading outside the allowed directory: %+v", r)
	}
}
