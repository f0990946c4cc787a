package oauthclient

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"net/url"
	"os"
	"slices"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/oauthex"
)

// ErrDiscovery is wrapped by errors finding the authorisation server.
var ErrDiscovery = errors.New("oauth discovery")

func osGetenv(name string) string { return os.Getenv(name) }

var osStderr io.Writer = os.Stderr

func b64(b []byte) string { return base64.RawURLEncoding.EncodeToString(b) }

// challenge is what a Bearer WWW-Authenticate challenge says.
type challenge struct {
	metadataURL string   // resource_metadata (RFC 9728 5.1)
	scopes      []string // scope
	err         string   // error, such as insufficient_scope
}

func parseChallenges(headers []string) challenge {
	var c challenge
	cs, err := oauthex.ParseWWWAuthenticate(headers)
	if err != nil {
		return c // a malformed challenge is as good as none: discovery goes on
	}
	for _, ch := range cs {
		if ch.Scheme != "bearer" {
			continue
		}
		c.metadataURL = ch.Params["resource_metadata"]
		c.scopes = strings.Fields(ch.Params["scope"])
		c.err = ch.Params["error"]
		break
	}
	return c
}

// endpoints is what the handler knows of the authorisation server.
type endpoints struct {
	issuer, authURL, tokenURL, registrationURL string
	resource                                   string   // sent as RFC 8707 resource; "" for none
	scopes                                     []string // the resource's scopes_supported
	asScopes                                   []string // the server's scopes_supported
	authMethods                                []string
	cimd, issParam                             bool
}

// discover finds the authorisation server of the resource: its protected
// resource metadata (from the challenge's URL, else the well-known paths),
// then the server's metadata. A resource without metadata is served as
// the MCP 2025-03-26 revision says: its origin is the server.
func (h *Handler) discover(ctx context.Context, ch challenge) (*endpoints, error) {
	if h.opts.TokenURL != "" {
		return &endpoints{issuer: h.opts.TokenURL, authURL: h.opts.AuthURL, tokenURL: h.opts.TokenURL}, nil
	}
	prm, err := h.resourceMetadata(ctx, ch.metadataURL)
	if err != nil {
		return nil, err
	}
	origin := (&url.URL{Scheme: h.resource.Scheme, Host: h.resource.Host}).String()
	ep := &endpoints{resource: h.opts.Resource}
	issuer := origin
	legacy := prm == nil
	if prm != nil {
		if len(prm.AuthorizationServers) == 0 {
			return nil, fmt.Errorf("%w: the resource's metadata names no authorisation server", ErrDiscovery)
		}
		issuer, ep.resource, ep.scopes = prm.AuthorizationServers[0], prm.Resource, prm.ScopesSupported
	}
	if err := httpsOrLoopback("authorisation server", issuer); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrDiscovery, err)
	}
	asm, err := h.serverMetadata(ctx, issuer, legacy)
	if err != nil {
		return nil, err
	}
	if asm == nil {
		if !legacy {
			return nil, fmt.Errorf("%w: %s publishes no authorisation server metadata", ErrDiscovery, redact(issuer))
		}
		// 2025-03-26: default endpoints at the server's origin.
		ep.issuer, ep.authURL, ep.tokenURL, ep.registrationURL = origin, origin+"/authorize", origin+"/token", origin+"/register"
		h.log.Info("oauth: the resource publishes no metadata; using its origin's default endpoints", "resource", redact(h.opts.Resource))
		return ep, nil
	}
	if h.opts.Grant == GrantAuthorizationCode && !slices.Contains(asm.CodeChallengeMethodsSupported, "S256") {
		return nil, fmt.Errorf("%w: %s does not offer PKCE with S256, which the bridge requires", ErrDiscovery, redact(issuer))
	}
	for name, u := range map[string]string{"authorisation endpoint": asm.AuthorizationEndpoint, "token endpoint": asm.TokenEndpoint, "registration endpoint": asm.RegistrationEndpoint} {
		if u == "" && name != "token endpoint" {
			continue
		}
		if err := httpsOrLoopback(name, u); err != nil {
			return nil, fmt.Errorf("%w: %w", ErrDiscovery, err)
		}
	}
	ep.issuer, ep.authURL, ep.tokenURL, ep.registrationURL = asm.Issuer, asm.AuthorizationEndpoint, asm.TokenEndpoint, asm.RegistrationEndpoint
	ep.asScopes, ep.authMethods = asm.ScopesSupported, asm.TokenEndpointAuthMethodsSupported
	ep.cimd, ep.issParam = asm.ClientIDMetadataDocumentSupported, asm.AuthorizationResponseIssParameterSupported
	return ep, nil
}

