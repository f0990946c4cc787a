package oauthclient

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"sync"
	"time"
)

// Grant is the OAuth grant a Handler uses to get tokens.
type Grant string

// Grants.
const (
	// GrantAuthorizationCode: a person signs in with a browser (or a
	// script follows the redirect); PKCE and a loopback redirect.
	GrantAuthorizationCode Grant = "authorization_code"
	// GrantClientCredentials: the client's own id and secret, no person.
	GrantClientCredentials Grant = "client_credentials"
)

// Options configures a Handler.
type Options struct {
	// Resource is the URL of the protected resource: the MCP endpoint or
	// the A2A agent's endpoint (required). Tokens are sent only to its
	// origin, and its metadata must name it.
	Resource string
	// Grant is how tokens are got (default GrantAuthorizationCode).
	Grant Grant

	// ClientID and ClientSecret are a client registered beforehand with
	// the authorisation server; the client credentials grant needs both.
	// Without them the client is a client ID metadata document
	// (ClientMetadataURL, when the server supports those) or registers
	// itself dynamically.
	ClientID, ClientSecret string
	// ClientMetadataURL is the https URL of this client's ID metadata
	// document, used as its client id where the server supports them.
	ClientMetadataURL string
	// ClientName is the name registered dynamically (default "mew bridge").
	ClientName string
	// Scopes, when set, are asked for instead of those the resource's
	// challenge or metadata names.
	Scopes []string

	// AuthURL and TokenURL, when TokenURL is set, are the authorisation
	// server's endpoints as known beforehand (an A2A card names them):
	// no discovery, no resource parameter, and a client id is needed.
	AuthURL, TokenURL string

	// RedirectPort is the loopback listener's port, for a client whose
	// redirect URI was registered with one; 0 picks a free port.
	RedirectPort int
	// TokenFile keeps the client's registration and tokens across
	// restarts (mode 0600); "" keeps them in memory only.
	TokenFile string
	// Opener takes a person to the authorisation URL (default: EnvOpener
	// of the process's environment, printing to standard error).
	Opener Opener
	// HTTPClient speaks to the authorisation server and fetches metadata
	// (default: a client with a 30 s timeout).
	HTTPClient *http.Client
	// FlowTimeout bounds a sign-in, from the URL being opened to the
	// redirect (default 5 min).
	FlowTimeout time.Duration
	// Logger is told what the handler does, never a secret (nil: none).
	Logger *slog.Logger
}

// DefaultFlowTimeout is the time a person has to sign in.
const DefaultFlowTimeout = 5 * time.Minute

// Handler gets and keeps the tokens of one client for one resource. Its
// methods are safe for concurrent use: one sign-in or refresh runs at a
// time, and requests that failed meanwhile take its result.
type Handler struct {
	opts     Options
	resource *url.URL
	hc       *http.Client
	store    *store
	log      *slog.Logger
	now      func() time.Time
	opener   Opener

	sem chan struct{} // held while the record is being renewed

	mu  sync.Mutex // guards rec
	rec *record    // nil until a token or registration is known
}

