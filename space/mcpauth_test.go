package space

import (
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

func TestMCPServerURLAndAuth(t *testing.T) {
	dir := t.TempDir()
	cfg, err := Parse([]byte(`
space: {id: demo}
participants:
  remote:
    type: mcp-bridge
    auto_start: true
    mcp_server:
      url: https://mcp.example.com/mcp
      auth:
        headers_env: {X-Tenant: TENANT}
        oauth: {client_id: mew-desk, client_secret_env: DESK_SECRET, scopes: [files.read], redirect_port: 8765}
  static:
    type: mcp-bridge
    mcp_server: {url: "http://127.0.0.1:9000/mcp", auth: {bearer_env: MCP_TOKEN}}
  signin:
    type: mcp-bridge
    mcp_server: {url: "https://mcp.example.com/mcp", auth: {oauth: }}
`), filepath.Join(dir, "space.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	r := cfg.Participant("remote").MCPServer
	want := &MCPAuth{HeadersEnv: map[string]string{"X-Tenant": "TENANT"}, OAuth: &MCPOAuth{Grant: GrantAuthorizationCode, ClientID: "mew-desk",
		ClientSecretEnv: "DESK_SECRET", Scopes: []string{"files.read"}, RedirectPort: 8765}}
	if r.URL != "https://mcp.example.com/mcp" || !reflect.DeepEqual(r.Auth, want) {
		t.Errorf("remote: %+v %+v", r, r.Auth)
	}
	if a := cfg.Participant("static").MCPServer.Auth; a.BearerEnv != "MCP_TOKEN" || a.OAuth != nil {
		t.Errorf("static: %+v", a)
	}
	if o := cfg.Participant("signin").MCPServer.Auth.OAuth; o == nil || o.Grant != GrantAuthorizationCode {
		t.Errorf("signin: %+v", o)
	}
	cfg.Dir = dir
	l := Launch{Config: cfg, Executable: "/bin/mew", Port: 4242}
	p, ok, err := l.Participant(cfg.Participant("remote"), "tok")
	if err != nil || !ok || strings.Join(p.Args, " ") != "bridge start -g ws://127.0.0.1:4242 -s demo -p remote --space-config "+filepath.Join(dir, "space.yaml") {
		t.Errorf("launch: %v %v %v", p.Args, ok, err)
	}
}

func TestMCPServerAuthRefused(t *testing.T) {
	for name, tc := range map[string]struct{ server, want string }{
		"a token as bearer_env":       {`{url: "https://x/mcp", auth: {bearer_env: "Bearer abc"}}`, "name of an environment variable"},
		"url and command":             {`{url: "https://x/mcp", command: srv}`, "give one"},
		"auth on a command":           {`{command: srv, auth: {bearer_env: T}}`, "auth applies to a url server"},
		"ftp":                         {`{url: "ftp://x/mcp"}`, "http(s) URL"},
		"user in the URL":             {`{url: "https://u:p@x/mcp"}`, "user name or password"},
		"bearer and oauth":            {`{url: "https://x/mcp", auth: {bearer_env: T, oauth: {}}}`, "give one"},
		"authorization header too":    {`{url: "https://x/mcp", auth: {bearer_env: T, headers_env: {authorization: A}}}`, "give one"},
		"bad header":                  {`{url: "https://x/mcp", auth: {headers_env: {"X Y": A}}}`, "header name"},
		"unknown grant":               {`{url: "https://x/mcp", auth: {oauth: {grant: password}}}`, "client_credentials"},
		"client credentials, no id":   {`{url: "https://x/mcp", auth: {oauth: {grant: client_credentials}}}`, "needs client_id"},
		"secret without id":           {`{url: "https://x/mcp", auth: {oauth: {client_secret_env: S}}}`, "needs client_id"},
		"port out of range":           {`{url: "https://x/mcp", auth: {oauth: {redirect_port: 70000}}}`, "port"},
		"metadata URL over http":      {`{url: "https://x/mcp", auth: {oauth: {client_metadata_url: "http://x/c.json"}}}`, "https URL"},
		"a secret in the file itself": {`{url: "https://x/mcp", auth: {oauth: {client_secret: s}}}`, "client_secret"},
	} {
		_, err := Parse([]byte("space: {id: s}\nparticipants:\n  b:\n    type: mcp-bridge\n    mcp_server: "+tc.server+"\n"), "space.yaml")
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v, want it to mention %q", name, err, tc.want)
		}
	}
}
