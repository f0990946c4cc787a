package gateway_test

import (
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/mew-protocol/mew/gateway"
	"github.com/mew-protocol/mew/internal/testutil"
)

// credSpace: an administrator, an agent who may only propose and chat, and
// carol, whose token lives in the space's token store (a file).
const credSpace = `
space: {id: creds}
participants:
  admin:
    tokens: [admin-token]
    capabilities: [{kind: "*"}]
  agent:
    tokens: [agent-token]
    capabilities: [{kind: chat}, {kind: mcp/proposal}]
  carol:
    capabilities: [{kind: chat}]
`

// consoleCreds mints, as the holder of token, one code it exchanges for a
// session, and one code it keeps: every console credential kind.
func consoleCreds(t *testing.T, base, token string) (session, code string) {
	t.Helper()
	st, m := exchange(t, base, link(t, base, token, ""))
	if st != http.StatusOK {
		t.Fatalf("exchange: %d %v", st, m)
	}
	return m["session"].(string), link(t, base, token, "")
}

// refusedEverywhere checks that none of a participant's credentials works
// any more: its token over HTTP and WebSocket, a console session in a join
// and on the console's API, a code minted before.
func refusedEverywhere(t *testing.T, base, wsURL, token, session, code string) {
	t.Helper()
	if kind, _ := joinWith(t, wsURL, "", session, nil); kind != "system/error" {
		t.Errorf("a join with the console session was answered %s", kind)
	}
	if kind, _ := joinWith(t, wsURL, "", token, nil); kind != "system/error" {
		t.Errorf("a join with the token was answered %s", kind)
	}
	if st, m := exchange(t, base, code); st != http.StatusUnauthorized {
		t.Errorf("a code minted before was exchanged: %d %v", st, m)
	}
	if st, _ := consoleCall(t, http.MethodGet, base+"/console/grants", session, "", nil); st != http.StatusUnauthorized {
		t.Errorf("GET /console/grants with the session: %d", st)
	}
	if st, _ := consoleCall(t, http.MethodPost, base+"/console/links", token, "", nil); st != http.StatusUnauthorized {
		t.Errorf("POST /console/links with the token: %d", st)
	}
	if st, _ := consoleCall(t, http.MethodPost, base+"/participants/agent/messages", token, `{"kind":"chat","payload":{"text":"back"}}`, nil); st < 400 {
		t.Errorf("an HTTP post with the token: %d", st)
	}
}

