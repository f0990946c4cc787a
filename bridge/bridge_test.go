package bridge_test

import (
	"context"
	"encoding/json"
	"errors"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mew-protocol/mew/bridge"
	"github.com/mew-protocol/mew/client"
	"github.com/mew-protocol/mew/internal/mcptest"
	"github.com/mew-protocol/mew/internal/testutil"
	"github.com/mew-protocol/mew/participant"
	"github.com/mew-protocol/mew/protocol"
)

// Everything a participant can ask of a Go MCP server through the bridge:
// paged lists, tools that succeed and fail, resources, templates, prompts,
// initialize, and the errors the server and the bridge answer.
func TestBridgeForwardsToGoServer(t *testing.T) {
	g := startSpace(t, "")
	b := startBridge(t, g, bridge.Options{Server: goServer(t, "normal")})
	human := join(t, g, "human", participant.Options{})
	responses := watch(human, protocol.KindMCPResponse)
	ctx := testutil.Context(t, 30*time.Second)

	// The bridge listed every page of the server's tools.
	var names []string
	for _, tool := range b.Tools() {
		names = append(names, tool.Name)
	}
	if !slices.Equal(names, mcptest.ToolNames) {
		t.Errorf("bridge tools %v, want %v", names, mcptest.ToolNames)
	}
	st := b.Status()
	if st.State != bridge.StateReady || st.Server == nil || st.Server.Name != mcptest.Name || st.Resources != 1 || st.ResourceTemplates != 1 || st.Prompts != 1 {
		t.Errorf("status %+v", st)
	}

	// tools/list is forwarded page by page, with the server's cursors.
	raw, err := human.Request(ctx, "files", map[string]any{"method": "tools/list"})
	if err != nil {
		t.Fatal(err)
	}
	var page struct {
		Tools      []struct{ Name string } `json:"tools"`
		NextCursor string                  `json:"nextCursor"`
	}
	if err := json.Unmarshal(raw, &page); err != nil || len(page.Tools) != 2 || page.NextCursor == "" {
		t.Fatalf("first page %s", raw)
	}
	raw, err = human.Request(ctx, "files", map[string]any{"method": "tools/list", "params": map[string]any{"cursor": page.NextCursor}})
	if err != nil || !strings.Contains(string(raw), `"name":"ask"`) || strings.Contains(string(raw), `"name":"add"`) {
		t.Fatalf("second page %s, %v", raw, err)
	}
	// Discovery follows the pages too.
	tools, err := human.DiscoverTools(ctx, "files")
	if err != nil || len(tools) != len(mcptest.ToolNames) {
		t.Fatalf("discovered %d tools, %v", len(tools), err)
	}

	// A tool call's result comes back as an mcp/response correlated to the
	// request, addressed to the requester.
	if r := callTool(t, human, "echo", map[string]any{"text": "hi <there> & all"}); r.text() != "hi <there> & all" || r.IsError {
		t.Errorf("echo: %+v", r)
	}
	// The call returns as the response is handled; the watcher's handler
	// may run a moment later.
	echoed := func(env *protocol.Envelope) bool { return strings.Contains(string(env.Payload), "there") }
	resp := responses.Wait(t, "echo's response envelope", echoed)
	if resp == nil || resp.From != "files" || !slices.Equal(resp.To, []string{"human"}) || len(resp.CorrelationID) != 1 {
		t.Errorf("echo's response envelope %+v", resp)
	}
	if r := callTool(t, human, "add", map[string]any{"a": 2, "b": 40}); string(r.StructuredContent) != `{"sum":42}` {
		t.Errorf("add: %+v (%s)", r, r.StructuredContent)
	}
	// A tool that fails is a result with isError, as the server sent it.
	if r := callTool(t, human, "fail", map[string]any{}); !r.IsError || !strings.Contains(r.text(), "on purpose") {
		t.Errorf("fail: %+v", r)
	}
	// JSON-RPC errors keep the server's code, message and data.
	_, err = human.Request(ctx, "files", call("coded", map[string]any{}))
	var rpcErr *participant.RPCError
	if !errors.As(err, &rpcErr) || rpcErr.Code != mcptest.CodedError || rpcErr.Message != "coded failure" || string(rpcErr.Data) != `{"detail":"on purpose"}` {
		t.Errorf("coded: %v", err)
	}
	if _, err = human.Request(ctx, "files", call("no-such-tool", nil)); rpcCode(err) != participant.CodeInvalidParams {
		t.Errorf("unknown tool: %v", err)
	}
	if r := callTool(t, human, "add", map[string]any{"a": "two"}); !r.IsError || !strings.Contains(r.text(), "validating") {
		t.Errorf("arguments that fail the schema (the go-sdk server answers with isError): %+v", r)
	}

	// Resources, templates, prompts.
	for _, c := range []struct {
		what, method string
		params       map[string]any
		want         string
	}{
		{"resources/list", "resources/list", nil, `"uri":"test://hello"`},
		{"resources/read", "resources/read", map[string]any{"uri": "test://hello"}, `"text":"hello, world"`},
		{"resources/templates/list", "resources/templates/list", nil, `"uriTemplate":"test://items/{id}"`},
		{"resources/read of a template", "resources/read", map[string]any{"uri": "test://items/42"}, `"text":"item 42"`},
		{"prompts/list", "prompts/list", nil, `"name":"greet"`},
		{"prompts/get", "prompts/get", map[string]any{"name": "greet", "arguments": map[string]any{"name": "Ada"}}, "Say hello to Ada"},
	} {
		req := map[string]any{"method": c.method}
		if c.params != nil {
			req["params"] = c.params
		}
		raw, err = human.Request(ctx, "files", req)
		if err != nil || !strings.Contains(string(raw), c.want) {
			t.Errorf("%s %s, %v", c.what, raw, err)
		}
	}
	// (The go-sdk's server answers -32602, as MCP 2025-11-25 says.)
	if _, err = human.Request(ctx, "files", map[string]any{"method": "resources/read", "params": map[string]any{"uri": "test://nothing"}}); rpcCode(err) != participant.CodeInvalidParams || !strings.Contains(err.Error(), "Resource not found") {
		t.Errorf("unknown resource: %v", err)
	}

	// initialize answers with the server's identity and capabilities.
	raw, err = human.Request(ctx, "files", map[string]any{"method": "initialize", "params": map[string]any{"protocolVersion": "2025-03-26"}})
	var init struct {
		ProtocolVersion string
		ServerInfo      struct{ Name string }
		Capabilities    map[string]any
	}
	if err != nil || json.Unmarshal(raw, &init) != nil || init.ProtocolVersion != "2025-03-26" || init.ServerInfo.Name != mcptest.Name || init.Capabilities["prompts"] == nil {
		t.Errorf("initialize %s, %v", raw, err)
	}
	if raw, err = human.Request(ctx, "files", map[string]any{"method": "ping"}); err != nil || string(raw) != "{}" {
		t.Errorf("ping %s, %v", raw, err)
	}
	if _, err = human.Request(ctx, "files", map[string]any{"method": "sampling/createMessage"}); rpcCode(err) != participant.CodeMethodNotFound {
		t.Errorf("a method the bridge does not forward: %v", err)
	}
	if _, err = human.Request(ctx, "files", map[string]any{"method": "tools/call", "params": []int{1}}); rpcCode(err) != participant.CodeInvalidParams {
		t.Errorf("params that are not an object: %v", err)
	}
}

