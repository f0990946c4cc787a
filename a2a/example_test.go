package a2a_test

import (
	"context"
	"fmt"
	"net/http/httptest"

	"github.com/mew-protocol/mew/a2a"
)

// An agent that greets, served and called over A2A's JSON-RPC binding.
func Example() {
	srv, err := a2a.NewServer(a2a.Options{
		Card: &a2a.AgentCard{Name: "greeter", Description: "Greets.", Version: "1.0.0",
			DefaultInputModes: []string{"text/plain"}, DefaultOutputModes: []string{"text/plain"},
			Skills: []a2a.AgentSkill{{ID: "greet", Name: "Greet", Description: "Says hello.", Tags: []string{"demo"}}}},
		Executor: a2a.ExecutorFunc(func(ctx context.Context, run *a2a.Run) error {
			return run.AddArtifact(a2a.Artifact{Parts: []a2a.Part{a2a.TextPart("Hello, " + run.Message.Text() + "!")}})
		}),
	})
	if err != nil {
		panic(err)
	}
	hs := httptest.NewServer(srv)
	defer hs.Close()
	defer srv.Close()

	ctx := context.Background()
	card, err := a2a.FetchCard(ctx, hs.URL, a2a.ClientOptions{})
	if err != nil {
		panic(err)
	}
	fmt.Println(card.Name, card.Skills[0].ID)
	c := a2a.NewClient(hs.URL+"/", a2a.ClientOptions{})
	res, err := c.SendMessage(ctx, a2a.SendMessageRequest{Message: &a2a.Message{
		MessageID: "m1", Role: a2a.RoleUser, Parts: []a2a.Part{a2a.TextPart("Ada")}}})
	if err != nil {
		panic(err)
	}
	fmt.Println(res.Task.Status.State, res.Task.Artifacts[0].Text())
	// Output:
	// greeter greet
	// TASK_STATE_COMPLETED Hello, Ada!
}
