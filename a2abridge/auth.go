package a2abridge

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/mew-protocol/mew/a2a"
)

// Auth holds the bridge's credentials for the agent. The card says what
// it takes (securitySchemes, and securityRequirements, a list of which
// any one will do); the bridge uses the first requirement it can meet
// with what it has. Skills' own requirements are not consulted.
//
// Credentials go only to the agent's JSON-RPC endpoint, and only when it
// is on the card's own origin, over https or to a loopback address: a
// card cannot send them elsewhere.
type Auth struct {
	// Bearer is sent as "Authorization: Bearer …" for an HTTP Bearer
	// scheme, and for an OAuth 2.0 or OpenID Connect scheme as a token
	// got elsewhere.
	Bearer string
	// APIKey is sent where the card's API key scheme says: a header or a
	// query parameter of its name.
	APIKey string
	// ClientID and ClientSecret are OAuth 2.0 client credentials, for an
	// OAuth 2.0 scheme with a client credentials flow: the bridge asks
	// its tokenUrl for a token (with the flow's scopes), keeps it until
	// it expires and sends it as a bearer token.
	ClientID, ClientSecret string
}

// maxTokenResponse bounds an OAuth token endpoint's answer.
const maxTokenResponse = 64 << 10

// check refuses credentials that could not be sent as they are.
func (a Auth) check() error {
	for name, v := range map[string]string{"bearer token": a.Bearer, "API key": a.APIKey,
		"OAuth client id": a.ClientID, "OAuth client secret": a.ClientSecret} {
		if strings.ContainsFunc(v, func(r rune) bool { return r < 0x20 || r == 0x7f }) {
			// The value is not shown: it is a secret.
			return fmt.Errorf("a2abridge: the %s holds a control character", name)
		}
	}
	if (a.ClientID == "") != (a.ClientSecret == "") {
		return errors.New("a2abridge: OAuth client credentials need both the client id and the secret")
	}
	return nil
}

// credential adds one credential to a request.
type credential func(ctx context.Context, r *http.Request) error

// client returns an HTTP client that adds the credentials the card asks
// for to the requests to endpoint, or base when none are needed.
func (a Auth) client(base *http.Client, card *a2a.AgentCard, cardURL, endpoint string) (*http.Client, error) {
	creds, err := a.choose(base, card)
	if err != nil || len(creds) == 0 {
		return base, err
	}
	ep, err := url.Parse(endpoint)
	if err != nil || (ep.Scheme != "http" && ep.Scheme != "https") || ep.Host == "" {
		return nil, fmt.Errorf("its endpoint %q is not an http(s) URL", redact(endpoint))
	}
	cu, _ := url.Parse(cardURL)
	if !strings.EqualFold(ep.Scheme, cu.Scheme) || !strings.EqualFold(ep.Host, cu.Host) {
		return nil, fmt.Errorf("its card names the endpoint %s, not on the card's origin %s://%s; the bridge sends credentials only there",
			redact(endpoint), cu.Scheme, cu.Host)
	}
	if err := secureEnough(ep); err != nil {
		return nil, err
	}
	base2 := *base
	next := base.Transport
	if next == nil {
		next = http.DefaultTransport
	}
	base2.Transport = &authTransport{next: next, scheme: ep.Scheme, host: ep.Host, creds: creds}
	return &base2, nil
}

// secureEnough refuses to send a credential in the clear beyond this
// machine.
func secureEnough(u *url.URL) error {
	if u.Scheme == "https" {
		return nil
	}
	host := u.Hostname()
	if ip := net.ParseIP(host); (ip != nil && ip.IsLoopback()) || host == "localhost" {
		return nil
	}
	return fmt.Errorf("credentials would go to %s over plain http; the bridge sends them over https, or to a loopback address", u.Host)
}

// choose picks the credentials of the first security requirement of the
// card that a meets. A card that requires nothing still gets the bearer
// token or API key it was given, as its schemes say (or as a bearer token
// and an X-API-Key header).
func (a Auth) choose(base *http.Client, card *a2a.AgentCard) ([]credential, error) {
	if len(card.SecurityRequirements) == 0 {
		var creds []credential
		if a.Bearer != "" {
			creds = append(creds, bearer(a.Bearer))
		}
		if a.APIKey != "" {
			key := &a2a.APIKeySecurityScheme{Location: "header", Name: "X-API-Key"}
			for _, name := range sortedKeys(card.SecuritySchemes) {
				if s := card.SecuritySchemes[name]; s.APIKey != nil {
					key = s.APIKey
					break
				}
			}
			c, err := apiKey(key, a.APIKey)
			if err != nil {
				return nil, err
			}
			creds = append(creds, c)
		}
		return creds, nil
	}
	var asked []string
	for _, req := range card.SecurityRequirements {
		var creds []credential
		met := true
		for _, name := range sortedKeys(req.Schemes) {
			s, ok := card.SecuritySchemes[name]
			if !ok {
				met = false
				asked = append(asked, name+" (not described by the card)")
				break
			}
			c, what, err := a.credentialFor(base, s, req.Schemes[name].List)
			if err != nil {
				return nil, fmt.Errorf("security scheme %q: %w", name, err)
			}
			if c == nil {
				met = false
				asked = append(asked, name+" ("+what+")")
				break
			}
			creds = append(creds, c)
		}
		if met {
			return creds, nil
		}
	}
	slices.Sort(asked)
	return nil, fmt.Errorf("%w: it asks for %s", ErrNoCredential, strings.Join(slices.Compact(asked), " or "))
}

