package space

import (
	"net/url"
	"regexp"
	"strings"

	"go.yaml.in/yaml/v3"

	"github.com/mew-protocol/mew/internal/yamlx"
)

// MCPAuth is mcp_server.auth: the credentials a bridge sends to a URL
// server. Secrets are never in the file: it names the environment
// variables that hold them.
type MCPAuth struct {
	// BearerEnv is bearer_env: the variable holding a token sent as
	// "Authorization: Bearer …".
	BearerEnv string `yaml:"bearer_env"`
	// HeadersEnv is headers_env: header name → the variable holding its
	// value.
	HeadersEnv map[string]string `yaml:"headers_env"`
	// OAuth is oauth: the bridge signs in as an OAuth client.
	OAuth *MCPOAuth `yaml:"oauth"`
}

// MCPOAuth is mcp_server.auth.oauth.
type MCPOAuth struct {
	// Grant is grant: authorization_code (the default: a person signs in)
	// or client_credentials.
	Grant string `yaml:"grant"`
	// ClientID is client_id: a client registered beforehand (without it,
	// the bridge registers itself).
	ClientID string `yaml:"client_id"`
	// ClientSecretEnv is client_secret_env: the variable holding the
	// client's secret.
	ClientSecretEnv string `yaml:"client_secret_env"`
	// ClientMetadataURL is client_metadata_url: an https URL of this
	// client's ID metadata document.
	ClientMetadataURL string `yaml:"client_metadata_url"`
	// Scopes is scopes: asked for instead of those the server names.
	Scopes []string `yaml:"scopes"`
	// RedirectPort is redirect_port: the loopback redirect's fixed port.
	RedirectPort int `yaml:"redirect_port"`
}

// OAuth grants of mcp_server.auth.oauth.grant.
const (
	GrantAuthorizationCode = "authorization_code"
	GrantClientCredentials = "client_credentials"
)

var (
	envVarName = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)
	headerName = regexp.MustCompile("^[!#$%&'*+.^_`|~0-9A-Za-z-]+$")
)

// mcpURL reads mcp_server.url: a streamable HTTP endpoint.
func mcpURL(n *yaml.Node, key string) (string, error) {
	return webURL(n, key, "a streamable HTTP MCP endpoint, such as https://mcp.example.com/mcp",
		"name the variable that holds a token in auth.bearer_env")
}

// webURL reads an http(s) URL of what, without white space or user
// information (credentials: where they go instead).
func webURL(n *yaml.Node, key, what, credentials string) (string, error) {
	s, err := yamlx.String(n, key)
	if err != nil || s == "" {
		return s, err
	}
	u, perr := url.Parse(s)
	switch {
	case perr != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "":
		return "", yamlx.Errorf(n, key, "want the http(s) URL of %s", what)
	case u.User != nil:
		return "", yamlx.Errorf(n, key, "the URL holds a user name or password; %s", credentials)
	case strings.ContainsAny(s, " \t\r\n"):
		return "", yamlx.Errorf(n, key, "the URL holds white space")
	}
	return s, nil
}

// secretInFile refuses a member that would put a secret in the file
// itself; instead names the member that takes a variable's name.
func secretInFile(instead string) yamlx.Reader {
	return func(v *yaml.Node, k string) error {
		return yamlx.Errorf(v, k, "a secret does not go in the space file; put it in an environment variable and name that in %s", instead)
	}
}

// envVar reads the name of an environment variable.
func envVar(n *yaml.Node, key string) (string, error) {
	s, err := yamlx.String(n, key)
	if err != nil {
		return "", err
	}
	if !envVarName.MatchString(s) {
		return "", yamlx.Errorf(n, key, "want the name of an environment variable (letters, digits and _), not its value")
	}
	return s, nil
}

