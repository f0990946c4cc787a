package gateway_test

import (
	"bytes"
	"encoding/json"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mew-protocol/mew/gateway"
	"github.com/mew-protocol/mew/internal/testutil"
)

// trustSpace has a human who may do anything, a lead who may grant only
// what it holds, an agent that starts with proposals only, and a file tool.
const trustSpace = `
space: {id: trust}
participants:
  human:
    tokens: [human-token]
    capabilities: [{kind: "*"}]
  lead:
    tokens: [lead-token]
    capabilities:
      - {kind: "capability/*"}
      - {kind: chat}
      - {kind: "participant/*"}
      - {kind: mcp/request, payload: {method: tools/list}}
  agent:
    tokens: [agent-token]
    capabilities:
      - {kind: chat}
      - {kind: mcp/proposal}
      - {kind: capability/grant-ack}
      - {kind: participant/status}
  files:
    tokens: [files-token]
    capabilities: [{kind: chat}]
`

// clock is a settable time source for Options.Now.
type clock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *clock) Now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.t }
func (c *clock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(d)
}

func toolCall(id, name string) string {
	return `{"id":"` + id + `","kind":"mcp/request","to":["files"],"payload":{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"` + name + `","arguments":{}}}}`
}

// outcome sends msg and returns the system/error it caused, or nil if the
// envelope came back accepted.
func outcome(t *testing.T, p *testutil.Peer, id, msg string) map[string]any {
	t.Helper()
	return outcomeSeeing(t, p, id, msg, nil)
}

// refused sends msg as p and fails the test unless the gateway refuses it
// with code.
func refused(t *testing.T, p *testutil.Peer, id, msg, code, what string) {
	t.Helper()
	if e := outcome(t, p, id, msg); e == nil || e["error"] != code {
		t.Fatalf("%s: %v", what, e)
	}
}

// taken sends msg as p and fails the test if the gateway refuses it.
func taken(t *testing.T, p *testutil.Peer, id, msg, what string) {
	t.Helper()
	if e := outcome(t, p, id, msg); e != nil {
		t.Fatalf("%s: %v", what, e)
	}
}

// outcomeSeeing is outcome, handing every other message read meanwhile to
// skipped (when not nil).
func outcomeSeeing(t *testing.T, p *testutil.Peer, id, msg string, skipped func(testutil.Msg)) map[string]any {
	t.Helper()
	p.SendText(msg)
	for {
		m := p.Next()
		if m.ID() == id && m.Kind() != "system/error" {
			return nil
		}
		if m.Kind() == "system/error" {
			if c, _ := m.Env["correlation_id"].([]any); len(c) == 1 && c[0] == id {
				return m.Payload()
			}
		}
		if skipped != nil {
			skipped(m)
		}
	}
}

