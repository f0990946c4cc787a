package bridge_test

import (
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mew-protocol/mew/bridge"
	"github.com/mew-protocol/mew/internal/mcptest"
	"github.com/mew-protocol/mew/internal/oauthtest"
	"github.com/mew-protocol/mew/participant"
	"github.com/mew-protocol/mew/protocol"
)

// An OAuth-protected MCP server joins a space: the bridge signs in (the
// opener follows the redirect as a person's browser would), a
// participant's tool call succeeds, the token is kept 0600 and never
// logged, and a second bridge uses the kept token without signing in.
func TestBridgeOAuth(t *testing.T) {
	as := oauthtest.NewServer(t, oauthtest.Options{})
	srv := mcptest.New(nil)
	endpoint := oauthtest.Protect(t, as, mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv }, nil))
	t.Cleanup(func() {
		for ss := range srv.Sessions() {
			_ = ss.Close()
		}
	})
	file := filepath.Join(t.TempDir(), ".mew", "oauth", "files.json")
	g := startSpace(t, "")
	opts := bridge.Options{Server: bridge.Server{URL: endpoint, OAuth: &bridge.OAuth{TokenFile: file, Opener: oauthtest.FollowRedirects}},
		RequestTimeout: 10 * time.Second, MaxRestarts: 1, RestartDelay: 10 * time.Millisecond}
	b := startBridge(t, g, opts)
	human := join(t, g, "human", participant.Options{})
	presence := watch(human, protocol.KindSystemPresence)
	if r := callTool(t, human, "echo", map[string]any{"text": "signed in"}); r.text() != "signed in" {
		t.Errorf("echo: %+v", r)
	}
	if c := as.Counts(); c.Registrations != 1 || c.Codes != 1 {
		t.Errorf("counts %+v", c)
	}
	if info, err := os.Stat(file); err != nil || info.Mode().Perm() != 0o600 {
		t.Errorf("token file: %v, %v", info, err)
	}
	if err := b.stop(); err != nil {
		t.Fatal(err)
	}
	for _, tok := range as.Tokens() {
		if strings.Contains(b.logs.String(), tok) {
			t.Errorf("a token is in the bridge's log:\n%s", b.logs.String())
		}
	}

	// The first bridge's leave, seen before the second joins: seen after,
	// it would fail the call to the second as a call to one who left.
	waitFor(t, "the first bridge's leave", func() bool {
		return presence.Find(func(env *protocol.Envelope) bool {
			var p protocol.Presence
			return env.DecodePayload(&p) == nil && p.Event == protocol.PresenceLeave && p.Participant.ID == "files"
		}) != nil
	})

	// A restart of the bridge: the kept token, no second sign-in.
	opts.Server.OAuth.Opener = nil // MEW_OAUTH_OPENER is not set: it would print
	b2 := startBridge(t, g, opts)
	if r := callTool(t, human, "echo", map[string]any{"text": "again"}); r.text() != "again" {
		t.Errorf("echo: %+v", r)
	}
	if c := as.Counts(); c.Authorizations != 1 {
		t.Errorf("after a restart: counts %+v", c)
	}
	_ = b2
}

// Options that cannot work are refused by New.
func TestBridgeAuthOptions(t *testing.T) {
	for name, s := range map[string]bridge.Server{
		"oauth on a command":                  {Command: "true", OAuth: &bridge.OAuth{}},
		"header on a command":                 {Command: "true", Headers: http.Header{"X-Key": {"k"}}},
		"oauth and a bearer":                  {URL: "http://127.0.0.1:1/mcp", OAuth: &bridge.OAuth{}, Headers: http.Header{"Authorization": {"Bearer x"}}},
		"control character":                   {URL: "http://127.0.0.1:1/mcp", Headers: http.Header{"X-Key": {"a\nb"}}},
		"client credentials without a secret": {URL: "http://127.0.0.1:1/mcp", OAuth: &bridge.OAuth{ClientCredentials: true, ClientID: "x"}},
	} {
		if _, err := bridge.New(bridge.Options{Server: s}); err == nil {
			t.Errorf("%s: accepted", name)
		} else if strings.Contains(err.Error(), "Bearer x") || strings.Contains(err.Error(), "a\nb") {
			t.Errorf("%s: the error shows the secret: %v", name, err)
		}
	}
}
