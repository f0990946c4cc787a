package audit_test

import (
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/mew-protocol/mew/gateway/internal/audit"
)

func Example() {
	dir, err := os.MkdirTemp("", "audit-example")
	if err != nil {
		panic(err)
	}
	defer os.RemoveAll(dir)
	logs := filepath.Join(dir, ".mew", "logs")

	l, err := audit.Open(audit.Options{Dir: logs, EnvelopeHistory: true, CapabilityDecisions: true})
	if err != nil {
		panic(err)
	}
	at := time.Date(2026, 11, 22, 10, 9, 50, 999_000_000, time.UTC)
	env := []byte(`{"protocol":"mew/v0.4","id":"probe-1","from":"alice","kind":"chat","payload":{"text":"hi"}}`)
	l.Decision(audit.DecisionRecord{Time: at, EnvelopeID: "probe-1", Participant: "alice", Space: "demo",
		Allowed: true, Kind: "chat", Matched: []byte(`{"kind":"chat"}`), Source: "static"})
	l.Envelope(audit.EnvelopeRecord{Time: at, Event: audit.Received, ID: "probe-1", Envelope: env,
		Participant: "alice", Space: "demo", Transport: "websocket"})
	l.Envelope(audit.EnvelopeRecord{Time: at, Event: audit.Delivered, ID: "probe-1", Envelope: env, Space: "demo",
		Recipients: []audit.Recipient{{ID: "bob", Transport: "websocket"}, {ID: "carol", Transport: "http"}}})
	if err := l.Close(); err != nil {
		panic(err)
	}

	for _, name := range []string{audit.CapabilityDecisionsFile, audit.EnvelopeHistoryFile} {
		b, _ := os.ReadFile(filepath.Join(logs, name))
		fmt.Print(string(b))
	}
	// Output:
	// {"timestamp":"2026-11-22T10:09:50.999Z","event":"capability_check","envelope_id":"probe-1","participant":"alice","space_id":"demo","result":"allowed","required_capability":"chat","matched_capability":{"kind":"chat"},"matched_source":"static","chain_prev":"00000000000000000000000000000000","chain":"1:8a0738120eba43de3c7a37166fc24178"}
	// {"timestamp":"2026-11-22T10:09:50.999Z","event":"received","id":"probe-1","envelope":{"protocol":"mew/v0.4","id":"probe-1","from":"alice","kind":"chat","payload":{"text":"hi"}},"participant":"alice","space_id":"demo","direction":"inbound","transport":"websocket","chain_prev":"00000000000000000000000000000000","chain":"1:27f02ecf7cbe4b4fca46fa2fc62de6bf"}
	// {"timestamp":"2026-11-22T10:09:50.999Z","event":"delivered","id":"probe-1","space_id":"demo","direction":"outbound","recipients":[{"participant":"bob","transport":"websocket"},{"participant":"carol","transport":"http"}],"chain":"2:3e024da7c4d7d6e8880ee710fa5a9216"}
}
