package gateway_test

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/mew-protocol/mew/gateway"
	"github.com/mew-protocol/mew/internal/testutil"
)

// delegSpace has one participant per delegation rule: an admin who may call
// tools/*, a narrow holder of one tool call, an mcp/* holder, a holder of a
// regex pattern, an inviter with nothing but space/invite and chat, a revoker
// with nothing but capability/revoke, and the agent everything is granted to.
const delegSpace = `
space: {id: deleg}
participants:
  admin:
    tokens: [admin-token]
    capabilities:
      - {kind: capability/grant}
      - {kind: capability/revoke}
      - {kind: space/invite}
      - {kind: chat}
      - {kind: mcp/request, payload: {method: "tools/*"}}
  narrow:
    tokens: [narrow-token]
    capabilities:
      - {kind: capability/grant}
      - {kind: mcp/request, payload: {method: tools/call, params: {name: read_file}}}
  mcpall:
    tokens: [mcpall-token]
    capabilities: [{kind: capability/grant}, {kind: "mcp/*"}]
  regexer:
    tokens: [regexer-token]
    capabilities:
      - {kind: capability/grant}
      - {kind: mcp/request, payload: {params: {name: "/a.*/"}}}
  inviter:
    tokens: [inviter-token]
    capabilities: [{kind: space/invite}, {kind: chat}]
  revoker:
    tokens: [revoker-token]
    capabilities: [{kind: capability/revoke}]
  agent:
    tokens: [agent-token]
    capabilities: [{kind: chat}, {kind: capability/grant}, {kind: capability/grant-ack}]
  files:
    tokens: [files-token]
    capabilities: [{kind: chat}]
defaults:
  capabilities: [{kind: "reasoning/*"}]
`

// anyError sends msg and returns the next system/error the sender gets, or
// nil when the envelope comes back accepted. Unlike outcome it also catches
// errors about envelopes too broken to be correlated.
func anyError(t *testing.T, p *testutil.Peer, id, msg string) map[string]any {
	t.Helper()
	p.SendText(msg)
	for {
		m := p.Next()
		if m.Kind() == "system/error" {
			return m.Payload()
		}
		if m.ID() == id && !strings.HasPrefix(m.Kind(), "system/") {
			return nil
		}
	}
}

func grantMsg(id, to string, caps ...string) string {
	return `{"id":"` + id + `","kind":"capability/grant","payload":{"recipient":"` + to + `","capabilities":[` + strings.Join(caps, ",") + `]}}`
}

// myCaps joins again with token (replacing the earlier connection) and
// returns the new connection and the capabilities of its welcome.
func myCaps(t *testing.T, g *testutil.Gateway, token string) (*testutil.Peer, string) {
	t.Helper()
	p, w := testutil.Join(t, g.WSURL, token)
	caps, _ := json.Marshal(w.Payload()["you"].(map[string]any)["capabilities"])
	return p, string(caps)
}

const agentStatic = `[{"kind":"chat"},{"kind":"capability/grant"},{"kind":"capability/grant-ack"},{"kind":"reasoning/*"},{"id":"mcp-response","kind":"mcp/response"}]`

