package cli

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mew-protocol/mew/examples/travel-desk/travelmcp"
	"github.com/mew-protocol/mew/gateway"
	"github.com/mew-protocol/mew/internal/mcptest"
	"github.com/mew-protocol/mew/internal/testutil"
	"github.com/mew-protocol/mew/participant"
	"github.com/mew-protocol/mew/toolsagent"
)

// envTravelServer makes this test binary serve travelmcp (see
// TestToolsAgentHelperTravelServer).
const envTravelServer = "MEW_CLI_TRAVEL_SERVER"

// TestToolsAgentHelperTravelServer is not a test: it is the travel-desk MCP
// server that the tools agents of these tests start, this test binary run
// again with envTravelServer set.
func TestToolsAgentHelperTravelServer(t *testing.T) {
	if os.Getenv(envTravelServer) == "" {
		t.Skip("the travel server runs only as a child process of the tools-agent tests")
	}
	os.Exit(travelmcp.Main())
}

// cliDefinition is a tools agent whose "travel" server is this test binary
// and whose "bookings" server needs approval (and does not even exist:
// it must never be started). %q: the binary, the helper's -test.run, the
// call log.
const cliDefinition = `
name: cli-desk
version: 3.0.1
description: A travel desk for the command tests.
mode: tools
maxIterations: 4
timeout: 3s
mcpServers:
  travel:
    command: %q
    args: [%q]
    env: {MEW_CLI_TRAVEL_SERVER: "1", TRAVELMCP_CALL_LOG: %q}
    permission: never
  bookings:
    command: /nonexistent/bookings-server
    permission: always
tools:
  - name: find_flights
    description: Find flights.
    parameters:
      type: object
      properties:
        origin: {type: string, description: From.}
        destination: {type: string}
        date: {type: string, minLength: 10, maxLength: 10}
        passengers: {type: integer, minimum: 1, maximum: 9, default: 1}
      required: [origin, destination, date]
      additionalProperties: false
    prompt: "Flights from {origin} to {destination} on {date}, {passengers} passenger(s)."
  - name: echo
    description: Repeats.
    parameters:
      type: object
      properties:
        text: {type: string}
    prompt: "Say {text}"
`

// cliDesk is a written cliDefinition.
type cliDesk struct {
	path, callLog string
	def           *toolsagent.Definition
}

// writeDesk writes cliDefinition (with extra appended) to a new directory.
func writeDesk(t *testing.T, extra string) cliDesk {
	t.Helper()
	exe := testutil.Executable(t)
	dir := t.TempDir()
	d := cliDesk{path: filepath.Join(dir, "desk.yaml"), callLog: filepath.Join(dir, "calls.jsonl")}
	text := fmt.Sprintf(cliDefinition, exe, "-test.run=^TestToolsAgentHelperTravelServer$", d.callLog) + extra
	d.def = testutil.WriteDefinition(t, d.path, text)
	return d
}

// travelCalls returns the tools the travel server ran.
func travelCalls(t *testing.T, path string) []string {
	t.Helper()
	data, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for line := range strings.SplitSeq(strings.TrimSpace(string(data)), "\n") {
		var c struct{ Tool string }
		if err := json.Unmarshal([]byte(line), &c); err != nil {
			t.Fatalf("call log %q: %v", line, err)
		}
		out = append(out, c.Tool)
	}
	return out
}

// modelEnv is the environment that points mew at the scripted model.
func modelEnv(srv *testutil.LLMServer) []string {
	return []string{"OPENAI_BASE_URL=" + srv.URL(), "OPENAI_API_KEY=test-key", "OPENAI_MODEL=scripted"}
}

