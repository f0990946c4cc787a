package gateway_test

import (
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/mew-protocol/mew/gateway"
	"github.com/mew-protocol/mew/internal/testutil"
)

// TestLineageAPI: GET /participants/{id}/lineage/{envelope} serves an
// envelope's lineage from the audit log to a participant that saw every
// envelope in it, or to one that may grant; an envelope the caller never
// saw is unknown to it, a lineage reaching beyond what it saw is
// forbidden, and missing, wrong, spoofed and foreign tokens get nothing.
func TestLineageAPI(t *testing.T) {
	g := testutil.StartGateway(t, testSpace, gateway.Options{})
	lineageScene(t, g)
	path := func(who, env string) string { return "/participants/" + who + "/lineage/" + env }

	code, body := get(t, g, path("bob", "f1"), "bob-token")
	if code != http.StatusOK || body["envelope"] != "f1" || body["space"] != "test" {
		t.Fatalf("bob's lineage of f1: %d %v", code, body)
	}
	lin, _ := body["lineage"].(map[string]any)
	tree := flatten(lin)
	for _, want := range []string{"mcp/request f1 from alice to bob", "fulfills", "mcp/proposal p1 from bob to alice", "approved_by: alice, who carried it out with f1"} {
		if !strings.Contains(tree, want) {
			t.Errorf("lineage lacks %q:\n%s", want, tree)
		}
	}
	if strings.Contains(tree, "/logs/") || strings.Contains(tree, g.Dir) {
		t.Errorf("the lineage shows the gateway's paths:\n%s", tree)
	}

	for _, tc := range []struct {
		name, path, token string
		code              int
	}{
		{"lazy never saw f1", path("lazy", "f1"), "lazy-token", http.StatusNotFound},
		{"l1's lineage holds what lazy did not see", path("lazy", "l1"), "lazy-token", http.StatusForbidden},
		{"bob saw all of l1's lineage", path("bob", "l1"), "bob-token", http.StatusOK},
		{"unknown id", path("alice", "no-such-envelope"), "alice-token", http.StatusNotFound},
		{"an id that is a path", path("alice", "..%2F..%2Fetc%2Fpasswd"), "alice-token", http.StatusNotFound},
		{"no token", path("bob", "f1"), "", http.StatusUnauthorized},
		{"wrong token", path("bob", "f1"), "bob-token-x", http.StatusForbidden},
		{"spoofed: bob's token for alice", path("alice", "f1"), "bob-token", http.StatusForbidden},
		{"a token of another space", path("bob", "f1") + "?space=other", "bob-token", http.StatusForbidden},
	} {
		if code, body := get(t, g, tc.path, tc.token); code != tc.code {
			t.Errorf("%s: %d %v, want %d", tc.name, code, body, tc.code)
		} else if code != http.StatusOK && body["lineage"] != nil {
			t.Errorf("%s: a refusal with a lineage: %v", tc.name, body)
		}
	}
}

