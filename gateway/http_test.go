package gateway_test

import (
	"bytes"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/mew-protocol/mew/gateway"
	"github.com/mew-protocol/mew/internal/testutil"
)

func TestHealthAndParticipants(t *testing.T) {
	g := start(t, gateway.Options{})
	testutil.Join(t, g.WSURL, "alice-token")
	code, h := get(t, g, "/health", "")
	if code != 200 || h["status"] != "ok" || h["spaces"] != 1.0 || h["clients"] != 2.0 || h["uptime"] == nil || h["features"] == nil {
		t.Fatalf("health %d %v", code, h)
	}
	for _, q := range []string{"", "?space=test", "?space=default"} {
		code, p := get(t, g, "/participants"+q, "")
		if code != 200 {
			t.Fatalf("participants%s: %d", q, code)
		}
		conn := map[string]bool{}
		for _, e := range p["participants"].([]any) {
			e := e.(map[string]any)
			conn[e["id"].(string)] = e["connected"].(bool)
		}
		want := map[string]bool{"alice": true, "bob": false, "carol": false, "watcher": true, "lazy": false}
		if fmt.Sprint(conn) != fmt.Sprint(want) {
			t.Fatalf("participants%s = %v", q, conn)
		}
	}
	if code, _ := get(t, g, "/participants?space=nope", ""); code != 404 {
		t.Fatalf("unknown space: %d", code)
	}
	if code, _ := get(t, g, "/nothing-here", ""); code != 404 {
		t.Fatalf("unknown path: %d", code)
	}
}

func TestHTTPInjection(t *testing.T) {
	g := start(t, gateway.Options{Limits: gateway.Limits{MaxMessageSize: 4 << 10, Rate: 50, Burst: 20}})
	alice, _ := testutil.Join(t, g.WSURL, "alice-token")

	code, ok := post(t, g, "bob", "bob-token", `{"kind":"chat","payload":{"text":"over http"}}`)
	if code != 200 || ok["status"] != "accepted" || ok["id"] == "" || ok["timestamp"] == "" {
		t.Fatalf("post: %d %v", code, ok)
	}
	m := alice.Expect("chat")
	if m.From() != "bob" || m.ID() != ok["id"] {
		t.Fatalf("relayed %s for answer %v", m.Raw, ok)
	}

	cases := []struct {
		name, id, token, body string
		status                int
		code                  string
	}{
		{"no token", "bob", "", `{"kind":"chat","payload":{"text":"x"}}`, 401, "unauthorized"},
		{"unknown token", "bob", "nope", `{"kind":"chat","payload":{"text":"x"}}`, 403, "unauthorized"},
		{"someone else's token", "bob", "alice-token", `{"kind":"chat","payload":{"text":"x"}}`, 403, "unauthorized"},
		{"unknown participant", "ghost", "bob-token", `{"kind":"chat","payload":{"text":"x"}}`, 403, "unauthorized"},
		{"not JSON", "bob", "bob-token", `hello`, 400, "invalid_envelope"},
		{"truncated", "bob", "bob-token", `{"kind":"chat"`, 400, "invalid_envelope"},
		{"empty object", "bob", "bob-token", `{}`, 400, "invalid_envelope"},
		{"array", "bob", "bob-token", `[1,2]`, 400, "invalid_envelope"},
		{"spoofed from", "bob", "bob-token", `{"from":"alice","kind":"chat","payload":{"text":"x"}}`, 403, "identity_mismatch"},
		{"reserved", "bob", "bob-token", `{"kind":"system/register","payload":{}}`, 400, "reserved_kind"},
		{"capability", "bob", "bob-token", `{"kind":"mcp/request","payload":{"method":"tools/call"}}`, 403, "capability_violation"},
		{"too large", "bob", "bob-token", `{"kind":"chat","payload":{"text":"` + strings.Repeat("z", 8<<10) + `"}}`, 413, "too_large"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			code, body := post(t, g, c.id, c.token, c.body)
			if code != c.status || body["error"] != c.code || body["message"] == "" {
				t.Fatalf("got %d %v, want %d %s", code, body, c.status, c.code)
			}
		})
	}
	// Rate limit: the burst of 20 is shared by both transports.
	limited := 0
	for range 40 {
		if code, _ := post(t, g, "carol", g.Token(t, "carol"), `{"kind":"chat","payload":{"text":"r"}}`); code == 429 {
			limited++
		}
	}
	if limited == 0 {
		t.Fatal("no 429 after 40 rapid posts with a burst of 20")
	}
	// None of the refused posts reached alice.
	alice.SendText(`{"kind":"chat","payload":{"text":"end"}}`)
	for {
		m := alice.Next()
		if m.Kind() == "chat" && m.Payload()["text"] == "end" {
			break
		}
		if m.Kind() == "chat" && m.Payload()["text"] == "x" {
			t.Fatalf("a refused post was delivered: %s", m.Raw)
		}
	}
}

