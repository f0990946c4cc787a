package gateway_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/coder/websocket"

	"github.com/mew-protocol/mew/gateway"
	"github.com/mew-protocol/mew/internal/testutil"
)

// consoleCall makes one request with the console's headers (the custom
// header, a JSON body) unless the test removes them.
func consoleCall(t *testing.T, method, url, auth, body string, hdr map[string]string) (int, map[string]any) {
	t.Helper()
	req, err := http.NewRequest(method, url, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("X-Mew-Console", "1")
	req.Header.Set("Content-Type", "application/json")
	if auth != "" {
		req.Header.Set("Authorization", "Bearer "+auth)
	}
	for k, v := range hdr {
		if v == "" {
			req.Header.Del(k)
		} else {
			req.Header.Set(k, v)
		}
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	var m map[string]any
	_ = json.Unmarshal(b, &m)
	return resp.StatusCode, m
}

// link asks for a one-time code as the holder of token.
func link(t *testing.T, base, token, spaceID string) string {
	t.Helper()
	st, m := consoleCall(t, http.MethodPost, base+"/console/links?space="+spaceID, token, "", nil)
	if st != http.StatusCreated {
		t.Fatalf("POST /console/links: %d %v", st, m)
	}
	code, _ := m["code"].(string)
	if p, _ := m["path"].(string); code == "" || !strings.HasPrefix(p, "/console/#") || !strings.Contains(p, code) {
		t.Fatalf("link answer %v", m)
	}
	return code
}

// exchange trades a code for a session.
func exchange(t *testing.T, base, code string) (int, map[string]any) {
	t.Helper()
	body, _ := json.Marshal(map[string]string{"code": code})
	return consoleCall(t, http.MethodPost, base+"/console/session", "", string(body), nil)
}

// joinWith dials without a bearer header and sends a join with cred; it
// returns the first message's kind and the connection.
func joinWith(t *testing.T, wsURL, spaceID, cred string, hdr http.Header) (string, *websocket.Conn) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	c, resp, err := websocket.Dial(ctx, wsURL, &websocket.DialOptions{HTTPHeader: hdr})
	if err != nil {
		if resp != nil {
			return "http " + resp.Status, nil
		}
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.CloseNow() })
	j, _ := json.Marshal(map[string]string{"type": "join", "space": spaceID, "token": cred})
	if err := c.Write(ctx, websocket.MessageText, j); err != nil {
		t.Fatal(err)
	}
	_, b, err := c.Read(ctx)
	if err != nil {
		t.Fatalf("read after join: %v", err)
	}
	var env struct {
		Kind    string          `json:"kind"`
		Payload json.RawMessage `json:"payload"`
	}
	_ = json.Unmarshal(b, &env)
	return env.Kind, c
}

func TestConsolePageHeaders(t *testing.T) {
	g := start(t, gateway.Options{Audit: gateway.AuditOptions{Off: true}})
	resp, err := http.Get(g.URL + "/console/")
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK || !strings.Contains(string(b), "<html") {
		t.Fatalf("GET /console/: %d %.200s", resp.StatusCode, b)
	}
	csp := resp.Header.Get("Content-Security-Policy")
	for _, want := range []string{"default-src 'self'", "frame-ancestors 'none'", "ws://" + g.Addr} {
		if !strings.Contains(csp, want) {
			t.Errorf("CSP %q lacks %q", csp, want)
		}
	}
	if resp.Header.Get("X-Content-Type-Options") != "nosniff" || resp.Header.Get("Referrer-Policy") != "no-referrer" || resp.Header.Get("Cache-Control") == "" {
		t.Errorf("security headers %v", resp.Header)
	}
	// A Host that is not a host name stays out of the CSP.
	req, _ := http.NewRequest(http.MethodGet, g.URL+"/console/", nil)
	req.Host = "evil.example; script-src *"
	resp, err = http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if csp := resp.Header.Get("Content-Security-Policy"); strings.Contains(csp, "evil") || strings.Contains(csp, "*") {
		t.Errorf("a hostile Host reached the CSP: %q", csp)
	}
}

func TestConsoleOff(t *testing.T) {
	g := start(t, gateway.Options{Audit: gateway.AuditOptions{Off: true}, Console: gateway.ConsoleOptions{Off: true}})
	resp, err := http.Get(g.URL + "/console/")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusNotFound {
		t.Errorf("GET /console/ with NoConsole: %d", resp.StatusCode)
	}
	if st, _ := consoleCall(t, http.MethodPost, g.URL+"/console/links", "alice-token", "", nil); st != http.StatusNotFound && st != http.StatusMethodNotAllowed {
		t.Errorf("POST /console/links with NoConsole: %d", st)
	}
}

