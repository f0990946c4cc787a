package cli

import (
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/mew-protocol/mew/auditlog"
	"github.com/mew-protocol/mew/gateway"
	"github.com/mew-protocol/mew/internal/testutil"
)

const whySpace = `
space: {id: lineage}
participants:
  human: {tokens: [human-token], capabilities: [{kind: chat}, {kind: "mcp/*"}, {kind: capability/grant}, {kind: capability/revoke}]}
  agent: {tokens: [agent-token], capabilities: [{kind: chat}, {kind: mcp/proposal}, {kind: mcp/response}, {kind: "reasoning/*"}]}
  calc: {tokens: [calc-token], capabilities: [{kind: mcp/response}]}
`

// writeConversation runs a real gateway (with the given audit format)
// through a conversation: human asks agent (q1); agent reasons (r1) and
// proposes a tool call (p1) that human fulfils (f1) and calc answers;
// agent answers (a1). Then human grants agent mcp/request for one second
// (g1); agent calls calc under the grant (c2); the grant expires and
// agent's next call (c3) is refused. It returns the log directory.
func writeConversation(t *testing.T, format string) string {
	t.Helper()
	g := testutil.StartGateway(t, whySpace, gateway.Options{Timing: gateway.Timing{WriteTimeout: 200 * time.Millisecond}, Audit: gateway.AuditOptions{Format: format}})
	human, _ := testutil.Join(t, g.WSURL, "human-token")
	agent, _ := testutil.Join(t, g.WSURL, "agent-token")
	calc, _ := testutil.Join(t, g.WSURL, "calc-token")
	// Each step is awaited where it arrives, so the log's order is the
	// conversation's.
	step := func(from *testutil.Peer, to *testutil.Peer, id, env string) {
		t.Helper()
		var head struct{ Kind string }
		if err := json.Unmarshal([]byte(env), &head); err != nil {
			t.Fatal(err)
		}
		from.SendText(env)
		to.ExpectFunc(head.Kind, func(m testutil.Msg) bool { return m.ID() == id })
	}
	step(human, agent, "q1", `{"id":"q1","kind":"chat","to":["agent"],"payload":{"text":"what is 2+3?"}}`)
	step(agent, human, "r1", `{"id":"r1","kind":"reasoning/start","correlation_id":["q1"],"payload":{"message":"thinking about q1"}}`)
	step(agent, human, "t1", `{"id":"t1","kind":"reasoning/thought","context":"r1","payload":{"reasoning":"I need to add","action":"tools/call","actionInput":{"name":"add"}}}`)
	step(agent, human, "p1", `{"id":"p1","kind":"mcp/proposal","to":["calc"],"payload":{"method":"tools/call","params":{"name":"add","arguments":{"a":2,"b":3}}}}`)
	step(human, calc, "f1", `{"id":"f1","kind":"mcp/request","to":["calc"],"correlation_id":["p1"],"payload":{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"add","arguments":{"a":2,"b":3}}}}`)
	step(calc, agent, "resp1", `{"id":"resp1","kind":"mcp/response","to":["human"],"correlation_id":["f1"],"payload":{"jsonrpc":"2.0","id":1,"result":{"content":[{"type":"text","text":"5"}]}}}`)
	step(agent, human, "rc1", `{"id":"rc1","kind":"reasoning/conclusion","context":"r1","payload":{"message":"it is 5"}}`)
	step(agent, human, "a1", `{"id":"a1","kind":"chat","to":["human"],"correlation_id":["q1"],"payload":{"text":"2+3 = 5"}}`)

	human.SendText(`{"id":"g1","kind":"capability/grant","to":["agent"],"payload":{"recipient":"agent","capabilities":[{"kind":"mcp/request","payload":{"method":"tools/call"}}],"ttl_seconds":1}}`)
	agent.ExpectFunc("system/welcome", func(m testutil.Msg) bool { return strings.Contains(string(m.Raw), "tools/call") })
	step(agent, calc, "c2", `{"id":"c2","kind":"mcp/request","to":["calc"],"payload":{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"add","arguments":{"a":1,"b":1}}}}`)
	step(calc, agent, "resp2", `{"id":"resp2","kind":"mcp/response","to":["agent"],"correlation_id":["c2"],"payload":{"jsonrpc":"2.0","id":2,"result":{"content":[{"type":"text","text":"2"}]}}}`)
	agent.ExpectFunc("system/welcome", func(m testutil.Msg) bool { return !strings.Contains(string(m.Raw), "tools/call") })
	agent.SendText(`{"id":"c3","kind":"mcp/request","to":["calc"],"payload":{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"add","arguments":{"a":9,"b":9}}}}`)
	agent.ExpectFunc("system/error", func(m testutil.Msg) bool { return strings.Contains(string(m.Raw), `"c3"`) })
	g.Stop(t)
	return filepath.Dir(g.LogPath(auditlog.EnvelopeHistory))
}

