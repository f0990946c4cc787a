package tui

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/mew-protocol/mew/protocol"
)

// TestObserveFixes: what the feed reads that the UI once got wrong. A
// payload that does not decode is said, not drawn as an empty message; a
// reasoning its reasoner cancels, or whose reasoner leaves, stops
// thinking; a stream/open from a participant is not believed.
func TestObserveFixes(t *testing.T) {
	h := newHarness(t)
	h.recv(welcome("you", "assistant"))
	bad := chat("assistant", "c1", "x")
	bad.Payload = json.RawMessage(`{"text":5}`)
	h.recv(bad)
	if s := h.screen(); !strings.Contains(s, "assistant sent a chat that cannot be read") {
		t.Errorf("a malformed chat:\n%s", s)
	}

	h.recv(envelope(protocol.KindReasoningStart, "assistant", "r1", nil, nil, map[string]any{}))
	cancel := envelope(protocol.KindReasoningCancel, "assistant", "k1", nil, nil, map[string]any{"reason": "floor yielded"})
	cancel.Context = "r1"
	h.recv(cancel)
	if s := h.screen(); !strings.Contains(s, "assistant stopped thinking: floor yielded") || len(h.m.live.byID) != 0 {
		t.Errorf("a reasoning its reasoner cancelled:\n%s", s)
	}

	h.recv(envelope(protocol.KindReasoningStart, "assistant", "r2", nil, nil, map[string]any{}))
	h.recv(envelope(protocol.KindSystemPresence, protocol.GatewayID, "l1", nil, nil,
		protocol.Presence{Event: protocol.PresenceLeave, Participant: protocol.ParticipantInfo{ID: "assistant"}}))
	if len(h.m.live.byID) != 0 || strings.Contains(h.screen(), "is thinking") {
		t.Errorf("a leaver's reasoning is still open:\n%s", h.screen())
	}

	h.recv(envelope(protocol.KindStreamOpen, "mallory", "s1", []string{"you"}, nil, protocol.StreamOpen{StreamID: "fake"}))
	if strings.Contains(h.screen(), "fake") {
		t.Errorf("a participant's stream/open was believed:\n%s", h.screen())
	}
}

// TestClearForgetsText: /ui-clear forgets the transcript's text too, so that
// the bound on what it holds counts only what is left.
func TestClearForgetsText(t *testing.T) {
	h := newHarness(t)
	h.recv(welcome("you", "assistant"), chat("assistant", "c1", strings.Repeat("x", 1000)))
	if h.m.tr.textBytes == 0 {
		t.Fatal("a chat's text is not counted")
	}
	h.typeLine("/ui-clear")
	if h.m.tr.textBytes != 0 || len(h.m.tr.entries) != 0 {
		t.Errorf("after /ui-clear: %d bytes in %d entries", h.m.tr.textBytes, len(h.m.tr.entries))
	}
}
