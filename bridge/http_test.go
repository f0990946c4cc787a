package bridge_test

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mew-protocol/mew/bridge"
	"github.com/mew-protocol/mew/internal/mcptest"
	"github.com/mew-protocol/mew/internal/testutil"
	"github.com/mew-protocol/mew/participant"
)

// A server reached over streamable HTTP instead of a command; when it goes
// away, calls are answered with an error, not left waiting.
func TestBridgeStreamableHTTP(t *testing.T) {
	srv := mcptest.New(nil)
	hs := httptest.NewServer(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv }, nil))
	t.Cleanup(func() {
		hs.Close()
		// The server side of the session outlives the abrupt close.
		for ss := range srv.Sessions() {
			_ = ss.Close()
		}
	})
	g := startSpace(t, "")
	b := startBridge(t, g, bridge.Options{Server: bridge.Server{URL: hs.URL}, RequestTimeout: 5 * time.Second, MaxRestarts: 1, RestartDelay: 10 * time.Millisecond})
	human := join(t, g, "human", participant.Options{})
	if len(b.Tools()) != len(mcptest.ToolNames) {
		t.Errorf("%d tools", len(b.Tools()))
	}
	if r := callTool(t, human, "echo", map[string]any{"text": "over http"}); r.text() != "over http" {
		t.Errorf("echo: %+v", r)
	}
	raw, err := human.Request(testutil.Context(t, 10*time.Second), "files", map[string]any{"method": "prompts/get", "params": map[string]any{"name": "greet", "arguments": map[string]any{"name": "Grace"}}})
	if err != nil || !strings.Contains(string(raw), "Say hello to Grace") {
		t.Errorf("prompts/get: %s, %v", raw, err)
	}

	hs.CloseClientConnections()
	hs.Close()
	start := time.Now()
	_, err = human.Request(testutil.Context(t, 20*time.Second), "files", call("echo", map[string]any{"text": "anyone?"}))
	if rpcCode(err) == 0 {
		t.Errorf("a call to a server that is gone: %v, want a JSON-RPC error", err)
	}
	if d := time.Since(start); d > 10*time.Second {
		t.Errorf("answered after %v", d)
	}
}