// The server's standard error reaches the bridge's log, never the space.
func TestBridgeServerStderrGoesToLog(t *testing.T) {
	g := startSpace(t, "")
	b := startBridge(t, g, bridge.Options{Server: goServer(t, "normal")})
	human := join(t, g, "human", participant.Options{})
	seen := watch(human, protocol.KindChat, protocol.KindMCPResponse, protocol.KindParticipantStatus, protocol.KindMCPRequest)
	callTool(t, human, "stderr", map[string]any{"text": "a secret diagnostic line"})
	waitFor(t, "the line is logged", func() bool { return strings.Contains(b.logs.String(), "a secret diagnostic line") })
	for _, env := range seen.All(nil) {
		if env.From == "files" && strings.Contains(string(env.Payload), "secret diagnostic") {
			t.Errorf("stderr leaked into the space: %s %s", env.Kind, env.Payload)
		}
	}
}

// A tool list change on the server is announced in the space, and a
// discovering participant lists the tools again.
func TestBridgeAnnouncesListChanges(t *testing.T) {
	g := startSpace(t, "")
	b := startBridge(t, g, bridge.Options{Server: goServer(t, "normal")})
	agent := join(t, g, "agent", participant.Options{AutoDiscovery: true})
	human := join(t, g, "human", participant.Options{})
	requests := watch(human, protocol.KindMCPRequest)
	waitFor(t, "the agent discovered the bridge's tools", func() bool {
		return agent.DiscoveryStatus()["files"].State == participant.DiscoveryCompleted
	})

	callTool(t, human, "add_tool", map[string]any{"name": "extra"})
	waitFor(t, "the bridge lists the new tool", func() bool {
		return slices.ContainsFunc(b.Tools(), func(tl *mcp.Tool) bool { return tl.Name == "extra" })
	})
	waitFor(t, "the change is announced", func() bool {
		return requests.Find(func(env *protocol.Envelope) bool {
			return env.From == "files" && env.IsBroadcast() && strings.Contains(string(env.Payload), "notifications/tools/list_changed")
		}) != nil
	})
	waitFor(t, "the agent lists the new tool", func() bool {
		return slices.ContainsFunc(agent.AvailableTools(), func(tl participant.DiscoveredTool) bool { return tl.Name == "extra" })
	})
	if r := callTool(t, human, "extra", nil); r.text() != "I am extra" {
		t.Errorf("the new tool: %+v", r)
	}
}

