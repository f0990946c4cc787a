package protocol

import "encoding/json"

// Elicitation in a space: a mew extension (not in MEW v0.4), in a
// namespace of its own. When an MCP server bridged into the space needs
// input from the user during a call (MCP's elicitation/create under
// 2025-11-25, an InputRequiredResult under 2026-07-28), the bridge asks the
// space with an elicitation/request addressed to the participant that made
// the call (correlated to that call's mcp/request, visible to all like any
// envelope); a participant allowed to send elicitation/response answers it
// (correlated to the elicitation/request); the bridge refuses an answer it
// cannot use with elicitation/refused, addressed to the answerer (the
// elicitation stays open), and closes the elicitation with elicitation/done,
// addressed to the caller, whatever ended it. docs/bridge.md describes the
// exchange; docs/capabilities.md the capabilities it needs.
const (
	KindElicitationRequest  = "elicitation/request"
	KindElicitationResponse = "elicitation/response"
	KindElicitationRefused  = "elicitation/refused"
	KindElicitationDone     = "elicitation/done"
)

// Elicitation modes (MCP 2025-11-25): a form to fill from a JSON Schema,
// or a URL for the user to open.
const (
	ElicitationModeForm = "form"
	ElicitationModeURL  = "url"
)

// Elicitation actions, the answers MCP knows: the user submitted the form
// (or consented to open the URL), declined, or dismissed the question.
const (
	ElicitationAccept  = "accept"
	ElicitationDecline = "decline"
	ElicitationCancel  = "cancel"
)

// How an elicitation ended (ElicitationDone.Status).
const (
	// ElicitationAnswered: a participant answered; the answer went to the
	// server.
	ElicitationAnswered = "answered"
	// ElicitationExpired: nobody answered in time; the server was told
	// "cancel".
	ElicitationExpired = "expired"
	// ElicitationCancelled: the call it was for ended first (cancelled,
	// timed out, the server went away, the bridge stopped).
	ElicitationCancelled = "cancelled"
)

// ElicitationRequest is the payload of elicitation/request: MCP's
// elicitation parameters as the server sent them, and what the call was.
type ElicitationRequest struct {
	// Mode is ElicitationModeForm or ElicitationModeURL.
	Mode string `json:"mode"`
	// Message is the server's question, for the person.
	Message string `json:"message"`
	// RequestedSchema is the form (mode form): a flat JSON Schema object
	// of strings, numbers, integers, booleans and enums.
	RequestedSchema json.RawMessage `json:"requestedSchema,omitempty"`
	// URL is the link to open (mode url), and ElicitationID the server's
	// id for it.
	URL           string `json:"url,omitempty"`
	ElicitationID string `json:"elicitationId,omitempty"`
	// Server is the MCP server's name; Method and Name say what call the
	// input is for (tools/call and the tool's name, prompts/get and the
	// prompt's, resources/read and the URI).
	Server string `json:"server,omitempty"`
	Method string `json:"method,omitempty"`
	Name   string `json:"name,omitempty"`
	// ExpiresAt (RFC 3339) is when the bridge stops waiting and tells the
	// server "cancel".
	ExpiresAt string `json:"expires_at,omitempty"`
}

// ElicitationResponse is the payload of elicitation/response: MCP's
// elicitation result.
type ElicitationResponse struct {
	// Action is ElicitationAccept, ElicitationDecline or ElicitationCancel.
	Action string `json:"action"`
	// Content is the filled form (accept in mode form): an object whose
	// members the requested schema allows.
	Content json.RawMessage `json:"content,omitempty"`
}

// ElicitationRefused is the payload of elicitation/refused: why the
// bridge did not use an answer (not a known open elicitation, an unknown
// action, content the form does not allow). The elicitation stays open.
type ElicitationRefused struct {
	Reason string `json:"reason"`
}

// ElicitationDone is the payload of elicitation/done: the elicitation is
// over, and how.
type ElicitationDone struct {
	// Status is ElicitationAnswered, ElicitationExpired or
	// ElicitationCancelled.
	Status string `json:"status"`
	// By is who answered, and Action their answer (answered only).
	By     string `json:"by,omitempty"`
	Action string `json:"action,omitempty"`
	// Reason says why it was cancelled.
	Reason string `json:"reason,omitempty"`
}
