package cli

import (
	"errors"
	"fmt"
	"io"
	"net/http"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/spf13/pflag"

	"github.com/mew-protocol/mew/bridge"
	"github.com/mew-protocol/mew/internal/oauthclient"
	"github.com/mew-protocol/mew/space"
)

// authFlags are the credential flags of `mew bridge start` for a URL
// server. They name environment variables, never hold secrets.
type authFlags struct {
	bearerEnv, headerEnv                      string
	oauth                                     bool
	clientID, clientSecretEnv, clientMetadata string
	scopes, grant, tokenFile                  string
	redirectPort                              int
}

func (a *authFlags) register(fl *pflag.FlagSet) {
	fl.StringVar(&a.bearerEnv, "mcp-bearer-env", "", "with --mcp-url: send the token in this environment variable as \"Authorization: Bearer\"")
	fl.StringVar(&a.headerEnv, "mcp-header-env", "", "with --mcp-url: headers whose values are in environment variables, HEADER=VARIABLE comma-separated")
	fl.BoolVar(&a.oauth, "oauth", false, "with --mcp-url: sign in as an OAuth client when the server asks (see docs/bridge.md)")
	fl.StringVar(&a.clientID, "oauth-client-id", "", "OAuth client id registered beforehand (default: register dynamically)")
	fl.StringVar(&a.clientSecretEnv, "oauth-client-secret-env", "", "environment variable holding the OAuth client secret")
	fl.StringVar(&a.clientMetadata, "oauth-client-metadata-url", "", "https URL of this bridge's OAuth client ID metadata document")
	fl.StringVar(&a.scopes, "oauth-scopes", "", "OAuth scopes to ask for, comma-separated (default: those the server names)")
	fl.StringVar(&a.grant, "oauth-grant", "", "authorization_code (a person signs in; the default) or client_credentials")
	fl.IntVar(&a.redirectPort, "oauth-redirect-port", 0, "fixed port of the loopback redirect (default: a free port)")
	fl.StringVar(&a.tokenFile, "oauth-token-file", "", "file keeping the OAuth tokens, mode 0600 (default: .mew/oauth/<participant>.json of the space)")
}

// given reports whether any credential flag was set.
func (a *authFlags) given(changed func(string) bool) bool {
	for _, name := range []string{"mcp-bearer-env", "mcp-header-env", "oauth", "oauth-client-id", "oauth-client-secret-env",
		"oauth-client-metadata-url", "oauth-scopes", "oauth-grant", "oauth-redirect-port", "oauth-token-file"} {
		if changed(name) {
			return true
		}
	}
	return false
}

// spec turns the flags into the form of a space file's mcp_server.auth.
func (a *authFlags) spec() (*space.MCPAuth, error) {
	spec := &space.MCPAuth{BearerEnv: a.bearerEnv}
	if a.bearerEnv != "" && !envName.MatchString(a.bearerEnv) {
		return nil, fmt.Errorf("--mcp-bearer-env: %q is not the name of an environment variable (give the name, not the token)", a.bearerEnv)
	}
	if a.headerEnv != "" {
		spec.HeadersEnv = map[string]string{}
		for _, piece := range strings.Split(a.headerEnv, ",") {
			name, env, ok := strings.Cut(strings.TrimSpace(piece), "=")
			if !ok || !validHeader(name) || !envName.MatchString(env) {
				return nil, fmt.Errorf("--mcp-header-env: %q is not HEADER=VARIABLE", piece)
			}
			spec.HeadersEnv[name] = env
		}
	}
	oauth := a.oauth || a.clientID != "" || a.clientSecretEnv != "" || a.clientMetadata != "" || a.scopes != "" || a.grant != "" || a.redirectPort != 0
	if oauth {
		o := &space.MCPOAuth{Grant: a.grant, ClientID: a.clientID, ClientSecretEnv: a.clientSecretEnv, ClientMetadataURL: a.clientMetadata, RedirectPort: a.redirectPort}
		if o.Grant == "" {
			o.Grant = space.GrantAuthorizationCode
		}
		if o.Grant != space.GrantAuthorizationCode && o.Grant != space.GrantClientCredentials {
			return nil, fmt.Errorf("--oauth-grant: want %s or %s, not %q", space.GrantAuthorizationCode, space.GrantClientCredentials, o.Grant)
		}
		if o.ClientSecretEnv != "" && !envName.MatchString(o.ClientSecretEnv) {
			return nil, fmt.Errorf("--oauth-client-secret-env: %q is not the name of an environment variable (give the name, not the secret)", o.ClientSecretEnv)
		}
		if o.RedirectPort < 0 || o.RedirectPort > 65535 {
			return nil, fmt.Errorf("--oauth-redirect-port: %d is not a port", o.RedirectPort)
		}
		for _, s := range strings.Split(a.scopes, ",") {
			if s = strings.TrimSpace(s); s != "" {
				o.Scopes = append(o.Scopes, s)
			}
		}
		spec.OAuth = o
		if a.bearerEnv != "" {
			return nil, errors.New("--mcp-bearer-env and OAuth both give the server's credentials; give one")
		}
	}
	return spec, nil
}

