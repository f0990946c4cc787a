package testutil

import (
	"context"
	"testing"
	"time"

	"github.com/mew-protocol/mew/agent"
	"github.com/mew-protocol/mew/client"
	"github.com/mew-protocol/mew/llm"
	"github.com/mew-protocol/mew/participant"
)

// StartAgent connects an agent of g's space with token, thinking with
// provider as cfg says, waits until its welcome handlers have run, and
// closes it when the test ends.
func StartAgent(t testing.TB, g *Gateway, token string, provider llm.Provider, cfg agent.Config) *agent.Agent {
	t.Helper()
	a, err := agent.New(agent.Options{
		Participant: participant.Options{Client: client.Options{Gateway: "ws://" + g.Addr, Space: g.Config.Space.ID, Token: token}},
		Provider:    provider,
		Config:      cfg,
	})
	if err != nil {
		t.Fatal(err)
	}
	connectReady(t, a, a.Participant().Client(), token, 20*time.Second)
	return a
}

// WaitTools waits until a has discovered at least one tool of the space,
// and fails the test when it has none after 10 s.
func WaitTools(t testing.TB, a *agent.Agent) {
	t.Helper()
	p := a.Participant()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	for len(p.AvailableTools()) == 0 {
		if err := p.WaitForPendingDiscoveries(ctx); err != nil {
			t.Fatalf("%s discovered no tools: %v (%v)", p.ID(), err, p.DiscoveryStatus())
		}
		if ctx.Err() != nil {
			t.Fatalf("%s discovered no tools: %v", p.ID(), p.DiscoveryStatus())
		}
		time.Sleep(10 * time.Millisecond)
	}
}
