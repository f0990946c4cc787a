package client_test

import (
	"context"
	"testing"

	"github.com/mew-protocol/mew/client"
	"github.com/mew-protocol/mew/gateway"
	"github.com/mew-protocol/mew/protocol"
)

// BenchmarkSendEcho measures round trips through a real gateway: one client
// sends a chat and waits for the gateway to relay it back.
func BenchmarkSendEcho(b *testing.B) {
	g := startGateway(b, gateway.Options{Limits: gateway.Limits{Rate: -1}, Audit: gateway.AuditOptions{Off: true}})
	c := connect(b, g, client.Options{Token: "alice-token"})
	echo := make(chan struct{}, 1)
	c.OnKind(protocol.KindChat, func(*protocol.Envelope) { echo <- struct{}{} })
	ctx := context.Background()
	env := &protocol.Envelope{Kind: protocol.KindChat, Payload: []byte(`{"text":"ping"}`)}
	b.ReportAllocs()
	n := 0
	for b.Loop() {
		n++
		env.ID, env.TS = "", "" // new ones each time
		if err := c.Send(ctx, env); err != nil {
			b.Fatal(err)
		}
		<-echo
	}
	b.ReportMetric(float64(n)/b.Elapsed().Seconds(), "roundtrips/s")
}