func validHeader(name string) bool {
	return name != "" && !strings.ContainsFunc(name, func(r rune) bool {
		return r <= ' ' || r >= 0x7f || strings.ContainsRune(`"(),/:;<=>?@[\]{}`, r)
	})
}

// applyAuth puts the credentials spec names into server, reading their
// values from the environment. tokenFile is the OAuth token file ("":
// in memory). Messages name variables, never show their values.
func applyAuth(server *bridge.Server, spec *space.MCPAuth, getenv func(string) string, stderr io.Writer, tokenFile string) error {
	if spec == nil {
		return nil
	}
	need := func(what, name string) (string, error) {
		v := getenv(name)
		if v == "" {
			return "", fmt.Errorf("%s: the environment variable %s is not set", what, name)
		}
		if strings.ContainsFunc(v, func(r rune) bool { return (r < 0x20 && r != '\t') || r == 0x7f }) {
			return "", fmt.Errorf("%s: the value of %s holds a control character", what, name)
		}
		return v, nil
	}
	if spec.BearerEnv != "" || len(spec.HeadersEnv) > 0 {
		server.Headers = http.Header{}
	}
	if spec.BearerEnv != "" {
		v, err := need("bearer token", spec.BearerEnv)
		if err != nil {
			return err
		}
		server.Headers.Set("Authorization", "Bearer "+v)
	}
	for name, env := range spec.HeadersEnv {
		v, err := need("header "+name, env)
		if err != nil {
			return err
		}
		server.Headers.Set(name, v)
	}
	if o := spec.OAuth; o != nil {
		secret := ""
		if o.ClientSecretEnv != "" {
			var err error
			if secret, err = need("OAuth client secret", o.ClientSecretEnv); err != nil {
				return err
			}
		}
		server.OAuth = &bridge.OAuth{
			ClientCredentials: o.Grant == space.GrantClientCredentials,
			ClientID:          o.ClientID,
			ClientSecret:      secret,
			ClientMetadataURL: o.ClientMetadataURL,
			Scopes:            o.Scopes,
			RedirectPort:      o.RedirectPort,
			TokenFile:         tokenFile,
			Opener:            oauthclient.EnvOpener(getenv, stderr),
		}
	}
	return nil
}

// oauthTokenFile is the default OAuth token file of a bridge: in the
// space's state directory, one file per participant.
func oauthTokenFile(cfg *space.Config, participantID string) string {
	if cfg == nil {
		return ""
	}
	return filepath.Join(cfg.MewDir, "oauth", participantID+".json")
}

// describeAuth says what credentials a bridge sends, for its log: the
// variables' names, never their values.
func describeAuth(spec *space.MCPAuth) string {
	if spec == nil {
		return "none"
	}
	var parts []string
	if spec.BearerEnv != "" {
		parts = append(parts, "bearer from $"+spec.BearerEnv)
	}
	for name, env := range spec.HeadersEnv {
		parts = append(parts, name+" from $"+env)
	}
	if o := spec.OAuth; o != nil {
		s := "oauth " + o.Grant
		if o.ClientID != "" {
			s += " as " + strconv.Quote(o.ClientID)
		}
		parts = append(parts, s)
	}
	if len(parts) == 0 {
		return "none"
	}
	return strings.Join(parts, ", ")
}