// Patterns that a lenient reader would take for another pattern are refused,
// whether granted or given to an invitation, and the target gains nothing.
func TestDelegationEscalationRefused(t *testing.T) {
	g := testutil.StartGateway(t, delegSpace, gateway.Options{})
	admin, _ := testutil.Join(t, g.WSURL, "admin-token")
	agent, _ := testutil.Join(t, g.WSURL, "agent-token")

	attacks := []struct {
		name, pattern, want string
	}{
		{"upper-case KIND", `{"kind":"chat","KIND":"*"}`, "KIND"},
		{"upper-case KIND first", `{"KIND":"chat","kind":"*"}`, "KIND"},
		{"capitalised Kind", `{"Kind":"*"}`, "Kind"},
		{"duplicate kind", `{"kind":"chat","kind":"*"}`, "duplicate"},
		{"escaped duplicate kind", `{"kind":"chat","\u006bind":"*"}`, "duplicate"},
		{"upper-case PAYLOAD", `{"kind":"mcp/request","payload":{"method":"tools/list"},"PAYLOAD":{}}`, "PAYLOAD"},
		{"duplicate payload", `{"kind":"mcp/request","payload":{"method":"tools/list"},"payload":{}}`, "duplicate"},
		{"nested duplicate key", `{"kind":"mcp/request","payload":{"method":"tools/call","params":{"name":"read_file","name":"*"}}}`, "duplicate"},
		{"unknown member", `{"kind":"mcp/request","payload":{"method":"tools/list"},"recipients":["files"]}`, `"recipients"`},
		{"upper-case TO", `{"kind":"mcp/request","payload":{"method":"tools/list"},"TO":["files"]}`, "TO"},
		{"duplicate to", `{"kind":"mcp/request","to":["files"],"to":"*"}`, "duplicate"},
	}
	for i, a := range attacks {
		t.Run(a.name, func(t *testing.T) {
			id := "x" + string(rune('a'+i))
			e := anyError(t, admin, id, grantMsg(id, "agent", a.pattern))
			if e == nil {
				t.Fatalf("grant of %s accepted", a.pattern)
			}
			if msg, _ := e["message"].(string); !strings.Contains(msg, a.want) {
				t.Fatalf("error %v does not mention %s", e, a.want)
			}
			inv := `{"id":"i` + id + `","kind":"space/invite","payload":{"participant_id":"n` + id + `","initial_capabilities":[` + a.pattern + `]}}`
			e = anyError(t, admin, "i"+id, inv)
			if e == nil {
				t.Fatalf("invitation with %s accepted", a.pattern)
			}
			if msg, _ := e["message"].(string); !strings.Contains(msg, a.want) {
				t.Fatalf("invite error %v does not mention %s", e, a.want)
			}
		})
	}
	// Nothing reached the agent: it still cannot make requests, and its
	// welcome holds its static capabilities only.
	if e := outcome(t, agent, "r1", toolCall("r1", "read_file")); e == nil || e["error"] != "capability_violation" {
		t.Fatalf("agent's request after the attacks: %v", e)
	}
	if _, caps := myCaps(t, g, "agent-token"); caps != agentStatic {
		t.Fatalf("agent's capabilities after the attacks: %s", caps)
	}
	// No invitation was made either.
	for i := range attacks {
		code, _ := post(t, g, "admin", "admin-token", `{"kind":"space/invite","payload":{"participant_id":"nx`+string(rune('a'+i))+`"}}`)
		if code != 200 {
			t.Fatalf("invitation %d exists after being refused: %d", i, code)
		}
	}
	// The same over HTTP.
	code, body := post(t, g, "admin", "admin-token", `{"kind":"capability/grant","payload":{"recipient":"agent","capabilities":[{"kind":"chat","KIND":"*"}]}}`)
	if code != 400 || !strings.Contains(body["message"].(string), "KIND") {
		t.Fatalf("HTTP grant with KIND: %d %v", code, body)
	}
}

