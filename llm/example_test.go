package llm_test

import (
	"context"
	"encoding/json"
	"fmt"
	"log"

	"github.com/mew-protocol/mew/llm"
)

// A tool loop: ask, run the tools the model calls, give it their results,
// ask again until it answers. The offline provider stands in for a model
// here; any provider works the same way.
func Example() {
	ctx := context.Background()
	provider := llm.NewOffline()
	tools := []llm.Tool{{
		Name:        "calculator/add",
		Description: "Add two numbers",
		Parameters:  json.RawMessage(`{"type":"object","properties":{"a":{"type":"number"},"b":{"type":"number"}},"required":["a","b"]}`),
	}}
	msgs := []llm.Message{{Role: llm.RoleUser, Content: "What is 2 plus 3?"}}
	for range 5 {
		resp, err := provider.Complete(ctx, llm.Request{Messages: msgs, Tools: tools})
		if err != nil {
			log.Fatal(err)
		}
		if len(resp.ToolCalls) == 0 {
			fmt.Println(resp.Content)
			return
		}
		msgs = append(msgs, llm.Message{Role: llm.RoleAssistant, Content: resp.Content, ToolCalls: resp.ToolCalls})
		for _, call := range resp.ToolCalls {
			var args struct{ A, B float64 }
			result := "error: arguments: "
			if err := json.Unmarshal(call.Arguments, &args); err != nil {
				result += err.Error()
			} else {
				fmt.Printf("calling %s(%s)\n", call.Name, call.Arguments)
				result = fmt.Sprint(args.A + args.B)
			}
			msgs = append(msgs, llm.Message{Role: llm.RoleTool, ToolCallID: call.ID, Content: result})
		}
	}
	// Output:
	// calling calculator/add({"a":2,"b":3})
	// 2 + 3 = 5. (offline model)
}

// FromEnv chooses the provider the way mew's commands do: with no key and no
// base URL configured, the offline one.
func ExampleFromEnv() {
	noEnv := func(string) string { return "" }
	p, err := llm.FromEnv(noEnv, llm.Config{})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(p.Name())

	p, err = llm.FromEnv(noEnv, llm.Config{BaseURL: "http://localhost:11434/v1", Model: "llama3.2"})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(p.Name())
	// Output:
	// offline
	// openai
}
