package participant_test

import (
	"testing"

	"go.uber.org/goleak"

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

// join connects a participant with token "<id>-token" (unless opts names
// one) and closes it when the test ends.
func join(t *testing.T, g *testutil.Gateway, id string, opts participant.Options) *participant.Participant {
	t.Helper()
	token := opts.Client.Token
	if token == "" {
		token = id + "-token"
	}
	return testutil.JoinParticipant(t, g, token, opts)
}