// A server that crashes during calls: the calls in flight get an error at
// once, the bridge restarts the server, reports it, and serves again.
func TestBridgeRestartsACrashedServer(t *testing.T) {
	g := startSpace(t, "")
	b := startBridge(t, g, bridge.Options{Server: goServer(t, "normal"), RestartDelay: 50 * time.Millisecond})
	human := join(t, g, "human", participant.Options{})
	statuses := watch(human, protocol.KindParticipantStatus)

	slow := slowCall(t, human, b)
	start := time.Now()
	_, err := human.Request(testutil.Context(t, 20*time.Second), "files", call("crash", nil))
	if rpcCode(err) != bridge.CodeConnectionClosed || !strings.Contains(err.Error(), "exit status 3") {
		t.Errorf("the crashing call: %v, want CodeConnectionClosed naming the exit status", err)
	}
	if err := testutil.Receive(t, slow, 10*time.Second, "an answer to the call in flight"); rpcCode(err) != bridge.CodeConnectionClosed {
		t.Errorf("the call in flight: %v, want CodeConnectionClosed", err)
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Errorf("the callers waited %v for their errors", d)
	}

	waitFor(t, "the server is back", func() bool { st := b.Status(); return st.State == bridge.StateReady && st.Restarts == 1 })
	if r := callTool(t, human, "echo", map[string]any{"text": "back"}); r.text() != "back" {
		t.Errorf("after the restart: %+v", r)
	}
	waitFor(t, "restarting and ready were reported", func() bool {
		return statuses.Find(statusIs("restarting")) != nil && statuses.Find(statusIs("ready")) != nil
	})
	var st protocol.Status
	_ = statuses.Find(statusIs("restarting")).DecodePayload(&st)
	if !strings.Contains(string(st.Extra["error"]), "exit status 3") || string(st.Extra["mcp_server"]) != `"`+mcptest.Name+`"` {
		t.Errorf("restarting status %+v", st.Extra)
	}
	if !strings.Contains(b.logs.String(), "crashing on demand") {
		t.Error("the server's last words are not in the log")
	}
}

