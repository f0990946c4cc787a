package bridge_test

import (
	"strings"
	"testing"
	"time"

	"github.com/mew-protocol/mew/bridge"
	"github.com/mew-protocol/mew/internal/testutil"
	"github.com/mew-protocol/mew/participant"
)

// TestBridgeResultTooLarge: a stdio server answers three calls with more
// than the SDK reads. Each caller is told "result too large"; the server
// is not restarted (its pid stays) and the bridge does not give up; a
// normal call afterwards succeeds.
func TestBridgeResultTooLarge(t *testing.T) {
	g := startSpace(t, "")
	r := startBridge(t, g, bridge.Options{Server: goServer(t, "huge"), RequestTimeout: 60 * time.Second})
	human := join(t, g, "human", participant.Options{})
	pid := callTool(t, human, "pid", nil).text()
	for i := range 3 {
		raw, err := human.Request(testutil.Context(t, 60*time.Second), "files", call("huge", map[string]any{"mb": 17}))
		if rpcCode(err) != bridge.CodeResultTooLarge || !strings.Contains(err.Error(), "result too large") {
			t.Fatalf("call %d: %.200s, %v", i+1, raw, err)
		}
	}
	if st := r.Status(); st.State != bridge.StateReady {
		t.Errorf("the bridge is %s after three large answers", st.State)
	}
	if got := callTool(t, human, "pid", nil).text(); got != pid {
		t.Errorf("the server was restarted: pid %s, was %s\nlogs:\n%s", got, pid, r.logs)
	}
	if got := callTool(t, human, "echo", map[string]any{"text": "still here"}).text(); got != "still here" {
		t.Errorf("echo after the large answers: %q", got)
	}
	if !strings.Contains(r.logs.String(), "MCP server message too large, dropped") {
		t.Errorf("the drop is not logged:\n%s", r.logs)
	}
}
