package bridge_test

import (
	"bufio"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mew-protocol/mew/bridge"
	"github.com/mew-protocol/mew/internal/mcpserve"
	"github.com/mew-protocol/mew/internal/mcptest"
	"github.com/mew-protocol/mew/internal/mcpver"
	"github.com/mew-protocol/mew/internal/testutil"
	"github.com/mew-protocol/mew/participant"
)

// envOldServer makes the test binary a hand-written stdio MCP server, as
// the reference's own servers are, that answers initialize with the
// revision the variable holds.
const envOldServer = "MEW_TEST_OLDSERVER_VERSION"

// oldServer serves JSON-RPC lines on stdin/stdout with oldAnswer. It is
// what the reference's servers do, without an SDK that checks anything.
func oldServer(version string) int {
	in := bufio.NewScanner(os.Stdin)
	in.Buffer(make([]byte, 1<<20), 1<<20)
	out := json.NewEncoder(os.Stdout)
	for in.Scan() {
		if answer := oldAnswer(version, in.Bytes()); answer != nil {
			_ = out.Encode(answer)
		}
	}
	return 0
}

// oldAnswer answers one JSON-RPC message as a hand-written server speaking
// version: initialize answers version whatever the client asked;
// server/discover is unknown (-32601), unless version starts with
// "discover:", when it lists the rest of version and initialize is unknown
// instead (a stateless-only server); tools/list lists "echo"; tools/call
// echoes its text argument. A notification or garbage gets nil.
func oldAnswer(version string, msg []byte) map[string]any {
	var req struct {
		ID     json.RawMessage `json:"id"`
		Method string          `json:"method"`
		Params struct {
			Arguments struct {
				Text string `json:"text"`
			} `json:"arguments"`
		} `json:"params"`
	}
	if json.Unmarshal(msg, &req) != nil || req.ID == nil {
		return nil // a notification (initialized) or garbage: no answer
	}
	listed, stateless := strings.CutPrefix(version, "discover:")
	var result any
	switch {
	case req.Method == "initialize" && !stateless:
		result = map[string]any{
			"protocolVersion": version,
			"capabilities":    map[string]any{"tools": map[string]any{}},
			"serverInfo":      map[string]any{"name": "old-server", "version": "0.1.0"},
		}
	case req.Method == "server/discover" && stateless:
		result = map[string]any{"supportedVersions": strings.Split(listed, ","), "capabilities": map[string]any{"tools": map[string]any{}}}
	case req.Method == "tools/list":
		result = map[string]any{"tools": []any{map[string]any{
			"name": "echo", "description": "Echoes its text",
			"inputSchema": map[string]any{"type": "object", "properties": map[string]any{"text": map[string]any{"type": "string"}}},
		}}}
	case req.Method == "tools/call":
		result = map[string]any{"content": []any{map[string]any{"type": "text", "text": "echo: " + req.Params.Arguments.Text}}}
	default:
		return map[string]any{"jsonrpc": "2.0", "id": req.ID, "error": map[string]any{"code": -32601, "message": "Method not found"}}
	}
	return map[string]any{"jsonrpc": "2.0", "id": req.ID, "result": result}
}

// oldHTTPServer serves oldAnswer over HTTP, one JSON answer per POST, as
// the simplest streamable HTTP server does.
func oldHTTPServer(t *testing.T, version string) string {
	t.Helper()
	hs := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodPost {
			http.Error(w, "POST only", http.StatusMethodNotAllowed)
			return
		}
		body, err := io.ReadAll(io.LimitReader(r.Body, 1<<20))
		if err != nil {
			return
		}
		answer := oldAnswer(version, body)
		if answer == nil {
			w.WriteHeader(http.StatusAccepted)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(answer)
	}))
	t.Cleanup(hs.Close)
	return hs.URL
}

// oldServerCmd is the test binary as oldServer answering version.
func oldServerCmd(t *testing.T, version string) bridge.Server {
	t.Helper()
	exe := testutil.Executable(t)
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
	raw, err := human.Request(testutil.Context(t, 10*time.Second), "files", map[string]any{"method": "initialize", "params": map[string]any{"protocolVersion": "2025-06-18"}})
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

// TestBridgeRefusesRevisions: a server that answers initialize with the
// stateless revision (which has no initialize), or that lists in
// server/discover only a revision mew does not speak, is refused with an
// error naming it, over stdio and over HTTP.
func TestBridgeRefusesRevisions(t *testing.T) {
	g := startSpace(t, "")
	for _, tc := range []struct{ version, want string }{
		{mcpver.Stateless, `the server answered initialize with "2026-07-28", a stateless revision, which has no initialize`},
		{"discover:2099-01-01", `the server speaks only "2099-01-01"; mew speaks ` + strings.Join(mcpver.Supported(), ", ")},
		{"2099-01-01", `the server speaks protocol revision "2099-01-01", which mew does not`},
	} {
		for _, server := range []bridge.Server{oldServerCmd(t, tc.version), {URL: oldHTTPServer(t, tc.version)}} {
			_, err := tryStartBridge(t, g, bridge.Options{Server: server, NoRestart: true, InitTimeout: 10 * time.Second})
			if err == nil || !strings.Contains(err.Error(), tc.want) || !errors.Is(err, mcpver.ErrUnsupported) {
				t.Errorf("%s (url %q): %v, want %q", tc.version, server.URL, err, tc.want)
			}
		}
	}
}

// TestBridgeRevisions: the bridge agrees with a server on each revision mew
// speaks, the server speaking only that one, over stdio and over HTTP (the
// go-sdk's server; 2026-07-28 through server/discover, the others through
// initialize), reports it, and forwards a call. Participants in the space
// are answered initialize at their own revision whatever the bridge speaks.
func TestBridgeRevisions(t *testing.T) {
	for _, v := range mcpver.Supported() {
		t.Run(v, func(t *testing.T) {
			srv := mcptest.NewFor(nil, v)
			hs := httptest.NewServer(mcpserve.Handler(func(*http.Request) *mcp.Server { return srv }, nil))
			t.Cleanup(func() {
				hs.Close()
				for ss := range srv.Sessions() {
					_ = ss.Close()
				}
			})
			for name, server := range map[string]bridge.Server{
				"stdio": goServer(t, "normal", mcptest.EnvRevisions+"="+v),
				"http":  {URL: hs.URL},
			} {
				g := startSpace(t, "")
				b := startBridge(t, g, bridge.Options{Server: server, NoRestart: true})
				if got := b.Status().Protocol; got != v {
					t.Errorf("%s: agreed on %q", name, got)
				}
				human := join(t, g, "human", participant.Options{})
				if got := callTool(t, human, "echo", map[string]any{"text": name + " " + v}).text(); got != name+" "+v {
					t.Errorf("%s: echo answered %q", name, got)
				}
				raw, err := human.Request(testutil.Context(t, 10*time.Second), "files", map[string]any{"method": "initialize", "params": map[string]any{"protocolVersion": mcpver.Oldest}})
				if err != nil || !strings.Contains(string(raw), `"protocolVersion":"`+mcpver.Oldest+`"`) {
					t.Errorf("%s: initialize in the space: %s, %v", name, raw, err)
				}
				if !strings.Contains(b.logs.String(), "protocol="+v) {
					t.Errorf("%s: the log does not say which revision is spoken:\n%s", name, b.logs)
				}
				_ = b.stop()
			}
		})
	}
}
