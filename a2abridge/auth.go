package a2abridge

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"net"
	"net/http"
	"net/url"
	"slices"
	"strings"

	"github.com/mew-protocol/mew/a2a"
	"github.com/mew-protocol/mew/internal/oauthclient"
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
	// ClientID and ClientSecret are an OAuth 2.0 client. For an OAuth 2.0
	// scheme with a client credentials flow (both given), the bridge asks
	// its tokenUrl for a token (with the flow's scopes), keeps it until it
	// expires and sends it as a bearer token. For an authorization code
	// flow (the id, and the secret if the client has one), a person signs
	// in: the authorisation URL goes to Opener, the redirect comes back to
	// a loopback listener, and the token (refreshed as it expires) is
	// kept in TokenFile.
	ClientID, ClientSecret string
	// TokenFile keeps the tokens of an authorization code sign-in across
	// restarts, mode 0600 ("": in memory only).
	TokenFile string
	// Opener takes a person to the authorisation URL; nil: the command in
	// MEW_OAUTH_OPENER, else print the URL and try the desktop's opener.
	Opener func(ctx context.Context, authURL string) error
}

// check refuses credentials that could not be sent as they are.
func (a Auth) check() error {
	for name, v := range map[string]string{"bearer token": a.Bearer, "API key": a.APIKey,
		"OAuth client id": a.ClientID, "OAuth client secret": a.ClientSecret} {
		if strings.ContainsFunc(v, func(r rune) bool { return r < 0x20 || r == 0x7f }) {
			// The value is not shown: it is a secret.
			return fmt.Errorf("a2abridge: the %s holds a control character", name)
		}
	}
	if a.ClientSecret != "" && a.ClientID == "" {
		return errors.New("a2abridge: an OAuth client secret needs the client id")
	}
	return nil
}

// credential adds one credential to a request.
type credential func(ctx context.Context, r *http.Request) error

// client returns an HTTP client that adds the credentials the card asks
// for to the requests to endpoint, or base when none are needed.
func (a Auth) client(base *http.Client, card *a2a.AgentCard, cardURL, endpoint string) (*http.Client, error) {
	creds, err := a.choose(base, card, endpoint)
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
func (a Auth) choose(base *http.Client, card *a2a.AgentCard, endpoint string) ([]credential, error) {
	if len(card.SecurityRequirements) == 0 {
		var creds []credential
		if a.Bearer != "" {
			creds = append(creds, bearer(a.Bearer))
		}
		if a.APIKey != "" {
			key := &a2a.APIKeySecurityScheme{Location: "header", Name: "X-API-Key"}
			for _, name := range slices.Sorted(maps.Keys(card.SecuritySchemes)) {
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
		for _, name := range slices.Sorted(maps.Keys(req.Schemes)) {
			s, ok := card.SecuritySchemes[name]
			if !ok {
				met = false
				asked = append(asked, name+" (not described by the card)")
				break
			}
			c, what, err := a.credentialFor(base, s, req.Schemes[name].List, endpoint)
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
func (a Auth) credentialFor(base *http.Client, s a2a.SecurityScheme, scopes []string, endpoint string) (credential, string, error) {
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
		flows, err := oauthFlows(s.OAuth2)
		if err != nil {
			return nil, "", err
		}
		cc, code := flows.ClientCredentials, flows.AuthorizationCode
		switch {
		case cc != nil && a.ClientID != "" && a.ClientSecret != "":
			return a.oauthCredential(base, endpoint, oauthclient.GrantClientCredentials, cc, scopes)
		case code != nil && a.ClientID != "":
			return a.oauthCredential(base, endpoint, oauthclient.GrantAuthorizationCode, code, scopes)
		case a.Bearer != "":
			return bearer(a.Bearer), "", nil
		case cc != nil || code != nil:
			return nil, "OAuth 2.0 (a client id, with a secret for client credentials) or a bearer token", nil
		}
		return nil, "OAuth 2.0 (a bearer token got elsewhere; the bridge runs the client credentials and authorization code flows only)", nil
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

// oauthFlow is a flow of an OAuth 2.0 scheme.
type oauthFlow struct {
	AuthorizationURL string            `json:"authorizationUrl"`
	TokenURL         string            `json:"tokenUrl"`
	Scopes           map[string]string `json:"scopes"`
}

// flows are the flows of an OAuth 2.0 scheme that the bridge can run.
type flows struct {
	ClientCredentials *oauthFlow `json:"clientCredentials"`
	AuthorizationCode *oauthFlow `json:"authorizationCode"`
}

// oauthFlows reads an OAuth 2.0 scheme's flows.
func oauthFlows(raw json.RawMessage) (flows, error) {
	var s struct {
		Flows struct {
			flows
			// The form of @a2a-js/sdk's cards (see a2a.SecurityScheme).
			Flow *struct {
				Case  string    `json:"$case"`
				Value oauthFlow `json:"value"`
			} `json:"flow"`
		} `json:"flows"`
	}
	if err := json.Unmarshal(raw, &s); err != nil {
		return flows{}, fmt.Errorf("the OAuth 2.0 scheme does not parse: %w", err)
	}
	f := s.Flows.flows
	if alt := s.Flows.Flow; alt != nil {
		v := alt.Value
		switch {
		case alt.Case == "clientCredentials" && f.ClientCredentials == nil:
			f.ClientCredentials = &v
		case alt.Case == "authorizationCode" && f.AuthorizationCode == nil:
			f.AuthorizationCode = &v
		}
	}
	return f, nil
}

// oauthCredential runs a flow of the card's with the shared OAuth client
// (internal/oauthclient): its endpoints are the card's, no discovery.
func (a Auth) oauthCredential(base *http.Client, endpoint string, grant oauthclient.Grant, f *oauthFlow, scopes []string) (credential, string, error) {
	if len(scopes) == 0 {
		scopes = slices.Sorted(maps.Keys(f.Scopes))
	}
	for what, u := range map[string]string{"token URL": f.TokenURL, "authorization URL": f.AuthorizationURL} {
		if u == "" && (what == "token URL" || grant == oauthclient.GrantAuthorizationCode) {
			return nil, "", fmt.Errorf("the OAuth flow names no %s", what)
		}
		if u == "" {
			continue
		}
		pu, err := url.Parse(u)
		if err != nil || (pu.Scheme != "http" && pu.Scheme != "https") || pu.Host == "" {
			return nil, "", fmt.Errorf("the OAuth %s %q is not an http(s) URL", what, redact(u))
		}
		if err := secureEnough(pu); err != nil {
			return nil, "", err
		}
	}
	var opener oauthclient.Opener
	if a.Opener != nil {
		opener = a.Opener
	}
	h, err := oauthclient.New(oauthclient.Options{
		Resource: endpoint, Grant: grant, ClientID: a.ClientID, ClientSecret: a.ClientSecret, Scopes: scopes,
		AuthURL: f.AuthorizationURL, TokenURL: f.TokenURL, TokenFile: a.TokenFile, Opener: opener, HTTPClient: base,
	})
	if err != nil {
		return nil, "", err
	}
	return func(ctx context.Context, r *http.Request) error {
		tok, err := h.Token(ctx)
		if err != nil {
			return fmt.Errorf("a2abridge: %w", err)
		}
		r.Header.Set("Authorization", "Bearer "+tok)
		return nil
	}, "", nil
}
