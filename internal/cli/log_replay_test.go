package cli

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/mew-protocol/mew/gateway"
	"github.com/mew-protocol/mew/internal/testutil"
)

// TestLogReplayInto: the human's and the calculator's envelopes of a
// recorded conversation, re-sent into a fresh gateway, reach a watcher
// there in order and with their ids, correlations and payloads; the fresh
// gateway's log then explains the fulfilment as the first one did.
func TestLogReplayInto(t *testing.T) {
	t.Parallel()
	dir := writeConversation(t, "compact")
	g := testutil.StartGateway(t, whySpace, gateway.Options{})
	watcher, _ := testutil.Join(t, g.WSURL, "agent-token")
	out, stderr, err := run(t, Options{}, "log", "replay", dir, "--into", "ws://"+g.Addr, "--space", "lineage",
		"--participants", "human,calc", "--token", "human=human-token", "--token", "calc=calc-token", "--speed", "50")
	if err != nil {
		t.Fatalf("replay: %v\n%s%s", err, out, stderr)
	}
	if strings.Contains(out+stderr, "human-token") || strings.Contains(out+stderr, "calc-token") {
		t.Errorf("a token in the output:\n%s%s", out, stderr)
	}
	t.Logf("replay:\n%s%s", out, stderr)
	// The watcher (agent, in the fresh space) sees them in order.
	for _, want := range []struct{ kind, id string }{
		{"chat", "q1"}, {"mcp/request", "f1"}, {"mcp/response", "resp1"}, {"mcp/response", "resp2"},
	} {
		m := watcher.ExpectFunc(want.kind, func(m testutil.Msg) bool { return m.ID() == want.id })
		if want.id == "f1" && fmt.Sprint(m.Env["correlation_id"]) != "[p1]" {
			t.Errorf("f1 lost its correlation: %s", m.Raw)
		}
	}
	if !strings.Contains(out, "replayed 5 envelopes") {
		t.Errorf("output:\n%s", out)
	}
	g.Stop(t)
	why, _, err := run(t, Options{}, "log", "why", "f1", g.Dir)
	if err != nil || !strings.Contains(why, "mcp/request f1 from human to calc") || !strings.Contains(why, "mcp/response resp1 from calc") {
		t.Errorf("why f1 in the replayed space: %v\n%s", err, why)
	}
}

// TestLogReplayTranscript: without --into, replay prints the history for
// people: chats, reasoning, tool calls and results, refusals; and
// --participants keeps to some senders.
func TestLogReplayTranscript(t *testing.T) {
	t.Parallel()
	dir := writeConversation(t, "reference")
	out, _, err := run(t, Options{}, "log", "replay", dir)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("transcript:\n%s", out)
	mustContain(t, out,
		"human → agent: what is 2+3?",
		"(agent start: thinking about q1)",
		"(agent thought: calling add)",
		`agent → calc [mcp/proposal] tools/call add {"a":2,"b":3}`,
		`human → calc [mcp/request] tools/call add`,
		"calc → human [mcp/response] 5",
		"agent → human: 2+3 = 5",
		"✗ agent → calc mcp/request refused (capability_violation)",
		"! to agent: capability_violation",
	)
	if strings.Contains(out, "system/welcome") || strings.Contains(out, `"you"`) {
		t.Errorf("bookkeeping in the transcript:\n%s", out)
	}
	out, _, err = run(t, Options{}, "log", "replay", dir, "--participants", "calc")
	if err != nil || strings.Contains(out, "what is 2+3") || !strings.Contains(out, "calc → human") {
		t.Errorf("--participants calc: %v\n%s", err, out)
	}
}

