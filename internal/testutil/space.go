package testutil

import (
	"fmt"
	"strings"
)

// SpaceYAML returns the space.yaml of the space id whose participants are
// members, each an entry as Member returns it, or one written out in YAML
// for a participant with more than a token and capabilities. The tests of
// most packages join the same few kinds of participant (a trusted human, a
// calculator, an agent that may call tools), so a space is built here
// rather than written out again in each.
func SpaceYAML(id string, members ...string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "space: {id: %s}\nparticipants:\n", id)
	for _, m := range members {
		b.WriteString(m)
	}
	return b.String()
}

// Member is the space.yaml entry of participant id, with the token
// "<id>-token" and the capabilities caps: each a kind pattern, such as
// "chat" or "stream/*", or a whole capability in YAML's flow style, such as
// `{kind: mcp/request, payload: {method: tools/list}}`.
func Member(id string, caps ...string) string {
	items := make([]string, len(caps))
	for i, c := range caps {
		if strings.HasPrefix(c, "{") {
			items[i] = c
		} else {
			items[i] = fmt.Sprintf("{kind: %q}", c)
		}
	}
	return fmt.Sprintf("  %s:\n    tokens: [%s-token]\n    capabilities: [%s]\n", id, id, strings.Join(items, ", "))
}
