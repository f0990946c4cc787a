// Command travel-mcp is the MCP server of the travel-desk example (see
// package travelmcp), over standard input and output:
//
//	go build -o bin/travel-mcp ./examples/travel-desk/travel-mcp
package main

import (
	"os"

	"github.com/mew-protocol/mew/examples/travel-desk/travelmcp"
)

func main() {
	os.Exit(travelmcp.Main())
}
