package oauthtest

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/oauthex"

	"github.com/mew-protocol/mew/internal/httpserve"
)

// Options configures a Server.
type Options struct {
	// TokenLife is the access tokens' expires_in (default 1 h).
	TokenLife time.Duration
	// Scopes are the server's scopes_supported.
	Scopes []string
	// NoRegistration leaves out the registration endpoint.
	NoRegistration bool
	// ClientID and ClientSecret are a client registered beforehand (the
	// only one allowed the client credentials grant).
	ClientID, ClientSecret string
	// NoRefresh gives no refresh tokens.
	NoRefresh bool
}

// Counts are what the server has done.
type Counts struct {
	Registrations, Authorizations, Codes, Refreshes, ClientCredentials int
}

// Server is the authorisation server.
type Server struct {
	URL  string // the issuer
	opts Options
	srv  *httptest.Server

	// Authorize, when set, answers /authorize instead of the server
	// (hostile cases); it gets the parsed query.
	Authorize func(w http.ResponseWriter, r *http.Request, q url.Values)

	mu      sync.Mutex
	clients map[string]client
	codes   map[string]grant
	access  map[string]grant
	refresh map[string]grant
	counts  Counts
}

type client struct {
	secret    string
	redirects []string
}

type grant struct {
	clientID, redirect, challenge, resource, scope string
	expiry                                         time.Time
}

// NewServer starts a server, closed when the test ends.
func NewServer(t testing.TB, opts Options) *Server {
	if opts.TokenLife == 0 {
		opts.TokenLife = time.Hour
	}
	s := &Server{opts: opts, clients: map[string]client{}, codes: map[string]grant{}, access: map[string]grant{}, refresh: map[string]grant{}}
	if opts.ClientID != "" {
		s.clients[opts.ClientID] = client{secret: opts.ClientSecret}
	}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /.well-known/oauth-authorization-server", s.metadata)
	mux.HandleFunc("POST /register", s.register)
	mux.HandleFunc("GET /authorize", s.authorize)
	mux.HandleFunc("POST /token", s.token)
	s.srv = httptest.NewServer(mux)
	t.Cleanup(s.srv.Close)
	s.URL = s.srv.URL
	return s
}

// Counts returns what the server has done so far.
func (s *Server) Counts() Counts {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.counts
}

// ExpireAll makes every access token issued so far expired.
func (s *Server) ExpireAll() {
	s.mu.Lock()
	defer s.mu.Unlock()
	for k, g := range s.access {
		g.expiry = time.Now().Add(-time.Second)
		s.access[k] = g
	}
}

// Tokens returns every access and refresh token issued, for checks that
// they appear nowhere they should not.
func (s *Server) Tokens() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []string
	for k := range s.access {
		out = append(out, k)
	}
	for k := range s.refresh {
		out = append(out, k)
	}
	return out
}

func (s *Server) metadata(w http.ResponseWriter, _ *http.Request) {
	m := oauthex.AuthServerMeta{
		Issuer: s.URL, AuthorizationEndpoint: s.URL + "/authorize", TokenEndpoint: s.URL + "/token",
		ResponseTypesSupported:            []string{"code"},
		GrantTypesSupported:               []string{"authorization_code", "refresh_token", "client_credentials"},
		CodeChallengeMethodsSupported:     []string{"S256"},
		ScopesSupported:                   s.opts.Scopes,
		TokenEndpointAuthMethodsSupported: []string{"none", "client_secret_basic", "client_secret_post"},
	}
	if !s.opts.NoRegistration {
		m.RegistrationEndpoint = s.URL + "/register"
	}
	httpserve.WriteJSON(w, http.StatusOK, m)
}

func (s *Server) register(w http.ResponseWriter, r *http.Request) {
	var m oauthex.ClientRegistrationMetadata
	if err := json.NewDecoder(r.Body).Decode(&m); err != nil || len(m.RedirectURIs) == 0 {
		httpserve.WriteJSON(w, http.StatusBadRequest, map[string]string{"error": "invalid_client_metadata"})
		return
	}
	id := "client-" + random()
	s.mu.Lock()
	s.clients[id] = client{redirects: m.RedirectURIs}
	s.counts.Registrations++
	s.mu.Unlock()
	httpserve.WriteJSON(w, http.StatusCreated, map[string]any{"client_id": id, "redirect_uris": m.RedirectURIs, "token_endpoint_auth_method": "none"})
}

func (s *Server) authorize(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	if s.Authorize != nil {
		s.Authorize(w, r, q)
		return
	}
	s.mu.Lock()
	c, ok := s.clients[q.Get("client_id")]
	s.counts.Authorizations++
	s.mu.Unlock()
	redirect := q.Get("redirect_uri")
	switch {
	case !ok:
		http.Error(w, "unknown client", http.StatusBadRequest)
		return
	case len(c.redirects) > 0 && !slices.Contains(c.redirects, redirect):
		http.Error(w, "redirect_uri not registered", http.StatusBadRequest)
		return
	case q.Get("response_type") != "code" || q.Get("code_challenge_method") != "S256" || q.Get("code_challenge") == "" || q.Get("state") == "":
		http.Error(w, "want response_type=code, state and an S256 code challenge", http.StatusBadRequest)
		return
	}
	code := random()
	s.mu.Lock()
	s.codes[code] = grant{clientID: q.Get("client_id"), redirect: redirect, challenge: q.Get("code_challenge"), resource: q.Get("resource"), scope: q.Get("scope")}
	s.mu.Unlock()
	http.Redirect(w, r, Redirect(redirect, url.Values{"code": {code}, "state": {q.Get("state")}}), http.StatusFound)
}

