package participant_test

import (
	"context"
	"encoding/json"
	"fmt"
	"log"
	"os"
	"time"

	"github.com/mew-protocol/mew/client"
	"github.com/mew-protocol/mew/gateway"
	"github.com/mew-protocol/mew/internal/testutil"
	"github.com/mew-protocol/mew/participant"
)

// exampleSpaceYAML is the space of the examples: a trusted human, a
// calculator that serves tools, and an agent that may only propose tool
// calls.
var exampleSpaceYAML = testutil.SpaceYAML("example",
	testutil.Member("human", "*"),
	testutil.Member("calc", "chat"),
	testutil.Member("agent", "chat", "mcp/proposal", "mcp/withdraw"),
)

// exampleGateway starts a gateway for exampleSpaceYAML on a free port of
// 127.0.0.1 and returns its ws:// URL and a function that stops it.
func exampleGateway() (url string, stop func()) {
	dir, err := os.MkdirTemp("", "mew-example-")
	if err != nil {
		log.Fatal(err)
	}
	s, err := testutil.Serve(dir, exampleSpaceYAML, gateway.Options{Audit: gateway.AuditOptions{Off: true}})
	if err != nil {
		log.Fatal(err)
	}
	return "ws://" + s.Addr, func() {
		_ = s.Stop()
		_ = os.RemoveAll(dir)
	}
}

// exampleJoin connects a participant of the example space that serves
// tools.
func exampleJoin(ctx context.Context, gatewayURL, token string, tools ...participant.Tool) *participant.Participant {
	p, err := participant.New(participant.Options{
		Client: client.Options{Gateway: gatewayURL, Space: "example", Token: token},
	})
	if err != nil {
		log.Fatal(err)
	}
	for _, t := range tools {
		if err := p.RegisterTool(t); err != nil {
			log.Fatal(err)
		}
	}
	if err := p.Connect(ctx); err != nil {
		log.Fatal(err)
	}
	for len(p.Capabilities()) == 0 { // the welcome's handlers may still be running
		time.Sleep(time.Millisecond)
	}
	return p
}

// exampleAdd is the calculator's tool.
var exampleAdd = testutil.ArithTool("add", "Add two numbers", func(a, b float64) float64 { return a + b })

// A calculator serves an add tool; a human calls it. Arguments that do not
// fit the tool's input schema are refused before the tool runs.
func ExampleParticipant_RegisterTool() {
	gw, stop := exampleGateway()
	defer stop()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()

	calc := exampleJoin(ctx, gw, "calc-token")
	defer calc.Close()
	if err := calc.RegisterTool(exampleAdd); err != nil {
		log.Fatal(err)
	}

	human := exampleJoin(ctx, gw, "human-token")
	defer human.Close()
	result, err := human.Request(ctx, "calc", map[string]any{
		"method": "tools/call",
		"params": map[string]any{"name": "add", "arguments": map[string]any{"a": 5, "b": 3}},
	})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(string(result))

	_, err = human.Request(ctx, "calc", map[string]any{
		"method": "tools/call",
		"params": map[string]any{"name": "add", "arguments": map[string]any{"a": "five", "b": 3}},
	})
	fmt.Println(err)
	// Output:
	// {"content":[{"type":"text","text":"8"}]}
	// rpc error -32602: Invalid arguments for tool add: a: want a number, got a string ("five")
}

// The agent may not call tools itself, so its Request becomes a proposal.
// The human sees it, carries it out with Fulfill, and the agent's Request
// returns the calculator's answer.
func ExampleParticipant_Fulfill() {
	gw, stop := exampleGateway()
	defer stop()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()

	calc := exampleJoin(ctx, gw, "calc-token", exampleAdd)
	defer calc.Close()
	human := exampleJoin(ctx, gw, "human-token")
	defer human.Close()
	agent := exampleJoin(ctx, gw, "agent-token")
	defer agent.Close()

	// OnProposal handlers must not block: hand the proposal over.
	proposals := make(chan *participant.Proposal, 1)
	human.OnProposal(func(pr *participant.Proposal) { proposals <- pr })

	answer := make(chan *participant.ToolResult, 1)
	go func() {
		raw, err := agent.Request(ctx, "calc", map[string]any{
			"method": "tools/call",
			"params": map[string]any{"name": "add", "arguments": map[string]any{"a": 20, "b": 22}},
		})
		if err != nil {
			log.Fatal(err)
		}
		var r participant.ToolResult
		if err := json.Unmarshal(raw, &r); err != nil {
			log.Fatal(err)
		}
		answer <- &r
	}()

	pr := <-proposals
	fmt.Printf("%s proposes %s %s to %v\n", pr.From(), pr.Method, pr.ToolName(), pr.To())
	if _, err := human.Fulfill(ctx, pr); err != nil {
		log.Fatal(err)
	}
	fmt.Println("agent got", (<-answer).Text())
	// Output:
	// agent proposes tools/call add to [calc]
	// agent got 42
}

// A proposal that the human declines fails the proposer's Request at once.
func ExampleParticipant_Reject() {
	gw, stop := exampleGateway()
	defer stop()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()

	human := exampleJoin(ctx, gw, "human-token")
	defer human.Close()
	agent := exampleJoin(ctx, gw, "agent-token")
	defer agent.Close()

	human.OnProposal(func(pr *participant.Proposal) {
		go func() { _ = human.Reject(ctx, pr, "unsafe") }()
	})
	_, err := agent.Request(ctx, "calc", map[string]any{
		"method": "tools/call",
		"params": map[string]any{"name": "delete_everything"},
	})
	fmt.Println(err)
	// Output:
	// Proposal rejected by human: unsafe
}
