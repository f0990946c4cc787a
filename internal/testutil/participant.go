package testutil

import (
	"context"
	"testing"
	"time"

	"github.com/mew-protocol/mew/client"
	"github.com/mew-protocol/mew/participant"
)

// JoinParticipant connects a participant of g's space with token, after
// registering tools, waits until its welcome handlers have run (discovery
// and stream bookkeeping start there), and closes it when the test ends.
// opts.Client's gateway, space and token are filled in.
func JoinParticipant(t testing.TB, g *Gateway, token string, opts participant.Options, tools ...participant.Tool) *participant.Participant {
	t.Helper()
	opts.Client.Gateway = "ws://" + g.Addr
	opts.Client.Space = g.Config.Space.ID
	opts.Client.Token = token
	p, err := participant.New(opts)
	if err != nil {
		t.Fatal(err)
	}
	for _, tool := range tools {
		if err := p.RegisterTool(tool); err != nil {
			t.Fatal(err)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := p.Connect(ctx); err != nil {
		t.Fatalf("connect with %s…: %v", token[:min(len(token), 4)], err)
	}
	t.Cleanup(func() { _ = p.Close() })
	WaitReady(t, p.Client())
	return p
}

// WaitReady waits until c's welcome handlers have run.
func WaitReady(t testing.TB, c *client.Client) {
	t.Helper()
	for deadline := time.Now().Add(5 * time.Second); c.State() != client.Ready; {
		if time.Now().After(deadline) {
			t.Fatalf("%s never became ready", c.ID())
		}
		time.Sleep(2 * time.Millisecond)
	}
}