// TestLogReplayHostileFlags: bad flags are refused before anything is
// sent, and no message repeats a token.
func TestLogReplayHostileFlags(t *testing.T) {
	t.Parallel()
	dir := writeAuditLog(t, gateway.Options{}, 1)
	for _, args := range [][]string{
		{"--into", "ws://127.0.0.1:1", "--token", "secret-token-1"},                                                  // no participants
		{"--into", "ws://127.0.0.1:1", "--participants", "alice,bob", "--token", "secret-token-1"},                   // bare token, two participants
		{"--into", "ws://127.0.0.1:1", "--participants", "alice", "--token", "eve=secret-token-1", "--token", "x=y"}, // names no participant
		{"--into", "ws://127.0.0.1:1", "--participants", "alice", "--token", "alice=secret-token-1", "--speed", "fast"},
		{"--into", "ws://127.0.0.1:1", "--participants", "alice", "--token", "alice=secret-token-1", "--speed", "-1"},
		{"--into", "ws://127.0.0.1:1", "--participants", "nobody", "--token", "secret-token-1"}, // sent nothing
		{"--into", "ws://127.0.0.1:1", "--participants", "alice", "--token", "secret-token-1"},  // no gateway there
	} {
		out, stderr, err := run(t, Options{}, append([]string{"log", "replay", dir}, args...)...)
		if err == nil {
			t.Errorf("%v: no error", args)
			continue
		}
		if strings.Contains(err.Error()+out+stderr, "secret-token-1") {
			t.Errorf("%v: the token is shown: %v", args, err)
		}
	}
}

// TestLogQuery: mew log query by each selector, as a table and as JSON
// lines, and its refusals of malformed flags.
func TestLogQuery(t *testing.T) {
	t.Parallel()
	dir := writeConversation(t, "compact")
	q := func(args ...string) string {
		t.Helper()
		out, _, err := run(t, Options{}, append([]string{"log", "query", dir}, args...)...)
		if err != nil {
			t.Fatalf("%v: %v", args, err)
		}
		return out
	}
	jsonl := func(args ...string) []map[string]any {
		t.Helper()
		var recs []map[string]any
		for l := range strings.SplitSeq(strings.TrimSpace(q(append(args, "--format", "jsonl")...)), "\n") {
			if l == "" {
				continue
			}
			var m map[string]any
			if err := json.Unmarshal([]byte(l), &m); err != nil {
				t.Fatalf("%q: %v", l, err)
			}
			recs = append(recs, m)
		}
		return recs
	}
	idsOf := func(recs []map[string]any) string {
		var s []string
		for _, r := range recs {
			s = append(s, fmt.Sprint(r["id"]))
		}
		return strings.Join(s, ",")
	}
	if got := idsOf(jsonl("--kind", "chat")); got != "q1,a1" {
		t.Errorf("--kind chat: %s", got)
	}
	if got := idsOf(jsonl("--correlation", "r1")); got != "t1,rc1" {
		t.Errorf("--correlation r1: %s", got)
	}
	if got := idsOf(jsonl("--text", "2+3 =", "--participant", "agent", "--kind", "chat")); got != "a1" {
		t.Errorf("--text: %s", got)
	}
	if got := idsOf(jsonl("--id", "c3", "--event", "all")); !strings.HasPrefix(got, "c3,") {
		t.Errorf("--id c3 --event all: %s", got)
	}
	recs := jsonl("--id", "f1", "--event", "delivered")
	if len(recs) != 3 || recs[1]["envelope"] == nil {
		t.Errorf("delivered lines of f1 without their bodies: %v", recs)
	}
	if got := idsOf(jsonl("--event", "capability_check", "--kind", "mcp/request")); got != "f1,c2,c3" {
		t.Errorf("decisions: %s", got)
	}
	if got := jsonl("--until", "2000-01-01T00:00:00Z"); len(got) != 0 {
		t.Errorf("--until 2000: %d records", len(got))
	}
	if got := jsonl("--since", "1h", "--kind", "chat"); len(got) != 2 {
		t.Errorf("--since 1h: %d records", len(got))
	}
	table := q("--kind", "mcp/*")
	mustContain(t, table, "TIME", "SUMMARY", "p1", "tools/call add", "f1", "resp1", "c3", "(capability_violation)")
	for _, bad := range [][]string{{"--since", "yesterday"}, {"--until", "-5m"}, {"--format", "xml"}, {"--event", "sent"}} {
		if _, _, err := run(t, Options{}, append([]string{"log", "query", dir}, bad...)...); err == nil {
			t.Errorf("%v: no error", bad)
		}
	}
}
