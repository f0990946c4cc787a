package bridge

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/mew-protocol/mew/internal/oauthclient"
)

// OAuth makes the bridge an OAuth 2.1 client of a URL server, as the MCP
// authorization spec describes: when the server answers 401, the bridge
// discovers its authorisation server, registers (or uses the client it is
// given), and gets a token by a person's sign-in (the authorisation code
// grant with PKCE and a loopback redirect) or by client credentials. It
// refreshes tokens and keeps them in TokenFile.
type OAuth struct {
	// ClientCredentials uses the client credentials grant (ClientID and
	// ClientSecret needed) instead of a person's sign-in.
	ClientCredentials bool
	// ClientID and ClientSecret are a client registered beforehand; without
	// them the bridge registers itself (or uses ClientMetadataURL).
	ClientID, ClientSecret string
	// ClientMetadataURL is the https URL of a client ID metadata document
	// for this bridge, used where the authorisation server supports them.
	ClientMetadataURL string
	// Scopes, when set, are asked for instead of those the server names.
	Scopes []string
	// RedirectPort fixes the loopback redirect's port (a client registered
	// with one); 0 picks a free port.
	RedirectPort int
	// TokenFile keeps the registration and tokens across restarts, mode
	// 0600 ("": in memory only).
	TokenFile string
	// Opener takes a person to the authorisation URL; nil: the command in
	// MEW_OAUTH_OPENER, else print the URL and try the desktop's opener.
	Opener func(ctx context.Context, authURL string) error
	// FlowTimeout bounds a sign-in (default 5 min); a start that needs
	// one has InitTimeout plus this.
	FlowTimeout time.Duration
	// HTTPClient speaks to the authorisation server (default: 30 s timeout).
	HTTPClient *http.Client
}

// checkHeaders refuses header names and values that cannot be sent; the
// values are not shown, being credentials.
func checkHeaders(h http.Header, oauth bool) error {
	for name, vs := range h {
		if name == "" || strings.ContainsFunc(name, func(r rune) bool {
			return r <= ' ' || r >= 0x7f || strings.ContainsRune(`"(),/:;<=>?@[\]{}`, r)
		}) {
			return fmt.Errorf("bridge: %q is not a header name", name)
		}
		for _, v := range vs {
			if strings.ContainsFunc(v, func(r rune) bool { return (r < 0x20 && r != '\t') || r == 0x7f }) {
				return fmt.Errorf("bridge: the value of header %s holds a control character", name)
			}
		}
		if oauth && http.CanonicalHeaderKey(name) == "Authorization" {
			return errors.New("bridge: an Authorization header and OAuth both set the server's credentials; give one")
		}
	}
	return nil
}

// newOAuth makes the handler of a URL server's OAuth, kept across its
// restarts.
func newOAuth(s Server, o *OAuth, opts Options) (*oauthclient.Handler, error) {
	grant := oauthclient.GrantAuthorizationCode
	if o.ClientCredentials {
		grant = oauthclient.GrantClientCredentials
	}
	var opener oauthclient.Opener
	if o.Opener != nil {
		opener = o.Opener
	}
	h, err := oauthclient.New(oauthclient.Options{
		Resource:          s.URL,
		Grant:             grant,
		ClientID:          o.ClientID,
		ClientSecret:      o.ClientSecret,
		ClientMetadataURL: o.ClientMetadataURL,
		ClientName:        "mew bridge " + opts.Participant.Client.ParticipantID,
		Scopes:            o.Scopes,
		RedirectPort:      o.RedirectPort,
		TokenFile:         o.TokenFile,
		Opener:            opener,
		HTTPClient:        o.HTTPClient,
		FlowTimeout:       o.FlowTimeout,
		Logger:            opts.Logger,
	})
	if err != nil {
		return nil, fmt.Errorf("bridge: %w", err)
	}
	return h, nil
}
