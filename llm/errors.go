package llm

import (
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"
)

// Errors a caller can branch on with [errors.Is]. A call the caller cancels
// returns an error that wraps the context's own error ([context.Canceled] or
// [context.DeadlineExceeded]) instead.
var (
	// ErrUnauthorized is a refused API key: HTTP 401, or 403 for a key
	// that may not use the model. Retrying will not help.
	ErrUnauthorized = errors.New("llm: unauthorized")
	// ErrNotFound is an unknown model or endpoint (HTTP 404): check the
	// model name and the base URL.
	ErrNotFound = errors.New("llm: not found")
	// ErrRateLimited is HTTP 429 still answered after the retries; the
	// [*APIError] may say how long to wait.
	ErrRateLimited = errors.New("llm: rate limited")
	// ErrTimeout is an attempt that took longer than the configured
	// timeout (for a stream: a wait for the next piece).
	ErrTimeout = errors.New("llm: timed out")
	// ErrBadResponse is an answer that is not what the API promises:
	// malformed JSON, no choices, a stream with no chunks.
	ErrBadResponse = errors.New("llm: bad response")
	// ErrTooLarge is an answer larger than Config.MaxResponseBytes.
	ErrTooLarge = errors.New("llm: answer too large")
)

// APIError is an error answer from the server: an HTTP error status, or an
// error event in the middle of a stream. Depending on Status it matches
// [ErrUnauthorized] (401, 403), [ErrNotFound] (404) or [ErrRateLimited] (429)
// under [errors.Is].
type APIError struct {
	// Status is the HTTP status code; 0 for an error event in a stream
	// that names none.
	Status int
	// Message is the server's explanation, or the start of its body when
	// it sent no OpenAI-shaped error.
	Message string
	// Type and Code are the error's "type" and "code" when the server
	// sent them (for example "invalid_request_error", "model_not_found").
	Type, Code string
	// RetryAfter is how long the server asked the client to wait, when it
	// said (Retry-After or Retry-After-Ms headers).
	RetryAfter time.Duration
}

// Error describes the error: status, type and message.
func (e *APIError) Error() string {
	var b strings.Builder
	switch {
	case e.Status > 0:
		fmt.Fprintf(&b, "HTTP %d", e.Status)
		if t := http.StatusText(e.Status); t != "" {
			b.WriteString(" " + t)
		}
	default:
		b.WriteString("error event in the stream")
	}
	if e.Type != "" || e.Code != "" {
		b.WriteString(" (")
		b.WriteString(strings.Trim(e.Type+", "+e.Code, ", "))
		b.WriteString(")")
	}
	if e.Message != "" {
		b.WriteString(": " + e.Message)
	}
	if e.RetryAfter > 0 {
		fmt.Fprintf(&b, " (retry after %s)", e.RetryAfter)
	}
	return b.String()
}

// Is reports whether target is the sentinel error for e's status.
func (e *APIError) Is(target error) bool {
	switch target {
	case ErrUnauthorized:
		return e.Status == http.StatusUnauthorized || e.Status == http.StatusForbidden
	case ErrNotFound:
		return e.Status == http.StatusNotFound
	case ErrRateLimited:
		return e.Status == http.StatusTooManyRequests
	}
	return false
}
