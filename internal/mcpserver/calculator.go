package mcpserver

import (
	"context"
	"errors"
	"strconv"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Version is the version the servers report.
const Version = "1.0.0"

type operands struct {
	A float64 `json:"a" jsonschema:"the first number"`
	B float64 `json:"b" jsonschema:"the second number"`
}

// text is a tool result holding one text.
func text(s string) *mcp.CallToolResult {
	return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: s}}}
}

// number writes a result the way people read it: 5, 0.5, 1e+21.
func number(f float64) string { return strconv.FormatFloat(f, 'g', -1, 64) }

// Calculator returns the calculator server.
func Calculator() *mcp.Server {
	s := mcp.NewServer(&mcp.Implementation{Name: "mew-calculator", Version: Version}, serverOptions(""))
	for _, op := range []struct {
		name, desc string
		f          func(a, b float64) (float64, error)
	}{
		{"add", "Add two numbers: a + b", func(a, b float64) (float64, error) { return a + b, nil }},
		{"subtract", "Subtract b from a: a - b", func(a, b float64) (float64, error) { return a - b, nil }},
		{"multiply", "Multiply two numbers: a × b", func(a, b float64) (float64, error) { return a * b, nil }},
		{"divide", "Divide a by b: a ÷ b", func(a, b float64) (float64, error) {
			if b == 0 {
				return 0, errors.New("division by zero")
			}
			return a / b, nil
		}},
	} {
		mcp.AddTool(s, &mcp.Tool{Name: op.name, Description: op.desc},
			func(_ context.Context, _ *mcp.CallToolRequest, in operands) (*mcp.CallToolResult, any, error) {
				r, err := op.f(in.A, in.B)
				if err != nil {
					return nil, nil, err
				}
				return text(number(r)), nil, nil
			})
	}
	return s
}
