package gateway_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/coder/websocket"

	"github.com/mew-protocol/mew/gateway"
	"github.com/mew-protocol/mew/internal/testutil"
)

// TestGrantWithTo: the reference's scenario 8-grant grants a capability
// that names its recipient. The grant is accepted and honoured as written:
// requests to file-server pass; a broadcast, a request to anyone else, or
// to file-server and someone else, are refused. A narrower to may be handed
// on; a wider one (or none) may not.
func TestGrantWithTo(t *testing.T) {
	g := testutil.StartGateway(t, delegSpace, gateway.Options{Audit: gateway.AuditOptions{Off: true}})
	admin, _ := testutil.Join(t, g.WSURL, "admin-token")
	agent, _ := testutil.Join(t, g.WSURL, "agent-token")
	narrow, _ := testutil.Join(t, g.WSURL, "narrow-token")

	const pattern = `{"kind":"mcp/request","to":["file-server"],"payload":{"method":"tools/*"}}`
	taken(t, admin, "g1", `{"id":"g1","kind":"capability/grant","to":["agent"],"payload":{"recipient":"agent","capabilities":[`+pattern+`]}}`, "a grant with to was refused")
	agent.ExpectFunc("system/welcome", func(m testutil.Msg) bool { return holdsKind(m, "mcp/request") })
	call := func(id, to string) map[string]any {
		toMember := ""
		if to != "" {
			toMember = `"to":` + to + `,`
		}
		return outcome(t, agent, id, `{"id":"`+id+`","kind":"mcp/request",`+toMember+`"payload":{"jsonrpc":"2.0","id":1,"method":"tools/list"}}`)
	}
	if e := call("ok", `["file-server"]`); e != nil {
		t.Errorf("a request to file-server: %v", e)
	}
	for name, to := range map[string]string{"broadcast": "", "another": `["files"]`, "one more": `["file-server","files"]`, "empty": `[]`} {
		if e := call("no-"+name, to); e == nil || e["error"] != gateway.ErrorCapabilityViolation {
			t.Errorf("a request (%s) was not refused: %v", name, e)
		}
	}
	// The agent may grant: the same to, or none of it.
	if e := outcome(t, agent, "d1", `{"id":"d1","kind":"capability/grant","payload":{"recipient":"files","capabilities":[{"kind":"mcp/request","to":"file-server","payload":{"method":"tools/list"}}]}}`); e != nil {
		t.Errorf("handing on a narrower grant: %v", e)
	}
	if e := outcome(t, agent, "d2", `{"id":"d2","kind":"capability/grant","payload":{"recipient":"files","capabilities":[{"kind":"mcp/request","payload":{"method":"tools/list"}}]}}`); e == nil || e["error"] != gateway.ErrorCapabilityViolation {
		t.Errorf("handing on the grant without its to: %v", e)
	}
	// narrow holds a tool call to anyone: it may hand it on to one.
	if e := outcome(t, narrow, "d3", `{"id":"d3","kind":"capability/grant","payload":{"recipient":"files","capabilities":[{"kind":"mcp/request","to":["agent"],"payload":{"method":"tools/call","params":{"name":"read_file"}}}]}}`); e != nil {
		t.Errorf("a narrower to from a pattern without to: %v", e)
	}
	// A malformed to refuses the whole grant.
	for _, bad := range []string{`"to":5`, `"to":[]`, `"to":[{"a":1}]`, `"To":["x"]`} {
		if e := outcome(t, admin, "b", `{"id":"b","kind":"capability/grant","payload":{"recipient":"agent","capabilities":[{"kind":"chat",`+bad+`}]}}`); e == nil || e["error"] != gateway.ErrorInvalidEnvelope {
			t.Errorf("grant with %s: %v", bad, e)
		}
	}
}

// TestJoinUnknownSpace: a join naming a space this gateway does not serve
// is told so, not that its token is unknown; a wrong token for a served
// space is still an unknown token, and nothing else is said of either.
func TestJoinUnknownSpace(t *testing.T) {
	g := testutil.StartGateway(t, delegSpace, gateway.Options{Audit: gateway.AuditOptions{Off: true}})
	for _, c := range []struct{ space, token, want string }{
		{"delg", "admin-token", `no space \"delg\" on this gateway`},
		{"deleg", "nope", "unknown token for this space"},
		{strings.Repeat("x", 500), "admin-token", "no space"},
	} {
		conn, _, err := websocket.Dial(t.Context(), g.WSURL, nil)
		if err != nil {
			t.Fatal(err)
		}
		j, _ := json.Marshal(map[string]string{"type": "join", "space": c.space, "token": c.token})
		if err := conn.Write(t.Context(), websocket.MessageText, j); err != nil {
			t.Fatal(err)
		}
		_, b, err := conn.Read(t.Context())
		if err != nil || !strings.Contains(string(b), `"kind":"system/error"`) || !strings.Contains(string(b), c.want) {
			t.Errorf("space %.20q, token %s: %s (%v), want %q", c.space, c.token, b, err, c.want)
		}
		conn.CloseNow()
	}
}
