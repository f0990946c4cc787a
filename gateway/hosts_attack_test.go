package gateway_test

import (
	"bufio"
	"context"
	"io"
	"net"
	"net/http"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/coder/websocket"

	"github.com/mew-protocol/mew/gateway"
	"github.com/mew-protocol/mew/internal/testutil"
	"github.com/mew-protocol/mew/space"
)

// rawRequest sends one HTTP request written by hand to addr (Go's client
// will not send a malformed Host) and returns the status code and body.
func rawRequest(t *testing.T, addr, req string) (int, string) {
	t.Helper()
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(5 * time.Second))
	if _, err := io.WriteString(c, req); err != nil {
		t.Fatal(err)
	}
	resp, err := http.ReadResponse(bufio.NewReader(c), nil)
	if err != nil {
		t.Fatalf("%q: %v", req, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	return resp.StatusCode, string(b)
}

// withHost sends method path to the gateway at base with the Host header
// host and returns the status and body.
func withHost(t *testing.T, base, method, path, host, token, body string) (int, string) {
	t.Helper()
	req, err := http.NewRequest(method, base+path, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Host = host
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// misdirected checks a 421 answer that serves nothing.
func misdirected(t *testing.T, what string, code int, body string) {
	t.Helper()
	if code != http.StatusMisdirectedRequest || !strings.Contains(body, `"error":"misdirected_request"`) {
		t.Errorf("%s: %d %s, want 421 misdirected_request", what, code, body)
	}
	for _, leak := range []string{"participants", "capabilities", "alice", "<html", "mew_gateway", `"status"`} {
		if strings.Contains(body, leak) {
			t.Errorf("%s: the answer holds %q: %s", what, leak, body)
		}
	}
}

// metric returns the value of a sample of the gateway's /metrics.
func metric(t *testing.T, base, sample string) float64 {
	t.Helper()
	_, body := withHost(t, base, http.MethodGet, "/metrics", strings.TrimPrefix(base, "http://"), "", "")
	for line := range strings.Lines(body) {
		if v, ok := strings.CutPrefix(strings.TrimSpace(line), sample+" "); ok {
			f, err := strconv.ParseFloat(v, 64)
			if err != nil {
				t.Fatal(err)
			}
			return f
		}
	}
	return 0
}

// TestAttackDNSRebinding: a page of another site that rebinds its name to
// the gateway's loopback address sends its own name as Host; every route
// answers it 421 and serves nothing: the participant list, /health,
// /metrics, the console, a WebSocket upgrade with a valid token, and an
// injected post, which no participant receives. The refusals are counted.
func TestAttackDNSRebinding(t *testing.T) {
	g := start(t, gateway.Options{})
	bob, _ := testutil.Join(t, g.WSURL, "bob-token")
	const evil = "evil.example"
	for _, path := range []string{"/participants", "/health", "/metrics", "/console/", "/participants/alice/messages", "/participants/alice/grants", "/participants/alice/lineage/x"} {
		code, body := withHost(t, g.URL, http.MethodGet, path, evil+":"+strings.Split(g.Addr, ":")[1], "alice-token", "")
		misdirected(t, "GET "+path, code, body)
	}
	code, body := withHost(t, g.URL, http.MethodPost, "/participants/alice/messages", evil, "alice-token", `{"kind":"chat","payload":{"text":"injected"}}`)
	misdirected(t, "POST a chat", code, body)
	for _, path := range []string{"/ws", "/"} {
		code, body = rawRequest(t, g.Addr, "GET "+path+" HTTP/1.1\r\nHost: "+evil+"\r\nOrigin: http://"+evil+"\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"+
			"Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\nAuthorization: Bearer alice-token\r\n\r\n")
		misdirected(t, "WebSocket upgrade at "+path, code, body)
	}
	// The same through a WebSocket client.
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	c, resp, err := websocket.Dial(ctx, g.WSURL, &websocket.DialOptions{Host: evil,
		HTTPHeader: http.Header{"Authorization": {"Bearer alice-token"}, "Origin": {"http://" + evil}}})
	if err == nil {
		c.CloseNow()
		t.Error("a WebSocket with Host evil.example was accepted")
	} else if resp == nil || resp.StatusCode != http.StatusMisdirectedRequest {
		t.Errorf("a WebSocket with Host evil.example: %v %v", resp, err)
	}
	// Nothing reached bob: no presence of alice, no injected chat; a chat
	// through the right name does.
	if st, _ := post(t, g, "alice", "alice-token", `{"kind":"chat","payload":{"text":"through 127.0.0.1"}}`); st != http.StatusOK {
		t.Fatalf("a post through 127.0.0.1: %d", st)
	}
	for {
		m := bob.Next()
		if m.Kind() == "chat" && m.Payload()["text"] == "injected" {
			t.Fatalf("bob received the injected chat: %s", m.Raw)
		}
		if m.Kind() == "system/presence" && strings.Contains(string(m.Raw), `"alice"`) && strings.Contains(string(m.Raw), "join") {
			t.Fatalf("alice joined over the rebound name: %s", m.Raw)
		}
		if m.Kind() == "chat" && m.Payload()["text"] == "through 127.0.0.1" {
			break
		}
	}
	if n := metric(t, g.URL, `mew_gateway_refusals_total{code="misdirected_request"}`); n < 11 {
		t.Errorf("refusals counted: %v, want at least 11", n)
	}
}

// TestHostAllowList: the loopback names and addresses are served in any
// port and case, and configured names and *. patterns; a name merely
// ending like a configured one, or one configured as a pattern's parent,
// is not.
func TestHostAllowList(t *testing.T) {
	g := start(t, gateway.Options{AllowedHosts: []string{"gw.example.com", "*.corp.example", "192.0.2.10", "[2001:db8::1]"}, Audit: gateway.AuditOptions{Off: true}})
	port := strings.Split(g.Addr, ":")[1]
	for _, tc := range []struct {
		host string
		ok   bool
	}{
		{g.Addr, true},
		{"127.0.0.1", true},
		{"localhost:" + port, true},
		{"LocalHost:1", true},
		{"localhost.:" + port, true},
		{"[::1]:" + port, true},
		{"[::1]", true},
		{"127.8.9.10:80", true},
		{"[::ffff:127.0.0.1]:80", true},
		{"gw.example.com", true},
		{"GW.Example.COM:443", true},
		{"a.corp.example", true},
		{"a.b.corp.example:8080", true},
		{"192.0.2.10:8080", true},
		{"[2001:db8::1]:8080", true},
		{"evil.example", false},
		{"corp.example", false},
		{"evilcorp.example", false},
		{"gw.example.com.evil.example", false},
		{"example.com", false},
		{"localhost.evil.example", false},
		{"192.0.2.11", false},
		{"[2001:db8::2]", false},
		{"10.0.0.1:" + port, false},
		{"2130706433", false}, // 127.0.0.1 as a number is a name, not an address
	} {
		code, body := withHost(t, g.URL, http.MethodGet, "/participants", tc.host, "", "")
		if tc.ok && (code != http.StatusOK || !strings.Contains(body, `"participants"`)) {
			t.Errorf("Host %q: %d %s, want it served", tc.host, code, body)
		}
		if !tc.ok {
			misdirected(t, "Host "+tc.host, code, body)
		}
	}
}

// TestHostMalformed: Host headers that are not a host name, an address or
// either with a port (empty, with user info, huge, broken IPv6 forms, with
// a zone, with spaces) are refused before any route.
func TestHostMalformed(t *testing.T) {
	g := start(t, gateway.Options{AllowedHosts: []string{"gw.example.com"}, Audit: gateway.AuditOptions{Off: true}})
	req := func(proto, host string) string {
		h := ""
		if host != "-" {
			h = "Host: " + host + "\r\n"
		}
		return "GET /participants " + proto + "\r\n" + h + "\r\n"
	}
	for _, tc := range []struct{ name, req string }{
		{"HTTP/1.0 without Host", req("HTTP/1.0", "-")},
		{"HTTP/1.1 without Host", req("HTTP/1.1", "-")},
		{"empty", req("HTTP/1.1", "")},
		{"user info", req("HTTP/1.1", "user@127.0.0.1")},
		{"user info naming a served host", req("HTTP/1.1", "evil.example@gw.example.com")},
		{"user:pass", req("HTTP/1.1", "user:pass@localhost")},
		{"huge", req("HTTP/1.1", strings.Repeat("a", 12<<10)+".gw.example.com")},
		{"long label", req("HTTP/1.1", strings.Repeat("a", 64)+".example.com")},
		{"bare IPv6", req("HTTP/1.1", "::1")},
		{"unclosed bracket", req("HTTP/1.1", "[::1")},
		{"junk after bracket", req("HTTP/1.1", "[::1]x")},
		{"IPv4 in brackets", req("HTTP/1.1", "[127.0.0.1]")},
		{"zone", req("HTTP/1.1", "[fe80::1%25lo]:80")},
		{"port too large", req("HTTP/1.1", "127.0.0.1:99999")},
		{"empty port", req("HTTP/1.1", "127.0.0.1:")},
		{"two ports", req("HTTP/1.1", "127.0.0.1:80:80")},
		{"port not a number", req("HTTP/1.1", "localhost:http")},
		{"space", req("HTTP/1.1", "localhost evil.example")},
		{"two Host headers", "GET /participants HTTP/1.1\r\nHost: localhost\r\nHost: evil.example\r\n\r\n"},
		{"percent", req("HTTP/1.1", "local%68ost")},
		{"absolute URI naming another host", "GET http://evil.example/participants HTTP/1.1\r\nHost: localhost\r\n\r\n"},
	} {
		code, body := rawRequest(t, g.Addr, tc.req)
		// Go's server refuses some of these itself (400); the rest are the
		// guard's (421). Either way nothing is served.
		if code != http.StatusMisdirectedRequest && code != http.StatusBadRequest {
			t.Errorf("%s: %d %s, want 421 or 400", tc.name, code, body)
		}
		if strings.Contains(body, "participants") || strings.Contains(body, "capabilities") {
			t.Errorf("%s: served: %s", tc.name, body)
		}
	}
	// And the well-formed ones are served.
	for _, host := range []string{"gw.example.com", "gw.example.com:8080", "127.0.0.1:1"} {
		if code, body := rawRequest(t, g.Addr, req("HTTP/1.1", host)); code != http.StatusOK {
			t.Errorf("Host %q: %d %s", host, code, body)
		}
	}
}

// TestHostListenAddress: a gateway that listens on every address (0.0.0.0)
// serves any IP address as Host, which no rebound name can produce, and
// still refuses names it was not given.
func TestHostListenAddress(t *testing.T) {
	_, port, err := net.SplitHostPort(serveSpacesOn(t, "0.0.0.0:0", gateway.Options{Audit: gateway.AuditOptions{Off: true}}, testSpace))
	if err != nil {
		t.Fatal(err)
	}
	base := "http://127.0.0.1:" + port
	for _, host := range []string{"192.0.2.7:8080", "10.1.2.3", "[2001:db8::5]:80", "localhost"} {
		if code, body := withHost(t, base, http.MethodGet, "/health", host, "", ""); code != http.StatusOK {
			t.Errorf("Host %q on a gateway listening on 0.0.0.0: %d %s", host, code, body)
		}
	}
	code, body := withHost(t, base, http.MethodGet, "/participants", "evil.example", "", "")
	misdirected(t, "a name on a gateway listening on 0.0.0.0", code, body)
}

// TestAllowedHostsBad: entries of AllowedHosts that name no host fail New.
func TestAllowedHostsBad(t *testing.T) {
	cfg, err := space.Parse([]byte(testSpace), filepath.Join(t.TempDir(), "space.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	for _, h := range []string{"", "gw.example.com:8080", "http://gw.example.com", "user@gw.example.com", "*.", "*example.com", "a..b", "bad name", "gw/x", "ünïcode.example", "[fe80::1%lo]", strings.Repeat("a", 254)} {
		_, err := gateway.New(gateway.Options{Spaces: []*space.Config{cfg}, AllowedHosts: []string{h}, Audit: gateway.AuditOptions{Off: true}})
		if err == nil || !strings.Contains(err.Error(), "allowed host") {
			t.Errorf("AllowedHosts %q: %v, want an error", h, err)
		}
	}
}
