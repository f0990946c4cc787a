package hostile

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mew-protocol/mew/internal/mcptest"
	"github.com/mew-protocol/mew/internal/testutil"
	"github.com/mew-protocol/mew/participant"
)

// bridgeArgs are the arguments of `mew bridge start` joining g as files.
func bridgeArgs(g *testutil.Gateway, server ...string) []string {
	return append([]string{"bridge", "start", "-g", "ws://" + g.Addr, "-s", g.Config.Space.ID, "-p", "files", "-t", "files-token",
		"--request-timeout", "30s", "--init-timeout", "20s"}, server...)
}

// stdioServer is the flags that make the bridge run the hostile stdio MCP
// server (this test binary), with extra environment entries.
func stdioServer(t *testing.T, env ...string) []string {
	t.Helper()
	exe := testutil.Executable(t)
	return []string{"--mcp-command", exe, "--mcp-env", strings.Join(append([]string{envRole + "=mcp", "GORACE=atexit_sleep_ms=0"}, env...), ",")}
}

// startBridgeMew runs `mew bridge start` for server joining g as files
// (bridgeArgs), and waits until it has joined.
func startBridgeMew(t *testing.T, g *testutil.Gateway, human *participant.Participant, server ...string) *child {
	t.Helper()
	b := startMew(t, nil, bridgeArgs(g, server...)...)
	waitBridge(t, human, b)
	return b
}

// waitBridge waits until the bridge has joined: it answers ping once it
// has started its server and listed what it has.
func waitBridge(t *testing.T, human *participant.Participant, b *child) {
	t.Helper()
	testutil.WaitFor(t, 30*time.Second, "the bridge joined", func() bool {
		if b.exited() {
			t.Fatalf("the bridge exited: %v\n%s", b.err, b.out)
		}
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		_, err := human.Request(ctx, "files", map[string]any{"method": "ping"})
		return err == nil
	})
}

// toolCall is a tools/call payload.
func toolCall(name string, args any) map[string]any {
	return map[string]any{"method": "tools/call", "params": map[string]any{"name": name, "arguments": args}}
}

// askFiles sends payload to the bridge as p and returns the answer, how
// long it took and its error.
func askFiles(t *testing.T, p *participant.Participant, payload any) (json.RawMessage, time.Duration, error) {
	t.Helper()
	start := time.Now()
	raw, err := p.Request(testutil.Context(t, 20*time.Second), "files", payload)
	return raw, time.Since(start), err
}

// checkEcho fails the test unless the bridge still answers a normal call.
func checkEcho(t *testing.T, p *participant.Participant) {
	t.Helper()
	raw, _, err := askFiles(t, p, toolCall("echo", map[string]any{"text": "still here"}))
	if err != nil || !strings.Contains(string(raw), "still here") {
		t.Errorf("a normal call after the attack: %.200s, %v", raw, err)
	}
}

// bridgeRSSLimit bounds the bridge's resident set (its peak) through
// class 6's attacks: the bridge once grew to 370 MB on them.
func bridgeRSSLimit() int64 { return 128 * mib * raceScale() }

// TestHostileToolResultStdio (class 6): a stdio MCP server answers a call
// with 2 MB, more than the gateway relays. The caller is answered at once
// with an error that says the result is too large, three times in a row;
// the bridge keeps its server, stays small, and the bystanders' chats
// flow.
func TestHostileToolResultStdio(t *testing.T) {
	g := startSpace(t)
	human := join(t, g, "human")
	b := startBridgeMew(t, g, human, stdioServer(t)...)
	t.Logf("the bridge's peak resident set before the attack: %.1f MiB", float64(procStatus(t, b.pid(), "VmHWM"))/mib)
	by := startBystander(t, g)
	var worst time.Duration
	for i := range 3 {
		raw, took, err := askFiles(t, human, toolCall("big", map[string]any{"bytes": 2 * mib}))
		worst = max(worst, took)
		msg := errorText(err)
		if err == nil || !strings.Contains(msg, "more than a reply may carry") {
			t.Fatalf("call %d: %.200s, %v: want an error saying the result is too large", i+1, raw, err)
		}
		if took > soon() {
			t.Errorf("call %d was answered after %v", i+1, took)
		}
		t.Logf("call %d answered in %v: %s", i+1, took, msg)
	}
	checkEcho(t, human)
	by.check(t, time.Second)
	hwm := procStatus(t, b.pid(), "VmHWM")
	t.Logf("2 MB results: slowest answer %v; the bridge's peak resident set %.1f MiB", worst, float64(hwm)/mib)
	if hwm > bridgeRSSLimit() {
		t.Errorf("the bridge's peak resident set is %.1f MiB, over %d MiB", float64(hwm)/mib, bridgeRSSLimit()/mib)
	}
}

