package bridge_test

import (
	"bufio"
	"encoding/json"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/mew-protocol/mew/bridge"
	"github.com/mew-protocol/mew/internal/mcpver"
	"github.com/mew-protocol/mew/participant"
)

// envOldServer makes the test binary a hand-written stdio MCP server, as
// the reference's own servers are, that answers initialize with the
// revision the variable holds.
const envOldServer = "MEW_TEST_OLDSERVER_VERSION"

// oldServer serves JSON-RPC lines on stdin/stdout: initialize answers
// version whatever the client asked; tools/list lists "echo"; tools/call
// echoes its text argument. It is what the reference's servers do, without
// an SDK that checks anything.
func oldServer(version string) int {
	in := bufio.NewScanner(os.Stdin)
	in.Buffer(make([]byte, 1<<20), 1<<20)
	out := json.NewEncoder(os.Stdout)
	for in.Scan() {
		var req struct {
			ID     json.RawMessage `json:"id"`
			Method string          `json:"method"`
			Params struct {
				Arguments struct {
					Text string `json:"text"`
				} `json:"arguments"`
			} `json:"params"`
		}
		if json.Unmarshal(in.Bytes(), &req) != nil || req.ID == nil {
			continue // a notification (initialized) or garbage: no answer
		}
		var result any
		switch req.Method {
		case "initialize":
			result = map[string]any{
				"protocolVersion": version,
				"capabilities":    map[string]any{"tools": map[string]any{}},
				"serverInfo":      map[string]any{"name": "old-server", "version": "0.1.0"},
			}
		case "tools/list":
			result = map[string]any{"tools": []any{map[string]any{
				"name": "echo", "description": "Echoes its text",
				"inputSchema": map[string]any{"type": "object", "properties": map[string]any{"text": map[string]any{"type": "string"}}},
			}}}
		case "tools/call":
			result = map[string]any{"content": []any{map[string]any{"type": "text", "text": "echo: " + req.Params.Arguments.Text}}}
		default:
			_ = out.Encode(map[string]any{"jsonrpc": "2.0", "id": req.ID, "error": map[string]any{"code": -32601, "message": "Method not found"}})
			continue
		}
		_ = out.Encode(map[string]any{"jsonrpc": "2.0", "id": req.ID, "result": result})
	}
	return 0
}

// oldServerCmd is the test binary as oldServer answering version.
func oldServerCmd(t *testing.T, version string) bridge.Server {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	return bridge.Server{Command: exe, Env: []string{envOldServer + "=" + version, "GORACE=atexit_sleep_ms=0"}}
}

// TestBridgeOldProtocolServer: a server that answers initialize with the
// reference's "0.1.0" joins through the bridge, its tools are listed and
// callable, and participants are answered at the revision they ask for.
func TestBridgeOldProtocolServer(t *testing.T) {
	g := startSpace(t, "")
	r := startBridge(t, g, bridge.Options{Server: oldServerCmd(t, "0.1.0"), NoRestart: true})
	human := join(t, g, "human", participant.Options{})
	if got := callTool(t, human, "echo", map[string]any{"text": "hi"}).text(); got != "echo: hi" {
		t.Errorf("echo answered %q", got)
	}
	raw, err := human.Request(ctxFor(t, 10*time.Second), "files", map[string]any{"method": "initialize", "params": map[string]any{"protocolVersion": "2025-06-18"}})
	if err != nil || !strings.Contains(string(raw), `"protocolVersion":"2025-06-18"`) || !strings.Contains(string(raw), `"name":"old-server"`) {
		t.Errorf("initialize: %s, %v", raw, err)
	}
	if !strings.Contains(r.logs.String(), "answered=0.1.0") || !strings.Contains(r.logs.String(), "speaking="+mcpver.Oldest) {
		t.Errorf("the logs do not say which revision is spoken:\n%s", r.logs)
	}
}

// TestBridgeNewerProtocolServer: a server that answers with a revision
// newer than any mew speaks is refused with an error naming it, not with
// the SDK's bare "unsupported protocol version".
func TestBridgeNewerProtocolServer(t *testing.T) {
	g := startSpace(t, "")
	_, err := tryStartBridge(t, g, bridge.Options{Server: oldServerCmd(t, "2099-01-01"), NoRestart: true})
	if err == nil || !strings.Contains(err.Error(), `"2099-01-01"`) || !strings.Contains(err.Error(), "mew speaks "+strings.Join(mcpver.Supported(), ", ")) {
		t.Fatalf("start: %v", err)
	}
}