// A server killed from outside (SIGKILL) is restarted the same way.
func TestBridgeRestartsAKilledServer(t *testing.T) {
	g := startSpace(t, "")
	b := startBridge(t, g, bridge.Options{Server: goServer(t, "normal"), RestartDelay: 20 * time.Millisecond})
	human := join(t, g, "human", participant.Options{})
	pid, err := strconv.Atoi(callTool(t, human, "pid", nil).text())
	if err != nil {
		t.Fatal(err)
	}
	slow := slowCall(t, human, b)
	if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	if err := testutil.Receive(t, slow, 10*time.Second, "an answer to the call in flight"); rpcCode(err) != bridge.CodeConnectionClosed || !strings.Contains(err.Error(), "killed") {
		t.Errorf("the call in flight: %v, want CodeConnectionClosed saying the server was killed", err)
	}
	waitFor(t, "the server is back", func() bool { return b.Status().State == bridge.StateReady && b.Status().Restarts == 1 })
	newPid, _ := strconv.Atoi(callTool(t, human, "pid", nil).text())
	if newPid == pid || newPid == 0 {
		t.Errorf("pid after the restart %d (was %d)", newPid, pid)
	}
}

// A server that writes something that is not JSON-RPC is over: the call
// gets an error and the server is restarted.
func TestBridgeRestartsAServerWritingGarbage(t *testing.T) {
	g := startSpace(t, "")
	b := startBridge(t, g, bridge.Options{Server: goServer(t, "normal"), RestartDelay: 20 * time.Millisecond})
	human := join(t, g, "human", participant.Options{})
	_, err := human.Request(testutil.Context(t, 20*time.Second), "files", call("garble", nil))
	if err == nil {
		// The answer may have been written before the garbage; the next
		// call finds the session over.
		_, err = human.Request(testutil.Context(t, 20*time.Second), "files", call("echo", map[string]any{"text": "x"}))
	}
	if err != nil && rpcCode(err) != bridge.CodeConnectionClosed {
		t.Errorf("after garbage: %v, want CodeConnectionClosed", err)
	}
	waitFor(t, "the server is back", func() bool { return b.Status().State == bridge.StateReady && b.Status().Restarts == 1 })
	if r := callTool(t, human, "echo", map[string]any{"text": "clean"}); r.text() != "clean" {
		t.Errorf("after the restart: %+v", r)
	}
}

// A server that keeps dying is given up on after MaxRestarts: the space is
// told in a chat and a status, and requests fail at once.
func TestBridgeGivesUpOnACrashLoop(t *testing.T) {
	g := startSpace(t, "")
	human := join(t, g, "human", participant.Options{})
	seen := watch(human, protocol.KindChat, protocol.KindParticipantStatus)
	b := startBridge(t, g, bridge.Options{
		Server:       goServer(t, "normal", mcptest.EnvLifetime+"=700ms"),
		MaxRestarts:  2,
		RestartDelay: 10 * time.Millisecond,
	})
	waitFor(t, "the bridge gives up", func() bool { return b.Status().State == bridge.StateFailed })
	st := b.Status()
	if st.Restarts != 2 || st.Failures != 3 || !strings.Contains(st.Err, "exit status 2") {
		t.Errorf("status %+v", st)
	}
	waitFor(t, "the space is told", func() bool {
		return seen.Find(func(env *protocol.Envelope) bool {
			return env.Kind == protocol.KindChat && env.From == "files" && strings.Contains(string(env.Payload), "failed 3 times in a row")
		}) != nil && seen.Find(statusIs("error")) != nil
	})
	start := time.Now()
	_, err := human.Request(testutil.Context(t, 10*time.Second), "files", call("echo", map[string]any{"text": "x"}))
	if rpcCode(err) != bridge.CodeConnectionClosed || time.Since(start) > 2*time.Second {
		t.Errorf("a request to a bridge that gave up: %v after %v", err, time.Since(start))
	}
	if err := b.stop(); err != nil {
		t.Errorf("Run after giving up: %v", err)
	}
}

