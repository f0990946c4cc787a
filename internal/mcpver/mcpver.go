package mcpver

import (
	"fmt"
	"regexp"
	"slices"
	"strings"
)

// The revisions mew speaks.
const (
	// Latest is the revision mew offers as a client and answers as a server
	// when the client asks for one it does not speak.
	Latest = "2025-11-25"
	// Oldest is the first dated revision, which undated and pre-release
	// servers are spoken to as.
	Oldest = "2024-11-05"
)

// supported lists the revisions mew speaks, newest first.
var supported = []string{Latest, "2025-06-18", "2025-03-26", Oldest}

// Supported returns the revisions mew speaks, newest first. The slice is a
// copy.
func Supported() []string { return slices.Clone(supported) }

// dated matches an MCP revision label, YYYY-MM-DD.
var dated = regexp.MustCompile(`^\d{4}-\d{2}-\d{2}$`)

// Negotiate returns the revision a server answers to a client's
// initialize that asked for requested: requested when mew speaks it, else
// Latest.
func Negotiate(requested string) string {
	if slices.Contains(supported, requested) {
		return requested
	}
	return Latest
}

// Accept returns the revision mew speaks with a server that answered
// initialize with answered (mew having offered Latest): answered when mew
// speaks it; Oldest for an undated label (such as the reference's
// "0.1.0") or a date before Oldest, which are pre-release revisions;
// otherwise an error naming the revision and the ones mew speaks.
func Accept(answered string) (string, error) {
	switch {
	case slices.Contains(supported, answered):
		return answered, nil
	case answered == "":
		return "", fmt.Errorf("mcp: the server's initialize result has no protocolVersion (mew speaks %s)", strings.Join(supported, ", "))
	case !dated.MatchString(answered) || answered < Oldest:
		return Oldest, nil
	}
	return "", fmt.Errorf("mcp: the server speaks protocol revision %q, which mew does not (mew speaks %s and offered %s)", answered, strings.Join(supported, ", "), Latest)
}
