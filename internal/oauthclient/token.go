package oauthclient

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strings"
	"time"
)

// maxBody bounds every answer read from an authorisation server: a
// metadata document, a registration, a token.
const maxBody = 256 << 10

// ErrTokenEndpoint is wrapped by errors from the token endpoint; the
// message carries the server's OAuth error code, never its body.
var ErrTokenEndpoint = errors.New("oauth token endpoint refused")

// tokenAnswer is a token endpoint's successful answer (RFC 6749 5.1).
type tokenAnswer struct {
	AccessToken  string `json:"access_token"`
	TokenType    string `json:"token_type"`
	ExpiresIn    int64  `json:"expires_in"`
	RefreshToken string `json:"refresh_token"`
	Scope        string `json:"scope"`
}

// tokenRequest posts form to the record's token endpoint with the
// client's authentication, and puts the tokens it gets into r.
func (h *Handler) tokenRequest(ctx context.Context, r *record, form url.Values) error {
	if r.Resource != "" {
		form.Set("resource", r.Resource)
	}
	secret := r.ClientSecret
	basic := secret != "" && r.AuthMethod != "client_secret_post"
	if !basic {
		form.Set("client_id", r.ClientID)
		if secret != "" {
			form.Set("client_secret", secret)
		}
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, r.TokenURL, strings.NewReader(form.Encode()))
	if err != nil {
		return fmt.Errorf("oauth token request: %w", err)
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("Accept", "application/json")
	if basic {
		// RFC 6749 2.3.1: both parts form-encoded before Basic.
		req.SetBasicAuth(url.QueryEscape(r.ClientID), url.QueryEscape(secret))
	}
	resp, err := h.hc.Do(req)
	if err != nil {
		return fmt.Errorf("oauth token request to %s: %w", redact(r.TokenURL), scrub(err))
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, maxBody+1))
	if err != nil {
		return fmt.Errorf("oauth token request to %s: %w", redact(r.TokenURL), scrub(err))
	}
	if len(body) > maxBody {
		return fmt.Errorf("%w: %s answered with more than %d bytes", ErrTokenEndpoint, redact(r.TokenURL), maxBody)
	}
	if resp.StatusCode != http.StatusOK {
		var e struct {
			Error       string `json:"error"`
			Description string `json:"error_description"`
		}
		_ = json.Unmarshal(body, &e)
		why := resp.Status
		if e.Error != "" {
			why += ", " + clip(e.Error, 64)
		}
		if e.Description != "" {
			why += ": " + clip(e.Description, 200)
		}
		return fmt.Errorf("%w: %s: %s", ErrTokenEndpoint, redact(r.TokenURL), why)
	}
	var t tokenAnswer
	if err := json.Unmarshal(body, &t); err != nil || t.AccessToken == "" {
		// The body is not shown: it may hold a token.
		return fmt.Errorf("%w: %s answered without an access token", ErrTokenEndpoint, redact(r.TokenURL))
	}
	if t.TokenType != "" && !strings.EqualFold(t.TokenType, "bearer") {
		return fmt.Errorf("%w: %s gave a %q token, not Bearer", ErrTokenEndpoint, redact(r.TokenURL), clip(t.TokenType, 32))
	}
	r.AccessToken = t.AccessToken
	if t.RefreshToken != "" {
		r.RefreshToken = t.RefreshToken // else the old one stays good (RFC 6749 6)
	}
	r.Expiry = time.Time{}
	if t.ExpiresIn > 0 {
		// A little early, so that a token is not sent in its last second.
		life := time.Duration(min(t.ExpiresIn, 10*365*86400)) * time.Second
		r.Expiry = h.now().Add(life - min(10*time.Second, life/10))
	}
	if t.Scope != "" {
		r.Scopes = strings.Fields(t.Scope)
	}
	return nil
}

// newVerifier returns a PKCE code verifier (RFC 7636 4.1) and its S256
// challenge.
func newVerifier() (verifier, challenge string) {
	verifier = base64.RawURLEncoding.EncodeToString(randomBytes(32))
	sum := sha256.Sum256([]byte(verifier))
	return verifier, base64.RawURLEncoding.EncodeToString(sum[:])
}

func randomBytes(n int) []byte {
	b := make([]byte, n)
	_, _ = rand.Read(b) // crypto/rand.Read never fails
	return b
}

// redact is a URL for messages: no user information, query or fragment.
func redact(s string) string {
	u, err := url.Parse(s)
	if err != nil {
		return "(unparsable URL)"
	}
	u.User, u.RawQuery, u.Fragment = nil, "", ""
	return u.String()
}

// scrub keeps the kind of an HTTP client error but drops the URL it
// quotes, whose query may hold a code or a token.
func scrub(err error) error {
	var ue *url.Error
	if errors.As(err, &ue) {
		return fmt.Errorf("%s: %w", ue.Op, ue.Err)
	}
	return err
}

func clip(s string, n int) string {
	s = strings.Map(func(r rune) rune {
		if r < 0x20 || r == 0x7f {
			return ' '
		}
		return r
	}, s)
	if len(s) > n {
		return s[:n] + "…"
	}
	return s
}

// sameOrigin reports whether a and b have one scheme, host and port.
func sameOrigin(a, b *url.URL) bool {
	return strings.EqualFold(a.Scheme, b.Scheme) && strings.EqualFold(a.Host, b.Host)
}

// httpsOrLoopback refuses a URL that would carry a secret in the clear
// beyond this machine.
func httpsOrLoopback(what, s string) error {
	u, err := url.Parse(s)
	if err != nil || u.Host == "" || (u.Scheme != "http" && u.Scheme != "https") {
		return fmt.Errorf("oauth: the %s %q is not an http(s) URL", what, redact(s))
	}
	if u.Scheme == "https" || isLoopback(u.Hostname()) {
		return nil
	}
	return fmt.Errorf("oauth: the %s %s is plain http beyond this machine; https is needed", what, redact(s))
}

func isLoopback(host string) bool {
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}