// With NoRestart the first death is final.
func TestBridgeNoRestart(t *testing.T) {
	g := startSpace(t, "")
	b := startBridge(t, g, bridge.Options{Server: goServer(t, "normal"), NoRestart: true})
	human := join(t, g, "human", participant.Options{})
	if _, err := human.Request(testutil.Context(t, 10*time.Second), "files", call("crash", nil)); rpcCode(err) != bridge.CodeConnectionClosed {
		t.Errorf("crash: %v", err)
	}
	waitFor(t, "the bridge gives up", func() bool { return b.Status().State == bridge.StateFailed })
	if b.Status().Restarts != 0 {
		t.Errorf("restarted with NoRestart: %+v", b.Status())
	}
}

// A request that outlives RequestTimeout is answered with
// CodeRequestTimeout and cancelled on the server.
func TestBridgeRequestTimeoutCancelsTheCall(t *testing.T) {
	g := startSpace(t, "")
	b := startBridge(t, g, bridge.Options{Server: goServer(t, "normal"), RequestTimeout: 300 * time.Millisecond})
	human := join(t, g, "human", participant.Options{})
	_, err := human.Request(testutil.Context(t, 10*time.Second), "files", call("slow", map[string]any{"ms": 10000}))
	if rpcCode(err) != bridge.CodeRequestTimeout {
		t.Fatalf("slow call: %v, want CodeRequestTimeout", err)
	}
	waitFor(t, "the server saw the cancellation", func() bool {
		return strings.Contains(b.logs.String(), "slow call cancelled")
	})
	// The session is still good.
	if r := callTool(t, human, "echo", map[string]any{"text": "still here"}); r.text() != "still here" {
		t.Errorf("after a timeout: %+v", r)
	}
}

// A proposer that withdraws its proposal cancels the fulfilment under way.
func TestBridgeWithdrawnProposalCancelsTheCall(t *testing.T) {
	g := startSpace(t, "")
	b := startBridge(t, g, bridge.Options{Server: goServer(t, "normal")})
	human := join(t, g, "human", participant.Options{})
	agent := join(t, g, "agent", participant.Options{})
	fulfilled := make(chan error, 1)
	human.OnProposal(func(pr *participant.Proposal) {
		go func() {
			_, err := human.Fulfill(context.Background(), pr)
			fulfilled <- err
		}()
	})
	// The agent may only propose tools/call; it gives up after a second,
	// which withdraws its proposal.
	_, err := agent.Request(testutil.Context(t, time.Second), "files", call("slow", map[string]any{"ms": 20000}))
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("agent's request: %v", err)
	}
	if err := testutil.Receive(t, fulfilled, 10*time.Second, "an answer to the fulfilment"); rpcCode(err) != bridge.CodeRequestCancelled || !strings.Contains(err.Error(), "withdrawn") {
		t.Errorf("fulfilment: %v, want CodeRequestCancelled", err)
	}
	waitFor(t, "the server saw the cancellation", func() bool { return strings.Contains(b.logs.String(), "slow call cancelled") })
}

