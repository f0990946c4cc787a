package mcpver

import (
	"errors"
	"fmt"
	"regexp"
	"slices"
	"strings"
)

// The revisions mew speaks.
const (
	// Latest is the newest revision mew speaks, the one it offers first as
	// a client (with server/discover).
	Latest = Stateless
	// Stateless is the first stateless revision: server/discover instead
	// of initialize, the revision and capabilities in each request,
	// InputRequiredResult instead of server-to-client requests.
	Stateless = "2026-07-28"
	// LatestSession is the newest revision agreed on with initialize: what
	// mew offers in initialize, and answers to a client's initialize that
	// asks for one it does not speak.
	LatestSession = "2025-11-25"
	// Oldest is the first dated revision, which undated and pre-release
	// servers are spoken to as.
	Oldest = "2024-11-05"
)

// supported lists the revisions mew speaks, newest first.
var supported = []string{Stateless, LatestSession, "2025-06-18", "2025-03-26", Oldest}

// ErrUnsupported is wrapped by the errors that refuse a revision.
var ErrUnsupported = errors.New("mcp: unsupported protocol revision")

// Supported returns the revisions mew speaks, newest first. The slice is a
// copy.
func Supported() []string { return slices.Clone(supported) }

// Sessions returns the session revisions mew speaks (those agreed on with
// initialize), newest first.
func Sessions() []string {
	return slices.DeleteFunc(Supported(), IsStateless)
}

// Speaks reports whether mew speaks revision v.
func Speaks(v string) bool { return slices.Contains(supported, v) }

// dated matches an MCP revision label, YYYY-MM-DD.
var dated = regexp.MustCompile(`^\d{4}-\d{2}-\d{2}$`)

// IsStateless reports whether v is a dated revision of the stateless
// family (Stateless or later), which has no initialize.
func IsStateless(v string) bool { return dated.MatchString(v) && v >= Stateless }

// list is the revisions mew speaks, for messages.
func list() string { return strings.Join(supported, ", ") }

// Negotiate returns the revision a server answers to a client's
// initialize that asked for requested: requested when it is a session
// revision mew speaks, else LatestSession.
func Negotiate(requested string) string {
	if Speaks(requested) && !IsStateless(requested) {
		return requested
	}
	return LatestSession
}

// Accept returns the revision mew speaks with a server that answered
// initialize with answered (mew having offered LatestSession): answered
// when it is a session revision mew speaks; Oldest for an undated label
// (such as the reference's "0.1.0") or a date before Oldest, which are
// pre-release revisions; otherwise an error wrapping ErrUnsupported that
// names the revision and the ones mew speaks.
func Accept(answered string) (string, error) {
	switch {
	case Speaks(answered) && !IsStateless(answered):
		return answered, nil
	case answered == "":
		return "", fmt.Errorf("%w: the server's initialize result has no protocolVersion (mew speaks %s)", ErrUnsupported, list())
	case Speaks(answered): // a stateless revision mew speaks
		return "", fmt.Errorf("%w: the server answered initialize with %q, a stateless revision, which has no initialize (mew offered %s in initialize and asks server/discover for %s)", ErrUnsupported, answered, LatestSession, Stateless)
	case !dated.MatchString(answered) || answered < Oldest:
		return Oldest, nil
	}
	return "", fmt.Errorf("%w: the server speaks protocol revision %q, which mew does not (mew speaks %s and offered %s)", ErrUnsupported, answered, list(), LatestSession)
}

// Discover returns the newest stateless revision that mew and a server
// whose server/discover listed offered both speak, and false when there is
// none (the client then falls back to initialize).
func Discover(offered []string) (string, bool) {
	for _, v := range supported {
		if IsStateless(v) && slices.Contains(offered, v) {
			return v, true
		}
	}
	return "", false
}

// Refusal is the error for a server that, asked with server/discover,
// listed only revisions mew does not speak (and then failed initialize,
// or answered it with a revision mew does not speak either).
func Refusal(offered []string) error {
	return fmt.Errorf("%w: the server speaks only %s; mew speaks %s", ErrUnsupported, quoteAll(offered), list())
}

// quoteAll quotes each revision, so an empty or odd label is seen as such.
func quoteAll(vs []string) string {
	if len(vs) == 0 {
		return "no revision"
	}
	q := make([]string, len(vs))
	for i, v := range vs {
		q[i] = fmt.Sprintf("%q", v)
	}
	return strings.Join(q, ", ")
}
