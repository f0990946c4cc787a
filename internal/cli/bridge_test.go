package cli

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/mew-protocol/mew/gateway"
	"github.com/mew-protocol/mew/internal/mcptest"
	"github.com/mew-protocol/mew/internal/testutil"
	"github.com/mew-protocol/mew/participant"
)

// TestBridgeHelperMCPServer is not a test: it is the MCP server that the
// bridge tests start, this test binary run again with mcptest.EnvMode set.
func TestBridgeHelperMCPServer(t *testing.T) {
	if os.Getenv(mcptest.EnvMode) == "" {
		t.Skip("the helper MCP server runs only as a child process of the bridge tests")
	}
	os.Exit(mcptest.Main())
}

// helperArgs runs TestBridgeHelperMCPServer alone.
const helperArgs = "-test.run=^TestBridgeHelperMCPServer$"

// filesBridgeCaps are the capabilities of files, the MCP bridge of the
// cli tests' spaces.
const filesBridgeCaps = `    capabilities:
      - {kind: mcp/response}
      - {kind: participant/status}
      - {kind: chat}
      - {kind: mcp/request, payload: {method: "notifications/**"}}
`

// bridgeCLISpace is a space whose participant files is an MCP bridge of
// the helper server; %s is the test binary.
var bridgeCLISpace = `
space: {id: clibridge}
participants:
  files:
    type: mcp-bridge
    tokens: [files-token]
    mcp_server:
      command: %q
      args: [%q]
      env: {MEW_TESTSERVER_MODE: normal, GORACE: "atexit_sleep_ms=0", FROM_FILE: "${MEW_CLI_BRIDGE_PROBE}", UNSET: "${MEW_CLI_BRIDGE_NOT_SET}"}
      cwd: work
    bridge_config: {init_timeout: 20000, max_reconnects: 2}
` + filesBridgeCaps + testutil.Member("human", "*") + testutil.Member("plain", "chat")

// bridgeGateway starts a gateway for bridgeCLISpace.
func bridgeGateway(t *testing.T) *testutil.Gateway {
	t.Helper()
	exe := testutil.Executable(t)
	g := testutil.StartGateway(t, fmt.Sprintf(bridgeCLISpace, exe, helperArgs), gateway.Options{})
	if err := os.MkdirAll(g.Config.Resolve("work"), 0o755); err != nil {
		t.Fatal(err)
	}
	return g
}