func TestProgressiveTrust(t *testing.T) {
	g := testutil.StartGateway(t, trustSpace, gateway.Options{})
	human, _ := testutil.Join(t, g.WSURL, "human-token")
	agent, _ := testutil.Join(t, g.WSURL, "agent-token")
	files, _ := testutil.Join(t, g.WSURL, "files-token")

	if e := outcome(t, agent, "r1", toolCall("r1", "read_file")); e == nil || e["error"] != "capability_violation" {
		t.Fatalf("before the grant: %v", e)
	}
	human.SendText(`{"id":"g1","kind":"capability/grant","to":["agent"],"payload":{"recipient":"agent","capabilities":[{"kind":"mcp/request","payload":{"method":"tools/call","params":{"name":"read_*"}}}],"reason":"earned it"}}`)
	w := agent.ExpectFunc("system/welcome", func(m testutil.Msg) bool { return strings.Contains(string(m.Raw), "read_*") })
	caps, _ := json.Marshal(w.Payload()["you"].(map[string]any)["capabilities"])
	if !strings.Contains(string(caps), `{"kind":"mcp/request","payload":{"method":"tools/call","params":{"name":"read_*"}}}`) {
		t.Fatalf("updated welcome: %s", caps)
	}
	agent.Expect("capability/grant") // the grant itself, visible to all, after the welcome
	agent.SendText(`{"kind":"capability/grant-ack","correlation_id":["g1"],"payload":{"status":"accepted"}}`)
	human.Expect("capability/grant-ack")

	taken(t, agent, "r2", toolCall("r2", "read_file"), "after the grant")
	files.ExpectFunc("mcp/request", func(m testutil.Msg) bool { return m.ID() == "r2" })
	if e := outcome(t, agent, "r3", toolCall("r3", "write_file")); e == nil || e["error"] != "capability_violation" {
		t.Fatalf("write_file after a read_* grant: %v", e)
	}

	human.SendText(`{"id":"v1","kind":"capability/revoke","to":["agent"],"payload":{"recipient":"agent","grant_id":"g1"}}`)
	agent.ExpectFunc("system/welcome", func(m testutil.Msg) bool { return !strings.Contains(string(m.Raw), "read_*") })
	if e := outcome(t, agent, "r4", toolCall("r4", "read_file")); e == nil || e["error"] != "capability_violation" {
		t.Fatalf("after the revoke: %v", e)
	}
	g.Stop(t)

	// The audit log: the grant with its granter and chain, then each decision.
	dec := readLines(t, g.LogPath("capability-decisions.jsonl"))
	got := map[string]map[string]any{}
	for _, d := range dec {
		got[d["envelope_id"].(string)+" "+d["required_capability"].(string)] = d
	}
	chain := got["g1 capability/grant"]
	if chain == nil || chain["participant"] != "agent" || chain["matched_source"] != "dynamic" {
		t.Fatalf("grant chain record: %v", chain)
	}
	meta := chain["metadata"].(map[string]any)
	if meta["granted_by"] != "human" || meta["covered_by"].(map[string]any)["kind"] != "*" {
		t.Fatalf("grant chain metadata: %v", meta)
	}
	want := map[string]string{"r1": "denied", "r2": "allowed", "r3": "denied", "r4": "denied"}
	for id, res := range want {
		d := got[id+" mcp/request"]
		if d == nil || d["result"] != res {
			t.Fatalf("decision for %s: %v, want %s", id, d, res)
		}
	}
	r2 := got["r2 mcp/request"]
	if r2["matched_source"] != "dynamic" || r2["metadata"].(map[string]any)["grant_id"] != "g1" {
		t.Fatalf("r2 decision does not name its grant: %v", r2)
	}
}

