package toolsagent_test

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/mew-protocol/mew/llm"
	"github.com/mew-protocol/mew/toolsagent"
)

// The spec's book_flight, as a definition: its prompt filled from a call's
// arguments, previewed from incomplete ones, and run by an agent (here
// with the offline rule-based model, and no tools to call).
func Example() {
	def, err := toolsagent.Parse([]byte(`
name: flights
version: 1.0.0
description: Books flights.
mode: tools
tools:
  - name: book_flight
    description: Books a flight ticket for a user.
    parameters:
      type: object
      properties:
        destination:
          type: string
          description: The destination city and country (e.g., 'Paris, France').
        departure_date:
          type: string
          description: The desired date of departure, in YYYY-MM-DD format.
      required: [destination, departure_date]
    prompt: The user wants to book a flight to {destination} on {departure_date}, please book accordingly
`))
	if err != nil {
		fmt.Println(err)
		return
	}
	tool, _ := def.Tool("book_flight")
	prompt, err := tool.Fill(json.RawMessage(`{"destination": "Paris, France", "departure_date": "2026-12-01"}`))
	fmt.Println(prompt, err)

	preview, err := tool.Preview(json.RawMessage(`{"destination": "Paris, France"}`))
	fmt.Println(preview)
	fmt.Println(err)

	a, err := toolsagent.New(context.Background(), toolsagent.Options{Definition: def, Provider: llm.NewOffline()})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer a.Close()
	_, err = a.Call(context.Background(), "book_flight", json.RawMessage(`{"destination": "Oslo"}`), toolsagent.CallOptions{})
	fmt.Println(err)
	res, err := a.Call(context.Background(), "book_flight", json.RawMessage(`{"destination": "Oslo", "departure_date": "2026-12-01"}`), toolsagent.CallOptions{})
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(res.Prompt)
	fmt.Println(len(res.Tools), "tools;", res.Steps, "model call")
	// Output:
	// The user wants to book a flight to Paris, France on 2026-12-01, please book accordingly <nil>
	// The user wants to book a flight to Paris, France on {departure_date}, please book accordingly
	// toolsagent: invalid arguments for book_flight: departure_date: required
	// toolsagent: invalid arguments for book_flight: departure_date: required
	// The user wants to book a flight to Oslo on 2026-12-01, please book accordingly
	// 0 tools; 1 model call
}