// startBridgeCmd runs `mew <args>` until the test ends and waits until the
// bridge says it is ready. It returns the log and a function that stops
// the command (as SIGINT does) and returns its error.
func startBridgeCmd(t *testing.T, args ...string) (*lineWriter, func() error) {
	t.Helper()
	logs, out := &lineWriter{}, &lineWriter{}
	root := NewRoot(Options{Stdout: out, Stderr: logs})
	root.SetArgs(args)
	run := testutil.Background(t, root.ExecuteContext)
	deadline := time.Now().Add(30 * time.Second)
	for !strings.Contains(logs.String(), "bridge ready") {
		select {
		case <-run.Done():
			t.Fatalf("mew bridge start exited: %v\n%s", run.Stop(), logs)
		case <-time.After(10 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			t.Fatalf("the bridge was not ready within 30 s:\n%s", logs)
		}
	}
	return logs, run.Stop
}

// human joins g as human.
func humanOf(t *testing.T, g *testutil.Gateway) *participant.Participant {
	t.Helper()
	return testutil.JoinParticipant(t, g, "human-token", participant.Options{})
}

// toolText calls a tool of files and returns its text, or the error.
func toolText(t *testing.T, p *participant.Participant, name string, args any) (string, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	raw, err := p.Request(ctx, "files", map[string]any{"method": "tools/call", "params": map[string]any{"name": name, "arguments": args}})
	if err != nil {
		return "", err
	}
	var res struct {
		Content []struct{ Text string } `json:"content"`
	}
	if err := json.Unmarshal(raw, &res); err != nil || len(res.Content) == 0 {
		return "", fmt.Errorf("result %s", raw)
	}
	return res.Content[0].Text, nil
}

// The reference's flags start a bridge that works end to end: calls, the
// server's environment and working directory, a restart after the server
// is killed mid-call, and a clean stop.
func TestBridgeStartWithFlags(t *testing.T) {
	g := bridgeGateway(t)
	exe, _ := os.Executable()
	cwd := t.TempDir()
	logs, stop := startBridgeCmd(t, "bridge", "start",
		"-g", "ws://"+g.Addr, "-s", "clibridge", "-p", "files", "-t", "files-token",
		"-m", exe, "--mcp-args", helperArgs, "--mcp-env", "MEW_TESTSERVER_MODE=normal,MEW_CLI_VALUE=a,b,GORACE=atexit_sleep_ms=0",
		"--mcp-cwd", cwd, "--init-timeout", "20000", "--reconnect", "true", "--max-reconnects", "3", "-l", "debug")
	human := humanOf(t, g)

	if got, err := toolText(t, human, "echo", map[string]any{"text": "via the cli"}); err != nil || got != "via the cli" {
		t.Fatalf("echo: %q, %v\n%s", got, err, logs)
	}
	if got, _ := toolText(t, human, "env", map[string]any{"name": "MEW_CLI_VALUE"}); got != "a,b" {
		t.Errorf("--mcp-env value with a comma: %q", got)
	}
	if got, _ := toolText(t, human, "cwd", nil); got != cwd {
		t.Errorf("--mcp-cwd: %q, want %q", got, cwd)
	}

	// Kill the server in the middle of a call: the caller gets an error,
	// and the bridge is back.
	pidText, err := toolText(t, human, "pid", nil)
	pid, _ := strconv.Atoi(pidText)
	if err != nil || pid == 0 {
		t.Fatalf("pid: %q, %v", pidText, err)
	}
	slow := make(chan error, 1)
	go func() {
		_, err := toolText(t, human, "slow", map[string]any{"ms": 20000})
		slow <- err
	}()
	for deadline := time.Now().Add(10 * time.Second); !strings.Contains(logs.String(), "slow call started"); time.Sleep(5 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the slow call never started")
		}
	}
	if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-slow:
		var rpcErr *participant.RPCError
		if !errors.As(err, &rpcErr) || rpcErr.Code != -32000 {
			t.Errorf("the call in flight: %v, want error -32000", err)
		}
	case <-time.After(15 * time.Second):
		t.Fatal("the call in flight got no answer")
	}
	var got string
	for deadline := time.Now().Add(20 * time.Second); got != "back"; {
		got, _ = toolText(t, human, "echo", map[string]any{"text": "back"})
		if time.Now().After(deadline) {
			t.Fatalf("the bridge did not come back:\n%s", logs)
		}
	}

	if err := stop(); err != nil {
		t.Fatalf("stop: %v", err)
	}
	out := logs.String()
	for _, want := range []string{"bridge starting", "MCP server ready", "restarting the MCP server", "bridge stopped", "env=\"[MEW_TESTSERVER_MODE MEW_CLI_VALUE GORACE]\""} {
		if !strings.Contains(out, want) {
			t.Errorf("the log lacks %q", want)
		}
	}
	if strings.Contains(out, "files-token") {
		t.Error("the token is in the log")
	}
}

// Without --mcp-command, the participant's mcp_server and bridge_config
// come from the space configuration, with its token and space id.
func TestBridgeStartFromSpaceConfig(t *testing.T) {
	t.Setenv("MEW_CLI_BRIDGE_PROBE", "expanded")
	g := bridgeGateway(t)
	logs, stop := startBridgeCmd(t, "bridge", "start", "-g", "ws://"+g.Addr, "-p", "files", "--space-config", g.Config.Path)
	human := humanOf(t, g)
	if got, err := toolText(t, human, "env", map[string]any{"name": "FROM_FILE"}); err != nil || got != "expanded" {
		t.Errorf("env from the file: %q, %v", got, err)
	}
	if got, _ := toolText(t, human, "env", map[string]any{"name": "UNSET"}); got != "${MEW_CLI_BRIDGE_NOT_SET}" {
		t.Errorf("an unset variable: %q, want it left as written", got)
	}
	if got, _ := toolText(t, human, "cwd", nil); got != g.Config.Resolve("work") {
		t.Errorf("cwd: %q, want %q (relative to the space)", got, g.Config.Resolve("work"))
	}
	if err := stop(); err != nil {
		t.Fatal(err)
	}
	if out := logs.String(); !strings.Contains(out, "init_timeout=20s") || !strings.Contains(out, "max_restarts=2") {
		t.Errorf("bridge_config not applied:\n%s", out)
	}
}

