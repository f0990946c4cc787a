package oauthclient_test

import (
	"context"
	"errors"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mew-protocol/mew/internal/mcptest"
	"github.com/mew-protocol/mew/internal/oauthclient"
	"github.com/mew-protocol/mew/internal/oauthtest"
	"github.com/mew-protocol/mew/internal/testutil"
)

// protectedMCP starts an authorisation server and an MCP server behind it.
func protectedMCP(t *testing.T, opts oauthtest.Options) (*oauthtest.Server, string) {
	t.Helper()
	as := oauthtest.NewServer(t, opts)
	srv := mcptest.New(nil)
	endpoint := oauthtest.Protect(t, as, mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv }, nil))
	t.Cleanup(func() {
		for ss := range srv.Sessions() {
			_ = ss.Close()
		}
	})
	return as, endpoint
}

func newHandler(t *testing.T, o oauthclient.Options) (*oauthclient.Handler, *testutil.Buffer) {
	t.Helper()
	logs := &testutil.Buffer{}
	if o.Logger == nil {
		o.Logger = slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	}
	if o.Opener == nil {
		o.Opener = oauthtest.FollowRedirects
	}
	h, err := oauthclient.New(o)
	if err != nil {
		t.Fatal(err)
	}
	return h, logs
}

// echo connects to the MCP endpoint through h and calls the echo tool.
func echo(t *testing.T, h *oauthclient.Handler, endpoint string) error {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	c := mcp.NewClient(&mcp.Implementation{Name: "test", Version: "1"}, nil)
	hc := &http.Client{Transport: h.Transport(nil)}
	defer hc.CloseIdleConnections()
	cs, err := c.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: endpoint, HTTPClient: hc, DisableStandaloneSSE: true}, nil)
	if err != nil {
		return err
	}
	defer cs.Close()
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "echo", Arguments: map[string]any{"text": "hi"}})
	if err != nil {
		return err
	}
	if res.IsError || len(res.Content) == 0 || res.Content[0].(*mcp.TextContent).Text != "hi" {
		t.Errorf("echo answered %+v", res)
	}
	return nil
}

// noSecrets fails when a token the server issued is in text.
func noSecrets(t *testing.T, as *oauthtest.Server, where, text string) {
	t.Helper()
	for _, tok := range as.Tokens() {
		if strings.Contains(text, tok) {
			t.Errorf("a token is in the %s:\n%s", where, text)
		}
	}
}

// A first call is refused with a 401; the handler discovers the servers
// from it, registers, signs in with PKCE through the opener, and the call
// is sent again. The token file is private and a restart uses it.
func TestSignInFromChallenge(t *testing.T) {
	as, endpoint := protectedMCP(t, oauthtest.Options{Scopes: []string{"mcp:tools"}})
	file := filepath.Join(t.TempDir(), ".mew", "oauth", "files.json")
	var opened []string
	h, logs := newHandler(t, oauthclient.Options{Resource: endpoint, TokenFile: file, Opener: func(ctx context.Context, u string) error {
		opened = append(opened, u)
		return oauthtest.FollowRedirects(ctx, u)
	}})
	if err := echo(t, h, endpoint); err != nil {
		t.Fatal(err)
	}
	c := as.Counts()
	if c.Registrations != 1 || c.Authorizations != 1 || c.Codes != 1 {
		t.Errorf("counts %+v, want one registration, authorisation and code", c)
	}
	if len(opened) != 1 {
		t.Fatalf("opened %d URLs", len(opened))
	}
	q, _ := url.Parse(opened[0])
	for k, want := range map[string]string{"code_challenge_method": "S256", "resource": endpoint, "scope": "mcp:tools", "response_type": "code"} {
		if got := q.Query().Get(k); got != want {
			t.Errorf("authorisation URL %s = %q, want %q", k, got, want)
		}
	}
	if ru := q.Query().Get("redirect_uri"); !strings.HasPrefix(ru, "http://127.0.0.1:") {
		t.Errorf("redirect_uri %q is not on the loopback", ru)
	}
	info, err := os.Stat(file)
	if err != nil {
		t.Fatal(err)
	}
	if info.Mode().Perm() != 0o600 {
		t.Errorf("token file mode %v, want 0600", info.Mode().Perm())
	}
	noSecrets(t, as, "log", logs.String())

	// A restart: the token file is enough.
	h2, logs2 := newHandler(t, oauthclient.Options{Resource: endpoint, TokenFile: file, Opener: func(context.Context, string) error {
		t.Error("the opener was called after a restart")
		return errors.New("no")
	}})
	if err := echo(t, h2, endpoint); err != nil {
		t.Fatal(err)
	}
	if c2 := as.Counts(); c2 != c {
		t.Errorf("after a restart: counts %+v, want %+v", c2, c)
	}
	noSecrets(t, as, "log", logs2.String())
}