// `mew agent mcp` over stdio, the built binary driven by the go-sdk
// client: initialize, tools/list, a call that uses the permitted server
// (and never the one that needs approval), invalid arguments,
// cancellation, timeout, and a clean exit when the client leaves.
func TestAgentMCPStdio(t *testing.T) {
	bin := mewBinary(t)
	desk := writeDesk(t, "")
	srv := testutil.NewLLMServer(t)
	srv.Script(
		testutil.LLMCall(testutil.LLMToolCall{Name: "travel_search_flights", Arguments: `{"origin":"Lisbon","destination":"Paris","date":"2026-12-01"}`}),
		testutil.LLMCall(testutil.LLMToolCall{Name: "bookings_book_flight", Arguments: `{"flight":"X 1","date":"2026-12-01","passenger":"Ada"}`}),
		testutil.LLMReply("AF 123 is the best."),
	)
	stderr := &testutil.Buffer{}
	cmd := exec.Command(bin, "agent", "mcp", "--config", desk.path, "--log-level", "debug")
	cmd.Env = append(os.Environ(), modelEnv(srv)...)
	cmd.Stderr = stderr
	client := mcp.NewClient(&mcp.Implementation{Name: "host", Version: "1"}, nil)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	session, err := client.Connect(ctx, &mcp.CommandTransport{Command: cmd}, nil)
	if err != nil {
		t.Fatalf("connect: %v\n%s", err, stderr)
	}
	defer session.Close()
	testutil.CheckToolsServer(t, session, desk.def, "cli-desk", "3.0.1", "A travel desk for the command tests.")

	res, err := session.CallTool(ctx, &mcp.CallToolParams{Name: "find_flights", Arguments: map[string]any{"origin": "Lisbon", "destination": "Paris", "date": "2026-12-01"}})
	if err != nil || res.IsError || mcptest.Text(res) != "AF 123 is the best." {
		t.Fatalf("find_flights: %+v, %v\n%s", res, err, stderr)
	}
	reqs := srv.Requests()
	var offered []string
	for _, tl := range reqs[0].Tools {
		offered = append(offered, tl.Name)
	}
	if !slices.Equal(offered, []string{"travel_book_flight", "travel_search_flights", "travel_weather_forecast"}) {
		t.Errorf("offered %v", offered)
	}
	if got := travelCalls(t, desk.callLog); !slices.Equal(got, []string{"search_flights"}) {
		t.Errorf("the travel server ran %v", got)
	}
	if last := reqs[2].Messages[len(reqs[2].Messages)-1]; !strings.Contains(last.Content, `unknown tool "bookings_book_flight"`) {
		t.Errorf("the bookings tool was not refused: %+v", last)
	}

	// Refused arguments are a tool error the calling model can read.
	refused, err := session.CallTool(ctx, &mcp.CallToolParams{Name: "find_flights", Arguments: map[string]any{"origin": 1, "when": "today"}})
	if err != nil || !refused.IsError || len(refused.Content) != 1 ||
		!strings.Contains(refused.Content[0].(*mcp.TextContent).Text, "destination: required; date: required; origin: want a string, got a number (1); when: unknown member") {
		t.Errorf("invalid arguments: %+v, %v", refused, err)
	}

	// Cancellation: the client gives up while the model thinks.
	srv.Script(testutil.LLMStep{Text: "late", Delay: 20 * time.Second})
	cctx, ccancel := context.WithCancel(ctx)
	time.AfterFunc(500*time.Millisecond, ccancel)
	if _, err := session.CallTool(cctx, &mcp.CallToolParams{Name: "echo", Arguments: map[string]any{"text": "x"}}); !errors.Is(err, context.Canceled) {
		t.Errorf("cancelled call: %v", err)
	}
	waitUntil(t, "the run stops", func() bool { return strings.Contains(stderr.String(), "echo: cancelled") })

	// Timeout (3s in the definition): an error result.
	srv.Script(testutil.LLMStep{Text: "late", Delay: 20 * time.Second})
	res, err = session.CallTool(ctx, &mcp.CallToolParams{Name: "echo", Arguments: map[string]any{"text": "x"}})
	if err != nil || !res.IsError || !strings.Contains(mcptest.Text(res), "the call timed out: echo ran for 3s") {
		t.Errorf("timeout: %+v, %v", res, err)
	}

	// The client leaves: mew exits 0.
	if err := session.Close(); err != nil {
		t.Errorf("close: %v\n%s", err, stderr)
	}
	if code := cmd.ProcessState.ExitCode(); code != 0 {
		t.Errorf("mew agent mcp exited %d\n%s", code, stderr)
	}
	if strings.Contains(stderr.String(), "test-key") {
		t.Error("the API key is in the log")
	}
}

// waitUntil polls cond for up to 15 s.
func waitUntil(t *testing.T, what string, cond func() bool) {
	t.Helper()
	testutil.WaitFor(t, 15*time.Second, what, cond)
}

