package participant_test

import (
	"context"
	"encoding/json"
	"errors"
	"testing"
	"time"

	"github.com/mew-protocol/mew/gateway"
	"github.com/mew-protocol/mew/internal/testutil"
	"github.com/mew-protocol/mew/participant"
	"github.com/mew-protocol/mew/protocol"
)

const cancelSpace = `
space: {id: cancel}
participants:
  caller: {tokens: [caller-token], capabilities: [{kind: mcp/request}, {kind: mcp/proposal}, {kind: mcp/withdraw}]}
  proposer: {tokens: [proposer-token], capabilities: [{kind: mcp/proposal}, {kind: mcp/withdraw}]}
  worker: {tokens: [worker-token], capabilities: [{kind: mcp/response}]}
`

// TestRequestGivenUpIsCancelled: a direct request whose caller stops
// waiting is cancelled at its target (MCP notifications/cancelled), whose
// tool sees its context end and sends no answer.
func TestRequestGivenUpIsCancelled(t *testing.T) {
	g := testutil.StartGateway(t, cancelSpace, gateway.Options{})
	stopped := make(chan error, 1)
	worker := testutil.JoinParticipant(t, g, "worker-token", participant.Options{}, participant.Tool{
		Name: "wait",
		Execute: func(ctx context.Context, _ json.RawMessage) (any, error) {
			select {
			case <-ctx.Done():
				stopped <- ctx.Err()
			case <-time.After(10 * time.Second):
				stopped <- nil
			}
			return "late", nil
		},
	})
	answered := make(chan struct{}, 1)
	worker.Client().OnKind(protocol.KindMCPResponse, func(e *protocol.Envelope) {
		if e.From == "worker" {
			answered <- struct{}{}
		}
	})
	caller := testutil.JoinParticipant(t, g, "caller-token", participant.Options{})
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	_, err := caller.Request(ctx, "worker", map[string]any{"method": "tools/call", "params": map[string]any{"name": "wait"}})
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("request: %v", err)
	}
	if err := testutil.Receive(t, stopped, 5*time.Second, "the tool to learn of the cancellation"); !errors.Is(err, context.Canceled) {
		t.Errorf("the tool ended with %v, want its context cancelled", err)
	}
	select {
	case <-answered:
		t.Error("the cancelled request was answered")
	case <-time.After(200 * time.Millisecond):
	}
}

// TestRequestDirect: RequestDirect never proposes.
func TestRequestDirect(t *testing.T) {
	g := testutil.StartGateway(t, cancelSpace, gateway.Options{})
	testutil.JoinParticipant(t, g, "worker-token", participant.Options{}, participant.Tool{
		Name:    "hi",
		Execute: func(context.Context, json.RawMessage) (any, error) { return "hi", nil },
	})
	proposer := testutil.JoinParticipant(t, g, "proposer-token", participant.Options{})
	sent := make(chan string, 4)
	proposer.Client().OnMessage(func(e *protocol.Envelope) {
		if e.From == "proposer" {
			sent <- e.Kind
		}
	})
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	call := map[string]any{"method": "tools/call", "params": map[string]any{"name": "hi"}}
	if _, err := proposer.RequestDirect(ctx, "worker", call); !errors.Is(err, participant.ErrNotAllowed) {
		t.Errorf("RequestDirect by a proposer: %v", err)
	}
	select {
	case k := <-sent:
		t.Errorf("RequestDirect sent a %s", k)
	case <-time.After(200 * time.Millisecond):
	}
	caller := testutil.JoinParticipant(t, g, "caller-token", participant.Options{})
	if res, err := caller.RequestDirect(ctx, "worker", call); err != nil || !json.Valid(res) {
		t.Errorf("RequestDirect by a caller: %s, %v", res, err)
	}
}
