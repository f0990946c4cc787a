package testutil

import (
	"context"
	"encoding/json"
	"fmt"
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
	connectReady(t, p, p.Client(), token, 10*time.Second)
	return p
}

// connector is what connectReady connects: a participant, or an agent.
type connector interface {
	Connect(ctx context.Context) error
	Close() error
}

// connectReady connects j, whose client is c, with token within d, closes
// it when the test ends and waits until c's welcome handlers have run.
func connectReady(t testing.TB, j connector, c *client.Client, token string, d time.Duration) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), d)
	defer cancel()
	if err := j.Connect(ctx); err != nil {
		t.Fatalf("connect with %s…: %v", token[:min(len(token), 4)], err)
	}
	t.Cleanup(func() { _ = j.Close() })
	WaitReady(t, c)
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

// NumbersSchema is the input schema of an ArithTool: two required numbers a
// and b.
const NumbersSchema = `{"type":"object","properties":{"a":{"type":"number"},"b":{"type":"number"}},"required":["a","b"]}`

// ArithTool is a calculator's tool for tests: name takes two numbers a and b
// (NumbersSchema) and answers op(a, b). Tests of several packages serve one,
// so it is written once here.
func ArithTool(name, description string, op func(a, b float64) float64) participant.Tool {
	return participant.Tool{
		Name:        name,
		Description: description,
		InputSchema: json.RawMessage(NumbersSchema),
		Execute: func(_ context.Context, args json.RawMessage) (any, error) {
			var in struct{ A, B float64 }
			if err := json.Unmarshal(args, &in); err != nil {
				return nil, fmt.Errorf("%s: %w", name, err)
			}
			return op(in.A, in.B), nil
		},
	}
}
