package participant

import (
	"encoding/json"
	"strconv"

	"github.com/mew-protocol/mew/protocol"
)

// The errors of requests and proposals.

// RPCError is a JSON-RPC error: the error member of an mcp/response. Request
// and Fulfill return it when the target answered with an error.
type RPCError struct {
	Code    int             `json:"code"`
	Message string          `json:"message"`
	Data    json.RawMessage `json:"data,omitempty"`
}

// Error returns "rpc error CODE: MESSAGE".
func (e *RPCError) Error() string {
	return "rpc error " + strconv.Itoa(e.Code) + ": " + e.Message
}

// RejectedError is a rejection of a proposal (mcp/reject): Request returns
// it as soon as the rejection arrives.
type RejectedError struct {
	ProposalID string // the proposal's envelope id
	By         string // who rejected it
	Reason     string // the reject's reason, "unknown" when it gave none
	Message    string // the words the person gave with it (the reject's message), if any
}

// Error returns "Proposal rejected by BY: REASON", the reference SDK's text,
// followed by ` ("MESSAGE")` when the person gave words.
func (e *RejectedError) Error() string {
	s := "Proposal rejected by " + e.By + ": " + e.Reason
	if e.Message != "" {
		s += ` ("` + e.Message + `")`
	}
	return s
}

// GatewayError is the gateway's refusal (system/error) of an envelope that
// Request or Fulfill sent. errors.Is(err, ErrNotAllowed) holds for a
// capability violation and errors.Is(err, ErrPaused) for a paused sender.
type GatewayError struct {
	Code    string // the system/error's error member, e.g. "capability_violation"
	Message string // its explanation, for people; may be empty
}

// Error returns "participant: refused by the gateway: CODE: MESSAGE".
func (e *GatewayError) Error() string {
	s := "participant: refused by the gateway: " + e.Code
	if e.Message != "" {
		s += ": " + e.Message
	}
	return s
}

// Unwrap returns ErrNotAllowed or ErrPaused when the code means that.
func (e *GatewayError) Unwrap() error {
	switch e.Code {
	case protocol.ErrorCapabilityViolation:
		return ErrNotAllowed
	case "paused":
		return ErrPaused
	}
	return nil
}
