package agent_test

import (
	"context"
	"log"

	"github.com/mew-protocol/mew/agent"
	"github.com/mew-protocol/mew/client"
	"github.com/mew-protocol/mew/llm"
	"github.com/mew-protocol/mew/participant"
)

// An agent that answers the chats addressed to it with the model that the
// environment configures (OPENAI_API_KEY, OPENAI_BASE_URL, OPENAI_MODEL; the
// offline model without them), showing its reasoning.
func Example() {
	provider, err := llm.FromEnv(nil, llm.Config{})
	if err != nil {
		log.Fatal(err)
	}
	a, err := agent.New(agent.Options{
		Participant: participant.Options{Client: client.Options{
			Gateway: "ws://127.0.0.1:8080", Space: "demo", Token: "agent-token", Reconnect: true,
		}},
		Provider: provider,
		Config:   agent.Config{Name: "helper", ReasoningEnabled: true},
	})
	if err != nil {
		log.Fatal(err)
	}
	defer a.Close()
	if err := a.Connect(context.Background()); err != nil {
		log.Fatal(err)
	}
	select {} // answer until the program is stopped
}
