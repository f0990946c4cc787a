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

	path := func(who, env string) string { return "/participants/" + who + "/lineage/" + env }
	// The audit writer flushes within moments: wait for l1's lineage.
	deadline := time.Now().Add(5 * time.Second)
	for {
		code, _ := get(t, g, path("alice", "l1"), "alice-token")
		if code == http.StatusOK {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("alice's lineage of l1: %d", code)
		}
		time.Sleep(50 * time.Millisecond)
	}

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
	g := testutil.StartGateway(t, testSpace, gateway.Options{NoAudit: true})
	if code, body := get(t, g, "/participants/alice/lineage/x", "alice-token"); code != http.StatusNotFound || body["error"] != "no_audit_log" {
		t.Fatalf("%d %v", code, body)
	}
}