// resourceMetadata fetches the resource's RFC 9728 metadata and checks
// that it speaks for this resource: same origin, and a resource
// identifier that is the resource's URL or a path prefix of it. nil when
// the resource publishes none.
func (h *Handler) resourceMetadata(ctx context.Context, fromChallenge string) (*oauthex.ProtectedResourceMetadata, error) {
	var urls []string
	if fromChallenge != "" {
		if err := httpsOrLoopback("resource metadata URL", fromChallenge); err != nil {
			return nil, fmt.Errorf("%w: %w", ErrDiscovery, err)
		}
		urls = append(urls, fromChallenge)
	}
	wk := *h.resource
	wk.RawQuery, wk.Fragment = "", ""
	if p := strings.Trim(h.resource.Path, "/"); p != "" {
		wk.Path = "/.well-known/oauth-protected-resource/" + p
		urls = append(urls, wk.String())
	}
	wk.Path = "/.well-known/oauth-protected-resource"
	urls = append(urls, wk.String())
	for _, u := range urls {
		var prm oauthex.ProtectedResourceMetadata
		found, err := h.getJSON(ctx, u, &prm)
		if err != nil {
			return nil, err
		}
		if !found {
			continue
		}
		if err := h.speaksFor(prm.Resource); err != nil {
			return nil, fmt.Errorf("%w: the metadata at %s %w", ErrDiscovery, redact(u), err)
		}
		return &prm, nil
	}
	return nil, nil
}

// speaksFor checks a metadata document's resource identifier against the
// resource the handler protects.
func (h *Handler) speaksFor(resource string) error {
	r, err := url.Parse(resource)
	if err != nil || r.Host == "" {
		return fmt.Errorf("names no resource URL (%q)", clip(resource, 100))
	}
	if !sameOrigin(r, h.resource) {
		return fmt.Errorf("is for %s, another origin than %s", redact(resource), redact(h.opts.Resource))
	}
	want := strings.TrimSuffix(h.resource.Path, "/") + "/"
	if got := strings.TrimSuffix(r.Path, "/") + "/"; !strings.HasPrefix(want, got) {
		return fmt.Errorf("is for %s, not %s", redact(resource), redact(h.opts.Resource))
	}
	return nil
}

// serverMetadata fetches RFC 8414 (or OpenID Connect) metadata of issuer
// at the well-known URLs the MCP spec lists; nil when none is there. Its
// issuer must be the one asked for; for a server without resource
// metadata (legacy, the 2025-03-26 revision, where the MCP server's
// origin is the authorisation server's base), one on the same origin.
func (h *Handler) serverMetadata(ctx context.Context, issuer string, legacy bool) (*oauthex.AuthServerMeta, error) {
	iu, err := url.Parse(issuer)
	if err != nil {
		return nil, fmt.Errorf("%w: issuer %q: %w", ErrDiscovery, redact(issuer), err)
	}
	p := strings.Trim(iu.Path, "/")
	var urls []string
	base := url.URL{Scheme: iu.Scheme, Host: iu.Host}
	for _, path := range []string{"/.well-known/oauth-authorization-server", "/.well-known/openid-configuration"} {
		u := base
		u.Path = path
		if p != "" {
			u.Path += "/" + p
		}
		urls = append(urls, u.String())
	}
	if p != "" {
		u := base
		u.Path = "/" + p + "/.well-known/openid-configuration"
		urls = append(urls, u.String())
	}
	for _, u := range urls {
		var asm oauthex.AuthServerMeta
		found, err := h.getJSON(ctx, u, &asm)
		if err != nil {
			return nil, err
		}
		if !found {
			continue
		}
		got, _ := url.Parse(asm.Issuer)
		sameServer := legacy && got != nil && sameOrigin(got, iu)
		if strings.TrimSuffix(asm.Issuer, "/") != strings.TrimSuffix(issuer, "/") && !sameServer {
			return nil, fmt.Errorf("%w: the metadata at %s is for the issuer %q, not %q", ErrDiscovery, redact(u), clip(asm.Issuer, 100), redact(issuer))
		}
		return &asm, nil
	}
	return nil, nil
}

