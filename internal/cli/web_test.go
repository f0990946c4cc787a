package cli

import (
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/mew-protocol/mew/gateway"
	"github.com/mew-protocol/mew/internal/testutil"
)

const webSpace = `
space: {id: web-space, default_participant: human}
participants:
  human: {tokens: [human-token], capabilities: [{kind: "*"}]}
`

// TestSpaceConnectWeb: --web prints a one-time console link for the
// space's human, without a display opens nothing and still succeeds, and
// the link's code opens one session.
func TestSpaceConnectWeb(t *testing.T) {
	g := testutil.StartGateway(t, webSpace, gateway.Options{Audit: gateway.AuditOptions{Off: true}})
	noDisplay := Options{Getenv: func(string) string { return "" }}
	out, errOut, err := run(t, noDisplay, "space", "connect", "--web", "-d", g.Dir, "--gateway", "ws://"+g.Addr)
	if err != nil {
		t.Fatalf("space connect --web: %v\n%s", err, errOut)
	}
	if !strings.Contains(errOut, "no display") {
		t.Errorf("stderr %q: want the reason nothing was opened", errOut)
	}
	i := strings.Index(out, "http://"+g.Addr+"/console/#")
	if i < 0 || strings.Contains(out, "human-token") {
		t.Fatalf("output %q: want the console link, never the token", out)
	}
	u, err := url.Parse(strings.TrimSpace(out[i:]))
	if err != nil {
		t.Fatal(err)
	}
	frag, _ := url.ParseQuery(u.Fragment)
	if frag.Get("space") != "web-space" || frag.Get("code") == "" || u.RawQuery != "" {
		t.Fatalf("link %s: want the code and space in the fragment only", u)
	}
	exchange := func() int {
		req, _ := http.NewRequest(http.MethodPost, "http://"+g.Addr+"/console/session", strings.NewReader(`{"code":"`+frag.Get("code")+`"}`))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("X-Mew-Console", "1")
		resp, _ := testutil.HTTPDo(t, req, nil)
		return resp.StatusCode
	}
	if st := exchange(); st != http.StatusOK {
		t.Fatalf("first exchange: %d", st)
	}
	if st := exchange(); st != http.StatusUnauthorized {
		t.Fatalf("second exchange: %d", st)
	}
}

func TestSpaceConnectWebNoConsole(t *testing.T) {
	g := testutil.StartGateway(t, webSpace, gateway.Options{Audit: gateway.AuditOptions{Off: true}, Console: gateway.ConsoleOptions{Off: true}})
	_, _, err := run(t, Options{Getenv: func(string) string { return "" }}, "space", "connect", "--web", "-d", g.Dir, "--gateway", "ws://"+g.Addr)
	if err == nil || !strings.Contains(err.Error(), "no web console") {
		t.Fatalf("against a gateway without a console: %v", err)
	}
}

func TestHTTPBase(t *testing.T) {
	for in, want := range map[string]string{
		"ws://127.0.0.1:8080":           "http://127.0.0.1:8080",
		"wss://h.example/ws?space=x":    "https://h.example",
		"http://u:p@h.example:1/a#frag": "http://h.example:1",
		"ftp://h.example":               "",
		"ws://":                         "",
		"::not a url":                   "",
	} {
		got, err := httpBase(in)
		if got != want || (want == "") != (err != nil) {
			t.Errorf("httpBase(%q) = %q, %v; want %q", in, got, err, want)
		}
	}
}
