package a2abridge_test

import (
	"context"
	"encoding/json"
	"fmt"
	"log"
	"net/http/httptest"
	"os"

	"github.com/mew-protocol/mew/a2a"
	"github.com/mew-protocol/mew/a2abridge"
	"github.com/mew-protocol/mew/client"
	"github.com/mew-protocol/mew/gateway"
	"github.com/mew-protocol/mew/internal/testutil"
	"github.com/mew-protocol/mew/participant"
)

// A remote A2A agent joins a space as the participant "helper", and a
// human calls its skill as a tool. The agent here is an a2a.Server; any
// agent that publishes a card with a JSON-RPC 1.0 interface is bridged
// the same way.
func Example() {
	card := &a2a.AgentCard{Name: "Greeter", Description: "Greets.", Version: "1.0.0",
		Skills: []a2a.AgentSkill{{ID: "greet", Name: "Greet", Description: "Greets someone.", Tags: []string{"demo"}}}}
	agent := httptest.NewUnstartedServer(nil)
	card.SupportedInterfaces = []a2a.AgentInterface{{URL: "http://" + agent.Listener.Addr().String() + "/",
		ProtocolBinding: a2a.BindingJSONRPC, ProtocolVersion: a2a.ProtocolVersion}}
	srv, err := a2a.NewServer(a2a.Options{Card: card, Executor: a2a.ExecutorFunc(func(_ context.Context, run *a2a.Run) error {
		return run.AddArtifact(a2a.Artifact{Parts: []a2a.Part{a2a.TextPart("Hello, " + run.Message.Text() + "!")}})
	})})
	if err != nil {
		log.Fatal(err)
	}
	agent.Config.Handler = srv
	agent.Start()
	defer agent.Close()
	defer srv.Close()

	dir, err := os.MkdirTemp("", "a2abridge-example")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(dir)
	gw, err := testutil.Serve(dir, `
space: {id: example}
participants:
  helper:
    tokens: [helper-token]
    capabilities: [{kind: chat}, {kind: "reasoning/*"}, {kind: mcp/response}, {kind: participant/status}]
  human:
    tokens: [human-token]
    capabilities: [{kind: "*"}]
`, gateway.Options{Audit: gateway.AuditOptions{Off: true}})
	if err != nil {
		log.Fatal(err)
	}
	defer gw.Stop()

	b, err := a2abridge.New(a2abridge.Options{
		URL:         agent.URL,
		Participant: participant.Options{Client: client.Options{Gateway: "ws://" + gw.Addr, Space: "example", Token: "helper-token"}},
	})
	if err != nil {
		log.Fatal(err)
	}
	ctx, stop := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- b.Run(ctx) }()
	<-b.Ready()

	human, err := participant.New(participant.Options{Client: client.Options{Gateway: "ws://" + gw.Addr, Space: "example", Token: "human-token"}})
	if err != nil {
		log.Fatal(err)
	}
	if err := human.Connect(ctx); err != nil {
		log.Fatal(err)
	}
	result, err := human.Request(ctx, "helper", map[string]any{
		"method": "tools/call",
		"params": map[string]any{"name": "greet", "arguments": map[string]any{"message": "Ada"}},
	})
	if err != nil {
		log.Fatal(err)
	}
	var res participant.ToolResult
	if err := json.Unmarshal(result, &res); err != nil {
		log.Fatal(err)
	}
	fmt.Println(res.Text())

	_ = human.Close()
	stop()
	if err := <-done; err != nil {
		log.Fatal(err)
	}
	// Output: Hello, Ada!
}
