package tui

import (
	"strings"
	"testing"
	"time"

	tea "charm.land/bubbletea/v2"

	"github.com/mew-protocol/mew/protocol"
)

// TestBoard: the side board docked at 160 columns (participants with what
// they do, the proposal awaiting me, the grant in force with its time left,
// my chat awaiting an acknowledgement, an open stream), hidden at 80,
// stacked there when opened, and F2 toggling it.
func TestBoard(t *testing.T) {
	h := newHarness(t)
	h.recv(welcome("you", "assistant", "calculator", "files", "helper"))
	h.send(tea.WindowSizeMsg{Width: 160, Height: 48})

	// A grant made in the dialog; the board reads the ledger after it.
	h.recv(propose("assistant", "pr1", "calculator", "add", map[string]any{"a": 1, "b": 5}))
	h.key("g", "2", "2")
	_, grant := grantOf(t, h)
	h.recv(envelope(protocol.KindCapabilityGrantAck, "assistant", "ga1", []string{"you"}, []string{grant.ID}, protocol.GrantAck{Status: "accepted"}))
	h.recv(chat("you", "c1", "please summarise notes.txt", "helper"))
	h.recv(envelope(protocol.KindReasoningStart, "assistant", "rs1", nil, nil, protocol.Reasoning{Message: "on it"}))
	th := envelope(protocol.KindReasoningThought, "assistant", "th1", nil, nil, protocol.Reasoning{Reasoning: "add them"})
	th.Context = "rs1"
	h.recv(th)
	h.recv(envelope(protocol.KindParticipantStatus, "helper", "st1", []string{"you"}, nil,
		protocol.Status{Tokens: 4500, MaxTokens: 10000, MessagesInContext: 3, Status: "paused"}))
	h.recv(envelope(protocol.KindStreamOpen, protocol.GatewayID, "so1", []string{"assistant"}, nil, protocol.StreamOpen{StreamID: "s1"}))
	h.recv(propose("helper", "pr2", "files", "write_file", map[string]any{"path": "notes.txt", "content": "x\x1b[2J"}))
	h.key("esc") // postponed: still awaiting me, out of the dialog
	h.now = h.now.Add(90 * time.Second)
	h.golden("board")
	s := h.screen()
	for _, want := range []string{
		"● assistant  thinking · 1 thought", "● helper  paused · context 45%", "AWAITING YOU (1)",
		"#2 helper → files: write_file", "│ assistant · 8m left", "│   add with any arguments",
		"→ helper: please summarise notes.txt", "s1 for assistant",
	} {
		if !strings.Contains(s, want) {
			t.Errorf("the board lacks %q:\n%s", want, s)
		}
	}

	// An acknowledgement takes the chat off; a closed stream goes.
	// An acknowledgement from someone the chat was not for changes nothing.
	h.recv(envelope(protocol.KindChatAcknowledge, "files", "ak0", []string{"you"}, []string{"c1"}, map[string]string{"status": "received"}))
	if s := h.screen(); !strings.Contains(s, "AWAITING ACK") || strings.Contains(s, "✓") {
		t.Errorf("another's acknowledgement counted:\n%s", s)
	}
	ack := envelope(protocol.KindChatAcknowledge, "helper", "ak1", []string{"you"}, []string{"c1"}, map[string]string{"status": "received"})
	h.recv(ack, envelope(protocol.KindStreamClose, protocol.GatewayID, "sc1", nil, nil, protocol.StreamClose{StreamID: "s1"}))
	if s := h.screen(); strings.Contains(s, "AWAITING ACK") || strings.Contains(s, "STREAMS") || !strings.Contains(s, "    ✓ helper") {
		t.Errorf("the acknowledged chat or the closed stream stayed:\n%s", s)
	}

	h.send(tea.WindowSizeMsg{Width: 80, Height: 24})
	if strings.Contains(h.screen(), "PARTICIPANTS") {
		t.Errorf("the board shows at 80 columns by default:\n%s", h.screen())
	}
	h.typeLine("/board open")
	h.golden("board_stacked")
	h.key("f2")
	if strings.Contains(h.screen(), "PARTICIPANTS") {
		t.Errorf("F2 did not hide the board:\n%s", h.screen())
	}
	h.send(tea.WindowSizeMsg{Width: 160, Height: 48})
	if strings.Contains(h.screen(), "PARTICIPANTS") {
		t.Error("a board closed by hand came back at 160 columns")
	}
	h.typeLine("/ui board auto")
	if !strings.Contains(h.screen(), "PARTICIPANTS") {
		t.Errorf("/ui board auto did not bring the board back at 160 columns:\n%s", h.screen())
	}
}

// TestPauses: pauses are lines in the transcript, a paused participant is
// marked on the board until its time is up or it is resumed, and a pause
// of mine shows in the status bar.
func TestPauses(t *testing.T) {
	h := newHarness(t)
	h.send(tea.WindowSizeMsg{Width: 160, Height: 48})
	h.recv(envelope(protocol.KindParticipantPause, "you", "p1", []string{"assistant"}, nil, protocol.Pause{TimeoutSeconds: 30, Reason: "hold\x1b[2J on"}))
	h.recv(envelope(protocol.KindParticipantPause, "calculator", "p2", []string{"you"}, nil, protocol.Pause{}))
	h.now = h.now.Add(10 * time.Second)
	s := h.screen()
	for _, want := range []string{"* you paused assistant for 30 s: hold on", "* calculator paused you",
		"● assistant  paused · 20s left"} {
		if !strings.Contains(s, want) {
			t.Errorf("the screen lacks %q:\n%s", want, s)
		}
	}
	if !strings.Contains(h.m.statusBar(), "paused") {
		t.Errorf("the status bar: %q", h.m.statusBar())
	}
	h.now = h.now.Add(25 * time.Second)
	h.recv(envelope(protocol.KindParticipantResume, "calculator", "r1", []string{"you"}, nil, protocol.Resume{}))
	s = h.screen()
	if strings.Contains(s, "assistant  paused") || strings.Contains(h.m.statusBar(), "paused") {
		t.Errorf("a pause outlived its time or its resume:\n%s", s)
	}
	if !strings.Contains(s, "* calculator resumed you") {
		t.Errorf("no resume line:\n%s", s)
	}
	h.typeLine("/target assistant")
	if !strings.Contains(h.m.statusBar(), "to assistant") {
		t.Errorf("the status bar lacks the targets: %q", h.m.statusBar())
	}
}
