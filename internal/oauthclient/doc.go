// Package oauthclient is mew's OAuth 2.1 client for the servers it bridges
// into a space: an MCP server behind the MCP authorization spec, or an
// A2A agent whose card names an OAuth flow.
//
// A Handler holds one client's identity and tokens for one protected
// resource. On a 401 it discovers what it needs (RFC 9728 protected
// resource metadata, from the WWW-Authenticate resource_metadata
// parameter or the well-known paths; RFC 8414 or OpenID Connect
// authorisation server metadata), identifies itself (a pre-registered
// client id, a client ID metadata document URL when the server supports
// them, else RFC 7591 dynamic registration) and gets a token: by the
// authorisation code grant with PKCE (S256) and a one-shot loopback
// redirect listener on 127.0.0.1, whose URL an Opener hands to a person
// (or a script), or by the client credentials grant. Every authorisation
// and token request names the resource (RFC 8707). Refresh tokens are
// used before a new sign-in is asked for.
//
// Tokens and the client's registration are kept in one JSON file, mode
// 0600, whose path the caller chooses (the bridge: under the space's .mew
// directory), so that a restart does not ask again. No token, secret or
// authorisation code is ever written to a log or put in an error.
//
// Discovery and registration use the go-sdk's oauthex types and
// discovery helpers; the token endpoint is spoken to directly, since the
// resource parameter must go with refresh requests too.
package oauthclient