// `mew agent mcp --http`: the built binary over streamable HTTP, stopped
// by SIGINT.
func TestAgentMCPHTTP(t *testing.T) {
	bin := mewBinary(t)
	desk := writeDesk(t, "")
	srv := testutil.NewLLMServer(t)
	srv.Script(testutil.LLMReply("over HTTP"))
	cmd := exec.Command(bin, "agent", "mcp", "-c", desk.path, "--http", "127.0.0.1:0")
	cmd.Env = append(os.Environ(), modelEnv(srv)...)
	url, exited, logs := startLogging(t, cmd, regexp.MustCompile(`url=(http://\S+)`))
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	session, err := mcp.NewClient(&mcp.Implementation{Name: "host", Version: "1"}, nil).Connect(ctx, &mcp.StreamableClientTransport{Endpoint: url}, nil)
	if err != nil {
		t.Fatal(err)
	}
	testutil.CheckToolsServer(t, session, desk.def, "cli-desk", "3.0.1", "A travel desk for the command tests.")
	res, err := session.CallTool(ctx, &mcp.CallToolParams{Name: "echo", Arguments: map[string]any{"text": "hi"}})
	if err != nil || mcptest.Text(res) != "over HTTP" {
		t.Fatalf("echo: %+v, %v", res, err)
	}
	if u := srv.Requests()[0].Messages[1].Content; u != "Say hi" {
		t.Errorf("prompt %q", u)
	}
	if refused, err := session.CallTool(ctx, &mcp.CallToolParams{Name: "find_flights", Arguments: map[string]any{"origin": "x"}}); err != nil || !refused.IsError {
		t.Errorf("invalid arguments: %+v, %v", refused, err)
	}
	_ = session.Close()
	interrupt(t, cmd, exited, logs, 15*time.Second)
}

// inspectorInstall installs the MCP inspector where .ci/run does.
const inspectorInstall = "npm install -g --prefix ~/.cache/mew/npm @modelcontextprotocol/inspector@2.12.0 && export PATH=~/.cache/mew/npm/bin:$PATH"

// inspector finds the MCP inspector's command (mcp-inspector, whose --cli
// mode is a scriptable MCP client).
func inspector(t *testing.T) string {
	t.Helper()
	if path, err := exec.LookPath("mcp-inspector"); err == nil {
		return path
	}
	if home, err := os.UserHomeDir(); err == nil {
		path := filepath.Join(home, ".cache", "mew", "npm", "bin", "mcp-inspector")
		if _, err := os.Stat(path); err == nil {
			return path
		}
	}
	if os.Getenv("CI") == "true" {
		t.Fatalf("mcp-inspector is not installed; .ci/run installs it (%s)", inspectorInstall)
	}
	t.Skipf("mcp-inspector is not installed; install it with: %s", inspectorInstall)
	return ""
}

// The npm MCP inspector, as an outside client would use it, lists and
// calls the tools of `mew agent mcp` over stdio.
func TestAgentMCPInspector(t *testing.T) {
	insp := inspector(t)
	if _, err := exec.LookPath("node"); err != nil {
		t.Fatalf("mcp-inspector is installed but node is not: %v", err)
	}
	bin := mewBinary(t)
	desk := writeDesk(t, "")
	srv := testutil.NewLLMServer(t)
	run := func(args ...string) (string, string, error) {
		t.Helper()
		ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
		defer cancel()
		// The inspector starts the server with a few variables only:
		// pass the model's with -e.
		full := []string{"--cli"}
		for _, kv := range modelEnv(srv) {
			full = append(full, "-e", kv)
		}
		full = append(full, args...)
		full = append(full, "--", bin, "agent", "mcp", "--config", desk.path, "--log-level", "warn")
		cmd := exec.CommandContext(ctx, insp, full...)
		var out, errOut testutil.Buffer
		cmd.Stdout, cmd.Stderr = &out, &errOut
		err := cmd.Run()
		return out.String(), errOut.String(), err
	}

	out, errOut, err := run("--method", "tools/list", "--strict")
	if err != nil {
		t.Fatalf("inspector tools/list: %v\n%s\n%s", err, out, errOut)
	}
	var list struct {
		Tools []struct {
			Name        string
			InputSchema map[string]any
		}
	}
	if err := json.Unmarshal([]byte(out), &list); err != nil {
		t.Fatalf("tools/list output %q: %v", out, err)
	}
	if len(list.Tools) != 2 || list.Tools[1].Name != "find_flights" || list.Tools[1].InputSchema["additionalProperties"] != false {
		t.Errorf("listed %+v", list.Tools)
	}

	srv.Script(
		testutil.LLMCall(testutil.LLMToolCall{Name: "travel_search_flights", Arguments: `{"origin":"Porto","destination":"Berlin","date":"2026-07-14"}`}),
		testutil.LLMReply("LH 456, 10:05."),
	)
	out, errOut, err = run("--method", "tools/call", "--tool-name", "find_flights", "--tool-arg", "origin=Porto", "destination=Berlin", "date=2026-07-14", "passengers=2")
	if err != nil {
		t.Fatalf("inspector tools/call: %v\n%s\n%s", err, out, errOut)
	}
	var res struct {
		Content []struct{ Type, Text string }
		IsError bool
	}
	if err := json.Unmarshal([]byte(out), &res); err != nil || res.IsError || len(res.Content) != 1 || res.Content[0].Text != "LH 456, 10:05." {
		t.Errorf("tools/call output %q: %v", out, err)
	}
	if u := srv.Requests()[0].Messages[1].Content; u != "Flights from Porto to Berlin on 2026-07-14, 2 passenger(s)." {
		t.Errorf("prompt %q", u)
	}
	if got := travelCalls(t, desk.callLog); !slices.Equal(got, []string{"search_flights"}) {
		t.Errorf("travel server calls %v", got)
	}

	out, errOut, err = run("--method", "tools/call", "--tool-name", "find_flights", "--tool-arg", "origin=Porto")
	if err == nil || !strings.Contains(out+errOut, "destination: required") {
		t.Errorf("invalid arguments through the inspector: %v\n%s\n%s", err, out, errOut)
	}
}