// A requester may cancel its request with notifications/cancelled.
func TestBridgeRequesterCancels(t *testing.T) {
	g := startSpace(t, "")
	b := startBridge(t, g, bridge.Options{Server: goServer(t, "normal")})
	human := join(t, g, "human", participant.Options{})
	responses := watch(human, protocol.KindMCPResponse)

	env, err := protocol.New(protocol.KindMCPRequest, map[string]any{"jsonrpc": "2.0", "id": 77, "method": "tools/call", "params": map[string]any{"name": "slow", "arguments": map[string]any{"ms": 20000}}})
	if err != nil {
		t.Fatal(err)
	}
	env.ID, env.To = protocol.NewID(), []string{"files"}
	if err := human.Send(testutil.Context(t, 5*time.Second), env); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the slow call is in flight", func() bool { return strings.Contains(b.logs.String(), "slow call started") })
	cancel, _ := protocol.New(protocol.KindMCPRequest, map[string]any{"jsonrpc": "2.0", "method": "notifications/cancelled", "params": map[string]any{"requestId": 77, "reason": "changed my mind"}})
	cancel.To = []string{"files"}
	if err := human.Send(testutil.Context(t, 5*time.Second), cancel); err != nil {
		t.Fatal(err)
	}
	resp := responses.Wait(t, "the cancelled request is answered", func(e *protocol.Envelope) bool { return slices.Contains(e.CorrelationID, env.ID) })
	var msg protocol.MCPMessage
	if err := resp.DecodePayload(&msg); err != nil || msg.Error == nil || msg.Error.Code != bridge.CodeRequestCancelled || string(msg.ID) != "77" {
		t.Errorf("answer %s", resp.Payload)
	}
	waitFor(t, "the server saw the cancellation", func() bool { return strings.Contains(b.logs.String(), "slow call cancelled") })
}

// A server that never answers initialize fails the start within the init
// timeout, and is stopped.
func TestBridgeInitTimeout(t *testing.T) {
	g := startSpace(t, "")
	start := time.Now()
	r, err := tryStartBridge(t, g, bridge.Options{Server: goServer(t, "silent"), InitTimeout: 500 * time.Millisecond})
	if err == nil || !strings.Contains(err.Error(), "init timeout") {
		t.Fatalf("Run: %v, want an init timeout", err)
	}
	if d := time.Since(start); d > 10*time.Second {
		t.Errorf("gave up after %v", d)
	}
	if st := r.Status(); st.State != bridge.StateStopped {
		t.Errorf("status %+v", st)
	}
}

// Servers that fail to start: one that exits, one that writes garbage, a
// command that does not exist.
func TestBridgeStartFailures(t *testing.T) {
	g := startSpace(t, "")
	for _, tc := range []struct {
		name   string
		server bridge.Server
		want   string
	}{
		{"exits", goServer(t, "exit"), "exit status 7"},
		{"garbage", goServer(t, "garbage"), "initializing"},
		{"no such command", bridge.Server{Command: "/nonexistent/mcp-server"}, "no such file"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r, err := tryStartBridge(t, g, bridge.Options{Server: tc.server, InitTimeout: 5 * time.Second})
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("Run: %v, want it to mention %q", err, tc.want)
			}
			if tc.name == "exits" && !strings.Contains(r.logs.String(), "refusing to start") {
				t.Errorf("the server's stderr is not logged:\n%s", r.logs)
			}
		})
	}
}

// The server gets the environment and working directory asked for.
func TestBridgeServerEnvAndDir(t *testing.T) {
	g := startSpace(t, "")
	dir := t.TempDir()
	s := goServer(t, "normal", "MEW_BRIDGE_TEST_VALUE=a=b,c")
	s.Dir = dir
	startBridge(t, g, bridge.Options{Server: s})
	human := join(t, g, "human", participant.Options{})
	if got := callTool(t, human, "env", map[string]any{"name": "MEW_BRIDGE_TEST_VALUE"}).text(); got != "a=b,c" {
		t.Errorf("env: %q", got)
	}
	if got := callTool(t, human, "cwd", nil).text(); got != dir {
		t.Errorf("cwd: %q, want %q", got, dir)
	}
}

