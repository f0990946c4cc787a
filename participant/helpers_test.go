package participant_test

import (
	"context"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/mew-protocol/mew/client"
	"github.com/mew-protocol/mew/gateway"
	"github.com/mew-protocol/mew/internal/testutil"
	"github.com/mew-protocol/mew/participant"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// sdkSpace is the space most tests use. Tokens are "<id>-token".
const sdkSpace = `
space: {id: sdk}
participants:
  human:
    tokens: [human-token]
    capabilities: [{kind: "*"}]
  calc:
    tokens: [calc-token]
    capabilities: [{kind: chat}, {kind: "participant/*"}, {kind: "stream/*"}]
  agent:
    tokens: [agent-token]
    capabilities:
      - {kind: chat}
      - {kind: "chat/*"}
      - {kind: mcp/proposal}
      - {kind: mcp/withdraw}
      - {kind: mcp/request, payload: {method: "tools/list"}}
      - {kind: capability/grant-ack}
      - {kind: "participant/*"}
      - {kind: "stream/*"}
  mute:
    tokens: [mute-token]
    capabilities: [{kind: chat}]
`

// startSpace starts a gateway for spaceYAML (sdkSpace when empty).
func startSpace(t *testing.T, spaceYAML string, opts gateway.Options) *testutil.Gateway {
	t.Helper()
	if spaceYAML == "" {
		spaceYAML = sdkSpace
	}
	return testutil.StartGateway(t, spaceYAML, opts)
}

// join connects a participant with token "<id>-token" and closes it when the
// test ends. opts.Client's gateway, space and token are filled in.
func join(t *testing.T, g *testutil.Gateway, id string, opts participant.Options) *participant.Participant {
	t.Helper()
	opts.Client.Gateway = "ws://" + g.Addr
	opts.Client.Space = g.Config.Space.ID
	if opts.Client.Token == "" {
		opts.Client.Token = id + "-token"
	}
	p, err := participant.New(opts)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := p.Connect(ctx); err != nil {
		t.Fatalf("connect %s: %v", id, err)
	}
	t.Cleanup(func() { _ = p.Close() })
	// Discovery and stream bookkeeping come from welcome handlers, which run
	// on the client's dispatch goroutine: wait until they have.
	for deadline := time.Now().Add(5 * time.Second); p.Client().State() != client.Ready; {
		if time.Now().After(deadline) {
			t.Fatalf("%s never became ready", id)
		}
		time.Sleep(2 * time.Millisecond)
	}
	return p
}