// TestConsoleLinkOnce: a link opens one session, once; the session joins
// as the participant that asked for the link, with its capabilities.
func TestConsoleLinkOnce(t *testing.T) {
	g := start(t, gateway.Options{Audit: gateway.AuditOptions{Off: true}})
	code := link(t, g.URL, "bob-token", "test")
	st, m := exchange(t, g.URL, code)
	if st != http.StatusOK || m["participant"] != "bob" || m["space"] != "test" {
		t.Fatalf("exchange: %d %v", st, m)
	}
	sess, _ := m["session"].(string)
	if !strings.HasPrefix(sess, "mcs_") {
		t.Fatalf("session %q", sess)
	}
	if st, m := exchange(t, g.URL, code); st != http.StatusUnauthorized {
		t.Fatalf("second exchange of the same code: %d %v", st, m)
	}
	kind, c := joinWith(t, g.WSURL, "test", sess, nil)
	if kind != "system/welcome" {
		t.Fatalf("join with the session: %s", kind)
	}
	_ = c.Close(websocket.StatusNormalClosure, "")
	// The ledger under the session.
	if st, m := consoleCall(t, http.MethodGet, g.URL+"/console/grants", sess, "", nil); st != http.StatusOK || m["space"] != "test" {
		t.Fatalf("GET /console/grants: %d %v", st, m)
	}
	// A session is not a token: the participant's own HTTP API refuses it.
	if st, _ := get(t, g, "/participants/bob/grants", sess); st == http.StatusOK {
		t.Error("GET /participants/bob/grants accepted a console session")
	}
	// Logging out ends it.
	if st, _ := consoleCall(t, http.MethodDelete, g.URL+"/console/session", sess, "", nil); st != http.StatusNoContent {
		t.Fatalf("DELETE /console/session: %d", st)
	}
	if kind, _ := joinWith(t, g.WSURL, "test", sess, nil); kind != "system/error" {
		t.Fatalf("join with an ended session: %s", kind)
	}
}

func TestConsoleNoToken(t *testing.T) {
	g := start(t, gateway.Options{Audit: gateway.AuditOptions{Off: true}})
	for _, tok := range []string{"", "nope", "mcs_forged", strings.Repeat("x", 8000)} {
		if st, m := consoleCall(t, http.MethodPost, g.URL+"/console/links", tok, "", nil); st != http.StatusUnauthorized || m["code"] != nil {
			t.Errorf("POST /console/links with %.10q: %d %v", tok, st, m)
		}
		if st, m := consoleCall(t, http.MethodGet, g.URL+"/console/grants", tok, "", nil); st != http.StatusUnauthorized || m["grants"] != nil {
			t.Errorf("GET /console/grants with %.10q: %d %v", tok, st, m)
		}
	}
	if kind, _ := joinWith(t, g.WSURL, "test", "mcs_"+strings.Repeat("A", 26), nil); kind != "system/error" {
		t.Errorf("join with a forged session: %s", kind)
	}
}

func TestConsoleExpiredLink(t *testing.T) {
	g := start(t, gateway.Options{Audit: gateway.AuditOptions{Off: true}, Console: gateway.ConsoleOptions{LinkTTL: time.Millisecond}})
	code := link(t, g.URL, "alice-token", "test")
	time.Sleep(10 * time.Millisecond)
	if st, m := exchange(t, g.URL, code); st != http.StatusUnauthorized || m["session"] != nil {
		t.Fatalf("exchange of an expired code: %d %v", st, m)
	}
}

// TestConsoleExchangeHostile: the exchange takes exactly one small JSON
// body with the custom header from the gateway's own origin.
func TestConsoleExchangeHostile(t *testing.T) {
	g := start(t, gateway.Options{Audit: gateway.AuditOptions{Off: true}})
	code := link(t, g.URL, "alice-token", "test")
	good := `{"code":"` + code + `"}`
	cases := []struct {
		name string
		body string
		hdr  map[string]string
		want int
	}{
		{"no custom header", good, map[string]string{"X-Mew-Console": ""}, http.StatusForbidden},
		{"form body", "code=" + code, map[string]string{"Content-Type": "application/x-www-form-urlencoded"}, http.StatusUnsupportedMediaType},
		{"cross origin", good, map[string]string{"Origin": "http://evil.example"}, http.StatusForbidden},
		{"null origin", good, map[string]string{"Origin": "null"}, http.StatusForbidden},
		{"oversized", `{"code":"` + strings.Repeat("a", 4096) + `"}`, nil, http.StatusRequestEntityTooLarge},
		{"malformed", `{"code":`, nil, http.StatusBadRequest},
		{"not an object", `["` + code + `"]`, nil, http.StatusBadRequest},
		{"unknown member", `{"code":"` + code + `","as":"alice"}`, nil, http.StatusBadRequest},
		{"two values", good + good, nil, http.StatusBadRequest},
		{"empty code", `{"code":""}`, nil, http.StatusBadRequest},
		{"wrong code", `{"code":"AAAAAAAAAAAAAAAAAAAAAAAAAA"}`, nil, http.StatusUnauthorized},
	}
	for _, c := range cases {
		if st, m := consoleCall(t, http.MethodPost, g.URL+"/console/session", "", c.body, c.hdr); st != c.want || m["session"] != nil {
			t.Errorf("%s: %d %v, want %d", c.name, st, m, c.want)
		}
	}
	// None of those spent the code, but for the wrong one; the page's own
	// exchange, from the gateway's origin, still works.
	st, m := consoleCall(t, http.MethodPost, g.URL+"/console/session", "", good, map[string]string{"Origin": g.URL})
	if st != http.StatusOK {
		t.Fatalf("same-origin exchange: %d %v", st, m)
	}
}

