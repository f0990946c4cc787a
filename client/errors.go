package client

import (
	"errors"
	"fmt"
)

// Sentinel errors, for errors.Is. The errors the client returns or reports
// wrap them with details.
var (
	// ErrClosed: the client has been closed.
	ErrClosed = errors.New("client: closed")
	// ErrNotConnected: Send or SendStreamData was called while the client has
	// no joined connection (before Connect, or while reconnecting).
	ErrNotConnected = errors.New("client: not connected")
	// ErrAlreadyConnected: Connect was called on a client that is connected,
	// connecting or reconnecting.
	ErrAlreadyConnected = errors.New("client: already connected")
	// ErrRefused: the gateway refused to let the client join. The error is a
	// *RefusedError with the gateway's code.
	ErrRefused = errors.New("client: join refused")
	// ErrReplaced: the gateway closed the connection with 4000 because
	// another connection of the same participant joined. The client does not
	// reconnect, or two copies of one participant would take turns replacing
	// each other.
	ErrReplaced = errors.New("client: replaced by another connection of the same participant")
	// ErrKicked: the gateway closed the connection with 4001 because the
	// participant was kicked out of the space. The client does not reconnect.
	ErrKicked = errors.New("client: kicked out of the space")
	// ErrSlowConsumer: the handlers fell Options.InboundQueue messages behind
	// the gateway, and the client dropped the connection rather than queue
	// more.
	ErrSlowConsumer = errors.New("client: handlers fell too far behind")
	// ErrReconnectFailed: Options.MaxReconnectAttempts attempts to reconnect
	// failed; the client has given up.
	ErrReconnectFailed = errors.New("client: reconnecting failed")
	// ErrHandlerPanic: a handler panicked. The panic was recovered.
	ErrHandlerPanic = errors.New("client: handler panicked")
	// ErrBadMessage: the gateway sent a message that is neither an envelope
	// nor a stream frame. It was dropped.
	ErrBadMessage = errors.New("client: malformed message from the gateway")
	// ErrNotFromGateway: an envelope of a kind only the gateway may send
	// (system/*, floor/yield; protocol.IsGatewayOnly) came from someone
	// else. It was dropped: it would otherwise pass for the gateway's
	// word, a welcome or a refusal or a presence that never happened.
	ErrNotFromGateway = errors.New("client: gateway-only envelope not from the gateway")
)

// RefusedError is the gateway's refusal of a join: the system/error it
// sent before closing the connection, or the close itself (code 1008, or
// an HTTP 401 or 403 answer to the upgrade) when it sent none.
// errors.Is(err, ErrRefused) reports whether an error is one.
type RefusedError struct {
	// Code is the system/error's error member, such as "unauthorized" or
	// "identity_mismatch" (see docs/gateway.md); for a bare close, its
	// reason, and for an HTTP refusal "unauthorized".
	Code string
	// Message is the gateway's explanation, for people. It may be empty.
	Message string
}

// Error returns "client: join refused: CODE: MESSAGE".
func (e *RefusedError) Error() string {
	switch {
	case e.Code == "" && e.Message == "":
		return ErrRefused.Error()
	case e.Message == "":
		return fmt.Sprintf("%s: %s", ErrRefused, e.Code)
	case e.Code == "":
		return fmt.Sprintf("%s: %s", ErrRefused, e.Message)
	}
	return fmt.Sprintf("%s: %s: %s", ErrRefused, e.Code, e.Message)
}

// Unwrap returns ErrRefused.
func (e *RefusedError) Unwrap() error { return ErrRefused }