// An access token that expires is refreshed, before it is sent (by its
// expiry) and after the resource refused it (revoked early); a restart
// refreshes with the stored client.
func TestRefresh(t *testing.T) {
	as, endpoint := protectedMCP(t, oauthtest.Options{TokenLife: 2 * time.Second})
	file := filepath.Join(t.TempDir(), "oauth.json")
	h, logs := newHandler(t, oauthclient.Options{Resource: endpoint, TokenFile: file})
	if err := echo(t, h, endpoint); err != nil {
		t.Fatal(err)
	}
	time.Sleep(2 * time.Second)
	if err := echo(t, h, endpoint); err != nil {
		t.Fatal(err)
	}
	// At least one refresh: a slow machine may see the token expire twice.
	c := as.Counts()
	if c.Refreshes < 1 || c.Authorizations != 1 {
		t.Errorf("after expiry: counts %+v, want a refresh and no second sign-in", c)
	}
	as.ExpireAll()
	if err := echo(t, h, endpoint); err != nil {
		t.Fatal(err)
	}
	c2 := as.Counts()
	if c2.Refreshes <= c.Refreshes || c2.Authorizations != 1 {
		t.Errorf("after a refusal: counts %+v, want another refresh", c2)
	}
	as.ExpireAll()
	h2, _ := newHandler(t, oauthclient.Options{Resource: endpoint, TokenFile: file})
	if err := echo(t, h2, endpoint); err != nil {
		t.Fatal(err)
	}
	if c3 := as.Counts(); c3.Refreshes <= c2.Refreshes || c3.Authorizations != 1 || c3.Registrations != 1 {
		t.Errorf("after a restart: counts %+v", c3)
	}
	noSecrets(t, as, "log", logs.String())
}

// The client credentials grant: no person, no registration.
func TestClientCredentials(t *testing.T) {
	as, endpoint := protectedMCP(t, oauthtest.Options{ClientID: "svc", ClientSecret: "s3cret"})
	h, logs := newHandler(t, oauthclient.Options{Resource: endpoint, Grant: oauthclient.GrantClientCredentials, ClientID: "svc", ClientSecret: "s3cret",
		Opener: func(context.Context, string) error { t.Error("opener called"); return nil }})
	if err := echo(t, h, endpoint); err != nil {
		t.Fatal(err)
	}
	if c := as.Counts(); c.ClientCredentials != 1 || c.Authorizations != 0 || c.Registrations != 0 {
		t.Errorf("counts %+v", c)
	}
	as.ExpireAll()
	if err := echo(t, h, endpoint); err != nil {
		t.Fatal(err)
	}
	if c := as.Counts(); c.ClientCredentials != 2 {
		t.Errorf("after a refusal: counts %+v, want a second token", c)
	}
	if strings.Contains(logs.String(), "s3cret") {
		t.Error("the client secret is in the log")
	}
	// A wrong secret: refused, and the secret is not in the error.
	h2, _ := newHandler(t, oauthclient.Options{Resource: endpoint, Grant: oauthclient.GrantClientCredentials, ClientID: "svc", ClientSecret: "wrong-secret"})
	err := echo(t, h2, endpoint)
	if !errors.Is(err, oauthclient.ErrTokenEndpoint) || strings.Contains(err.Error(), "wrong-secret") {
		t.Errorf("a wrong secret: %v", err)
	}
}