// credentialFor returns the credential a scheme takes from a, or nil and
// what the scheme wants.
func (a Auth) credentialFor(base *http.Client, s a2a.SecurityScheme, scopes []string) (credential, string, error) {
	switch {
	case s.HTTPAuth != nil:
		if strings.EqualFold(s.HTTPAuth.Scheme, "bearer") && a.Bearer != "" {
			return bearer(a.Bearer), "", nil
		}
		return nil, "HTTP " + s.HTTPAuth.Scheme + " authentication", nil
	case s.APIKey != nil:
		if a.APIKey == "" {
			return nil, "an API key in " + s.APIKey.Location + " " + s.APIKey.Name, nil
		}
		c, err := apiKey(s.APIKey, a.APIKey)
		return c, "", err
	case len(s.OAuth2) > 0:
		flow, err := clientCredentialsFlow(s.OAuth2)
		if err != nil {
			return nil, "", err
		}
		switch {
		case flow != nil && a.ClientID != "":
			if len(scopes) == 0 {
				scopes = sortedKeys(flow.Scopes)
			}
			ts, err := newTokenSource(base, flow.TokenURL, a.ClientID, a.ClientSecret, scopes)
			if err != nil {
				return nil, "", err
			}
			return ts.credential, "", nil
		case a.Bearer != "":
			return bearer(a.Bearer), "", nil
		case flow != nil:
			return nil, "OAuth 2.0 client credentials or a bearer token", nil
		}
		return nil, "OAuth 2.0 (a bearer token got elsewhere; the bridge runs the client credentials flow only)", nil
	case len(s.OpenIDConnect) > 0:
		if a.Bearer != "" {
			return bearer(a.Bearer), "", nil
		}
		return nil, "OpenID Connect (a bearer token got elsewhere)", nil
	case len(s.MutualTLS) > 0:
		return nil, "mutual TLS, which the bridge does not do", nil
	}
	return nil, "a scheme the bridge does not know", nil
}

func bearer(token string) credential {
	return func(_ context.Context, r *http.Request) error {
		r.Header.Set("Authorization", "Bearer "+token)
		return nil
	}
}

func apiKey(s *a2a.APIKeySecurityScheme, key string) (credential, error) {
	if s.Name == "" {
		return nil, errors.New("the API key scheme names no header or parameter")
	}
	switch strings.ToLower(s.Location) {
	case "header":
		if !validHeaderName(s.Name) {
			return nil, fmt.Errorf("%q is not a header name", s.Name)
		}
		return func(_ context.Context, r *http.Request) error { r.Header.Set(s.Name, key); return nil }, nil
	case "query":
		return func(_ context.Context, r *http.Request) error {
			q := r.URL.Query()
			q.Set(s.Name, key)
			r.URL.RawQuery = q.Encode()
			return nil
		}, nil
	case "cookie":
		return func(_ context.Context, r *http.Request) error {
			r.AddCookie(&http.Cookie{Name: s.Name, Value: key})
			return nil
		}, nil
	}
	return nil, fmt.Errorf("API key location %q is not header, query or cookie", s.Location)
}