func TestToolTestCommand(t *testing.T) {
	desk := writeDesk(t, "")
	srv := testutil.NewLLMServer(t)
	env := map[string]string{"OPENAI_BASE_URL": srv.URL(), "OPENAI_API_KEY": "k"}
	opts := Options{Getenv: func(k string) string { return env[k] }}

	out, _, err := run(t, opts, "agent", "tool-test", "--config", desk.path, "find_flights", "--arg", "origin=Oslo", "-a", "passengers=two", "--preview")
	if err != nil {
		t.Fatal(err)
	}
	want := "== Prompt of find_flights (preview)\nFlights from Oslo to {destination} on {date}, two passenger(s).\n" +
		"== What is wrong with the arguments\n- destination: required\n- date: required\n- passengers: want an integer, got a string (\"two\")\n"
	if out != want {
		t.Errorf("preview\n%s\nwant\n%s", out, want)
	}
	if len(srv.Requests()) != 0 {
		t.Error("the preview asked the model")
	}

	srv.Script(
		testutil.LLMCall(testutil.LLMToolCall{Name: "travel_weather_forecast", Arguments: `{"city":"Oslo","date":"2026-02-01"}`}),
		testutil.LLMReply("Fly on Monday."),
	)
	out, stderr, err := run(t, opts, "agent", "tool-test", "-c", desk.path, "find_flights",
		"--args", `{"origin":"Oslo","destination":"Rome","passengers":1}`, "--arg", "date=2026-02-01", "--arg", "passengers=3")
	if err != nil {
		t.Fatalf("%v\n%s", err, stderr)
	}
	for _, want := range []string{
		"== Prompt of find_flights\nFlights from Oslo to Rome on 2026-02-01, 3 passenger(s).\n",
		"== Tools offered to the model (openai): travel/book_flight, travel/search_flights, travel/weather_forecast\n",
		"== Step 1: the model calls\ntravel/weather_forecast {\"city\":\"Oslo\",\"date\":\"2026-02-01\"}\n",
		"== Step 1: travel/weather_forecast returned\nOslo on 2026-02-01: ",
		"== Step 2: the model answers\n",
		"2 model calls)\nFly on Monday.\n",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}

	// Invalid arguments, an unknown tool, a failing model: errors.
	if _, _, err := run(t, opts, "agent", "tool-test", "-c", desk.path, "find_flights", "--arg", "origin=Oslo"); err == nil ||
		!strings.Contains(err.Error(), "destination: required") {
		t.Errorf("invalid arguments: %v", err)
	}
	if _, _, err := run(t, opts, "agent", "tool-test", "-c", desk.path, "nope"); err == nil || !strings.Contains(err.Error(), "tools: find_flights, echo") {
		t.Errorf("unknown tool: %v", err)
	}
	if _, _, err := run(t, opts, "agent", "tool-test", "-c", desk.path, "echo", "--arg", "bad"); err == nil || !strings.Contains(err.Error(), "want NAME=VALUE") {
		t.Errorf("bad --arg: %v", err)
	}
	srv.Script(testutil.LLMFail(401, "no such key"))
	out, _, err = run(t, opts, "agent", "tool-test", "-c", desk.path, "echo", "--arg", "text=hi")
	if err == nil || !strings.Contains(out, "== Failed\ntoolsagent: echo: model openai") {
		t.Errorf("failing model: %v\n%s", err, out)
	}
	// A definition with errors names them.
	bad := filepath.Join(t.TempDir(), "bad.yaml")
	if err := os.WriteFile(bad, []byte("name: x\nmode: tools\ntools: [{name: t, prompt: \"{y}\"}]\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, _, err := run(t, opts, "agent", "tool-test", "-c", bad, "t"); err == nil || !strings.Contains(err.Error(), "tools[0].prompt (line 3): {y} names neither") {
		t.Errorf("bad definition: %v", err)
	}
}

// `mew agent run --config FILE` with mode: tools serves the tools in the
// space.
func TestToolsAgentRunInSpace(t *testing.T) {
	g := testutil.StartGateway(t, `
space: {id: cli-tools}
participants:
  human:
    tokens: [human-token]
    capabilities: [{kind: "*"}]
  desk:
    tokens: [desk-token]
    capabilities:
      - {kind: "reasoning/*"}
      - {kind: mcp/response}
      - {kind: mcp/request}
      - {kind: "participant/*"}
`, gateway.Options{})
	desk := writeDesk(t, "gateway: ws://"+g.Addr+"\nspace: cli-tools\ntoken: ${DESK_TOKEN}\n")
	srv := testutil.NewLLMServer(t)
	srv.Script(testutil.LLMReply("said hi"))
	env := map[string]string{"OPENAI_BASE_URL": srv.URL(), "OPENAI_API_KEY": "k", "DESK_TOKEN": "desk-token",
		"MEW_AGENT_CONFIG": `{"systemPrompt":"From the environment."}`}
	c := startAgentCmd(t, env, "--config", desk.path)
	human := joinCLI(t, g, "human-token")
	waitUntil(t, "desk serves its tools", func() bool {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		tools, err := human.DiscoverTools(ctx, "desk")
		return err == nil && len(tools) == 2
	})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	raw, err := human.Request(ctx, "desk", map[string]any{"method": "tools/call", "params": map[string]any{"name": "echo", "arguments": map[string]any{"text": "hi"}}})
	if err != nil {
		t.Fatalf("%v\n%s", err, c.out)
	}
	var res participant.ToolResult
	if err := json.Unmarshal(raw, &res); err != nil || res.Text() != "said hi" {
		t.Errorf("echo: %s, %v", raw, err)
	}
	req := srv.Requests()[0]
	if req.Messages[0].Content != "From the environment." || req.Messages[1].Content != "Say hi" {
		t.Errorf("model request %+v", req.Messages)
	}
	c.cancel()
	if err := c.wait(t); err != nil {
		t.Errorf("mew agent run (tools) after cancel: %v", err)
	}

	// Without a gateway, it says what is missing.
	plain := writeDesk(t, "")
	_, _, err = run(t, Options{Getenv: func(string) string { return "" }}, "agent", "run", "--config", plain.path)
	if err == nil || !strings.Contains(err.Error(), "missing -g/--gateway") {
		t.Errorf("no gateway: %v", err)
	}
}

// A run that ends on a tool's error exits non-zero, and the error is shown
// plainly.
func TestToolTestFailedRun(t *testing.T) {
	desk := writeDesk(t, "")
	srv := testutil.NewLLMServer(t)
	env := map[string]string{"OPENAI_BASE_URL": srv.URL(), "OPENAI_API_KEY": "k"}
	opts := Options{Getenv: func(k string) string { return env[k] }}
	srv.Script(
		testutil.LLMCall(testutil.LLMToolCall{Name: "travel_search_flights", Arguments: `{"origin":"Oslo","destination":"Rome","date":"tomorrow"}`}),
		testutil.LLMReply("Sorry, the search failed."),
	)
	out, _, err := run(t, opts, "agent", "tool-test", "-c", desk.path, "find_flights",
		"--arg", "origin=Oslo", "--arg", "destination=Rome", "--arg", "date=2026-02-01")
	if err == nil || !strings.Contains(err.Error(), "the run ended after travel/search_flights failed") {
		t.Errorf("err %v", err)
	}
	for _, want := range []string{
		"== Step 1: travel/search_flights failed\ndate \"tomorrow\": want YYYY-MM-DD\n",
		"Sorry, the search failed.\n== Failed\nthe run ended after travel/search_flights failed: date \"tomorrow\": want YYYY-MM-DD\n",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}

	// A failure the model recovers from is no failure.
	srv.Script(
		testutil.LLMCall(testutil.LLMToolCall{Name: "travel_search_flights", Arguments: `{"origin":"Oslo","destination":"Rome","date":"tomorrow"}`}),
		testutil.LLMCall(testutil.LLMToolCall{Name: "travel_search_flights", Arguments: `{"origin":"Oslo","destination":"Rome","date":"2026-02-01"}`}),
		testutil.LLMReply("AF 1 it is."),
	)
	if out, _, err := run(t, opts, "agent", "tool-test", "-c", desk.path, "find_flights",
		"--arg", "origin=Oslo", "--arg", "destination=Rome", "--arg", "date=2026-02-01"); err != nil || strings.Contains(out, "== Failed") {
		t.Errorf("recovered run: %v\n%s", err, out)
	}
}

// offlineEnv is the environment without model settings: mew uses the
// offline model.
func offlineEnv(extra ...string) []string {
	var env []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "OPENAI_") && !strings.HasPrefix(kv, "MEW_AGENT_CONFIG=") {
			env = append(env, kv)
		}
	}
	return append(env, extra...)
}

