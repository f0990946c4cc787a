package mcpserver

import (
	"context"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mew-protocol/mew/internal/mcpserve"
)

// serverOptions are the options of every server here: the revisions mew
// speaks (mcpserve.Options), the instructions, and completion/complete.
func serverOptions(instructions string) *mcp.ServerOptions {
	return mcpserve.Options(&mcp.ServerOptions{Instructions: instructions, CompletionHandler: complete})
}

// complete answers completion/complete. These servers have no prompts and
// no resource templates, so no argument has values to offer: the answer is
// an empty list, as the spec allows, rather than "method not found" to a
// client that asks because the capability is the usual one to declare.
func complete(_ context.Context, _ *mcp.CompleteRequest) (*mcp.CompleteResult, error) {
	return &mcp.CompleteResult{Completion: mcp.CompletionResultDetails{Values: []string{}}}, nil
}