func validHeaderName(name string) bool {
	return name != "" && !strings.ContainsFunc(name, func(r rune) bool {
		return r <= ' ' || r >= 0x7f || strings.ContainsRune(`"(),/:;<=>?@[\]{}`, r)
	})
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// authTransport adds the credentials to requests for one origin; others
// go out without them.
type authTransport struct {
	next         http.RoundTripper
	scheme, host string
	creds        []credential
}

func (t *authTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	if !strings.EqualFold(r.URL.Scheme, t.scheme) || !strings.EqualFold(r.URL.Host, t.host) {
		return t.next.RoundTrip(r)
	}
	r = r.Clone(r.Context()) // a RoundTripper must not change the request it is given
	for _, c := range t.creds {
		if err := c(r.Context(), r); err != nil {
			if r.Body != nil {
				_ = r.Body.Close()
			}
			return nil, err
		}
	}
	return t.next.RoundTrip(r)
}

// oauthFlow is the client credentials flow of an OAuth 2.0 scheme.
type oauthFlow struct {
	TokenURL string            `json:"tokenUrl"`
	Scopes   map[string]string `json:"scopes"`
}

// clientCredentialsFlow reads an OAuth 2.0 scheme's client credentials
// flow, nil when it has none.
func clientCredentialsFlow(raw json.RawMessage) (*oauthFlow, error) {
	var s struct {
		Flows struct {
			ClientCredentials *oauthFlow `json:"clientCredentials"`
			// The form of @a2a-js/sdk's cards (see a2a.SecurityScheme).
			Flow *struct {
				Case  string    `json:"$case"`
				Value oauthFlow `json:"value"`
			} `json:"flow"`
		} `json:"flows"`
	}
	if err := json.Unmarshal(raw, &s); err != nil {
		return nil, fmt.Errorf("the OAuth 2.0 scheme does not parse: %w", err)
	}
	if f := s.Flows.Flow; s.Flows.ClientCredentials == nil && f != nil && f.Case == "clientCredentials" {
		return &f.Value, nil
	}
	return s.Flows.ClientCredentials, nil
}

// tokenSource gets and keeps an OAuth 2.0 access token by the client
// credentials grant (RFC 6749 section 4.4).
type tokenSource struct {
	hc         *http.Client
	tokenURL   string
	id, secret string
	scopes     []string
	mu         sync.Mutex // held while a token is fetched: one fetch at a time
	token      string
	expiry     time.Time
}

func newTokenSource(hc *http.Client, tokenURL, id, secret string, scopes []string) (*tokenSource, error) {
	u, err := url.Parse(tokenURL)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("the OAuth token URL %q is not an http(s) URL", redact(tokenURL))
	}
	if err := secureEnough(u); err != nil {
		return nil, err
	}
	return &tokenSource{hc: hc, tokenURL: tokenURL, id: id, secret: secret, scopes: scopes}, nil
}

func (ts *tokenSource) credential(ctx context.Context, r *http.Request) error {
	tok, err := ts.get(ctx)
	if err != nil {
		return err
	}
	r.Header.Set("Authorization", "Bearer "+tok)
	return nil
}

// get returns the token, fetching a new one a minute before it expires.
func (ts *tokenSource) get(ctx context.Context) (string, error) {
	ts.mu.Lock()
	defer ts.mu.Unlock()
	if ts.token != "" && time.Now().Before(ts.expiry) {
		return ts.token, nil
	}
	form := url.Values{"grant_type": {"client_credentials"}}
	if len(ts.scopes) > 0 {
		form.Set("scope", strings.Join(ts.scopes, " "))
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, ts.tokenURL, strings.NewReader(form.Encode()))
	if err != nil {
		return "", fmt.Errorf("a2abridge: OAuth token: %w", err)
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("Accept", "application/json")
	req.SetBasicAuth(url.QueryEscape(ts.id), url.QueryEscape(ts.secret))
	resp, err := ts.hc.Do(req)
	if err != nil {
		return "", fmt.Errorf("a2abridge: OAuth token from %s: %w", redact(ts.tokenURL), err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, maxTokenResponse+1))
	if err != nil || len(body) > maxTokenResponse {
		return "", fmt.Errorf("a2abridge: OAuth token from %s: the answer is unreadable or larger than %d bytes", redact(ts.tokenURL), maxTokenResponse)
	}
	var t struct {
		AccessToken string `json:"access_token"`
		TokenType   string `json:"token_type"`
		ExpiresIn   int64  `json:"expires_in"`
		Error       string `json:"error"`
	}
	if err := json.Unmarshal(body, &t); err != nil || resp.StatusCode != http.StatusOK || t.AccessToken == "" {
		// The body is not shown: it may echo a secret.
		why := resp.Status
		if t.Error != "" {
			why += ", " + clipText(t.Error, 64)
		}
		return "", fmt.Errorf("a2abridge: OAuth token from %s: no token (%s)", redact(ts.tokenURL), why)
	}
	if t.TokenType != "" && !strings.EqualFold(t.TokenType, "bearer") {
		return "", fmt.Errorf("a2abridge: OAuth token from %s: token type %q, not Bearer", redact(ts.tokenURL), clipText(t.TokenType, 32))
	}
	life := time.Duration(t.ExpiresIn) * time.Second
	if t.ExpiresIn <= 0 || t.ExpiresIn > 86400*365 {
		life = 5 * time.Minute // no or an absurd lifetime: ask again soon
	}
	ts.token, ts.expiry = t.AccessToken, time.Now().Add(life-min(time.Minute, life/2))
	return ts.token, nil
}
