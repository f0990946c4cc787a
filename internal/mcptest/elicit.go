package mcptest

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// AskSchema is the form the "ask" tool requests: a name (required) and a
// number of seats (1 to 9, default 1).
const AskSchema = `{"type":"object","properties":{"name":{"type":"string","title":"Name"},"seats":{"type":"integer","minimum":1,"maximum":9,"default":1}},"required":["name"]}`

// AskURL is the link the "ask_url" tool asks the user to open.
const AskURL = "https://example.com/consent?x=1"

// addElicitingTools adds "ask" (a form elicitation) and "ask_url" (a URL
// elicitation), both through askTool.
func addElicitingTools(s *mcp.Server) {
	obj := json.RawMessage(`{"type":"object"}`)
	s.AddTool(&mcp.Tool{Name: "ask", Description: "Ask the user for a name and seats", InputSchema: obj},
		askTool("form", &mcp.ElicitParams{Mode: "form", Message: "Who is travelling?", RequestedSchema: json.RawMessage(AskSchema)}))
	s.AddTool(&mcp.Tool{Name: "ask_url", Description: "Ask the user to open a link", InputSchema: obj},
		askTool("link", &mcp.ElicitParams{Mode: "url", Message: "Please give consent", URL: AskURL, ElicitationID: "consent-1"}))
}

// askTool is a tool handler that elicits params under the input id and
// answers with what the user chose: "accept {json}", "decline" or
// "cancel". It returns its input request in the result, the 2026-07-28 way;
// for a client of an older revision the go-sdk sends it as
// elicitation/create and calls the tool again with the answer, so one
// handler serves every revision.
func askTool(id string, params *mcp.ElicitParams) mcp.ToolHandler {
	return func(_ context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		answer, ok := req.Params.InputResponses[id].(*mcp.ElicitResult)
		if !ok {
			return &mcp.CallToolResult{InputRequests: mcp.InputRequestMap{id: params}}, nil
		}
		text := answer.Action
		if answer.Action == "accept" && answer.Content != nil {
			b, err := json.Marshal(answer.Content)
			if err != nil {
				return nil, fmt.Errorf("mcptest: %w", err)
			}
			text += " " + string(b)
		}
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: text}}}, nil
	}
}
