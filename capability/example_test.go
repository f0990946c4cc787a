package capability_test

import (
	"encoding/json"
	"fmt"

	"github.com/mew-protocol/mew/capability"
)

func Example() {
	// An agent that may chat, propose anything, and call read-only tools itself.
	set, err := capability.Compile([]json.RawMessage{
		json.RawMessage(`{"kind":"chat"}`),
		json.RawMessage(`{"kind":"mcp/proposal"}`),
		json.RawMessage(`{"kind":"mcp/request","payload":{"method":"tools/call","params":{"name":"read_*"}}}`),
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	read := []byte(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"read_file"}}`)
	write := []byte(`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"write_file"}}`)

	if i, ok := set.Match("mcp/request", read); ok {
		fmt.Printf("read_file allowed by %s\n", set.Pattern(i))
	}
	fmt.Println("write_file allowed:", set.Allows("mcp/request", write))
	fmt.Println("proposing write_file allowed:", set.Allows("mcp/proposal", write))
	// Output:
	// read_file allowed by {"kind":"mcp/request","payload":{"method":"tools/call","params":{"name":"read_*"}}}
	// write_file allowed: false
	// proposing write_file allowed: true
}

func ExampleCompile_error() {
	_, err := capability.Compile([]json.RawMessage{
		json.RawMessage(`{"kind":"mcp/request","payload":{"params":{"arguments":{"query":"/^SELECT (/"}}}}`),
	})
	fmt.Println(err)
	// Output:
	// capability [0].payload.params.arguments.query: invalid regular expression: error parsing regexp: missing closing ): `^SELECT (`
}