// TestConsoleCrossOriginWebSocket: a browser page of another origin cannot
// open a WebSocket; the gateway's own origin and clients without Origin
// can.
func TestConsoleCrossOriginWebSocket(t *testing.T) {
	g := start(t, gateway.Options{OriginPatterns: []string{"console.example:8443"}, Audit: gateway.AuditOptions{Off: true}})
	for _, o := range []string{"http://evil.example", "http://127.0.0.1.evil.example", "null", "http://console.example:9999"} {
		if kind, _ := joinWith(t, g.WSURL, "test", "alice-token", http.Header{"Origin": {o}}); !strings.HasPrefix(kind, "http 403") {
			t.Errorf("WebSocket from %s: %s", o, kind)
		}
	}
	for _, o := range []string{"", "http://" + g.Addr, "https://console.example:8443"} {
		h := http.Header{}
		if o != "" {
			h.Set("Origin", o)
		}
		if kind, c := joinWith(t, g.WSURL, "test", "alice-token", h); kind != "system/welcome" {
			t.Errorf("WebSocket from %q: %s", o, kind)
		} else {
			_ = c.Close(websocket.StatusNormalClosure, "")
		}
	}
}

// TestConsoleOtherSpace: a token or a session of one space opens nothing
// in another space of the same gateway.
func TestConsoleOtherSpace(t *testing.T) {
	base := serveSpaces(t, gateway.Options{Audit: gateway.AuditOptions{Off: true}},
		"space: {id: one}\nparticipants:\n  ann: {tokens: [ann-token], capabilities: [{kind: \"*\"}]}\n",
		"space: {id: two}\nparticipants:\n  ben: {tokens: [ben-token], capabilities: [{kind: \"*\"}]}\n")
	if st, m := consoleCall(t, http.MethodPost, base+"/console/links?space=one", "ben-token", "", nil); st != http.StatusUnauthorized {
		t.Errorf("a link for space one with space two's token: %d %v", st, m)
	}
	_, m := exchange(t, base, link(t, base, "ben-token", "two"))
	sess, _ := m["session"].(string)
	if kind, _ := joinWith(t, "ws"+strings.TrimPrefix(base, "http")+"/ws", "one", sess, nil); kind != "system/error" {
		t.Errorf("space two's session joined space one: %s", kind)
	}
	if st, _ := consoleCall(t, http.MethodGet, base+"/console/grants?space=one", sess, "", nil); st != http.StatusUnauthorized {
		t.Errorf("space two's session read space one's ledger: %d", st)
	}
	if kind, c := joinWith(t, "ws"+strings.TrimPrefix(base, "http")+"/ws", "two", sess, nil); kind != "system/welcome" {
		t.Errorf("the session in its own space: %s", kind)
	} else {
		_ = c.Close(websocket.StatusNormalClosure, "")
	}
}

// TestConsoleMe: GET /console/me tells the page who it is and the routing
// defaults for it (its own default_to over the space's), with a token or a
// session; without either, or with another space's, nothing.
func TestConsoleMe(t *testing.T) {
	const meSpace = `
space: {id: me}
participants:
  you:
    tokens: [you-token]
    capabilities: [{kind: "*"}]
    default_to: {chat: [helper]}
  other:
    tokens: [other-token]
    capabilities: [{kind: chat}]
defaults:
  routing:
    default_to: {chat: [everyone-bot], "mcp/proposal": [you]}
`
	g := testutil.StartGateway(t, meSpace, gateway.Options{Audit: gateway.AuditOptions{Off: true}})
	st, m := consoleCall(t, http.MethodGet, g.URL+"/console/me", "you-token", "", nil)
	dt, _ := m["default_to"].(map[string]any)
	if st != http.StatusOK || m["participant"] != "you" || fmt.Sprint(dt["chat"]) != "[helper]" || fmt.Sprint(dt["mcp/proposal"]) != "[you]" {
		t.Errorf("you: %d %v", st, m)
	}
	_, sess := exchange(t, g.URL, link(t, g.URL, "other-token", ""))
	st, m = consoleCall(t, http.MethodGet, g.URL+"/console/me", sess["session"].(string), "", nil)
	dt, _ = m["default_to"].(map[string]any)
	if st != http.StatusOK || m["participant"] != "other" || fmt.Sprint(dt["chat"]) != "[everyone-bot]" {
		t.Errorf("other: %d %v", st, m)
	}
	for _, cred := range []string{"", "nope", "mcs_forged"} {
		if st, _ := consoleCall(t, http.MethodGet, g.URL+"/console/me", cred, "", nil); st != http.StatusUnauthorized {
			t.Errorf("credential %q: %d", cred, st)
		}
	}
	if st, _ := consoleCall(t, http.MethodGet, g.URL+"/console/me?space=elsewhere", "you-token", "", nil); st != http.StatusUnauthorized {
		t.Errorf("another space: %d", st)
	}
}
