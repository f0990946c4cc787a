// Package participant is layer 2 of the MEW Protocol SDK: a participant that
// speaks MCP in a space.
//
// A Participant holds a *client.Client (layer 1) and adds what the protocol
// means: its own tools and resources, answered to tools/list, tools/call,
// resources/list and resources/read; capability checks against what the
// gateway's latest welcome granted; smart requests that go directly when
// allowed and as proposals otherwise; proposal handling for fulfillers; tool
// discovery of the other participants; chat acknowledgements; participant
// controls (pause, resume, forget, clear, compact, restart, shutdown) and
// status telemetry; and stream bookkeeping.
//
// # Requests and proposals
//
// Request is the spec's mcpRequest: a direct mcp/request when the
// capabilities allow it, an mcp/proposal to the same target when only that is
// allowed, an error wrapping ErrNotAllowed otherwise. It waits for the
// target's response (for a proposal: to the fulfilment of it), fails fast on
// mcp/reject and on the gateway's refusals, and withdraws a proposal on
// timeout or cancellation. Fulfillers see proposals through OnProposal and
// answer them with Fulfill or Reject.
//
// # Tool discovery
//
// With Options.AutoDiscovery the participant lists the tools of the others
// as they join; DiscoverTools asks one on demand. DiscoveryState documents
// the states and rules.
//
// # Participant controls
//
// Pause, resume, forget, clear, compact, restart and shutdown addressed to
// the participant update its state, run the hooks set with OnForget,
// OnClear, OnCompact, OnRestart and OnShutdown, and answer with
// participant/status; a paused participant sends only what the gateway lets
// a paused participant send (ErrPaused otherwise). ReportStatus lists what
// it reports for each.
//
// # Concurrency
//
// The client runs every handler on its one dispatch goroutine, in order. The
// participant's own handlers only update state and start work: tool
// executions, request waits and discovery run on goroutines the Participant
// owns, which Close cancels and waits for.
package participant
