// Package mcpver is the one place that knows which MCP (Model Context
// Protocol) revisions mew speaks and how it agrees on one in initialize.
//
// mew speaks the dated revisions in [Supported], newest first. It does not
// speak 2026-07-28 and later: from that revision on, MCP is stateless
// (server/discover instead of initialize), and mew's MCP servers — the
// participants' tools, the tools agent, the bridge's answers in a space —
// are initialize-based.
//
// Negotiation follows the MCP lifecycle (the initialize exchange):
//
//   - As a server (a participant answering a MEW peer's initialize),
//     [Negotiate] agrees to the revision the client asks for when it is one
//     of [Supported], and otherwise answers [Latest]; the client then
//     decides whether it can speak that.
//   - As a client (the bridge initializing the MCP server it runs), mew
//     offers [Latest] and [Accept]s what the server answers: a revision of
//     [Supported] as it is; a label older than every dated revision — the
//     reference's own servers answer "0.1.0", pre-release MCP servers a date
//     before 2024-11-05 — is spoken as the oldest revision, [Oldest], whose
//     methods (tools/list, tools/call, resources, prompts) those servers
//     share; a dated revision newer than [Latest] is refused with an error
//     that names both sides, since the server should have answered one the
//     client offered or older.
package mcpver