// Bad options are refused by New.
func TestBridgeNewRefusesBadOptions(t *testing.T) {
	ok := bridge.Server{Command: "x"}
	for name, opts := range map[string]bridge.Options{
		"no server":           {},
		"command and URL":     {Server: bridge.Server{Command: "x", URL: "http://127.0.0.1:1/mcp"}},
		"env without =":       {Server: bridge.Server{Command: "x", Env: []string{"NOVALUE"}}},
		"env without a name":  {Server: bridge.Server{Command: "x", Env: []string{"=v"}}},
		"NUL in an argument":  {Server: bridge.Server{Command: "x", Args: []string{"a\x00b"}}},
		"URL of another kind": {Server: bridge.Server{URL: "ftp://example.invalid/"}},
		"URL without a host":  {Server: bridge.Server{URL: "http:///mcp"}},
		"negative timeout":    {Server: ok, InitTimeout: -1},
		"negative restarts":   {Server: ok, MaxRestarts: -1},
		"no gateway":          {Server: ok},
	} {
		if _, err := bridge.New(opts); err == nil {
			t.Errorf("%s: New accepted %+v", name, opts)
		} else if !strings.HasPrefix(err.Error(), "bridge: ") {
			t.Errorf("%s: error %q does not start with \"bridge: \"", name, err)
		}
	}
	b, err := bridge.New(bridge.Options{Server: ok, Participant: participant.Options{Client: client.Options{Gateway: "ws://127.0.0.1:1", Space: "s", Token: "t"}}})
	if err != nil {
		t.Fatal(err)
	}
	if err := b.Run(context.Background()); err == nil {
		t.Error("Run of a command that does not exist succeeded")
	}
	if err := b.Run(context.Background()); !errors.Is(err, bridge.ErrRunning) {
		t.Errorf("second Run: %v, want ErrRunning", err)
	}
}

// participant/restart restarts the server at once, without counting a
// failure; participant/shutdown stops the bridge.
func TestBridgeParticipantControls(t *testing.T) {
	g := startSpace(t, "")
	b := startBridge(t, g, bridge.Options{Server: goServer(t, "normal")})
	human := join(t, g, "human", participant.Options{})
	statuses := watch(human, protocol.KindParticipantStatus)
	pid := callTool(t, human, "pid", nil).text()

	control := func(kind string, payload any) string {
		t.Helper()
		env, err := protocol.New(kind, payload)
		if err != nil {
			t.Fatal(err)
		}
		env.ID, env.To = protocol.NewID(), []string{"files"}
		if err := human.Send(testutil.Context(t, 5*time.Second), env); err != nil {
			t.Fatal(err)
		}
		return env.ID
	}
	id := control(protocol.KindParticipantRestart, protocol.Restart{Reason: "new config"})
	waitFor(t, "the restart is reported", func() bool {
		return statuses.Find(func(e *protocol.Envelope) bool {
			return statusIs("restarted")(e) && slices.Contains(e.CorrelationID, id)
		}) != nil
	})
	if st := b.Status(); st.State != bridge.StateReady || st.Restarts != 1 || st.Failures != 0 {
		t.Errorf("after participant/restart: %+v", st)
	}
	if got := callTool(t, human, "pid", nil).text(); got == pid {
		t.Errorf("the server was not restarted (pid %s)", got)
	}

	control(protocol.KindParticipantShutdown, protocol.Shutdown{Reason: "done"})
	waitFor(t, "the bridge stops", func() bool { return b.Status().State == bridge.StateStopped })
	if err := b.stop(); err != nil {
		t.Errorf("Run after participant/shutdown: %v", err)
	}
}

// A bridge whose connection will not come back (here: another connection
// with its token replaces it) stops, with an error, and stops its server.
func TestBridgeEndsWhenItsConnectionIsLostForGood(t *testing.T) {
	g := startSpace(t, "")
	b := startBridge(t, g, bridge.Options{Server: goServer(t, "normal")})
	testutil.Join(t, g.WSURL, "files-token")
	waitFor(t, "the bridge stops", func() bool { return b.Status().State == bridge.StateStopped })
	if err := b.stop(); err == nil || !strings.Contains(err.Error(), "lost for good") {
		t.Errorf("Run: %v, want the lost connection", err)
	}
}