func TestHTTPRefusalReachesConnectedParticipant(t *testing.T) {
	g := start(t, gateway.Options{})
	// lazy has an output_log: its first post connects it, and its refusals
	// land in that log as well as in the HTTP answer (reference scenario 4).
	code, _ := post(t, g, "lazy", "lazy-token", `{"id":"reg-1","kind":"system/register","payload":{}}`)
	if code != 400 {
		t.Fatalf("status %d", code)
	}
	log := waitFile(t, g.Config.Resolve("logs/lazy.jsonl"), `system/register is reserved for the gateway`)
	first := bytes.SplitN(log, []byte("\n"), 2)[0]
	if !bytes.Contains(first, []byte(`"kind":"system/welcome"`)) || !bytes.Contains(first, []byte(`"to":["lazy"]`)) {
		t.Fatalf("first line of the lazy log is not its welcome: %s", first)
	}
	if !bytes.Contains(log, []byte(`"correlation_id":["reg-1"]`)) {
		t.Fatalf("error not correlated: %s", log)
	}
}

func TestPolling(t *testing.T) {
	g := start(t, gateway.Options{})
	bob, _ := testutil.Join(t, g.WSURL, "bob-token")
	for i := range 5 {
		post(t, g, "alice", "alice-token", fmt.Sprintf(`{"kind":"chat","payload":{"text":"m%d"}}`, i))
	}
	bob.SendText(`{"kind":"mcp/request","to":["alice"],"payload":{"method":"tools/call"}}`) // refused: private error to bob
	bob.Expect("system/error")

	poll := func(id, token, query string) (int, []map[string]any, string) {
		code, msgs, c, _ := pollPage(t, g, id, token, query)
		return code, msgs, c
	}
	code, msgs, cursor := poll("carol", g.Token(t, "carol"), "")
	if code != 200 {
		t.Fatalf("poll: %d", code)
	}
	var texts []string
	for _, m := range msgs {
		if m["kind"] == "system/error" || m["kind"] == "system/welcome" {
			t.Fatalf("carol sees a private envelope: %v", m)
		}
		if m["kind"] == "chat" {
			texts = append(texts, m["payload"].(map[string]any)["text"].(string))
		}
	}
	if strings.Join(texts, ",") != "m0,m1,m2,m3,m4" {
		t.Fatalf("carol polled %v", texts)
	}
	// Bob sees his own error; limit and cursor page through.
	_, bobs, _ := poll("bob", "bob-token", "")
	sawErr := false
	for _, m := range bobs {
		sawErr = sawErr || m["kind"] == "system/error"
	}
	if !sawErr {
		t.Fatal("bob's poll lacks his error")
	}
	_, page, next := poll("carol", g.Token(t, "carol"), "?limit=2")
	_, rest, _ := poll("carol", g.Token(t, "carol"), "?cursor="+next)
	if len(page) != 2 || len(page)+len(rest) != len(msgs) {
		t.Fatalf("pages %d + %d, want %d", len(page), len(rest), len(msgs))
	}
	if _, after, _ := poll("carol", g.Token(t, "carol"), "?cursor="+cursor); len(after) != 0 {
		t.Fatalf("cursor at the end still gives %d", len(after))
	}
	// since: nothing after now.
	since := url.QueryEscape(time.Now().Add(time.Second).UTC().Format(time.RFC3339Nano))
	if _, none, _ := poll("carol", g.Token(t, "carol"), "?since="+since); len(none) != 0 {
		t.Fatalf("since the future: %d", len(none))
	}
	for _, q := range []string{"?since=yesterday", "?limit=-1", "?limit=5000", "?cursor=x"} {
		if code, _, _ := poll("carol", g.Token(t, "carol"), q); code != 400 {
			t.Fatalf("%s: %d", q, code)
		}
	}
	if code, _, _ := poll("carol", "bob-token", ""); code != 403 {
		t.Fatalf("someone else's token: %d", code)
	}
}

func TestMetrics(t *testing.T) {
	g := start(t, gateway.Options{})
	alice, _ := testutil.Join(t, g.WSURL, "alice-token")
	alice.SendText(`{"kind":"chat","payload":{"text":"x"}}`)
	alice.SendText(`{"kind":"system/welcome","payload":{}}`)
	alice.Expect("system/error")
	resp, err := http.Get(g.URL + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	for _, want := range []string{
		`mew_gateway_connections{transport="websocket"} 1`,
		`mew_gateway_connections{transport="virtual"} 1`,
		`mew_gateway_envelopes_received_total{kind="chat"} 1`,
		`mew_gateway_refusals_total{code="reserved_kind"} 1`,
		`mew_gateway_routing_seconds_count 1`,
		`mew_gateway_slow_consumers_total 0`,
	} {
		if !bytes.Contains(b, []byte(want)) {
			t.Errorf("metrics lack %s", want)
		}
	}
}