func (p *parser) mcpAuth(n *yaml.Node, key string) (*MCPAuth, error) {
	if isNull(n) {
		return nil, nil
	}
	a := &MCPAuth{}
	err := p.fields(n, key, a, map[string]yamlx.Reader{
		"bearer_env":  yamlx.Set(&a.BearerEnv, envVar),
		"headers_env": yamlx.Set(&a.HeadersEnv, headersEnv),
		"oauth":       yamlx.Set(&a.OAuth, p.mcpOAuth),
		"bearer":      secretInFile("bearer_env"),
		"token":       secretInFile("bearer_env"),
		"headers":     secretInFile("headers_env"),
	})
	if err != nil {
		return nil, err
	}
	if a.OAuth != nil && a.BearerEnv != "" {
		return nil, yamlx.Errorf(n, key, "bearer_env and oauth both give the server's credentials; give one")
	}
	for name := range a.HeadersEnv {
		if strings.EqualFold(name, "Authorization") && (a.OAuth != nil || a.BearerEnv != "") {
			return nil, yamlx.Errorf(n, key, "headers_env sets Authorization, which bearer_env or oauth sets too; give one")
		}
	}
	return a, nil
}

func headersEnv(n *yaml.Node, key string) (map[string]string, error) {
	pairs, err := yamlx.Mapping(n, key)
	if err != nil {
		return nil, err
	}
	out := map[string]string{}
	for _, kv := range pairs {
		k := joinKey(key, kv.Key)
		if !headerName.MatchString(kv.Key) {
			return nil, yamlx.Errorf(kv.KeyNode, k, "%q is not an HTTP header name", kv.Key)
		}
		v, err := envVar(kv.Value, k)
		if err != nil {
			return nil, err
		}
		out[kv.Key] = v
	}
	return out, nil
}

func (p *parser) mcpOAuth(n *yaml.Node, key string) (*MCPOAuth, error) {
	if isNull(n) {
		return &MCPOAuth{Grant: GrantAuthorizationCode}, nil // "oauth:" alone: sign in, all defaults
	}
	o := &MCPOAuth{}
	err := p.fields(n, key, o, map[string]yamlx.Reader{
		"client_secret_env": yamlx.Set(&o.ClientSecretEnv, envVar),
		"client_secret":     secretInFile("client_secret_env"),
		"redirect_port": func(v *yaml.Node, k string) error {
			c, err := yamlx.Count(v, k)
			if err != nil {
				return err
			}
			if c < 1 || c > 65535 {
				return yamlx.Errorf(v, k, "want a port from 1 to 65535")
			}
			o.RedirectPort = c
			return nil
		},
	})
	if err != nil {
		return nil, err
	}
	switch o.Grant {
	case "":
		o.Grant = GrantAuthorizationCode
	case GrantAuthorizationCode, GrantClientCredentials:
	default:
		return nil, yamlx.Errorf(n, joinKey(key, "grant"), "want %s or %s, not %q", GrantAuthorizationCode, GrantClientCredentials, o.Grant)
	}
	if strings.ContainsFunc(o.ClientID, func(r rune) bool { return r < 0x20 || r == 0x7f }) {
		return nil, yamlx.Errorf(n, joinKey(key, "client_id"), "the client id holds a control character")
	}
	if o.Grant == GrantClientCredentials && (o.ClientID == "" || o.ClientSecretEnv == "") {
		return nil, yamlx.Errorf(n, key, "grant: client_credentials needs client_id and client_secret_env")
	}
	if o.ClientSecretEnv != "" && o.ClientID == "" {
		return nil, yamlx.Errorf(n, key, "client_secret_env needs client_id")
	}
	if s := o.ClientMetadataURL; s != "" {
		if u, err := url.Parse(s); err != nil || u.Scheme != "https" || u.Host == "" || strings.Trim(u.Path, "/") == "" {
			return nil, yamlx.Errorf(n, joinKey(key, "client_metadata_url"), "want an https URL with a path")
		}
	}
	return o, nil
}
