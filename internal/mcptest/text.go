package mcptest

import (
	"strings"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Text is the text items of a tool result, one a line: what most tests of
// a tool call compare (other items, such as pictures, are left out).
func Text(r *mcp.CallToolResult) string {
	var texts []string
	for _, c := range r.Content {
		if tc, ok := c.(*mcp.TextContent); ok {
			texts = append(texts, tc.Text)
		}
	}
	return strings.Join(texts, "\n")
}