func TestDelegationBySubsumption(t *testing.T) {
	g := testutil.StartGateway(t, delegSpace, gateway.Options{})
	admin, _ := testutil.Join(t, g.WSURL, "admin-token")
	narrow, _ := testutil.Join(t, g.WSURL, "narrow-token")
	mcpall, _ := testutil.Join(t, g.WSURL, "mcpall-token")
	regexer, _ := testutil.Join(t, g.WSURL, "regexer-token")
	inviter, _ := testutil.Join(t, g.WSURL, "inviter-token")
	agent, _ := testutil.Join(t, g.WSURL, "agent-token")

	const readFile = `{"kind":"mcp/request","payload":{"method":"tools/call","params":{"name":"read_file"}}}`
	cases := []struct {
		name    string
		from    *testutil.Peer
		id, msg string
		code    string // "" accepted
		why     string // in the refusal's message
	}{
		{"tools/* covers one tool call", admin, "s1", grantMsg("s1", "agent", readFile), "", ""},
		{"one tool call does not cover tools/*", narrow, "s2", grantMsg("s2", "agent", `{"kind":"mcp/request","payload":{"method":"tools/*"}}`), "capability_violation", `payload.method: "tools/call" does not cover "tools/*"`},
		{"a condition does not cover none", admin, "s3", grantMsg("s3", "agent", `{"kind":"mcp/request"}`), "capability_violation", "any payload is allowed here"},
		{"mcp/* covers mcp/request", mcpall, "s4", grantMsg("s4", "files", `{"kind":"mcp/request"}`), "", ""},
		{"mcp/* does not cover chat/*", mcpall, "s5", grantMsg("s5", "files", `{"kind":"chat/*"}`), "capability_violation", "does not cover"},
		{"regex against another regex", regexer, "s6", grantMsg("s6", "agent", `{"kind":"mcp/request","payload":{"params":{"name":"/ab/"}}}`), "capability_violation", "cannot decide whether /a.*/ covers /ab/"},
		{"the same regex", regexer, "s7", grantMsg("s7", "files", `{"kind":"mcp/request","payload":{"params":{"name":"/a.*/"}}}`), "", ""},
		{"entry level: proposals", narrow, "s8", grantMsg("s8", "files", `{"kind":"mcp/proposal"}`, `{"kind":"mcp/withdraw"}`), "", ""},
		{"the space's defaults, held by all", admin, "s9", grantMsg("s9", "files", `{"kind":"reasoning/thinking"}`), "", ""},
		{"entry level is no more", narrow, "s10", grantMsg("s10", "files", `{"kind":"mcp/*"}`), "capability_violation", "you cannot grant"},
		{"a grant delegated on", agent, "s11", grantMsg("s11", "files", readFile), "", ""},
		{"proposal-only invitation", inviter, "s12", `{"id":"s12","kind":"space/invite","payload":{"participant_id":"proposer","initial_capabilities":[{"kind":"mcp/proposal"},{"kind":"chat"}]}}`, "", ""},
		{"invitation beyond the entry level", inviter, "s13", `{"id":"s13","kind":"space/invite","payload":{"participant_id":"doer","initial_capabilities":[{"kind":"mcp/request"}]}}`, "capability_violation", "you cannot invite with"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			c.from.SendText(c.msg)
			for {
				m := c.from.Next()
				corr, _ := m.Env["correlation_id"].([]any)
				switch {
				case m.Kind() == "system/error" && len(corr) == 1 && corr[0] == c.id:
					msg, _ := m.Payload()["message"].(string)
					if c.code == "" || m.Payload()["error"] != c.code || !strings.Contains(msg, c.why) {
						t.Fatalf("got %s, want %q mentioning %q", m.Raw, c.code, c.why)
					}
					return
				case (m.ID() == c.id || m.Kind() == "space/invite-ack" && len(corr) == 1 && corr[0] == c.id) && m.Kind() != "system/error":
					if c.code != "" {
						t.Fatalf("accepted, want %s", c.code)
					}
					return
				}
			}
		})
	}
	// The agent may now call read_file and nothing else.
	taken(t, agent, "r1", toolCall("r1", "read_file"), "granted read_file")
	if e := outcome(t, agent, "r2", toolCall("r2", "write_file")); e == nil {
		t.Fatal("write_file allowed")
	}
	g.Stop(t)

	// The audit's grant chain: the covering pattern and, for a pattern the
	// granter was granted itself, the parent grant; the entry level named.
	chain := map[string]map[string]any{}
	for _, d := range readLines(t, g.LogPath("capability-decisions.jsonl")) {
		if d["required_capability"] == "capability/grant" && d["metadata"] != nil {
			if meta, ok := d["metadata"].(map[string]any); ok && meta["source"] == "capability/grant" {
				chain[d["envelope_id"].(string)] = meta
			}
		}
	}
	if c := chain["s1"]; c == nil || c["covered_by"].(map[string]any)["payload"].(map[string]any)["method"] != "tools/*" {
		t.Fatalf("s1 chain: %v", chain["s1"])
	}
	if c := chain["s8"]; c == nil || c["covered_by"] != "entry_level" || c["entry_pattern"].(map[string]any)["kind"] != "mcp/withdraw" { // the last of the two
		t.Fatalf("s8 chain: %v", chain["s8"])
	}
	if c := chain["s11"]; c == nil || c["parent_grant"] != "s1" {
		t.Fatalf("s11 chain: %v", chain["s11"])
	}
}