// Redirect is uri with the query q added.
func Redirect(uri string, q url.Values) string {
	if strings.Contains(uri, "?") {
		return uri + "&" + q.Encode()
	}
	return uri + "?" + q.Encode()
}

func (s *Server) token(w http.ResponseWriter, r *http.Request) {
	if err := r.ParseForm(); err != nil {
		httpserve.WriteJSON(w, http.StatusBadRequest, map[string]string{"error": "invalid_request"})
		return
	}
	id, secret, basic := r.BasicAuth()
	if basic {
		id, _ = url.QueryUnescape(id)
		secret, _ = url.QueryUnescape(secret)
	} else {
		id, secret = r.PostForm.Get("client_id"), r.PostForm.Get("client_secret")
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	c, ok := s.clients[id]
	if !ok || c.secret != secret {
		httpserve.WriteJSON(w, http.StatusUnauthorized, map[string]string{"error": "invalid_client"})
		return
	}
	f := r.PostForm
	var g grant
	switch f.Get("grant_type") {
	case "authorization_code":
		g, ok = s.codes[f.Get("code")]
		delete(s.codes, f.Get("code")) // one use
		sum := sha256.Sum256([]byte(f.Get("code_verifier")))
		switch {
		case !ok || g.clientID != id || g.redirect != f.Get("redirect_uri"):
			httpserve.WriteJSON(w, http.StatusBadRequest, map[string]string{"error": "invalid_grant"})
			return
		case base64.RawURLEncoding.EncodeToString(sum[:]) != g.challenge:
			httpserve.WriteJSON(w, http.StatusBadRequest, map[string]string{"error": "invalid_grant", "error_description": "PKCE verification failed"})
			return
		case f.Get("resource") != g.resource:
			httpserve.WriteJSON(w, http.StatusBadRequest, map[string]string{"error": "invalid_target"})
			return
		}
		s.counts.Codes++
	case "refresh_token":
		g, ok = s.refresh[f.Get("refresh_token")]
		if !ok || g.clientID != id {
			httpserve.WriteJSON(w, http.StatusBadRequest, map[string]string{"error": "invalid_grant"})
			return
		}
		if f.Get("resource") != g.resource {
			httpserve.WriteJSON(w, http.StatusBadRequest, map[string]string{"error": "invalid_target"})
			return
		}
		delete(s.refresh, f.Get("refresh_token")) // rotated
		s.counts.Refreshes++
	case "client_credentials":
		if id != s.opts.ClientID || secret == "" {
			httpserve.WriteJSON(w, http.StatusBadRequest, map[string]string{"error": "unauthorized_client"})
			return
		}
		g = grant{clientID: id, resource: f.Get("resource"), scope: f.Get("scope")}
		s.counts.ClientCredentials++
	default:
		httpserve.WriteJSON(w, http.StatusBadRequest, map[string]string{"error": "unsupported_grant_type"})
		return
	}
	g.expiry = time.Now().Add(s.opts.TokenLife)
	tok := "at-" + random()
	s.access[tok] = g
	out := map[string]any{"access_token": tok, "token_type": "Bearer", "expires_in": int(s.opts.TokenLife.Seconds())}
	if !s.opts.NoRefresh && f.Get("grant_type") != "client_credentials" {
		rt := "rt-" + random()
		s.refresh[rt] = g
		out["refresh_token"] = rt
	}
	if g.scope != "" {
		out["scope"] = g.scope
	}
	httpserve.WriteJSON(w, http.StatusOK, out)
}

// Verifier is a token verifier for the resource at resource: a token
// this server issued for it (RFC 8707), not expired.
func (s *Server) Verifier(resource string) auth.TokenVerifier {
	return func(_ context.Context, tok string, _ *http.Request) (*auth.TokenInfo, error) {
		s.mu.Lock()
		g, ok := s.access[tok]
		s.mu.Unlock()
		if !ok || time.Now().After(g.expiry) {
			return nil, fmt.Errorf("%w: unknown or expired", auth.ErrInvalidToken)
		}
		if g.resource != "" && g.resource != resource {
			return nil, fmt.Errorf("%w: for another resource", auth.ErrInvalidToken)
		}
		return &auth.TokenInfo{Scopes: strings.Fields(g.scope), Expiration: g.expiry}, nil
	}
}

// Protect serves h at /mcp behind a bearer token check, with its
// protected resource metadata at the well-known path; it returns the
// endpoint's URL.
func Protect(t testing.TB, as *Server, h http.Handler) string {
	mux := http.NewServeMux()
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	endpoint := srv.URL + "/mcp"
	metaURL := srv.URL + "/.well-known/oauth-protected-resource/mcp"
	mux.Handle("/mcp", auth.RequireBearerToken(as.Verifier(endpoint), &auth.RequireBearerTokenOptions{ResourceMetadataURL: metaURL})(h))
	mux.Handle("/.well-known/oauth-protected-resource/mcp", auth.ProtectedResourceMetadataHandler(&oauthex.ProtectedResourceMetadata{
		Resource: endpoint, AuthorizationServers: []string{as.URL}, ScopesSupported: as.opts.Scopes,
	}))
	return endpoint
}

// FollowRedirects is an opener for tests: it follows the authorisation
// URL's redirects to the loopback listener, as a browser would.
func FollowRedirects(ctx context.Context, authURL string) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, authURL, nil)
	if err != nil {
		return err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return err
	}
	_ = resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("the sign-in ended with %s", resp.Status)
	}
	return nil
}

func random() string {
	return base64.RawURLEncoding.EncodeToString([]byte(rand.Text()))[:20]
}
