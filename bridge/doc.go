// Package bridge exposes an MCP server as a participant of a MEW space.
//
// A Bridge holds a *participant.Participant and an MCP client session (the
// official go-sdk) with one server: a command that speaks MCP over its
// standard input and output, or a streamable HTTP endpoint. Run starts the
// server, initializes it, lists its tools, resources, resource templates
// and prompts (following every page), then joins the space.
//
// # Requests
//
// The mcp/request envelopes addressed to the bridge for initialize,
// tools/list, tools/call, resources/list, resources/read,
// resources/templates/list, prompts/list, prompts/get and
// completion/complete are forwarded to the server; its result, or its
// JSON-RPC error with the server's code, message and data, goes back as an
// mcp/response to the requester, correlated to the request. From a command,
// the result is the server's own bytes, members the go-sdk does not know
// included; over HTTP it is the go-sdk's encoding of it. The
// participant answers ping itself; other methods are answered with
// participant.CodeMethodNotFound. When the server cannot answer, the error
// has one of the bridge's codes: CodeConnectionClosed (it exited, is being
// restarted, was given up on, or the bridge is stopping), CodeRequestTimeout
// (Options.RequestTimeout passed), CodeRequestCancelled, or CodeBusy. A
// request is never left unanswered.
//
// A request is cancelled, and the server told so with MCP's
// notifications/cancelled, when it times out, when the proposal it fulfils
// is withdrawn by its proposer (mcp/withdraw), when its requester sends
// the bridge notifications/cancelled naming it (by correlation_id, the
// request's envelope id, or by params.requestId, its JSON-RPC id), and
// when the bridge stops.
//
// # Revisions and elicitation
//
// The bridge offers the revisions of package mcpver: server/discover
// (2026-07-28) first, then initialize; handshake.go judges what the server
// answered and refuses, with an error wrapping mcpver.ErrUnsupported, a
// server that speaks only revisions mew does not. Status.Protocol is the
// revision agreed on. The bridge declares elicitation: a server's question
// during a call becomes an elicitation/request in the space, addressed to
// the caller, and the first usable elicitation/response goes back to the
// server (elicit.go; protocol.KindElicitationRequest describes the kinds).
//
// # List changes
//
// When the server says that its tools, resources or prompts changed
// (notifications/*/list_changed), the bridge lists them again and, if they
// differ, broadcasts the same notification in the space as an mcp/request
// (when its capabilities allow), so that participants that discovered its
// tools list them again (the participant package does). It does the same
// after a restart whose server lists something else.
//
// # Supervision
//
// A server that exits, closes its output, writes something that is not
// JSON-RPC, or stops answering (over HTTP: its keep-alive pings fail) is
// over: the requests waiting for it are answered with CodeConnectionClosed
// at once, what is left of its process group is stopped, and the bridge
// starts it again after Options.RestartDelay, doubling the delay at each
// failure in a row, up to Options.MaxRestarts failures in a row (a server
// that stayed up for a minute starts the count afresh). Requests that
// arrive meanwhile wait for the new server, within their timeout. When the
// restarts run out (or Options.NoRestart is set) the bridge says so in a
// chat message and a participant/status with status "error", and answers
// every request with CodeConnectionClosed until it is stopped. Each change
// of state is reported as a participant/status: "ready", "restarting",
// "error", with the server's name, the numbers of tools, resources and
// prompts, the restarts so far and the last error. A participant/restart
// addressed to the bridge restarts the server at once (not counted as a
// failure) and a participant/shutdown stops the bridge.
//
// An answer over the most the bridge reads of one message (the go-sdk's
// line limit, 16 MiB) is dropped, and its call answered with
// CodeResultTooLarge: a stdio server's line is read in pieces and left
// out (oversize.go's frame guard), an HTTP server's JSON body or event is
// cut off as it is read. A result within that but over what the gateway
// relays is answered with an error by the participant (Options.MaxReplyBytes).
//
// The server's standard error goes to Options.Logger, one record per line,
// never into the space (log messages it sends over MCP, a feature MCP
// deprecates, are not asked for and are dropped). A command runs in a
// process group of its own: stopping the server closes its input (as MCP's
// stdio transport asks), then sends SIGTERM and SIGKILL to the group, so
// that what it started (npx starts node, uvx starts python) stops too.
//
// # Concurrency
//
// Run owns every goroutine of the bridge. The client's dispatch goroutine
// runs the handlers (requests, withdrawals, welcomes), which only start
// work; each forwarded request runs on a goroutine of its own; the
// supervisor (Run's own goroutine) restarts the server and refreshes the
// lists; each run of the server has a watcher for its session and one for
// its process, and each process a goroutine that waits for it and one that
// reads its standard error (a run's stop waits for all four). Run
// cancels the requests, waits for them and stops the server before it
// returns. Bridge.mu guards the state, the current run and the lists; it
// is never held while calling the server or sending. The in-flight table
// has a lock of its own, never held with mu.
package bridge
