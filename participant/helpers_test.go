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
var sdkSpace = testutil.SpaceYAML("sdk",
	testutil.Member("human", "*"),
	testutil.Member("calc", "chat", "participant/*", "stream/*"),
	testutil.Member("agent", "chat", "chat/*", "mcp/proposal", "mcp/withdraw", `{kind: mcp/request, payload: {method: "tools/list"}}`, "capability/grant-ack", "participant/*", "stream/*"),
	testutil.Member("mute", "chat"),
)

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
