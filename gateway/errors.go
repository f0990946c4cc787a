package gateway

import (
	"errors"
	"net/http"

	"github.com/mew-protocol/mew/protocol"
)

// Values of the error member of the system/error envelopes the gateway sends
// when it refuses something. docs/gateway.md has the table with the HTTP
// status of each.
const (
	ErrorInvalidEnvelope     = "invalid_envelope"  // not JSON, not an object, or breaks an envelope rule
	ErrorTooLarge            = "too_large"         // over MaxMessageSize
	ErrorIdentityMismatch    = "identity_mismatch" // from is not the sender, or a runtime id taken by someone else
	ErrorReservedKind        = "reserved_kind"     // system/* or floor/yield sent by a participant
	ErrorCapabilityViolation = protocol.ErrorCapabilityViolation
	ErrorRateLimited         = "rate_limited"             // over the participant's rate limit
	ErrorUnauthorized        = protocol.ErrorUnauthorized // unknown token
	ErrorJoinRequired        = "join_required"            // first message of a connection without a bearer header is not a join
	ErrorUnauthorizedStream  = protocol.ErrorUnauthorizedStream
	// ErrorResumeGap tells a client that resumed (the resume query
	// parameter) that what it missed could not all be replayed: the
	// envelope it named is not in the node's history any more.
	ErrorResumeGap = "resume_gap"
)

// Close codes the gateway uses besides the standard ones.
const (
	// CloseReplaced closes a connection whose participant connected again
	// with the same token. Clients should not reconnect on it, or two copies
	// of one participant would replace each other forever.
	CloseReplaced = 4000

	// CloseUnresponsive is recorded for a peer that did not answer a ping in
	// time. The peer is not reading, so it is dropped without a close
	// handshake; the code keeps it apart from 1008 (refused) in logs.
	CloseUnresponsive = 4002

	// CloseRevoked closes the connection of a participant whose token was
	// revoked (its token file removed or rewritten) while it was connected.
	CloseRevoked = 4003
)

// ErrClosed is returned by a Server's methods after Close.
var ErrClosed = errors.New("gateway: server closed")

// refusal is why the gateway did not accept something a participant sent.
type refusal struct {
	code     string
	message  string
	status   int    // HTTP status for the HTTP API
	ref      string // the offending envelope's own id, for correlation_id
	envelope []byte // the offending envelope, when it could be decoded, for the audit log
	// fields appends extra members (comma first) to the error payload.
	fields func(dst []byte) []byte
}

func (r *refusal) Error() string { return r.code + ": " + r.message }

func refuse(code, message string) *refusal {
	return &refusal{code: code, message: message, status: statusFor(code)}
}

func statusFor(code string) int {
	switch code {
	case ErrorTooLarge:
		return http.StatusRequestEntityTooLarge
	case ErrorIdentityMismatch, ErrorCapabilityViolation:
		return http.StatusForbidden
	case ErrorRateLimited:
		return http.StatusTooManyRequests
	case ErrorUnauthorized:
		return http.StatusUnauthorized
	case ErrorParticipantNotFound, protocol.ErrorStreamNotFound:
		return http.StatusNotFound
	case ErrorNotStreamOwner, ErrorNotApprover:
		return http.StatusForbidden
	case ErrorTooManyStreams:
		return http.StatusTooManyRequests
	case ErrorPaused, ErrorShutdown, ErrorApprovalRequired, ErrorApprovalMismatch:
		return http.StatusConflict
	default:
		// reserved_kind is 400, as the reference answers system/register.
		return http.StatusBadRequest
	}
}
