package audit

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/mew-protocol/mew/protocol"
)

// benchEnvelope is a chat envelope of about 300 bytes.
var benchEnvelope = []byte(`{"protocol":"mew/v0.4","id":"env-0123456789","ts":"2026-11-22T10:09:50.999Z","from":"research-agent","to":["calculator-agent"],"kind":"mcp/request","correlation_id":["req-42"],"payload":{"jsonrpc":"2.0","id":42,"method":"tools/call","params":{"name":"add","arguments":{"a":5,"b":3}}},"context":"ctx-7"}`)

func benchLog(b *testing.B) *Log {
	l, err := Open(Options{Dir: b.TempDir(), EnvelopeHistory: true, CapabilityDecisions: true})
	if err != nil {
		b.Fatal(err)
	}
	return l
}

// benchRecord is the received record of benchEnvelope.
func benchRecord() EnvelopeRecord {
	return EnvelopeRecord{Time: time.Now(), Event: Received, ID: "env-0123456789", Envelope: benchEnvelope,
		Participant: "research-agent", Space: "demo", Transport: "websocket"}
}

// benchWrites times b.N calls of write and the Close that drains l's queue
// to its file; when lines is not 0, each call must have written that many
// lines.
func benchWrites(b *testing.B, l *Log, lines uint64, write func()) {
	b.ReportAllocs()
	b.ResetTimer()
	for range b.N {
		write()
	}
	if err := l.Close(); err != nil {
		b.Fatal(err)
	}
	b.StopTimer()
	if s := l.Stats(); lines != 0 && s.Lines != lines*uint64(b.N) {
		b.Fatalf("%d lines, want %d", s.Lines, lines*uint64(b.N))
	}
}

// BenchmarkEnvelope: enqueue and write one received record; the time
// includes draining the queue to the file at the end.
func BenchmarkEnvelope(b *testing.B) {
	l := benchLog(b)
	r := benchRecord()
	b.SetBytes(int64(len(benchEnvelope)))
	benchWrites(b, l, 1, func() { l.Envelope(r) })
}

// BenchmarkEnvelopeParallel: as BenchmarkEnvelope from GOMAXPROCS goroutines.
func BenchmarkEnvelopeParallel(b *testing.B) {
	l := benchLog(b)
	r := benchRecord()
	b.SetBytes(int64(len(benchEnvelope)))
	b.ReportAllocs()
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			l.Envelope(r)
		}
	})
	if err := l.Close(); err != nil {
		b.Fatal(err)
	}
}

// BenchmarkDelivered50: one delivered record with 50 recipients: one grouped
// line in the compact format (50 lines before issue 19, and in the
// reference format: BenchmarkDelivered50Reference).
func BenchmarkDelivered50(b *testing.B) { benchDelivered50(b, FormatCompact, 1) }

// BenchmarkDelivered50Reference: as BenchmarkDelivered50 in the reference
// format, 50 lines with the body on each.
func BenchmarkDelivered50Reference(b *testing.B) { benchDelivered50(b, FormatReference, 50) }
func benchDelivered50(b *testing.B, format string, lines uint64) {
	l, err := Open(Options{Dir: b.TempDir(), EnvelopeHistory: true, CapabilityDecisions: true, Format: format})
	if err != nil {
		b.Fatal(err)
	}
	rcpts := make([]Recipient, 50)
	for i := range rcpts {
		rcpts[i] = Recipient{ID: fmt.Sprintf("participant-%02d", i), Transport: "websocket"}
	}
	r := EnvelopeRecord{Time: time.Now(), Event: Delivered, ID: "env-0123456789", Envelope: benchEnvelope,
		Recipients: rcpts, Space: "demo", Metadata: []byte(`{"source_participant":"research-agent"}`)}
	benchWrites(b, l, lines, func() { l.Envelope(r) })
}

// BenchmarkDecision: enqueue and write one allowed capability check.
func BenchmarkDecision(b *testing.B) {
	l := benchLog(b)
	r := DecisionRecord{Time: time.Now(), EnvelopeID: "env-0123456789", Participant: "research-agent", Space: "demo",
		Allowed: true, Kind: "mcp/request", Matched: []byte(`{"kind":"mcp/request","payload":{"method":"tools/*"}}`),
		Source: "static", Metadata: []byte(`{"source":"websocket","transport":"websocket"}`)}
	benchWrites(b, l, 0, func() { l.Decision(r) })
}

// BenchmarkAppendString: the escaper on a typical mixed string.
func BenchmarkAppendString(b *testing.B) {
	s := strings.Repeat(`plain ascii text with a "quote" and ünïcödé `, 4)
	buf := make([]byte, 0, 1024)
	b.SetBytes(int64(len(s)))
	b.ReportAllocs()
	for b.Loop() {
		buf = protocol.AppendString(buf[:0], s)
	}
}
