// Package mcpserve serves mew's own MCP servers (the tools agent, `mew mcp
// calculator|filesystem`) at every revision mew speaks (package mcpver),
// on purpose and in one way.
//
// [Options] narrows a go-sdk server to mcpver.Supported. Over stdio that is
// all: the go-sdk answers initialize (the session revisions) and
// server/discover with per-request metadata (2026-07-28) on one connection.
// Over streamable HTTP the go-sdk serves the stateless revision only with
// a stateless handler, and the session revisions' server-to-client
// requests and standalone SSE stream only with a stateful one, so
// [Handler] holds both for one server and sends each request to the one its
// revision needs: a request whose MCP-Protocol-Version header names a
// stateless revision to the stateless handler, every other request (an
// initialize, a request of a session, its GET stream and DELETE) to the
// stateful one.
package mcpserve
