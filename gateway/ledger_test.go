package gateway_test

import (
	"net/http"
	"slices"
	"testing"
	"time"

	"github.com/mew-protocol/mew/gateway"
	"github.com/mew-protocol/mew/internal/testutil"
)

// TestGrantsLedger: GET /participants/{id}/grants lists the runtime grants
// in force: all of them to a participant that may grant or revoke, only its
// own to any other, nothing without the right token; revoked and expired
// grants leave it.
func TestGrantsLedger(t *testing.T) {
	g := testutil.StartGateway(t, delegSpace, gateway.Options{})
	admin, _ := testutil.Join(t, g.WSURL, "admin-token")
	agent, _ := testutil.Join(t, g.WSURL, "agent-token")
	ledger := func(id, token string) []map[string]any {
		t.Helper()
		code, body := get(t, g, "/participants/"+id+"/grants", token)
		if code != http.StatusOK {
			t.Fatalf("ledger of %s: %d %v", id, code, body)
		}
		var out []map[string]any
		for _, v := range body["grants"].([]any) {
			out = append(out, v.(map[string]any))
		}
		return out
	}
	grantIDs := func(list []map[string]any) []string {
		var ids []string
		for _, v := range list {
			ids = append(ids, v["id"].(string))
		}
		slices.Sort(ids)
		return ids
	}

	if l := ledger("admin", "admin-token"); len(l) != 0 {
		t.Fatalf("ledger before any grant: %v", l)
	}
	admin.SendText(`{"id":"g-forever","kind":"capability/grant","payload":{"recipient":"agent","capabilities":[{"kind":"mcp/request","payload":{"method":"tools/list"}}]}}`)
	agent.Expect("system/welcome")
	admin.SendText(`{"id":"g-ten","kind":"capability/grant","payload":{"recipient":"agent","capabilities":[{"kind":"chat"}],"ttl_seconds":600}}`)
	agent.Expect("system/welcome")

	all := ledger("admin", "admin-token")
	if got := grantIDs(all); !slices.Equal(got, []string{"g-forever", "g-ten"}) {
		t.Fatalf("admin's ledger: %v", all)
	}
	for _, v := range all {
		if v["from"] != "admin" || v["to"] != "agent" || v["granted_at"] == "" {
			t.Errorf("grant view: %v", v)
		}
		exp, has := v["expires_at"].(string)
		switch v["id"] {
		case "g-forever":
			if has {
				t.Errorf("a grant until revoked has expires_at %q", exp)
			}
		case "g-ten":
			at, err := time.Parse(time.RFC3339Nano, exp)
			if err != nil || time.Until(at) < 9*time.Minute || time.Until(at) > 11*time.Minute {
				t.Errorf("ten-minute grant expires at %q (%v)", exp, err)
			}
		}
	}
	// The holder sees what it holds; a bystander without grant or revoke
	// sees nothing of others'.
	if got := grantIDs(ledger("agent", "agent-token")); len(got) != 2 {
		t.Errorf("holder's ledger: %v", got)
	}
	if got := ledger("inviter", "inviter-token"); len(got) != 0 {
		t.Errorf("bystander's ledger: %v", got)
	}
	// Identity comes from the token.
	if code, _ := get(t, g, "/participants/admin/grants", ""); code != http.StatusUnauthorized {
		t.Errorf("no token: %d", code)
	}
	if code, _ := get(t, g, "/participants/admin/grants", "inviter-token"); code != http.StatusForbidden {
		t.Errorf("another's id: %d", code)
	}
	// Revoked grants leave the ledger.
	admin.SendText(`{"id":"r1","kind":"capability/revoke","payload":{"recipient":"agent","capabilities":[{"kind":"chat"}]}}`)
	agent.Expect("system/welcome")
	if got := grantIDs(ledger("admin", "admin-token")); !slices.Equal(got, []string{"g-forever"}) {
		t.Errorf("after revoke: %v", got)
	}
}