// `mew agent tool-test` on examples/travel-desk with the offline model,
// through the built binary: the model fills search_flights from the prompt
// and answers with its flights; a day that does not exist makes it say
// which field it could not fill, and mew exit non-zero.
func TestToolTestTravelDeskOffline(t *testing.T) {
	bin := mewBinary(t)
	dir, err := filepath.Abs(filepath.Join("..", "..", "examples", "travel-desk"))
	if err != nil {
		t.Fatal(err)
	}
	callLog := filepath.Join(t.TempDir(), "calls.jsonl")
	tooltest := func(date string) (string, error) {
		ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
		defer cancel()
		c := exec.CommandContext(ctx, bin, "agent", "tool-test", "-c", "travel-desk.yaml", "find_flights",
			"--arg", "origin=Lisbon", "--arg", "destination=New York", "--arg", "date="+date)
		c.Dir = dir
		c.Env = offlineEnv(travelmcp.EnvCallLog + "=" + callLog)
		var stdout, stderr testutil.Buffer
		c.Stdout, c.Stderr = &stdout, &stderr
		err := c.Run()
		if ctx.Err() != nil {
			t.Fatalf("tool-test did not finish: %s\n%s", stdout.String(), stderr.String())
		}
		return stdout.String(), err
	}

	out, err := tooltest("2026-12-01")
	if err != nil {
		t.Fatalf("tool-test: %v\n%s", err, out)
	}
	data, err := os.ReadFile(callLog)
	if err != nil {
		t.Fatal(err)
	}
	var calls []struct {
		Tool      string
		Arguments travelmcp.SearchIn
	}
	for line := range strings.SplitSeq(strings.TrimSpace(string(data)), "\n") {
		var c struct {
			Tool      string
			Arguments travelmcp.SearchIn
		}
		if err := json.Unmarshal([]byte(line), &c); err != nil {
			t.Fatal(err)
		}
		calls = append(calls, c)
	}
	wantCall := travelmcp.SearchIn{Origin: "Lisbon", Destination: "New York", Date: "2026-12-01"}
	if len(calls) != 1 || calls[0].Tool != "search_flights" || calls[0].Arguments != wantCall {
		t.Errorf("the travel server ran %+v, want search_flights %+v", calls, wantCall)
	}
	for _, want := range []string{
		"== Tools offered to the model (offline): travel/search_flights, travel/weather_forecast\n",
		`travel/search_flights {"date":"2026-12-01","destination":"New York","origin":"Lisbon"}` + "\n",
		"2 model calls)\nYou asked: Find flights from Lisbon to New York on 2026-12-01 for 1 passenger(s), economy cabin. travel/search_flights returned:\n\nFlights from Lisbon to New York on 2026-12-01:\n- ",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, "== Failed") {
		t.Errorf("a good run reported a failure:\n%s", out)
	}

	out, err = tooltest("2026-02-30")
	var exit *exec.ExitError
	if !errors.As(err, &exit) || exit.ExitCode() == 0 {
		t.Errorf("a run that could not be done: %v, want a non-zero exit\n%s", err, out)
	}
	for _, want := range []string{
		"could not fill the field date (departure date, YYYY-MM-DD)",
		"== Failed\nthe model could not complete the task",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	if data2, _ := os.ReadFile(callLog); string(data2) != string(data) {
		t.Errorf("the failed run called the travel server:\n%s", data2)
	}
}
