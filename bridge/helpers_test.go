package bridge_test

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/mew-protocol/mew/bridge"
	"github.com/mew-protocol/mew/client"
	"github.com/mew-protocol/mew/gateway"
	"github.com/mew-protocol/mew/internal/mcptest"
	"github.com/mew-protocol/mew/internal/testutil"
	"github.com/mew-protocol/mew/participant"
	"github.com/mew-protocol/mew/protocol"
)

// TestMain runs the test binary as the Go MCP test server when the bridge
// under test starts it (mcptest.EnvMode set), and the tests otherwise.
func TestMain(m *testing.M) {
	if os.Getenv(mcptest.EnvMode) != "" {
		os.Exit(mcptest.Main())
	}
	if v := os.Getenv(envOldServer); v != "" {
		os.Exit(oldServer(v))
	}
	goleak.VerifyTestMain(m)
}

// bridgeSpace is the space of the tests: files is the bridge; human may do
// anything; agent may only list tools and propose.
var bridgeSpace = testutil.SpaceYAML("bridge",
	testutil.Member("files", "mcp/response", `{kind: mcp/request, payload: {method: "notifications/**"}}`, "participant/status", "chat"),
	testutil.Member("human", "*"),
	testutil.Member("agent", "chat", "mcp/proposal", "mcp/withdraw", `{kind: mcp/request, payload: {method: "tools/list"}}`),
)

// goServer is the Go test server run by this test binary, in mode, with
// extra NAME=VALUE environment entries.
func goServer(t testing.TB, mode string, env ...string) bridge.Server {
	t.Helper()
	exe := testutil.Executable(t)
	// A race-enabled child sleeps a second at exit unless told not to.
	return bridge.Server{Command: exe, Env: append([]string{mcptest.EnvMode + "=" + mode, "GORACE=atexit_sleep_ms=0"}, env...)}
}

// npmServer returns the path of an npm reference server's binary (put on
// PATH by .ci/run). Locally the test is skipped without it; in CI
// (CI=true) its absence fails the test.
func npmServer(t testing.TB, bin string) string {
	t.Helper()
	path, err := exec.LookPath(bin)
	if err == nil {
		return path
	}
	const install = "npm install -g --prefix ~/.cache/mew/npm @modelcontextprotocol/server-everything@2026.8.31 @modelcontextprotocol/server-filesystem@2026.8.31 && export PATH=~/.cache/mew/npm/bin:$PATH"
	if os.Getenv("CI") == "true" {
		t.Fatalf("%s is not on PATH; .ci/run installs it (%s)", bin, install)
	}
	t.Skipf("%s is not on PATH; install the npm reference servers with: %s", bin, install)
	return ""
}

// running is a bridge started by startBridge.
type running struct {
	*bridge.Bridge
	logs *testutil.Buffer
	stop func() error // cancels Run and returns its error
}

// startBridge runs a bridge that joins g as participant "files" and waits
// until it is ready. It is stopped when the test ends, if not before.
func startBridge(t testing.TB, g *testutil.Gateway, opts bridge.Options) *running {
	t.Helper()
	r, err := tryStartBridge(t, g, opts)
	if err != nil {
		t.Fatalf("bridge: %v\nlogs:\n%s", err, r.logs)
	}
	return r
}

// tryStartBridge is startBridge returning Run's error when the bridge
// never becomes ready.
func tryStartBridge(t testing.TB, g *testutil.Gateway, opts bridge.Options) (*running, error) {
	t.Helper()
	logs := &testutil.Buffer{}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	}
	opts.Participant.Client = client.Options{
		Gateway: "ws://" + g.Addr, Space: g.Config.Space.ID, Token: "files-token", Reconnect: true,
	}
	b, err := bridge.New(opts)
	if err != nil {
		t.Fatal(err)
	}
	run, err := testutil.StartRun(t, b.Run, b.Ready())
	return &running{Bridge: b, logs: logs, stop: run.Stop}, err
}

// startSpace starts a gateway for bridgeSpace (or spaceYAML).
func startSpace(t testing.TB, spaceYAML string) *testutil.Gateway {
	t.Helper()
	if spaceYAML == "" {
		spaceYAML = bridgeSpace
	}
	return testutil.StartGateway(t, spaceYAML, gateway.Options{})
}

// join connects participant id (token "<id>-token") and waits until its
// capabilities are known.
func join(t testing.TB, g *testutil.Gateway, id string, opts participant.Options) *participant.Participant {
	t.Helper()
	p := testutil.JoinParticipant(t, g, id+"-token", opts)
	waitFor(t, id+" has its capabilities", func() bool { return len(p.Capabilities()) > 0 })
	return p
}

// waitFor polls cond for up to 20 s.
func waitFor(t testing.TB, what string, cond func() bool) {
	t.Helper()
	testutil.WaitFor(t, 20*time.Second, what, cond)
}

// slowCall makes human call the server's slow tool (20 s) from a goroutine
// and waits until the server b bridges has the call; the call's error comes
// on the channel returned.
func slowCall(t testing.TB, human *participant.Participant, b *running) <-chan error {
	t.Helper()
	slow := make(chan error, 1)
	go func() {
		_, err := human.Request(context.Background(), "files", call("slow", map[string]any{"ms": 20000}))
		slow <- err
	}()
	waitFor(t, "the slow call is in flight", func() bool { return strings.Contains(b.logs.String(), "slow call started") })
	return slow
}

// call is a tools/call payload.
func call(name string, args any) map[string]any {
	return map[string]any{"method": "tools/call", "params": map[string]any{"name": name, "arguments": args}}
}

// toolResult is a tools/call result as the tests read it.
type toolResult struct {
	Content []struct {
		Type string `json:"type"`
		Text string `json:"text"`
	} `json:"content"`
	StructuredContent json.RawMessage `json:"structuredContent"`
	IsError           bool            `json:"isError"`
}

func (r toolResult) text() string {
	var parts []string
	for _, c := range r.Content {
		parts = append(parts, c.Text)
	}
	return strings.Join(parts, "\n")
}

// callTool calls a tool of "files" as p and decodes the result.
func callTool(t testing.TB, p *participant.Participant, name string, args any) toolResult {
	t.Helper()
	raw, err := p.Request(testutil.Context(t, 20*time.Second), "files", call(name, args))
	if err != nil {
		t.Fatalf("tools/call %s: %v", name, err)
	}
	var r toolResult
	if err := json.Unmarshal(raw, &r); err != nil {
		t.Fatalf("tools/call %s: result %s: %v", name, raw, err)
	}
	return r
}

// rpcCode returns the JSON-RPC error code of err, or 0.
func rpcCode(err error) int {
	var e *participant.RPCError
	if errors.As(err, &e) {
		return e.Code
	}
	return 0
}

// watch collects the envelopes of the given kinds that p receives.
func watch(p *participant.Participant, kinds ...string) *testutil.Inbox {
	return testutil.Watch(p.Client(), kinds...)
}

// statusIs matches a participant/status of files with the status s.
func statusIs(s string) func(*protocol.Envelope) bool {
	return func(env *protocol.Envelope) bool {
		if env.Kind != protocol.KindParticipantStatus || env.From != "files" {
			return false
		}
		var st protocol.Status
		return env.DecodePayload(&st) == nil && st.Status == s
	}
}