// A server that never initializes fails the command within --init-timeout.
func TestBridgeStartInitTimeout(t *testing.T) {
	g := bridgeGateway(t)
	exe, _ := os.Executable()
	start := time.Now()
	_, stderr, err := run(t, Options{}, "bridge", "start", "-g", "ws://"+g.Addr, "-s", "clibridge", "-p", "files", "-t", "files-token",
		"-m", exe, "--mcp-args", helperArgs, "--mcp-env", "MEW_TESTSERVER_MODE=silent", "--init-timeout", "400")
	if err == nil || !strings.Contains(err.Error(), "init timeout") {
		t.Fatalf("err = %v, want an init timeout\n%s", err, stderr)
	}
	if d := time.Since(start); d > 15*time.Second {
		t.Errorf("took %v", d)
	}
}

func TestBridgeStartBadInput(t *testing.T) {
	g := bridgeGateway(t)
	base := []string{"bridge", "start", "-g", "ws://127.0.0.1:1", "-s", "s", "-p", "files", "-t", "tok"}
	with := func(extra ...string) []string { return append(slices.Clone(base), extra...) }
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"bridge", "start"}, "--gateway is required"},
		{[]string{"bridge", "start", "-g", "ws://127.0.0.1:1"}, "--participant-id is required"},
		{[]string{"bridge", "start", "-g", "localhost:8080", "-p", "x"}, "--gateway"},
		{with("-m", "srv", "--mcp-env", "NOEQUALS"), "--mcp-env"},
		{with("-m", "srv", "--mcp-env", "1BAD=x"), "not a variable name"},
		{with("-m", "srv", "--mcp-env", "=x"), "not a variable name"},
		{with("-m", "srv", "--mcp-env", "A=1,B C=2"), "not a variable name"},
		{with("-m", "srv", "--init-timeout", "soon"), "--init-timeout"},
		{with("-m", "srv", "--init-timeout", "0"), "--init-timeout"},
		{with("-m", "srv", "--request-timeout", "-5s"), "--request-timeout"},
		{with("-m", "srv", "--reconnect", "maybe"), "--reconnect"},
		{with("-m", "srv", "--max-reconnects", "-1"), "--max-reconnects"},
		{with("-m", "srv", "--mcp-url", "http://127.0.0.1:1/mcp"), "give one"},
		{with("--mcp-url", "ftp://127.0.0.1/mcp"), "want http:// or https://"},
		{with("--mcp-url", "http://127.0.0.1:1/mcp", "--mcp-args", "a"), "apply to a command only"},
		{with("-m", "srv", "stray"), "unexpected argument"},
		{with("-m", "srv", "-l", "loud"), "--log-level"},
		{with(), "no --mcp-command or --mcp-url"},
		{[]string{"bridge", "start", "-g", "ws://127.0.0.1:1", "-p", "human", "--space-config", g.Config.Path}, "not an MCP bridge"},
		{[]string{"bridge", "start", "-g", "ws://127.0.0.1:1", "-p", "nobody", "--space-config", g.Config.Path}, `no participant "nobody"`},
		{[]string{"bridge", "start", "-g", "ws://127.0.0.1:1", "-p", "files", "--space-config", filepath.Join(t.TempDir(), "none.yaml")}, "none.yaml"},
		{with("-m", "/nonexistent/mcp-server"), "starting the MCP server"},
	} {
		_, _, err := run(t, Options{}, tc.args...)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("mew %s: err = %v, want it to mention %q", strings.Join(tc.args, " "), err, tc.want)
		}
	}
}

func TestBridgeParseMCPEnv(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want []string
	}{
		{"", nil},
		{"A=1", []string{"A=1"}},
		{"A=1,B=2", []string{"A=1", "B=2"}},
		{"PATH=/a,/b,B=x=y", []string{"PATH=/a,/b", "B=x=y"}},
		{"EMPTY=", []string{"EMPTY="}},
		{" A =1", []string{"A=1"}},
	} {
		got, err := parseMCPEnv(tc.in)
		if err != nil || !slices.Equal(got, tc.want) {
			t.Errorf("parseMCPEnv(%q) = %q, %v; want %q", tc.in, got, err, tc.want)
		}
	}
	if got := splitArgs("-y,@scope/pkg,./dir"); !slices.Equal(got, []string{"-y", "@scope/pkg", "./dir"}) {
		t.Errorf("splitArgs: %q", got)
	}
	for in, want := range map[string]time.Duration{"30000": 30 * time.Second, "1500ms": 1500 * time.Millisecond, "2m": 2 * time.Minute} {
		if got, err := parseMillis("x", in); err != nil || got != want {
			t.Errorf("parseMillis(%q) = %v, %v", in, got, err)
		}
	}
}
