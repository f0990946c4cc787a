package cli

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mew-protocol/mew/gateway"
	"github.com/mew-protocol/mew/internal/mcptest"
	"github.com/mew-protocol/mew/internal/oauthtest"
	"github.com/mew-protocol/mew/internal/testutil"
)

// authSpace is a space whose bridge reaches a URL server; %s is the
// mcp_server block's content.
var authSpace = `
space: {id: authbridge}
participants:
  files:
    type: mcp-bridge
    tokens: [files-token]
    mcp_server:
%s
` + filesBridgeCaps + testutil.Member("human", "*")

// testMCPHandler is the Go test MCP server over streamable HTTP.
func testMCPHandler(t *testing.T) http.Handler {
	srv := mcptest.New(nil)
	t.Cleanup(func() {
		for ss := range srv.Sessions() {
			_ = ss.Close()
		}
	})
	return mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv }, nil)
}

// A space file's mcp_server with url and auth.oauth: `mew bridge start`
// signs in through MEW_OAUTH_OPENER (curl following the redirects), keeps
// the tokens 0600 under the space's .mew/oauth, and logs none of them.
func TestBridgeStartOAuthFromSpaceConfig(t *testing.T) {
	if _, err := exec.LookPath("curl"); err != nil {
		t.Skip("no curl")
	}
	as := oauthtest.NewServer(t, oauthtest.Options{})
	endpoint := oauthtest.Protect(t, as, testMCPHandler(t))
	g := testutil.StartGateway(t, fmt.Sprintf(authSpace, "      url: "+endpoint+"\n      auth: {oauth: {scopes: [mcp]}}"), gateway.Options{})
	t.Setenv("MEW_OAUTH_OPENER", "curl -s -f -L -o /dev/null")
	logs, stop := startBridgeCmd(t, "bridge", "start", "-g", "ws://"+g.Addr, "-p", "files", "--space-config", g.Config.Path)
	human := humanOf(t, g)
	if got, err := toolText(t, human, "echo", map[string]any{"text": "signed in"}); err != nil || got != "signed in" {
		t.Fatalf("echo: %q, %v\n%s", got, err, logs)
	}
	if err := stop(); err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(g.Config.MewDir, "oauth", "files.json")
	if info, err := os.Stat(file); err != nil || info.Mode().Perm() != 0o600 {
		t.Errorf("token file %s: %v, %v", file, info, err)
	}
	out := logs.String()
	if !strings.Contains(out, "oauth authorization_code") || !strings.Contains(out, "files.json") {
		t.Errorf("the log does not say how the bridge signs in:\n%s", out)
	}
	for _, tok := range as.Tokens() {
		if strings.Contains(out, tok) {
			t.Errorf("a token is in the log:\n%s", out)
		}
	}
}

// --mcp-bearer-env sends the token in a variable; the log names the
// variable, never the token.
func TestBridgeStartBearerEnv(t *testing.T) {
	const secret = "bearer-value-never-logged"
	mcpH := testMCPHandler(t)
	hs := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Authorization") != "Bearer "+secret || r.Header.Get("X-Tenant") != "blue" {
			http.Error(w, "no", http.StatusUnauthorized)
			return
		}
		mcpH.ServeHTTP(w, r)
	}))
	t.Cleanup(hs.Close)
	g := testutil.StartGateway(t, fmt.Sprintf(authSpace, "      command: unused"), gateway.Options{})
	t.Setenv("MEW_TEST_BEARER", secret)
	t.Setenv("MEW_TEST_TENANT", "blue")
	logs, stop := startBridgeCmd(t, "bridge", "start", "-g", "ws://"+g.Addr, "-s", "authbridge", "-p", "files", "-t", "files-token",
		"--mcp-url", hs.URL, "--mcp-bearer-env", "MEW_TEST_BEARER", "--mcp-header-env", "X-Tenant=MEW_TEST_TENANT", "-l", "debug")
	human := humanOf(t, g)
	if got, err := toolText(t, human, "echo", map[string]any{"text": "with a bearer"}); err != nil || got != "with a bearer" {
		t.Fatalf("echo: %q, %v\n%s", got, err, logs)
	}
	if err := stop(); err != nil {
		t.Fatal(err)
	}
	if out := logs.String(); strings.Contains(out, secret) || !strings.Contains(out, "bearer from $MEW_TEST_BEARER") {
		t.Errorf("the log:\n%s", out)
	}
}

func TestBridgeStartAuthBadInput(t *testing.T) {
	g := testutil.StartGateway(t, fmt.Sprintf(authSpace, "      url: http://127.0.0.1:1/mcp\n      auth: {bearer_env: MEW_TEST_UNSET_VARIABLE}"), gateway.Options{})
	base := []string{"bridge", "start", "-g", "ws://127.0.0.1:1", "-s", "s", "-p", "files", "-t", "tok"}
	with := func(extra ...string) []string { return append(slices.Clone(base), extra...) }
	for _, tc := range []struct {
		args []string
		want string
	}{
		{with("-m", "srv", "--oauth"), "URL server"},
		{with("--mcp-url", "http://127.0.0.1:1/mcp", "--mcp-bearer-env", "Bearer abc"), "not the name of an environment variable"},
		{with("--mcp-url", "http://127.0.0.1:1/mcp", "--mcp-bearer-env", "MEW_TEST_UNSET_VARIABLE"), "MEW_TEST_UNSET_VARIABLE is not set"},
		{with("--mcp-url", "http://127.0.0.1:1/mcp", "--mcp-header-env", "X Bad=V"), "HEADER=VARIABLE"},
		{with("--mcp-url", "http://127.0.0.1:1/mcp", "--oauth-grant", "password"), "--oauth-grant"},
		{with("--mcp-url", "http://127.0.0.1:1/mcp", "--oauth-grant", "client_credentials"), "client id"},
		{with("--mcp-url", "http://127.0.0.1:1/mcp", "--oauth", "--mcp-bearer-env", "X"), "give one"},
		{[]string{"bridge", "start", "-g", "ws://127.0.0.1:1", "-p", "files", "--space-config", g.Config.Path}, "MEW_TEST_UNSET_VARIABLE is not set"},
	} {
		_, _, err := run(t, Options{Getenv: func(string) string { return "" }}, tc.args...)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("mew %s: err = %v, want it to mention %q", strings.Join(tc.args, " "), err, tc.want)
		}
	}
}