// Revoking takes capability/revoke and nothing else, and only ever removes
// grants.
func TestRevokeRules(t *testing.T) {
	g := testutil.StartGateway(t, delegSpace, gateway.Options{})
	admin, _ := testutil.Join(t, g.WSURL, "admin-token")
	revoker, _ := testutil.Join(t, g.WSURL, "revoker-token")
	agent, _ := testutil.Join(t, g.WSURL, "agent-token")

	grants := []string{
		grantMsg("g1", "agent", `{"kind":"mcp/request","payload":{"method":"tools/call","params":{"name":"read_file"}}}`),
		grantMsg("g2", "agent", `{"kind":"mcp/request","payload":{"method":"tools/list"}}`, `{"kind":"mcp/proposal"}`),
		grantMsg("g3", "agent", `{"kind":"mcp/withdraw"}`),
	}
	for i, m := range grants {
		if e := outcome(t, admin, "g"+string(rune('1'+i)), m); e != nil {
			t.Fatalf("grant %d: %v", i+1, e)
		}
	}
	// A pattern the revoker does not hold removes the granted patterns it
	// covers, and leaves the rest of their grants.
	taken(t, revoker, "v1", `{"id":"v1","kind":"capability/revoke","payload":{"recipient":"agent","capabilities":[{"kind":"mcp/request"}]}}`, "revoke by pattern")
	if e := outcome(t, agent, "r1", toolCall("r1", "read_file")); e == nil {
		t.Fatal("read_file still allowed after the revoke")
	}
	taken(t, agent, "p1", `{"id":"p1","kind":"mcp/proposal","payload":{"method":"tools/list"}}`, "the rest of grant g2 went too")
	// By id, a grant someone else made.
	taken(t, revoker, "v2", `{"id":"v2","kind":"capability/revoke","payload":{"recipient":"agent","grant_id":"g3"}}`, "revoke by id")
	// Everything, which touches no static capability.
	taken(t, revoker, "v3", `{"id":"v3","kind":"capability/revoke","payload":{"recipient":"agent","capabilities":[{"kind":"*"}]}}`, "revoke of *")
	agent.ExpectFunc("system/welcome", func(m testutil.Msg) bool { return !strings.Contains(string(m.Raw), "mcp/proposal") })
	taken(t, agent, "c1", `{"id":"c1","kind":"chat","payload":{"text":"still here"}}`, "static chat revoked")
	agent, caps := myCaps(t, g, "agent-token")
	if caps != agentStatic {
		t.Fatalf("agent's capabilities after revoking everything: %s", caps)
	}
	// Revoking by a refused pattern changes nothing either.
	if e := anyError(t, revoker, "v4", `{"id":"v4","kind":"capability/revoke","payload":{"recipient":"agent","capabilities":[{"kind":"chat","KIND":"*"}]}}`); e == nil || e["error"] != "invalid_envelope" {
		t.Fatalf("revoke with KIND: %v", e)
	}
	// Revoking needs the capability.
	if e := outcome(t, agent, "v5", `{"id":"v5","kind":"capability/revoke","payload":{"recipient":"admin","capabilities":[{"kind":"*"}]}}`); e == nil || e["error"] != "capability_violation" {
		t.Fatalf("revoke without capability/revoke: %v", e)
	}
}

// TestGrantExpires: a grant with ttl_seconds or expires_at ends by itself:
// the holder gets a welcome without it and may no longer send what it
// allowed; malformed lifetimes are refused.
func TestGrantExpires(t *testing.T) {
	g := testutil.StartGateway(t, delegSpace, gateway.Options{Timing: gateway.Timing{WriteTimeout: 200 * time.Millisecond}})
	admin, _ := testutil.Join(t, g.WSURL, "admin-token")
	agent, _ := testutil.Join(t, g.WSURL, "agent-token")
	for _, bad := range []string{
		`"ttl_seconds":-1`, `"ttl_seconds":99999999999`, `"expires_at":"tomorrow"`,
		`"expires_at":"2001-01-01T00:00:00Z"`, `"expires_at":"2999-01-01T00:00:00Z"`,
		`"ttl_seconds":5,"expires_at":"` + time.Now().Add(time.Hour).Format(time.RFC3339) + `"`,
	} {
		rf := anyError(t, admin, "bad", `{"id":"bad","kind":"capability/grant","payload":{"recipient":"agent","capabilities":[{"kind":"mcp/request","payload":{"method":"tools/list"}}],`+bad+`}}`)
		if rf == nil || rf["error"] != gateway.ErrorInvalidEnvelope {
			t.Errorf("grant with %s: %v", bad, rf)
		}
	}
	for i, life := range []string{`"ttl_seconds":1`, `"expires_at":"` + time.Now().Add(1500*time.Millisecond).UTC().Format(time.RFC3339Nano) + `"`} {
		admin.SendText(`{"id":"g1","kind":"capability/grant","payload":{"recipient":"agent","capabilities":[{"kind":"mcp/request","payload":{"method":"tools/list"}}],` + life + `}}`)
		agent.ExpectFunc("system/welcome", func(m testutil.Msg) bool { return strings.Contains(string(m.Raw), "tools/list") })
		req := func(id string) string {
			return `{"id":"` + id + `","kind":"mcp/request","to":["admin"],"payload":{"jsonrpc":"2.0","id":1,"method":"tools/list"}}`
		}
		if rf := anyError(t, agent, fmt.Sprint("ok", i), req(fmt.Sprint("ok", i))); rf != nil {
			t.Fatalf("%s: the granted request was refused: %v", life, rf)
		}
		// The grant ends: a welcome without it, and the request is refused.
		agent.ExpectFunc("system/welcome", func(m testutil.Msg) bool { return !strings.Contains(string(m.Raw), "tools/list") })
		if rf := anyError(t, agent, fmt.Sprint("late", i), req(fmt.Sprint("late", i))); rf == nil || rf["error"] != gateway.ErrorCapabilityViolation {
			t.Fatalf("%s: after expiry: %v", life, rf)
		}
	}
	_ = g.Close(t.Context())
	b := waitFile(t, g.LogPath("capability-decisions.jsonl"), `"source":"expiry"`)
	if !strings.Contains(string(b), `"grant_id":"g1"`) {
		t.Errorf("expiry not audited with its grant id")
	}
}