// TestAttackKickedComesBackThroughConsole: a kicked participant's console
// sessions and codes end with its token, whichever credential it tries;
// the same for a token revoked by removing its file, where a new token
// file then lets it back; a shut-down participant loses its console
// credentials but keeps its token, with which it takes part again.
func TestAttackKickedComesBackThroughConsole(t *testing.T) {
	g := testutil.StartGateway(t, credSpace, gateway.Options{Timing: gateway.Timing{WriteTimeout: 400 * time.Millisecond}, Audit: gateway.AuditOptions{Off: true}})
	admin, _ := testutil.Join(t, g.WSURL, "admin-token")

	t.Run("kick", func(t *testing.T) {
		session, code := consoleCreds(t, g.URL, "agent-token")
		agent, _ := testutil.Join(t, g.WSURL, "agent-token")
		admin.ExpectFunc("system/presence", presence("join", "agent"))
		admin.SendText(`{"kind":"space/kick","payload":{"participant_id":"agent","reason":"misbehaving"}}`)
		if code, _ := agent.Closed(5 * time.Second); code != gateway.CloseKicked {
			t.Fatalf("the kicked agent's connection closed with %d", code)
		}
		refusedEverywhere(t, g.URL, g.WSURL, "agent-token", session, code)
	})

	t.Run("token revoked", func(t *testing.T) {
		tok := g.Token(t, "carol")
		session, code := consoleCreds(t, g.URL, tok)
		carol, _ := testutil.Join(t, g.WSURL, tok)
		file := filepath.Join(g.Config.MewDir, "tokens", "carol.token")
		if err := os.Remove(file); err != nil {
			t.Fatal(err)
		}
		if code, _ := carol.Closed(15 * time.Second); code != gateway.CloseRevoked {
			t.Fatalf("carol's connection closed with %d, want %d", code, gateway.CloseRevoked)
		}
		refusedEverywhere(t, g.URL, g.WSURL, tok, session, code)
		// A new token file: the new token works, the old one does not.
		if err := os.WriteFile(file, []byte("carol-new-token\n"), 0o600); err != nil {
			t.Fatal(err)
		}
		deadline := time.Now().Add(15 * time.Second)
		for {
			p, err := testutil.TryDial(t, g.WSURL, "carol-new-token")
			if err == nil {
				if m, err := p.Read(2 * time.Second); err == nil && m.Kind() == "system/welcome" {
					p.Conn.CloseNow()
					break
				}
				p.Conn.CloseNow()
			}
			if time.Now().After(deadline) {
				t.Fatal("the new token file's token was never accepted")
			}
			time.Sleep(100 * time.Millisecond)
		}
		if kind, _ := joinWith(t, g.WSURL, "", tok, nil); kind != "system/error" {
			t.Errorf("the revoked token was answered %s after the new one came", kind)
		}
	})

	t.Run("shutdown", func(t *testing.T) {
		session, code := consoleCreds(t, g.URL, "admin-token")
		other, _ := testutil.Join(t, g.WSURL, "admin-token") // replaces admin's first connection
		_ = other
		// The admin shuts itself down: its console credentials end, its
		// token stays, and reconnecting makes it take part again.
		other.SendText(`{"kind":"participant/shutdown","to":["admin"],"payload":{"reason":"done"}}`)
		other.ExpectFunc("participant/shutdown", func(testutil.Msg) bool { return true })
		if kind, _ := joinWith(t, g.WSURL, "", session, nil); kind != "system/error" {
			t.Errorf("a join with the shut-down participant's session was answered %s", kind)
		}
		if st, _ := exchange(t, g.URL, code); st != http.StatusUnauthorized {
			t.Errorf("a code minted before the shutdown was exchanged: %d", st)
		}
		again, w := testutil.Join(t, g.WSURL, "admin-token")
		if w.Kind() != "system/welcome" {
			t.Fatalf("the token after a shutdown: %s", w.Raw)
		}
		again.SendText(`{"id":"c1","kind":"chat","payload":{"text":"back"}}`)
		again.ExpectFunc("chat", func(m testutil.Msg) bool { return m.ID() == "c1" })
	})
}