// A pre-registered public client with a fixed redirect port.
func TestPreregisteredClient(t *testing.T) {
	as, endpoint := protectedMCP(t, oauthtest.Options{ClientID: "desk", NoRegistration: true})
	h, _ := newHandler(t, oauthclient.Options{Resource: endpoint, ClientID: "desk"})
	if err := echo(t, h, endpoint); err != nil {
		t.Fatal(err)
	}
	if c := as.Counts(); c.Registrations != 0 || c.Codes != 1 {
		t.Errorf("counts %+v", c)
	}
	// Without a client id and without registration there is no way in.
	h2, _ := newHandler(t, oauthclient.Options{Resource: endpoint})
	if err := echo(t, h2, endpoint); !errors.Is(err, oauthclient.ErrDiscovery) || !strings.Contains(err.Error(), "client id") {
		t.Errorf("no registration: %v", err)
	}
}

// MEW_OAUTH_OPENER names a command given the URL; curl following the
// redirects completes the sign-in.
func TestEnvOpener(t *testing.T) {
	if _, err := exec.LookPath("curl"); err != nil {
		t.Skip("no curl")
	}
	_, endpoint := protectedMCP(t, oauthtest.Options{})
	var stderr testutil.Buffer
	opener := oauthclient.EnvOpener(func(k string) string {
		if k == oauthclient.OpenerEnv {
			return "curl -s -f -L -o /dev/null"
		}
		return ""
	}, &stderr)
	h, _ := newHandler(t, oauthclient.Options{Resource: endpoint, Opener: opener})
	if err := echo(t, h, endpoint); err != nil {
		t.Fatalf("%v (%s)", err, stderr.String())
	}
	// Unset, it prints the URL (and tries a desktop opener, quietly).
	var printed testutil.Buffer
	def := oauthclient.EnvOpener(func(string) string { return "" }, &printed)
	_ = def(context.Background(), "http://127.0.0.1:1/authorize?x=1")
	if !strings.Contains(printed.String(), "http://127.0.0.1:1/authorize?x=1") {
		t.Errorf("the default opener printed %q", printed.String())
	}
}

// Redirects that must not yield a token.
func TestHostileRedirects(t *testing.T) {
	cases := map[string]struct {
		authorize func(w http.ResponseWriter, r *http.Request, q url.Values)
		want      error
	}{
		"state mismatch": {func(w http.ResponseWriter, r *http.Request, q url.Values) {
			http.Redirect(w, r, oauthtest.Redirect(q.Get("redirect_uri"), url.Values{"code": {"c"}, "state": {"forged"}}), http.StatusFound)
		}, oauthclient.ErrState},
		"error": {func(w http.ResponseWriter, r *http.Request, q url.Values) {
			http.Redirect(w, r, oauthtest.Redirect(q.Get("redirect_uri"), url.Values{"error": {"access_denied"}, "state": {q.Get("state")}}), http.StatusFound)
		}, oauthclient.ErrDenied},
		"never": {func(w http.ResponseWriter, r *http.Request, q url.Values) {
			w.WriteHeader(http.StatusOK) // a login page nobody submits
		}, oauthclient.ErrTimeout},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			as, endpoint := protectedMCP(t, oauthtest.Options{})
			as.Authorize = tc.authorize
			h, _ := newHandler(t, oauthclient.Options{Resource: endpoint, FlowTimeout: time.Second, Opener: func(ctx context.Context, u string) error {
				_ = oauthtest.FollowRedirects(ctx, u)
				return nil // like a browser: the opener's fate says nothing
			}})
			err := echo(t, h, endpoint)
			if !errors.Is(err, tc.want) {
				t.Errorf("got %v, want %v", err, tc.want)
			}
			if c := as.Counts(); c.Codes != 0 {
				t.Errorf("a code was exchanged: %+v", c)
			}
		})
	}
}