// lineageScene plays a proposal p1 of bob's that alice carries out with
// f1, then a chat l1 of lazy, who joined after, naming f1; it returns once
// the audit log holds l1.
func lineageScene(t *testing.T, g *testutil.Gateway) {
	t.Helper()
	alice, _ := testutil.Join(t, g.WSURL, "alice-token")
	bob, _ := testutil.Join(t, g.WSURL, "bob-token")
	alice.Expect("system/presence")
	bob.SendText(`{"id":"p1","kind":"mcp/proposal","to":["alice"],"payload":{"method":"tools/call","params":{"name":"add"}}}`)
	alice.ExpectFunc("mcp/proposal", func(m testutil.Msg) bool { return m.ID() == "p1" })
	alice.SendText(`{"id":"f1","kind":"mcp/request","to":["bob"],"correlation_id":["p1"],"payload":{"method":"tools/call","params":{"name":"add"}}}`)
	bob.ExpectFunc("mcp/request", func(m testutil.Msg) bool { return m.ID() == "f1" })
	// lazy joins after all that, and refers to it.
	lazy, _ := testutil.Join(t, g.WSURL, "lazy-token")
	lazy.SendText(`{"id":"l1","kind":"chat","correlation_id":["f1"],"payload":{"text":"what was f1?"}}`)
	bob.ExpectFunc("chat", func(m testutil.Msg) bool { return m.ID() == "l1" })
	// The audit writer flushes within moments: wait for l1's lineage as
	// bob reads it, which needs l1's deliveries recorded, not only its
	// receipt (alice, who may grant, reads it as soon as l1 is there; bob's
	// view of a lineage reaching l1 depends on its recipients).
	for deadline := time.Now().Add(5 * time.Second); ; {
		code, _ := get(t, g, "/participants/bob/lineage/l1", "bob-token")
		if code == http.StatusOK {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("bob's lineage of l1: %d", code)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// flatten joins the texts and relations of a lineage tree.
func flatten(n map[string]any) string {
	if n == nil {
		return ""
	}
	s, _ := n["text"].(string)
	if r, _ := n["relation"].(string); r != "" {
		s = r + ": " + s
	}
	if at, _ := n["at"].(string); at != "" {
		s += " @" + at
	}
	kids, _ := n["children"].([]any)
	for _, k := range kids {
		c, _ := k.(map[string]any)
		s += "\n" + flatten(c)
	}
	return s
}

// TestLineageAPIWithoutAudit: a gateway that keeps no envelope history
// says so.
func TestLineageAPIWithoutAudit(t *testing.T) {
	g := testutil.StartGateway(t, testSpace, gateway.Options{Audit: gateway.AuditOptions{Off: true}})
	if code, body := get(t, g, "/participants/alice/lineage/x", "alice-token"); code != http.StatusNotFound || body["error"] != "no_audit_log" {
		t.Fatalf("%d %v", code, body)
	}
}

// TestConsoleLineage: GET /console/lineage/{envelope} serves the page with
// its console session (or a token) under the same rules as the participant
// API; a forged, ended or misplaced session gets nothing.
func TestConsoleLineage(t *testing.T) {
	g := testutil.StartGateway(t, testSpace, gateway.Options{})
	lineageScene(t, g)
	session := func(token string) string {
		_, m := exchange(t, g.URL, link(t, g.URL, token, "test"))
		s, _ := m["session"].(string)
		return s
	}
	bob, lazy := session("bob-token"), session("lazy-token")
	at := func(env string) string { return g.URL + "/console/lineage/" + env }

	st, m := consoleCall(t, http.MethodGet, at("f1"), bob, "", nil)
	lin, _ := m["lineage"].(map[string]any)
	if st != http.StatusOK || m["envelope"] != "f1" || !strings.Contains(flatten(lin), "fulfills: mcp/proposal p1 from bob to alice") {
		t.Fatalf("bob's session, f1: %d %v", st, m)
	}
	for _, tc := range []struct {
		name, url, cred string
		code            int
	}{
		{"bob's token, as the page holds it when typed in", at("f1"), "bob-token", http.StatusOK},
		{"lazy's session: it never saw f1", at("f1"), lazy, http.StatusNotFound},
		{"lazy's session: l1 reaches beyond what it saw", at("l1"), lazy, http.StatusForbidden},
		{"a forged session", at("f1"), "mcs_" + strings.Repeat("A", 26), http.StatusUnauthorized},
		{"a session with a character changed", at("f1"), bob[:len(bob)-1] + "x", http.StatusUnauthorized},
		{"no credential", at("f1"), "", http.StatusUnauthorized},
		{"bob's session for another space", at("f1") + "?space=other", bob, http.StatusUnauthorized},
	} {
		if st, m := consoleCall(t, http.MethodGet, tc.url, tc.cred, "", nil); st != tc.code || (st != http.StatusOK && m["lineage"] != nil) {
			t.Errorf("%s: %d %v, want %d", tc.name, st, m, tc.code)
		}
	}
	if st, _ := consoleCall(t, http.MethodDelete, g.URL+"/console/session", bob, "", nil); st != http.StatusNoContent {
		t.Fatalf("DELETE /console/session: %d", st)
	}
	if st, _ := consoleCall(t, http.MethodGet, at("f1"), bob, "", nil); st != http.StatusUnauthorized {
		t.Errorf("an ended session: %d", st)
	}
}

// TestConsoleLineageOtherSpace: a session of one space of a gateway reads
// no lineage of another space, whether it names that space or not.
func TestConsoleLineageOtherSpace(t *testing.T) {
	base := serveSpaces(t, gateway.Options{},
		"space: {id: one}\nparticipants:\n  ann: {tokens: [ann-token], capabilities: [{kind: \"*\"}]}\n",
		"space: {id: two}\nparticipants:\n  ben: {tokens: [ben-token], capabilities: [{kind: \"*\"}]}\n")
	ann, _ := testutil.Join(t, "ws"+strings.TrimPrefix(base, "http")+"/ws?space=one", "ann-token")
	ann.SendText(`{"id":"e1","kind":"chat","payload":{"text":"in space one"}}`)
	ann.ExpectFunc("chat", func(m testutil.Msg) bool { return m.ID() == "e1" })
	ses := func(token, sp string) string {
		_, m := exchange(t, base, link(t, base, token, sp))
		s, _ := m["session"].(string)
		return s
	}
	annS, benS := ses("ann-token", "one"), ses("ben-token", "two")
	for deadline := time.Now().Add(5 * time.Second); ; {
		st, _ := consoleCall(t, http.MethodGet, base+"/console/lineage/e1", annS, "", nil)
		if st == http.StatusOK {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("ann's session, e1 of its own space: %d", st)
		}
		time.Sleep(50 * time.Millisecond)
	}
	if st, m := consoleCall(t, http.MethodGet, base+"/console/lineage/e1", benS, "", nil); st != http.StatusNotFound {
		t.Errorf("space two's session, e1 of space one: %d %v", st, m)
	}
	if st, m := consoleCall(t, http.MethodGet, base+"/console/lineage/e1?space=one", benS, "", nil); st != http.StatusUnauthorized {
		t.Errorf("space two's session naming space one: %d %v", st, m)
	}
}