func TestDelegationRules(t *testing.T) {
	g := testutil.StartGateway(t, trustSpace, gateway.Options{})
	human, _ := testutil.Join(t, g.WSURL, "human-token")
	lead, _ := testutil.Join(t, g.WSURL, "lead-token")
	agent, _ := testutil.Join(t, g.WSURL, "agent-token")

	cases := []struct {
		name string
		from *testutil.Peer
		id   string
		msg  string
		code string
	}{
		{"grant what you lack", lead, "d1", `{"id":"d1","kind":"capability/grant","payload":{"recipient":"agent","capabilities":[{"kind":"mcp/request","payload":{"method":"tools/call"}}]}}`, "capability_violation"},
		{"grant a wider kind than held", lead, "d2", `{"id":"d2","kind":"capability/grant","payload":{"recipient":"agent","capabilities":[{"kind":"mcp/*"}]}}`, "capability_violation"},
		{"grant a held pattern", lead, "d3", `{"id":"d3","kind":"capability/grant","payload":{"recipient":"agent","capabilities":[{"kind":"mcp/request","payload":{"method":"tools/list"}}]}}`, ""},
		{"grant a narrower payload of a held kind", lead, "d4", `{"id":"d4","kind":"capability/grant","payload":{"recipient":"agent","capabilities":[{"kind":"participant/pause","payload":{"reason":"x"}}]}}`, ""},
		{"grant without the capability", agent, "d5", `{"id":"d5","kind":"capability/grant","payload":{"recipient":"agent","capabilities":[{"kind":"chat"}]}}`, "capability_violation"},
		{"grant to nobody", human, "d6", `{"id":"d6","kind":"capability/grant","payload":{"recipient":"ghost","capabilities":[{"kind":"chat"}]}}`, "participant_not_found"},
		{"grant without capabilities", human, "d7", `{"id":"d7","kind":"capability/grant","payload":{"recipient":"agent"}}`, "invalid_envelope"},
		{"grant a bad pattern", human, "d8", `{"id":"d8","kind":"capability/grant","payload":{"recipient":"agent","capabilities":[{"payload":{}}]}}`, "invalid_envelope"},
		{"human grants the agent more", human, "h1", `{"id":"h1","kind":"capability/grant","payload":{"recipient":"agent","capabilities":[{"kind":"mcp/request","payload":{"method":"tools/call"}}]}}`, ""},
		{"revoke someone else's grant", lead, "d9", `{"id":"d9","kind":"capability/revoke","payload":{"recipient":"agent","grant_id":"h1"}}`, ""},
		{"revoke by a pattern you lack", lead, "d10", `{"id":"d10","kind":"capability/revoke","payload":{"recipient":"agent","capabilities":[{"kind":"mcp/request","payload":{"method":"tools/call"}}]}}`, ""},
		{"revoke your own grant", lead, "d11", `{"id":"d11","kind":"capability/revoke","payload":{"recipient":"agent","grant_id":"d3"}}`, ""},
		{"revoke an unknown grant", human, "d12", `{"id":"d12","kind":"capability/revoke","payload":{"recipient":"agent","grant_id":"nope"}}`, "invalid_request"},
		{"revoke by pattern", human, "d13", `{"id":"d13","kind":"capability/revoke","payload":{"recipient":"agent","capabilities":[{"kind":"mcp/*"}]}}`, ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			e := outcome(t, c.from, c.id, c.msg)
			switch {
			case c.code == "" && e != nil:
				t.Fatalf("refused: %v", e)
			case c.code != "" && (e == nil || e["error"] != c.code):
				t.Fatalf("got %v, want %s", e, c.code)
			}
		})
	}
	// What the agent holds now: its static patterns and the pause grant;
	// the lead removed h1 (revoking takes capability/revoke alone) and d3.
	agent.SendText(`{"type":"join","token":"agent-token"}`)
	w := agent.ExpectFunc("system/welcome", func(m testutil.Msg) bool {
		you, _ := json.Marshal(m.Payload()["you"])
		return !strings.Contains(string(you), "tools/call") && !strings.Contains(string(you), "tools/list")
	})
	caps, _ := json.Marshal(w.Payload()["you"].(map[string]any)["capabilities"])
	if strings.Contains(string(caps), "tools/list") || !strings.Contains(string(caps), "participant/pause") {
		t.Fatalf("agent's capabilities: %s", caps)
	}
	// Static capabilities are never revoked.
	if e := outcome(t, human, "d14", `{"id":"d14","kind":"capability/revoke","payload":{"recipient":"agent","capabilities":[{"kind":"chat"}]}}`); e != nil {
		t.Fatal(e)
	}
	taken(t, agent, "c1", `{"id":"c1","kind":"chat","payload":{"text":"still allowed"}}`, "static chat revoked")
}