// TestAttackConsoleCredentialQuota: a proposal-only agent that mints
// hundreds of links, and a thousand link and session pairs, neither logs
// the human out nor voids the human's link; past its quota of links it is
// refused (429), and the refusals are counted.
func TestAttackConsoleCredentialQuota(t *testing.T) {
	g := testutil.StartGateway(t, credSpace, gateway.Options{Audit: gateway.AuditOptions{Off: true}})
	humanSession, _ := consoleCreds(t, g.URL, "admin-token")
	humanCode := link(t, g.URL, "admin-token", "")

	refused := 0
	for range 300 {
		st, _ := consoleCall(t, http.MethodPost, g.URL+"/console/links", "agent-token", "", nil)
		switch st {
		case http.StatusCreated:
		case http.StatusTooManyRequests:
			refused++
		default:
			t.Fatalf("POST /console/links: %d", st)
		}
	}
	if refused != 300-16 {
		t.Errorf("%d of 300 links refused, want all past the quota of 16", refused)
	}
	// Its sessions churn: each exchange needs a code, so it spends the
	// links it may make again as they are used.
	start := time.Now()
	pairs := 0
	for range 1000 {
		st, m := consoleCall(t, http.MethodPost, g.URL+"/console/links", "agent-token", "", nil)
		if st != http.StatusCreated {
			break // its quota is full of unexchanged codes from above
		}
		if st, _ := exchange(t, g.URL, m["code"].(string)); st != http.StatusOK {
			t.Fatalf("the agent's exchange: %d", st)
		}
		pairs++
	}
	t.Logf("%d link+session pairs in %v", pairs, time.Since(start))

	if kind, _ := joinWith(t, g.WSURL, "", humanSession, nil); kind != "system/welcome" {
		t.Errorf("after the agent's churn the human's session was answered %s", kind)
	}
	if st, m := exchange(t, g.URL, humanCode); st != http.StatusOK {
		t.Errorf("after the agent's churn the human's link: %d %v", st, m)
	}
	resp, err := http.Get(g.URL + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var b strings.Builder
	_, _ = fmt.Fprint(&b, readAll(t, resp))
	if !strings.Contains(b.String(), `mew_gateway_refusals_total{code="limit_exceeded"}`) {
		t.Error("the refused links are not counted in mew_gateway_refusals_total")
	}
}

// TestAttackConsoleSessionsPerParticipant: a participant's own sessions
// past its quota end oldest first, and only its own.
func TestAttackConsoleSessionsPerParticipant(t *testing.T) {
	g := testutil.StartGateway(t, credSpace, gateway.Options{Audit: gateway.AuditOptions{Off: true}})
	humanSession, _ := consoleCreds(t, g.URL, "admin-token")
	var agentSessions []string
	for range 20 {
		st, m := exchange(t, g.URL, link(t, g.URL, "agent-token", ""))
		if st != http.StatusOK {
			t.Fatalf("exchange: %d %v", st, m)
		}
		agentSessions = append(agentSessions, m["session"].(string))
	}
	if st, _ := consoleCall(t, http.MethodGet, g.URL+"/console/grants", agentSessions[0], "", nil); st != http.StatusUnauthorized {
		t.Errorf("the agent's oldest session past its quota: %d, want 401", st)
	}
	if st, _ := consoleCall(t, http.MethodGet, g.URL+"/console/grants", agentSessions[19], "", nil); st != http.StatusOK {
		t.Errorf("the agent's newest session: %d", st)
	}
	if st, _ := consoleCall(t, http.MethodGet, g.URL+"/console/grants", humanSession, "", nil); st != http.StatusOK {
		t.Errorf("the human's session after the agent's 20: %d", st)
	}
}

// holdsKind reports whether a welcome says its addressee holds a pattern of
// kind.
func holdsKind(m testutil.Msg, kind string) bool {
	you, _ := m.Payload()["you"].(map[string]any)
	caps, _ := you["capabilities"].([]any)
	for _, c := range caps {
		if cm, _ := c.(map[string]any); cm["kind"] == kind {
			return true
		}
	}
	return false
}

func readAll(t *testing.T, resp *http.Response) string {
	t.Helper()
	var b strings.Builder
	buf := make([]byte, 32<<10)
	for {
		n, err := resp.Body.Read(buf)
		b.Write(buf[:n])
		if err != nil {
			return b.String()
		}
	}
}

// grantChainSpace: an administrator and three participants who hold chat.
const grantChainSpace = `
space: {id: grants}
participants:
  admin:
    tokens: [admin-token]
    capabilities: [{kind: "*"}]
  bob:
    tokens: [bob-token]
    capabilities: [{kind: chat}]
  carol:
    tokens: [carol-token]
    capabilities: [{kind: chat}]
  dave:
    tokens: [dave-token]
    capabilities: [{kind: chat}]
`

// TestAttackRegrantOutlivesParent: a chain three deep (admin → bob →
// carol → dave), each link granted "until revoked" on the strength of a
// grant for two seconds or revocable; the copies end with their parent,
// whichever way it ends: revoked by id, revoked by pattern, expired, or its
// granter kicked. A grant to oneself is refused. On one node and on three.
func TestAttackRegrantOutlivesParent(t *testing.T) {
	for _, nodes := range []int{1, 3} {
		for _, end := range []string{"revoke", "revoke-pattern", "expire", "kick"} {
			t.Run(fmt.Sprintf("%d-nodes/%s", nodes, end), func(t *testing.T) {
				var gs []*testutil.Gateway
				if nodes == 1 {
					gs = []*testutil.Gateway{testutil.StartGateway(t, grantChainSpace, gateway.Options{Audit: gateway.AuditOptions{Off: true}})}
				} else {
					gs = testutil.StartCluster(t, nodes, grantChainSpace, gateway.Options{Audit: gateway.AuditOptions{Off: true}})
				}
				on := func(i int) *testutil.Gateway { return gs[i%len(gs)] }
				admin, _ := testutil.Join(t, on(0).WSURL, "admin-token")
				bob, _ := testutil.Join(t, on(1).WSURL, "bob-token")
				carol, _ := testutil.Join(t, on(2).WSURL, "carol-token")
				dave, _ := testutil.Join(t, on(0).WSURL, "dave-token")
				expectJoins(admin, "bob", "carol", "dave")
				canRequest := func(p *testutil.Peer, id string) bool {
					return outcome(t, p, id, `{"id":"`+id+`","kind":"mcp/request","to":["admin"],"payload":{"jsonrpc":"2.0","id":1,"method":"tools/list"}}`) == nil
				}
				grantAndWait := func(from, to *testutil.Peer, id, recipient, extra string) {
					t.Helper()
					env := grantEnv(id, recipient, []string{kindRequest, kindGrant}, extra)
					if e := outcome(t, from, id, env); e != nil {
						t.Fatalf("grant %s refused: %v", id, e)
					}
					to.ExpectFunc("system/welcome", func(m testutil.Msg) bool { return holdsKind(m, "capability/grant") })
				}
				extra := ""
				if end == "expire" {
					extra = `"ttl_seconds":2`
				}
				grantAndWait(admin, bob, "g1", "bob", extra)
				// bob to himself: refused, whatever the lifetime.
				if e := outcome(t, bob, "self", grantEnv("self", "bob", []string{kindRequest}, "")); e == nil || e["error"] != "invalid_request" {
					t.Errorf("a grant to oneself: %v", e)
				}
				grantAndWait(bob, carol, "g2", "carol", "")
				grantAndWait(carol, dave, "g3", "dave", "")
				for i, p := range []*testutil.Peer{bob, carol, dave} {
					if !canRequest(p, fmt.Sprintf("before%d", i)) {
						t.Fatalf("before the parent ended, link %d of the chain allowed nothing", i)
					}
				}
				switch end {
				case "revoke":
					admin.SendText(`{"kind":"capability/revoke","payload":{"recipient":"bob","grant_id":"g1"}}`)
				case "revoke-pattern":
					admin.SendText(`{"kind":"capability/revoke","payload":{"recipient":"bob","capabilities":[{"kind":"mcp/request"}]}}`)
				case "kick":
					admin.SendText(`{"kind":"space/kick","payload":{"participant_id":"bob"}}`)
				}
				// carol and dave, down the chain, lose it, each on their node:
				// their welcomes say so.
				for _, p := range []*testutil.Peer{carol, dave} {
					p.Within(15*time.Second, "a welcome without mcp/request", func(m testutil.Msg) bool {
						return m.Kind() == "system/welcome" && !holdsKind(m, "mcp/request")
					})
				}
				for i, p := range []*testutil.Peer{carol, dave} {
					if canRequest(p, fmt.Sprintf("after%d", i)) {
						t.Errorf("after the parent ended (%s), link %d of the chain still allowed a request", end, i+1)
					}
				}
				code, m := get(t, on(0), "/participants/admin/grants", "admin-token")
				if code != http.StatusOK {
					t.Fatalf("ledger: %d %v", code, m)
				}
				if grants := m["grants"].([]any); (end == "revoke-pattern" && len(grants) > 1) || (end != "revoke-pattern" && len(grants) > 0) {
					t.Errorf("the ledger after the parent ended (%s): %v", end, grants)
				}
			})
		}
	}
}

// TestAttackKickedAcrossNodes: on a 3-node cluster, a participant's console
// session and code are minted on node 2 and its token used on node 3; the
// administrator kicks it on node 1; on every node nothing of it works any
// more.
func TestAttackKickedAcrossNodes(t *testing.T) {
	gs := testutil.StartCluster(t, 3, credSpace, gateway.Options{Audit: gateway.AuditOptions{Off: true}})
	admin, _ := testutil.Join(t, gs[0].WSURL, "admin-token")
	session, code := consoleCreds(t, gs[1].URL, "agent-token")
	agent, _ := testutil.Join(t, gs[2].WSURL, "agent-token")
	admin.Within(15*time.Second, "the agent joining", func(m testutil.Msg) bool {
		return m.Kind() == "system/presence" && presence("join", "agent")(m)
	})
	admin.SendText(`{"kind":"space/kick","payload":{"participant_id":"agent"}}`)
	if code, _ := agent.Closed(15 * time.Second); code != gateway.CloseKicked {
		t.Fatalf("the kicked agent's connection on node 3 closed with %d", code)
	}
	// Node 2 applies the kick from the cluster's state: wait until its own
	// session table has let go, then try everything on every node.
	deadline := time.Now().Add(15 * time.Second)
	for {
		st, _ := consoleCall(t, http.MethodGet, gs[1].URL+"/console/grants", session, "", nil)
		if st == http.StatusUnauthorized {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("node 2 still serves the kicked agent's session (%d)", st)
		}
		time.Sleep(20 * time.Millisecond)
	}
	refusedEverywhere(t, gs[1].URL, gs[1].WSURL, "agent-token", session, code)
	for _, g := range []*testutil.Gateway{gs[0], gs[2]} {
		if kind, _ := joinWith(t, g.WSURL, "", "agent-token", nil); kind != "system/error" {
			t.Errorf("%s: a join with the kicked agent's token was answered %s", g.URL, kind)
		}
	}
}