// New checks opts and reads the token file, if any.
func New(opts Options) (*Handler, error) {
	if opts.Grant == "" {
		opts.Grant = GrantAuthorizationCode
	}
	if opts.Grant != GrantAuthorizationCode && opts.Grant != GrantClientCredentials {
		return nil, fmt.Errorf("oauth: grant %q is not %s or %s", opts.Grant, GrantAuthorizationCode, GrantClientCredentials)
	}
	res, err := url.Parse(opts.Resource)
	if err != nil || res.Host == "" || (res.Scheme != "http" && res.Scheme != "https") {
		return nil, fmt.Errorf("oauth: the resource %q is not an http(s) URL", redact(opts.Resource))
	}
	if err := httpsOrLoopback("resource", opts.Resource); err != nil {
		return nil, err
	}
	if err := checkSecret("client id", opts.ClientID); err != nil {
		return nil, err
	}
	if err := checkSecret("client secret", opts.ClientSecret); err != nil {
		return nil, err
	}
	if opts.ClientSecret != "" && opts.ClientID == "" {
		return nil, errors.New("oauth: a client secret without a client id")
	}
	if opts.Grant == GrantClientCredentials && (opts.ClientID == "" || opts.ClientSecret == "") {
		return nil, errors.New("oauth: the client credentials grant needs a client id and a client secret")
	}
	if opts.ClientMetadataURL != "" {
		if u, err := url.Parse(opts.ClientMetadataURL); err != nil || u.Scheme != "https" || u.Host == "" || strings.Trim(u.Path, "/") == "" {
			return nil, fmt.Errorf("oauth: the client metadata URL %q is not an https URL with a path", redact(opts.ClientMetadataURL))
		}
	}
	if opts.TokenURL != "" {
		if err := httpsOrLoopback("token endpoint", opts.TokenURL); err != nil {
			return nil, err
		}
		if opts.ClientID == "" {
			return nil, errors.New("oauth: known endpoints need a client id")
		}
		if opts.Grant == GrantAuthorizationCode {
			if err := httpsOrLoopback("authorisation endpoint", opts.AuthURL); err != nil {
				return nil, err
			}
		}
	}
	if opts.RedirectPort < 0 || opts.RedirectPort > 65535 {
		return nil, fmt.Errorf("oauth: redirect port %d is not a port", opts.RedirectPort)
	}
	if opts.ClientName == "" {
		opts.ClientName = "mew bridge"
	}
	if opts.FlowTimeout <= 0 {
		opts.FlowTimeout = DefaultFlowTimeout
	}
	h := &Handler{
		opts: opts, resource: res, hc: opts.HTTPClient, log: opts.Logger, now: time.Now,
		opener: opts.Opener, sem: make(chan struct{}, 1),
		store: &store{path: opts.TokenFile},
	}
	if h.hc == nil {
		h.hc = &http.Client{Timeout: 30 * time.Second}
	}
	if h.log == nil {
		h.log = slog.New(slog.DiscardHandler)
	}
	if h.opener == nil {
		h.opener = EnvOpener(osGetenv, osStderr)
	}
	rec, err := h.store.load(h.key())
	if err != nil {
		return nil, err
	}
	if rec != nil && rec.ClientCredGot != (opts.Grant == GrantClientCredentials) {
		rec = nil // kept for the other grant: not ours to use
	}
	if rec != nil && opts.ClientID != "" && rec.ClientID != opts.ClientID {
		rec = nil // another client's
	}
	h.rec = rec
	return h, nil
}

// key is the token file's key of the handler's record.
func (h *Handler) key() string { return h.opts.Resource }

func checkSecret(what, v string) error {
	if strings.ContainsFunc(v, func(r rune) bool { return r < 0x20 || r == 0x7f }) {
		return fmt.Errorf("oauth: the %s holds a control character", what) // the value is not shown
	}
	return nil
}