// mustContain fails unless out holds every one of wants, in order.
func mustContain(t *testing.T, out string, wants ...string) {
	t.Helper()
	rest := out
	for _, w := range wants {
		i := strings.Index(rest, w)
		if i < 0 {
			t.Fatalf("output lacks %q (in order):\n%s", w, out)
		}
		rest = rest[i+len(w):]
	}
}

// TestLogWhy: mew log why on a fulfilled proposal's request, on a call
// allowed by an expiring grant and on a refused call, from a real
// gateway's log in both layouts.
func TestLogWhy(t *testing.T) {
	t.Parallel()
	for _, format := range []string{"compact", "reference"} {
		t.Run(format, func(t *testing.T) {
			t.Parallel()
			dir := writeConversation(t, format)
			why := func(id string) string {
				t.Helper()
				out, _, err := run(t, Options{}, "log", "why", id, dir)
				if err != nil {
					t.Fatal(err)
				}
				t.Logf("why %s:\n%s", id, out)
				return out
			}

			out := why("f1")
			mustContain(t, out,
				"mcp/request f1 from human to calc: tools/call add",
				`admitted by: {"kind":"mcp/*"} (a capability of human in the space config)`,
				"fulfills: ", "mcp/proposal p1 from agent to calc",
				"approved by: human, who carried it out with f1",
				`admitted by: {"kind":"mcp/proposal"}`,
				"in reasoning: ", "reasoning/start r1 from agent", "(open when agent sent this)",
				"in reply to: ", "chat q1 from human to agent: what is 2+3?",
				"reasoning/thought t1 from agent: calling add",
				"result: ", "mcp/response resp1 from calc to human: 5",
			)

			out = why("c2")
			mustContain(t, out,
				"mcp/request c2 from agent to calc",
				`{"kind":"mcp/request","payload":{"method":"tools/call"}} (a capability granted to agent at runtime)`,
				"grant: ", "grant g1 from human to agent: no approval needed for what it covers",
				`admitted by: {"kind":"capability/grant"} (a capability of human in the space config)`,
				`grants {"kind":"mcp/request","payload":{"method":"tools/call"}}, within human's {"kind":"mcp/*"}`,
				"in force at the action: it expired ", "the gateway removed it at ", "(expiry, ",
				"result: ", "mcp/response resp2 from calc to agent: 2",
			)
			if strings.Contains(out, "still in force") {
				t.Errorf("an expired grant is said to be in force:\n%s", out)
			}

			out = why("c3")
			mustContain(t, out,
				"mcp/request c3 from agent to calc: tools/call add", "[REFUSED]",
				"refused: agent holds no capability for mcp/request",
				`its capabilities were [{"kind":"chat"}`,
				"system/error", "capability_violation",
			)
			if strings.Contains(out, "grant g1") {
				t.Errorf("a refused call is tied to a grant:\n%s", out)
			}

			// The answer's lineage is the conversation: question,
			// reasoning, the tool call made in it, the answer.
			out = why("a1")
			mustContain(t, out, "chat a1 from agent to human: 2+3 = 5", "in reply to: ", "chat q1 from human",
				"in reasoning: ", "reasoning/start r1", "reasoning/thought t1", "mcp/proposal p1", "fulfilled by ", "mcp/request f1",
				"mcp/response resp1", "reasoning/conclusion rc1")

			// JSON has the same tree.
			out, _, err := run(t, Options{}, "log", "why", "--format", "json", "c2", dir)
			var n auditlog.Node
			if err != nil || json.Unmarshal([]byte(out), &n) != nil || n.ID != "c2" || len(n.Children) == 0 {
				t.Fatalf("json: %v\n%s", err, out)
			}
		})
	}
}

func TestLogWhyUnknown(t *testing.T) {
	t.Parallel()
	dir := writeAuditLog(t, gateway.Options{}, 1)
	for _, args := range [][]string{
		{"log", "why", "no-such-id", dir},
		{"log", "why", "a0", dir, "--format", "xml"},
		{"log", "why", "a0", t.TempDir()},
	} {
		if _, _, err := run(t, Options{}, args...); err == nil {
			t.Errorf("%v: no error", args)
		}
	}
}
