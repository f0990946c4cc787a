// Package mcpver is the one place that knows which MCP (Model Context
// Protocol) revisions mew speaks and how it agrees on one, as a client (the
// bridge) and as a server (the tools agent over stdio and HTTP, `mew mcp
// calculator|filesystem`, and the participants' tools in a space).
//
// mew speaks the dated revisions in [Supported], newest first: [Latest]
// (2026-07-28), the first stateless revision, and the session revisions
// before it, down to [Oldest]. The two families are agreed on differently:
//
//   - A session revision (2025-11-25 and older) is agreed on in the
//     initialize exchange. As a server, [Negotiate] agrees to the revision
//     the client asks for when it is a session revision mew speaks, and
//     otherwise answers [LatestSession] (initialize cannot agree to a
//     stateless revision, which has no initialize). As a client, mew
//     [Accept]s what the server answers: a session revision mew speaks as it
//     is; a label older than every dated revision (the reference's own
//     servers answer "0.1.0", pre-release servers a date before 2024-11-05)
//     as [Oldest]; anything else (a stateless revision, which has no
//     initialize, or a date mew does not know) is refused with an error that
//     names both sides.
//   - A stateless revision (2026-07-28) is agreed on per request: the client
//     asks server/discover which revisions the server speaks and sends its
//     revision in every request's _meta (and, over HTTP, the
//     MCP-Protocol-Version header). [Discover] picks the newest stateless
//     revision both sides speak; when there is none, the client falls back
//     to initialize, and a server that speaks only revisions mew does not
//     is refused with an error naming them ([Refusal]).
//
// The go-sdk carries both exchanges; this package decides what mew offers
// and accepts, and the SDK's own list (mcp.SupportedProtocolVersions) must
// hold every revision of [Supported] (a test says so).
package mcpver