func TestInvite(t *testing.T) {
	g := testutil.StartGateway(t, trustSpace+`
  observer:
    tokens: [observer-token]
    output_log: ./logs/observer.jsonl
    auto_connect: true
    capabilities: [{kind: chat}]
`, gateway.Options{})
	human, _ := testutil.Join(t, g.WSURL, "human-token")
	lead, _ := testutil.Join(t, g.WSURL, "lead-token")
	human.SendText(`{"id":"i1","kind":"space/invite","payload":{"participant_id":"newbie","initial_capabilities":[{"kind":"chat"},{"kind":"mcp/proposal"}],"reason":"help out"}}`)
	ack := human.Expect("space/invite-ack")
	p := ack.Payload()
	tok, _ := p["token"].(string)
	if p["status"] != "created" || p["participant_id"] != "newbie" || len(tok) < 32 {
		t.Fatalf("ack %s", ack.Raw)
	}
	if c := ack.Env["correlation_id"].([]any); c[0] != "i1" {
		t.Fatalf("ack correlation %v", c)
	}
	pres := lead.ExpectFunc("system/presence", func(m testutil.Msg) bool { return m.Payload()["event"] == "invited" })
	if strings.Contains(string(pres.Raw), tok) || pres.Payload()["invited_by"] != "human" {
		t.Fatalf("presence %s", pres.Raw)
	}
	// The invited participant joins with its token and its capabilities.
	nb, w := testutil.Join(t, g.WSURL, tok)
	if w.Payload()["you"].(map[string]any)["id"] != "newbie" {
		t.Fatalf("welcome %s", w.Raw)
	}
	if e := outcome(t, nb, "n1", `{"id":"n1","kind":"mcp/request","payload":{"method":"tools/list"}}`); e == nil {
		t.Fatal("invited participant exceeds its capabilities")
	}
	// Refusals.
	for _, c := range []struct {
		from          *testutil.Peer
		id, msg, want string
	}{
		{human, "i2", `{"id":"i2","kind":"space/invite","payload":{"participant_id":"newbie"}}`, "already_exists"},
		{human, "i3", `{"id":"i3","kind":"space/invite","payload":{"participant_id":"observer"}}`, "already_exists"},
		{human, "i4", `{"id":"i4","kind":"space/invite","payload":{"participant_id":"../../etc/passwd"}}`, "invalid_request"},
		{human, "i5", `{"id":"i5","kind":"space/invite","payload":{"participant_id":"foo/bar"}}`, "invalid_request"},
		{human, "i6", `{"id":"i6","kind":"space/invite","payload":{}}`, "invalid_envelope"},
		{lead, "i7", `{"id":"i7","kind":"space/invite","payload":{"participant_id":"x"}}`, "capability_violation"},
	} {
		c.from.SendText(c.msg)
		for {
			m := c.from.Next()
			if corr, _ := m.Env["correlation_id"].([]any); len(corr) == 0 || corr[0] != c.id {
				continue
			}
			if m.Kind() == "space/invite-ack" && m.Payload()["status"] == c.want {
				break
			}
			if m.Kind() == "system/error" && m.Payload()["error"] == c.want {
				break
			}
			t.Fatalf("%s: got %s, want %s", c.id, m.Raw, c.want)
		}
	}
	// Over HTTP, as in the reference's scenario 17.
	code, body := post(t, g, "human", "human-token", `{"kind":"space/invite","payload":{"participant_id":"viahttp","initial_capabilities":[{"kind":"chat"}]}}`)
	if code != 200 || body["status"] != "created" || body["token"] == "" {
		t.Fatalf("HTTP invite: %d %v", code, body)
	}
	if code, body := post(t, g, "human", "human-token", `{"kind":"space/invite","payload":{"participant_id":"viahttp"}}`); code != 409 || body["status"] != "already_exists" {
		t.Fatalf("HTTP re-invite: %d %v", code, body)
	}
	if code, _ := post(t, g, "viahttp", body["token"].(string), `{"kind":"chat","payload":{"text":"hi"}}`); code != 200 {
		t.Fatalf("invited participant over HTTP: %d", code)
	}
	g.Stop(t)
	// No token anywhere but the inviter's own answer.
	for _, f := range []string{g.LogPath("envelope-history.jsonl"), g.LogPath("capability-decisions.jsonl"), g.Config.Resolve("logs/observer.jsonl")} {
		b, _ := os.ReadFile(f)
		if bytes.Contains(b, []byte(tok)) || bytes.Contains(b, []byte(body["token"].(string))) {
			t.Fatalf("%s holds an invited participant's token", f)
		}
	}
}

func TestKick(t *testing.T) {
	g := testutil.StartGateway(t, trustSpace, gateway.Options{})
	human, _ := testutil.Join(t, g.WSURL, "human-token")
	agent, _ := testutil.Join(t, g.WSURL, "agent-token")
	if e := outcome(t, agent, "k0", `{"id":"k0","kind":"space/kick","payload":{"participant_id":"human"}}`); e == nil || e["error"] != "capability_violation" {
		t.Fatalf("agent kicking: %v", e)
	}
	human.SendText(`{"id":"k1","kind":"space/kick","payload":{"participant_id":"agent","reason":"misbehaving"}}`)
	code, reason := agent.Closed(5 * time.Second)
	if code != gateway.CloseKicked || !strings.Contains(reason, "misbehaving") {
		t.Fatalf("kicked with %v %q", code, reason)
	}
	human.ExpectFunc("system/presence", func(m testutil.Msg) bool {
		return m.Payload()["event"] == "leave" && m.Payload()["participant"].(map[string]any)["id"] == "agent"
	})
	human.Expect("space/kick")
	// Its token no longer works, on either transport.
	p := testutil.Dial(t, g.WSURL, "agent-token")
	if m := p.Next(); m.Payload()["error"] != "unauthorized" {
		t.Fatalf("kicked participant rejoined: %s", m.Raw)
	}
	if code, _ := post(t, g, "agent", "agent-token", `{"kind":"chat","payload":{"text":"back"}}`); code != 403 {
		t.Fatalf("kicked participant posted: %d", code)
	}
	if e := outcome(t, human, "k2", `{"id":"k2","kind":"space/kick","payload":{"participant_id":"agent"}}`); e == nil || e["error"] != "participant_not_found" {
		t.Fatalf("kicking twice: %v", e)
	}
	if e := outcome(t, human, "k3", `{"id":"k3","kind":"space/kick","payload":{"participant_id":"human"}}`); e == nil || e["error"] != "invalid_request" {
		t.Fatalf("kicking oneself: %v", e)
	}
}

