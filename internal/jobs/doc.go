// Package jobs holds Group: goroutines their owner starts on behalf of
// others (a handler's work), refuses once it is stopping, and waits for
// before it returns, each given the group's context. The MCP bridge and the
// A2A bridge run their request handlers' work in one. Sleep is the pause
// of a retry loop that ends with its owner's context.
package jobs