// hugeListServer serves hostileServer over streamable HTTP and returns its
// URL; its tools/list is one page of n tools when n > 0.
func hugeListServer(t *testing.T, n int) string {
	t.Helper()
	s := hostileServer()
	tools := make([]*mcp.Tool, n)
	schema := json.RawMessage(`{"type":"object"}`)
	for i := range tools {
		tools[i] = &mcp.Tool{Name: fmt.Sprintf("tool_%06d", i), Description: "one of very many", InputSchema: schema}
	}
	s.AddReceivingMiddleware(func(next mcp.MethodHandler) mcp.MethodHandler {
		return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
			if method == "tools/list" && n > 0 {
				return &mcp.ListToolsResult{Tools: tools}, nil
			}
			return next(ctx, method, req)
		}
	})
	return mcptest.ServeHTTP(t, s)
}

// TestHostileToolListHTTP (class 6): an MCP server over HTTP lists
// 100,000 tools in one page. The bridge keeps the first 10,000 of them;
// a participant's tools/list forwarded to the server is answered at once
// with an error that says the answer is too large, instead of an answer the
// gateway refuses; the bridge stays bounded and the bystanders' chats
// flow.
func TestHostileToolListHTTP(t *testing.T) {
	g := startSpace(t)
	human := join(t, g, "human")
	url := hugeListServer(t, 100_000)
	b := startBridgeMew(t, g, human, "--mcp-url", url)
	t.Logf("the bridge's peak resident set once it had listed the tools: %.1f MiB", float64(procStatus(t, b.pid(), "VmHWM"))/mib)
	by := startBystander(t, g)
	raw, took, err := askFiles(t, human, map[string]any{"method": "tools/list"})
	if err == nil || !strings.Contains(errorText(err), "more than a reply may carry") {
		t.Fatalf("tools/list of 100,000 tools: %.200s, %v: want an error saying the answer is too large", raw, err)
	}
	if took > soon() {
		t.Errorf("tools/list was answered after %v", took)
	}
	checkEcho(t, human)
	by.check(t, time.Second)
	hwm := procStatus(t, b.pid(), "VmHWM")
	t.Logf("100,000 tools: answered in %v (%s); the bridge's peak resident set %.1f MiB", took, errorText(err), float64(hwm)/mib)
	// The go-sdk decodes the whole page before the bridge can keep the
	// first maxItems tools of it: about 1.6 KB a tool, once at the start
	// and once for the forwarded call (measured 204 and 352 MiB).
	if limit := 448 * mib * raceScale(); hwm > limit {
		t.Errorf("the bridge's peak resident set is %.1f MiB, over %d MiB", float64(hwm)/mib, limit/mib)
	}
}

// TestHostileToolArguments (class 6): a participant calls the bridged
// server with 20 MB of arguments. The gateway refuses the request and
// names it, so the caller's request fails at once with too_large rather
// than at its deadline; the gateway (in this process) holds no copy of it
// afterwards, and the bystanders' chats flow.
func TestHostileToolArguments(t *testing.T) {
	g := startSpace(t)
	human := join(t, g, "human")
	startBridgeMew(t, g, human, stdioServer(t)...)
	by := startBystander(t, g)
	before := heapLive()
	peak := startHeapPeak()
	arg := strings.Repeat("a", 20*mib)
	raw, took, err := askFiles(t, human, toolCall("echo", map[string]any{"text": arg}))
	var ge *participant.GatewayError
	if !asGatewayError(err, &ge) || ge.Code != "too_large" {
		t.Fatalf("20 MB of arguments: %.200s, %v: want the gateway's too_large", raw, err)
	}
	if took > soon() {
		t.Errorf("the oversized call failed after %v", took)
	}
	high := peak.stop()
	arg = ""
	after := heapLive()
	checkEcho(t, human)
	by.check(t, time.Second)
	t.Logf("20 MB arguments: failed in %v (%v); heap before %.1f MiB, peak %.1f MiB, after %.1f MiB (test process: gateway and clients)",
		took, err, float64(before)/mib, float64(high)/mib, float64(after)/mib)
	if after > before+8*mib {
		t.Errorf("the heap grew from %.1f to %.1f MiB after the call", float64(before)/mib, float64(after)/mib)
	}
}

