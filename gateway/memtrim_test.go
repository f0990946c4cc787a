package gateway_test

import (
	"context"
	"log/slog"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/coder/websocket"

	"github.com/mew-protocol/mew/gateway"
	"github.com/mew-protocol/mew/internal/testutil"
)

// trims counts the trims in the gateway's log.
func trims(logs *testutil.Buffer) int { return strings.Count(logs.String(), trimMsg) }

const trimMsg = "returned free memory to the operating system"

// churn joins and leaves the space n times over real WebSockets.
func churn(t *testing.T, g *testutil.Gateway, n int) {
	t.Helper()
	for range n {
		ctx, cancel := context.WithTimeout(t.Context(), 5*time.Second)
		c, _, err := websocket.Dial(ctx, g.WSURL, &websocket.DialOptions{HTTPHeader: http.Header{"Authorization": {"Bearer alice-token"}}})
		if err != nil {
			cancel()
			t.Fatal(err)
		}
		_, b, err := c.Read(ctx) // the welcome: the join is done
		cancel()
		if err != nil || !strings.Contains(string(b), `"system/welcome"`) {
			t.Fatalf("welcome: %v %.100s", err, b)
		}
		_ = c.Close(websocket.StatusNormalClosure, "")
	}
}

const trimSpace = `
space: {id: trim}
participants:
  alice: {tokens: [alice-token], capabilities: [{kind: chat}]}
`

// TestMemoryTrimmedAfterChurn: after a burst of joins and leaves, once the
// membership has been still for a second, the gateway returns its free memory
// to the operating system, once; with KeepFreeMemory it does not.
func TestMemoryTrimmedAfterChurn(t *testing.T) {
	for _, keep := range []bool{false, true} {
		t.Run(map[bool]string{false: "default", true: "keep"}[keep], func(t *testing.T) {
			var logs testutil.Buffer
			logger := slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
			g := testutil.StartGateway(t, trimSpace, gateway.Options{Logger: logger, KeepFreeMemory: keep})
			churn(t, g, 40) // 80 joins and leaves
			deadline := time.Now().Add(4 * time.Second)
			for trims(&logs) == 0 && time.Now().Before(deadline) {
				time.Sleep(50 * time.Millisecond)
			}
			if keep {
				if n := trims(&logs); n != 0 {
					t.Fatalf("%d trims with KeepFreeMemory", n)
				}
				return
			}
			if n := trims(&logs); n != 1 {
				t.Fatalf("%d trims after the churn, want 1", n)
			}
			// More churn within 30 s of the trim waits for the interval.
			churn(t, g, 40)
			time.Sleep(2500 * time.Millisecond)
			if n := trims(&logs); n != 1 {
				t.Errorf("%d trims: a second came within 30 s of the first", n)
			}
		})
	}
}