// Authorisation servers and metadata that must be refused.
func TestHostileDiscovery(t *testing.T) {
	t.Run("huge metadata", func(t *testing.T) {
		big := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "application/json")
			_, _ = w.Write([]byte(`{"issuer":"` + strings.Repeat("a", 8<<20) + `"}`))
		}))
		t.Cleanup(big.Close)
		endpoint := protectedBy(t, big.URL, "")
		h, _ := newHandler(t, oauthclient.Options{Resource: endpoint})
		if err := echo(t, h, endpoint); !errors.Is(err, oauthclient.ErrDiscovery) || !strings.Contains(err.Error(), "larger") {
			t.Errorf("got %v", err)
		}
	})
	t.Run("hangs", func(t *testing.T) {
		stop := make(chan struct{})
		slow := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			select {
			case <-stop:
			case <-r.Context().Done():
			}
		}))
		t.Cleanup(func() { close(stop); slow.Close() })
		endpoint := protectedBy(t, slow.URL, "")
		h, _ := newHandler(t, oauthclient.Options{Resource: endpoint, HTTPClient: &http.Client{Timeout: 300 * time.Millisecond}})
		start := time.Now()
		if err := echo(t, h, endpoint); !errors.Is(err, oauthclient.ErrDiscovery) {
			t.Errorf("got %v", err)
		}
		if d := time.Since(start); d > 10*time.Second {
			t.Errorf("took %v", d)
		}
	})
	t.Run("metadata for another origin", func(t *testing.T) {
		as := oauthtest.NewServer(t, oauthtest.Options{})
		endpoint := protectedBy(t, as.URL, "https://elsewhere.example/mcp")
		h, _ := newHandler(t, oauthclient.Options{Resource: endpoint})
		if err := echo(t, h, endpoint); !errors.Is(err, oauthclient.ErrDiscovery) || !strings.Contains(err.Error(), "another origin") {
			t.Errorf("got %v", err)
		}
		if c := as.Counts(); c.Registrations+c.Authorizations != 0 {
			t.Errorf("the server was used: %+v", c)
		}
	})
}

// protectedBy is a resource that refuses every request, whose metadata
// names issuer as its authorisation server and resource (default: its
// own endpoint) as its identifier.
func protectedBy(t *testing.T, issuer, resource string) string {
	mux := http.NewServeMux()
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	endpoint := srv.URL + "/mcp"
	if resource == "" {
		resource = endpoint
	}
	mux.HandleFunc("/mcp", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("WWW-Authenticate", `Bearer resource_metadata="`+srv.URL+`/.well-known/oauth-protected-resource/mcp"`)
		http.Error(w, "sign in", http.StatusUnauthorized)
	})
	mux.HandleFunc("/.well-known/oauth-protected-resource/mcp", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(`{"resource":"` + resource + `","authorization_servers":["` + issuer + `"]}`))
	})
	return endpoint
}

// Options that cannot work are refused before anything is sent.
func TestOptionsChecked(t *testing.T) {
	for name, o := range map[string]oauthclient.Options{
		"no resource":               {},
		"plain http elsewhere":      {Resource: "http://example.com/mcp"},
		"secret without id":         {Resource: "http://127.0.0.1:1/mcp", ClientSecret: "x"},
		"client credentials, no id": {Resource: "http://127.0.0.1:1/mcp", Grant: oauthclient.GrantClientCredentials},
		"control character":         {Resource: "http://127.0.0.1:1/mcp", ClientID: "a\nb"},
		"metadata URL not https":    {Resource: "http://127.0.0.1:1/mcp", ClientMetadataURL: "http://example.com/client.json"},
		"unknown grant":             {Resource: "http://127.0.0.1:1/mcp", Grant: "password"},
	} {
		if _, err := oauthclient.New(o); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
}

// The token goes only to the resource's origin, and a token file others
// may read is made private before it is used.
func TestTokenStaysHome(t *testing.T) {
	_, endpoint := protectedMCP(t, oauthtest.Options{})
	file := filepath.Join(t.TempDir(), "oauth.json")
	h, _ := newHandler(t, oauthclient.Options{Resource: endpoint, TokenFile: file})
	if err := echo(t, h, endpoint); err != nil {
		t.Fatal(err)
	}
	got := make(chan string, 1)
	elsewhere := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		got <- r.Header.Get("Authorization")
	}))
	t.Cleanup(elsewhere.Close)
	resp, err := (&http.Client{Transport: h.Transport(nil)}).Get(elsewhere.URL)
	if err != nil {
		t.Fatal(err)
	}
	_ = resp.Body.Close()
	if a := <-got; a != "" {
		t.Errorf("another origin got Authorization %q", a)
	}

	if err := os.Chmod(file, 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := oauthclient.New(oauthclient.Options{Resource: endpoint, TokenFile: file}); err != nil {
		t.Fatal(err)
	}
	if info, err := os.Stat(file); err != nil || info.Mode().Perm() != 0o600 {
		t.Errorf("token file: %v, %v", info.Mode(), err)
	}
}