// Token returns the access token to send, refreshing an expired one
// first; "" when there is none yet (the resource's 401 will start the
// flow). With known endpoints (Options.TokenURL) it gets one at once.
func (h *Handler) Token(ctx context.Context) (string, error) {
	h.mu.Lock()
	rec := h.rec
	h.mu.Unlock()
	if rec.valid(h.now()) {
		return rec.AccessToken, nil
	}
	switch {
	case rec != nil && rec.RefreshToken != "":
	case rec != nil && rec.ClientCredGot:
	case h.opts.TokenURL != "":
	default:
		return "", nil
	}
	used := ""
	if rec != nil {
		used = rec.AccessToken
	}
	if err := h.renew(ctx, nil, used); err != nil {
		return "", err
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.rec.AccessToken, nil
}

// Authorize is called when the resource refused a request made with the
// token used ("" for none), answering with the WWW-Authenticate headers
// challenges: it refreshes the token, or signs in anew, unless another
// request did so meanwhile.
func (h *Handler) Authorize(ctx context.Context, challenges []string, used string) error {
	return h.renew(ctx, challenges, used)
}

func (h *Handler) renew(ctx context.Context, challenges []string, used string) error {
	select {
	case h.sem <- struct{}{}:
	case <-ctx.Done():
		return ctx.Err()
	}
	defer func() { <-h.sem }()
	h.mu.Lock()
	rec := h.rec
	h.mu.Unlock()
	if rec.valid(h.now()) && rec.AccessToken != used {
		return nil // renewed while this request waited
	}
	ch := parseChallenges(challenges)
	stepUp := ch.err == "insufficient_scope"
	if rec != nil && rec.RefreshToken != "" && !stepUp {
		next := *rec
		err := h.tokenRequest(ctx, &next, url.Values{"grant_type": {"refresh_token"}, "refresh_token": {rec.RefreshToken}})
		if err == nil {
			h.log.Info("oauth: token refreshed", "resource", redact(h.opts.Resource))
			return h.keep(&next)
		}
		if ctx.Err() != nil {
			return err
		}
		h.log.Info("oauth: refresh refused; authorising anew", "resource", redact(h.opts.Resource), "err", err)
	}
	next, err := h.obtain(ctx, ch, rec)
	if err != nil {
		return err
	}
	return h.keep(next)
}

// keep makes rec current and writes it to the token file.
func (h *Handler) keep(rec *record) error {
	h.mu.Lock()
	h.rec = rec
	h.mu.Unlock()
	if err := h.store.save(h.key(), rec); err != nil {
		h.log.Warn("oauth: the token is not kept for the next start", "err", err)
	}
	return nil
}

// obtain discovers the authorisation server, identifies the client and
// runs the grant; old is the previous record, whose registration may be
// used again.
func (h *Handler) obtain(ctx context.Context, ch challenge, old *record) (*record, error) {
	ep, err := h.discover(ctx, ch)
	if err != nil {
		return nil, err
	}
	scopes := h.opts.Scopes
	if len(scopes) == 0 {
		scopes = ch.scopes
	}
	if len(scopes) == 0 {
		scopes = ep.scopes
	}
	scopes = slices.Clone(scopes) // appended to below; the options' stay as they are
	if ch.err == "insufficient_scope" && old != nil {
		for _, s := range old.Scopes {
			if !slices.Contains(scopes, s) {
				scopes = append(scopes, s)
			}
		}
	}
	rec := &record{Issuer: ep.issuer, AuthURL: ep.authURL, TokenURL: ep.tokenURL, Resource: ep.resource, Scopes: scopes}
	if h.opts.Grant == GrantClientCredentials {
		rec.ClientID, rec.ClientSecret, rec.ClientCredGot = h.opts.ClientID, h.opts.ClientSecret, true
		rec.AuthMethod = chooseAuthMethod(ep.authMethods, true)
		form := url.Values{"grant_type": {"client_credentials"}}
		if len(scopes) > 0 {
			form.Set("scope", strings.Join(scopes, " "))
		}
		h.log.Info("oauth: getting a token by client credentials", "resource", redact(h.opts.Resource), "issuer", ep.issuer)
		if err := h.tokenRequest(ctx, rec, form); err != nil {
			return nil, err
		}
		return rec, nil
	}
	if h.opts.Grant == GrantAuthorizationCode && h.opts.TokenURL == "" && slices.Contains(ep.asScopes, "offline_access") && !slices.Contains(scopes, "offline_access") {
		// Ask for a refresh token where the server says how (SEP-2207).
		rec.Scopes = append(scopes, "offline_access")
	}
	if err := h.authorizationCode(ctx, ep, rec, old); err != nil {
		return nil, err
	}
	return rec, nil
}

// chooseAuthMethod picks how the client authenticates at the token
// endpoint, from the methods the server lists (none listed: basic, the
// RFC 8414 default).
func chooseAuthMethod(supported []string, secret bool) string {
	if !secret {
		return "none"
	}
	if len(supported) == 0 || slices.Contains(supported, "client_secret_basic") {
		return "client_secret_basic"
	}
	return "client_secret_post"
}

// authorizationCode runs the authorisation code grant with PKCE and a
// loopback redirect, filling rec's client and tokens.
func (h *Handler) authorizationCode(ctx context.Context, ep *endpoints, rec *record, old *record) error {
	if ep.authURL == "" {
		return errors.New("oauth: the authorisation server names no authorisation endpoint")
	}
	state := strings.TrimRight(b64(randomBytes(24)), "=")
	verifier, challenge := newVerifier()

	port := h.opts.RedirectPort
	reuse := old != nil && old.Registered && old.Issuer == ep.issuer && old.RedirectURI != ""
	if port == 0 && reuse {
		port = portOf(old.RedirectURI) // the registered redirect URI again, if the port is free
	}
	l, err := listenLoopback(port, state)
	if err != nil && port != 0 && h.opts.RedirectPort == 0 {
		l, err = listenLoopback(0, state)
	}
	if err != nil {
		return err
	}
	defer l.close()
	rec.RedirectURI = l.uri()

	if err := h.identify(ctx, ep, rec, old); err != nil {
		return err
	}

	q := url.Values{
		"response_type":         {"code"},
		"client_id":             {rec.ClientID},
		"redirect_uri":          {rec.RedirectURI},
		"state":                 {state},
		"code_challenge":        {challenge},
		"code_challenge_method": {"S256"},
	}
	if len(rec.Scopes) > 0 {
		q.Set("scope", strings.Join(rec.Scopes, " "))
	}
	if rec.Resource != "" {
		q.Set("resource", rec.Resource)
	}
	authURL := ep.authURL
	if strings.Contains(authURL, "?") {
		authURL += "&" + q.Encode()
	} else {
		authURL += "?" + q.Encode()
	}

	fctx, cancel := context.WithTimeout(ctx, h.opts.FlowTimeout)
	defer cancel()
	h.log.Info("oauth: sign-in needed; opening the authorisation URL", "resource", redact(h.opts.Resource), "issuer", ep.issuer)
	opened := make(chan error, 1)
	go func() { opened <- h.opener(fctx, authURL) }()
	got, finished, err := waitRedirect(fctx, l, opened)
	if !finished {
		// The opener may still be reading the last answer (a script);
		// give it a moment, then end it.
		select {
		case <-opened:
		case <-time.After(2 * time.Second):
			cancel()
			<-opened
		}
	}
	if err != nil {
		if errors.Is(err, context.DeadlineExceeded) && ctx.Err() == nil {
			return fmt.Errorf("%w (%s)", ErrTimeout, h.opts.FlowTimeout)
		}
		return err
	}
	if got.iss != "" && got.iss != ep.issuer || got.iss == "" && ep.issParam {
		return fmt.Errorf("oauth: the redirect names the issuer %q, not %q (RFC 9207)", clip(got.iss, 100), ep.issuer)
	}
	form := url.Values{
		"grant_type":    {"authorization_code"},
		"code":          {got.code},
		"redirect_uri":  {rec.RedirectURI},
		"code_verifier": {verifier},
	}
	return h.tokenRequest(ctx, rec, form)
}

// waitRedirect waits for the redirect; an opener that fails before it
// comes ends the wait. finished says whether the opener has returned.
func waitRedirect(ctx context.Context, l *loopback, opened <-chan error) (got redirect, finished bool, err error) {
	for {
		select {
		case got := <-l.got:
			return got, finished, got.err
		case err := <-opened:
			finished, opened = true, nil // a nil channel: not selected again
			if err != nil {
				select { // perhaps it failed after the redirect came
				case got := <-l.got:
					return got, true, got.err
				default:
				}
				return redirect{}, true, fmt.Errorf("oauth: opening the authorisation URL: %w", err)
			}
			// It returned at once (a browser): the redirect is still to come.
		case <-ctx.Done():
			return redirect{}, finished, ctx.Err()
		}
	}
}

func portOf(uri string) int {
	u, err := url.Parse(uri)
	if err != nil {
		return 0
	}
	var p int
	_, _ = fmt.Sscan(u.Port(), &p)
	return p
}

// drain reads a little of a body before it is closed, so that the
// connection may be used again.
func drain(body io.ReadCloser) {
	_, _ = io.CopyN(io.Discard, body, 4<<10)
	_ = body.Close()
}
