// Package oauthtest is a small OAuth 2.1 authorisation server and an
// OAuth-protected MCP resource for tests, on 127.0.0.1: metadata,
// dynamic registration, authorisation codes with PKCE checked, refresh
// tokens and client credentials. Its /authorize approves at once, so that
// a script (or an http.Client that follows redirects) completes a sign-in.
package oauthtest
