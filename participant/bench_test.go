package participant_test

import (
	"context"
	"testing"

	"github.com/mew-protocol/mew/gateway"
	"github.com/mew-protocol/mew/internal/testutil"
	"github.com/mew-protocol/mew/participant"
)

// benchSpace starts sdkSpace without rate limit or audit log, with calc
// serving add, and returns calc and human.
func benchSpace(b *testing.B) (calc, human *participant.Participant) {
	b.Helper()
	g := testutil.StartGateway(b, sdkSpace, gateway.Options{Limits: gateway.Limits{Rate: -1}, Audit: gateway.AuditOptions{Off: true}})
	calc = testutil.JoinParticipant(b, g, "calc-token", participant.Options{}, mcpAddTool(nil))
	human = testutil.JoinParticipant(b, g, "human-token", participant.Options{})
	return calc, human
}

// BenchmarkToolCall measures sequential tools/call round trips between two
// participants through a real gateway: request, schema validation,
// execution, response.
func BenchmarkToolCall(b *testing.B) {
	_, human := benchSpace(b)
	ctx := context.Background()
	payload := mcpCall("add", map[string]any{"a": 5, "b": 3})
	b.ReportAllocs()
	for b.Loop() {
		if _, err := human.Request(ctx, "calc", payload); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "roundtrips/s")
}

// BenchmarkToolCallParallel measures concurrent tools/call round trips
// from one participant to another.
func BenchmarkToolCallParallel(b *testing.B) {
	_, human := benchSpace(b)
	ctx := context.Background()
	payload := mcpCall("add", map[string]any{"a": 5, "b": 3})
	b.ReportAllocs()
	b.SetParallelism(8)
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			if _, err := human.Request(ctx, "calc", payload); err != nil {
				b.Error(err)
				return
			}
		}
	})
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "roundtrips/s")
}