// getJSON fetches a metadata document into v; false for a 4xx answer.
// The body is read up to maxBody; a larger one is refused.
func (h *Handler) getJSON(ctx context.Context, u string, v any) (bool, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return false, fmt.Errorf("%w: %w", ErrDiscovery, err)
	}
	req.Header.Set("Accept", "application/json")
	resp, err := h.hc.Do(req)
	if err != nil {
		return false, fmt.Errorf("%w: %s: %w", ErrDiscovery, redact(u), scrub(err))
	}
	defer resp.Body.Close()
	if resp.StatusCode >= 400 && resp.StatusCode < 500 {
		return false, nil
	}
	if resp.StatusCode != http.StatusOK {
		return false, fmt.Errorf("%w: %s answered %s", ErrDiscovery, redact(u), resp.Status)
	}
	if mt, _, _ := mime.ParseMediaType(resp.Header.Get("Content-Type")); mt != "application/json" && !strings.HasSuffix(mt, "+json") {
		return false, fmt.Errorf("%w: %s is %q, not JSON", ErrDiscovery, redact(u), clip(resp.Header.Get("Content-Type"), 60))
	}
	body, err := io.ReadAll(io.LimitReader(resp.Body, maxBody+1))
	if err != nil {
		return false, fmt.Errorf("%w: %s: %w", ErrDiscovery, redact(u), scrub(err))
	}
	if len(body) > maxBody {
		return false, fmt.Errorf("%w: %s is larger than %d bytes", ErrDiscovery, redact(u), maxBody)
	}
	if err := json.Unmarshal(body, v); err != nil {
		return false, fmt.Errorf("%w: %s does not parse: %w", ErrDiscovery, redact(u), err)
	}
	return true, nil
}

// identify sets rec's client: the configured one, a client ID metadata
// document, the registration of old when it still fits, or a new
// dynamic registration (RFC 7591).
func (h *Handler) identify(ctx context.Context, ep *endpoints, rec, old *record) error {
	switch {
	case h.opts.ClientID != "":
		rec.ClientID, rec.ClientSecret = h.opts.ClientID, h.opts.ClientSecret
		rec.AuthMethod = chooseAuthMethod(ep.authMethods, rec.ClientSecret != "")
		return nil
	case h.opts.ClientMetadataURL != "" && ep.cimd:
		rec.ClientID, rec.AuthMethod = h.opts.ClientMetadataURL, "none"
		return nil
	case old != nil && old.Registered && old.Issuer == ep.issuer && old.RedirectURI == rec.RedirectURI:
		rec.ClientID, rec.ClientSecret, rec.AuthMethod, rec.Registered = old.ClientID, old.ClientSecret, old.AuthMethod, true
		return nil
	case ep.registrationURL == "":
		return fmt.Errorf("%w: %s offers no dynamic registration (nor client ID metadata documents that the bridge has one for); configure a client id", ErrDiscovery, redact(ep.issuer))
	}
	meta := oauthex.ClientRegistrationMetadata{
		RedirectURIs:            []string{rec.RedirectURI},
		TokenEndpointAuthMethod: "none",
		GrantTypes:              []string{"authorization_code", "refresh_token"},
		ResponseTypes:           []string{"code"},
		ClientName:              h.opts.ClientName,
		Scope:                   strings.Join(rec.Scopes, " "),
		ApplicationType:         "native",
	}
	payload, err := json.Marshal(meta)
	if err != nil {
		return fmt.Errorf("oauth registration: %w", err)
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, ep.registrationURL, bytes.NewReader(payload))
	if err != nil {
		return fmt.Errorf("oauth registration: %w", err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json")
	resp, err := h.hc.Do(req)
	if err != nil {
		return fmt.Errorf("oauth registration at %s: %w", redact(ep.registrationURL), scrub(err))
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, maxBody+1))
	if err != nil || len(body) > maxBody {
		return fmt.Errorf("oauth registration at %s: the answer is unreadable or larger than %d bytes", redact(ep.registrationURL), maxBody)
	}
	var got struct {
		ClientID     string `json:"client_id"`
		ClientSecret string `json:"client_secret"`
		AuthMethod   string `json:"token_endpoint_auth_method"`
		Error        string `json:"error"`
		Description  string `json:"error_description"`
	}
	_ = json.Unmarshal(body, &got)
	if (resp.StatusCode != http.StatusCreated && resp.StatusCode != http.StatusOK) || got.ClientID == "" {
		why := resp.Status
		if got.Error != "" {
			why += ", " + clip(got.Error, 64) + ": " + clip(got.Description, 200)
		}
		return fmt.Errorf("oauth registration at %s: no client id (%s)", redact(ep.registrationURL), why)
	}
	rec.ClientID, rec.ClientSecret, rec.Registered = got.ClientID, got.ClientSecret, true
	rec.AuthMethod = got.AuthMethod
	if rec.AuthMethod == "" {
		rec.AuthMethod = chooseAuthMethod(nil, got.ClientSecret != "")
	}
	h.log.Info("oauth: registered as a client", "issuer", ep.issuer)
	return nil
}
