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
// # Concurrency
//
// The client runs every handler on its one dispatch goroutine, in order. The
// participant's own handlers only update state and start work: tool
// executions, request waits and discovery run on goroutines the Participant
// owns, which Close cancels and waits for.
package participant
