package bridge_test

import (
	"context"
	"log/slog"
	"os"
	"os/exec"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mew-protocol/mew/bridge"
	"github.com/mew-protocol/mew/gateway"
	"github.com/mew-protocol/mew/internal/mcptest"
	"github.com/mew-protocol/mew/internal/testutil"
	"github.com/mew-protocol/mew/participant"
)

// The three benchmarks call the echo tool of the same Go MCP server (this
// test binary in a child process): through a real gateway and the bridge
// from a participant, sequentially and in parallel, and directly with the
// go-sdk client over stdio. The bridge's added latency per call is the
// difference of BenchmarkBridgeToolCall's and BenchmarkDirectToolCall's
// ns/op.

var echoArgs = map[string]any{"text": "benchmark"}

func BenchmarkBridgeToolCall(b *testing.B) {
	human := benchSpace(b)
	ctx := context.Background()
	b.ResetTimer()
	for b.Loop() {
		if _, err := human.Request(ctx, "files", call("echo", echoArgs)); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "calls/s")
}

func BenchmarkBridgeToolCallParallel(b *testing.B) {
	human := benchSpace(b)
	ctx := context.Background()
	b.ResetTimer()
	b.SetParallelism(4)
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			if _, err := human.Request(ctx, "files", call("echo", echoArgs)); err != nil {
				b.Error(err)
				return
			}
		}
	})
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "calls/s")
}

func BenchmarkDirectToolCall(b *testing.B) {
	exe := testutil.Executable(b)
	cmd := exec.Command(exe)
	cmd.Env = append(os.Environ(), mcptest.EnvMode+"=normal")
	ctx := context.Background()
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "bench"}, nil).Connect(ctx, &mcp.CommandTransport{Command: cmd}, nil)
	if err != nil {
		b.Fatal(err)
	}
	defer cs.Close()
	b.ResetTimer()
	for b.Loop() {
		if _, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "echo", Arguments: echoArgs}); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "calls/s")
}

// benchSpace starts a gateway (without rate limit or audit log) and a bridge to the Go test server, and
// returns a participant that may call its tools.
func benchSpace(b *testing.B) *participant.Participant {
	b.Helper()
	g := testutil.StartGateway(b, bridgeSpace, gateway.Options{Limits: gateway.Limits{Rate: -1}, Audit: gateway.AuditOptions{Off: true}})
	startBridge(b, g, bridge.Options{Server: goServer(b, "normal"), RequestTimeout: time.Minute, Logger: slog.New(slog.DiscardHandler)})
	return join(b, g, "human", participant.Options{})
}