// TestHostileStderr (class 9): a stdio MCP server writes 200,000 lines of
// one byte to its standard error (400 KB) as fast as it can. The bridge's
// log (`mew bridge start`'s standard error) stays a small fraction of
// that: lines past 50 a second are counted, not logged, and the count is
// logged; the bridge keeps answering and the bystanders' chats flow. (That
// `mew space up` bounds and rotates each process's log file is
// space.TestProcLogBounded.)
func TestHostileStderr(t *testing.T) {
	const lines = 200_000
	g := startSpace(t)
	human := join(t, g, "human")
	by := startBystander(t, g)
	b := startBridgeMew(t, g, human, stdioServer(t, fmt.Sprintf("%s=%d", envStderrLines, lines))...)
	start := time.Now()
	testutil.WaitFor(t, 20*time.Second, "the server's last line in the bridge's log", func() bool {
		return strings.Contains(b.out.String(), fmt.Sprintf("wrote %d lines", lines))
	})
	checkEcho(t, human)
	by.check(t, time.Second)
	size, logLines := b.out.size()
	counted := 0
	for _, l := range strings.Split(b.out.String(), "\n") {
		if _, n, ok := strings.Cut(l, "lines="); ok && strings.Contains(l, "stderr lines not logged") {
			var k int
			if _, err := fmt.Sscanf(n, "%d", &k); err == nil {
				counted += k
			}
		}
	}
	hwm := procStatus(t, b.pid(), "VmHWM")
	t.Logf("%d stderr lines (%d KB) in %v became %d log lines, %d KB (%.2f of the input); %d counted as left out; the bridge's peak resident set %.1f MiB",
		lines, 2*lines/1000, time.Since(start), logLines, size/1000, float64(size)/float64(2*lines), counted, float64(hwm)/mib)
	if size > 64<<10 {
		t.Errorf("the bridge logged %d bytes for %d bytes of stderr", size, 2*lines)
	}
	if counted < lines/2 {
		t.Errorf("the log counts %d lines left out of %d", counted, lines)
	}
	if hwm > bridgeRSSLimit() {
		t.Errorf("the bridge's peak resident set is %.1f MiB, over %d MiB", float64(hwm)/mib, bridgeRSSLimit()/mib)
	}
}

// TestHostileResultOverSDKLimit (class 12): a stdio server answers three
// calls with 17 MiB, more than the MCP SDK reads in one message. Each
// caller is told "result too large" at once; the server is not restarted
// (its pid stays), the bridge reads the lines without holding them, and
// the bystanders' chats flow.
func TestHostileResultOverSDKLimit(t *testing.T) {
	g := startSpace(t)
	human := join(t, g, "human")
	b := startBridgeMew(t, g, human, stdioServer(t)...)
	pid, _, err := askFiles(t, human, toolCall("pid", map[string]any{}))
	if err != nil {
		t.Fatal(err)
	}
	by := startBystander(t, g)
	var worst time.Duration
	for i := range 3 {
		raw, took, err := askFiles(t, human, toolCall("big", map[string]any{"bytes": 17 * mib}))
		worst = max(worst, took)
		if err == nil || !strings.Contains(errorText(err), "result too large") {
			t.Fatalf("call %d: %.200s, %v: want result too large", i+1, raw, err)
		}
		if took > soon() {
			t.Errorf("call %d was answered after %v", i+1, took)
		}
	}
	if again, _, err := askFiles(t, human, toolCall("pid", map[string]any{})); err != nil || string(again) != string(pid) {
		t.Errorf("the server's pid after the large answers: %s (%v), was %s", again, err, pid)
	}
	checkEcho(t, human)
	by.check(t, time.Second)
	hwm := procStatus(t, b.pid(), "VmHWM")
	t.Logf("17 MiB answers: slowest %v; the bridge's peak resident set %.1f MiB", worst, float64(hwm)/mib)
	// A line up to the SDK's 16 MiB is a message the bridge must hold to
	// pass on; past it the line is read in pieces and dropped.
	if limit := bridgeRSSLimit() + 64*mib*raceScale(); hwm > limit {
		t.Errorf("the bridge's peak resident set is %.1f MiB, over %d MiB", float64(hwm)/mib, limit/mib)
	}
}

// TestHostileToolResultHTTP (classes 6 and 12 over HTTP): an MCP server
// over streamable HTTP answers with 2 MB (more than the gateway relays)
// and with 40 MB (more than the bridge reads from a stdio server). Each
// caller is answered at once with an error that says the result is too
// large; the bridge stays bounded, keeps its server and the bystanders'
// chats flow.
func TestHostileToolResultHTTP(t *testing.T) {
	g := startSpace(t)
	human := join(t, g, "human")
	url := hugeListServer(t, 0)
	b := startBridgeMew(t, g, human, "--mcp-url", url)
	by := startBystander(t, g)
	for _, c := range []struct {
		size int
		want string
	}{{2 * mib, "more than a reply may carry"}, {40 * mib, "result too large"}} {
		size := c.size
		raw, took, err := askFiles(t, human, toolCall("big", map[string]any{"bytes": size}))
		if err == nil || !strings.Contains(errorText(err), c.want) {
			t.Fatalf("a %d MiB answer: %.200s, %v: want an error saying it is too large", size/mib, raw, err)
		}
		if took > soon() {
			t.Errorf("a %d MiB answer was answered after %v", size/mib, took)
		}
		t.Logf("a %d MiB answer over HTTP: the caller told in %v: %.200s", size/mib, took, errorText(err))
	}
	checkEcho(t, human)
	by.check(t, time.Second)
	hwm := procStatus(t, b.pid(), "VmHWM")
	t.Logf("the bridge's peak resident set %.1f MiB", float64(hwm)/mib)
	if limit := bridgeRSSLimit() + 64*mib*raceScale(); hwm > limit {
		t.Errorf("the bridge's peak resident set is %.1f MiB, over %d MiB", float64(hwm)/mib, limit/mib)
	}
}