func TestPauseResumeShutdown(t *testing.T) {
	clk := &clock{t: time.Date(2026, 11, 23, 12, 0, 0, 0, time.UTC)}
	// WriteTimeout sets the watchdog's period, which ends timed-out pauses.
	g := testutil.StartGateway(t, trustSpace, gateway.Options{Now: clk.Now, Timing: gateway.Timing{WriteTimeout: 100 * time.Millisecond}})
	lead, _ := testutil.Join(t, g.WSURL, "lead-token")
	agent, _ := testutil.Join(t, g.WSURL, "agent-token")
	chat := func(id string) map[string]any {
		return outcome(t, agent, id, `{"id":"`+id+`","kind":"chat","payload":{"text":"`+id+`"}}`)
	}

	// Paused until resumed: chat refused, status allowed.
	lead.SendText(`{"id":"p1","kind":"participant/pause","to":["agent"],"payload":{"reason":"review"}}`)
	agent.Expect("participant/pause")
	if e := chat("c1"); e == nil || e["error"] != "paused" {
		t.Fatalf("chat while paused: %v", e)
	}
	taken(t, agent, "s1", `{"id":"s1","kind":"participant/status","correlation_id":["p1"],"payload":{"status":"paused"}}`, "status while paused")
	clk.Advance(time.Hour) // no timeout: still paused
	if e := chat("c2"); e == nil || e["error"] != "paused" {
		t.Fatalf("chat an hour into an open pause: %v", e)
	}
	lead.SendText(`{"id":"r1","kind":"participant/resume","to":["agent"],"payload":{}}`)
	agent.Expect("participant/resume")
	if e := chat("c3"); e != nil {
		t.Fatalf("chat after resume: %v", e)
	}

	// Paused with a timeout: lifted by the clock, and the gateway says so.
	lead.SendText(`{"id":"p2","kind":"participant/pause","to":["agent"],"payload":{"timeout_seconds":30}}`)
	agent.ExpectFunc("participant/pause", func(m testutil.Msg) bool { return m.ID() == "p2" })
	if e := chat("c4"); e == nil || e["error"] != "paused" {
		t.Fatalf("chat in a timed pause: %v", e)
	}
	clk.Advance(31 * time.Second)
	res := agent.ExpectFunc("participant/resume", func(m testutil.Msg) bool { return m.From() == "system:gateway" })
	if c := res.Env["correlation_id"].([]any); c[0] != "p2" || res.Payload()["reason"] != "timeout" {
		t.Fatalf("gateway resume %s", res.Raw)
	}
	if e := chat("c5"); e != nil {
		t.Fatalf("chat after the timeout: %v", e)
	}

	// Shut down: everything but status refused until it reconnects.
	lead.SendText(`{"id":"x1","kind":"participant/shutdown","to":["agent"],"payload":{"reason":"done"}}`)
	agent.Expect("participant/shutdown")
	if e := chat("c6"); e == nil || e["error"] != "shutdown" {
		t.Fatalf("chat after shutdown: %v", e)
	}
	taken(t, agent, "s2", `{"id":"s2","kind":"participant/status","payload":{"status":"shutting_down"}}`, "status after shutdown")
	again, _ := testutil.Join(t, g.WSURL, "agent-token")
	taken(t, again, "c7", `{"id":"c7","kind":"chat","payload":{"text":"back"}}`, "chat after reconnecting")
	// Controls need addressees that exist.
	if e := outcome(t, lead, "p3", `{"id":"p3","kind":"participant/pause","payload":{}}`); e == nil || e["error"] != "invalid_request" {
		t.Fatalf("pause without to: %v", e)
	}
	if e := outcome(t, lead, "p4", `{"id":"p4","kind":"participant/pause","to":["ghost"],"payload":{}}`); e == nil || e["error"] != "participant_not_found" {
		t.Fatalf("pause of nobody: %v", e)
	}
}
