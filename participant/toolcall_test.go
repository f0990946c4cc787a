package participant_test

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/mew-protocol/mew/gateway"
	"github.com/mew-protocol/mew/participant"
	"github.com/mew-protocol/mew/protocol"
)

// A tool's Execute learns from its context which request it serves, and
// so who called it.
func TestToolCallEnvelope(t *testing.T) {
	g := startSpace(t, "", gateway.Options{})
	calc := mcpJoin(t, g, "calc", participant.Options{})
	seen := make(chan *protocol.Envelope, 1)
	if err := calc.RegisterTool(participant.Tool{Name: "who", Execute: func(ctx context.Context, _ json.RawMessage) (any, error) {
		env, ok := participant.ToolCallEnvelope(ctx)
		if !ok {
			return nil, nil
		}
		seen <- env
		return env.From, nil
	}}); err != nil {
		t.Fatal(err)
	}
	human := mcpJoin(t, g, "human", participant.Options{})
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	raw, err := human.Request(ctx, "calc", mcpCall("who", nil))
	if err != nil {
		t.Fatal(err)
	}
	var res participant.ToolResult
	if err := json.Unmarshal(raw, &res); err != nil || res.Text() != "human" {
		t.Fatalf("result %s: %v", raw, err)
	}
	if env := <-seen; env.Kind != protocol.KindMCPRequest || env.ID == "" {
		t.Errorf("envelope %+v", env)
	}
	if _, ok := participant.ToolCallEnvelope(ctx); ok {
		t.Error("an envelope in a context that serves no call")
	}
}
