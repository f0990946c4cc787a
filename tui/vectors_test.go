package tui

import (
	"strings"
	"testing"

	"github.com/mew-protocol/mew/internal/feed/feedtest"
)

// TestSharedVectors runs the feed's shared vectors through the terminal
// UI: a spoofed envelope adds nothing to the transcript, a malformed one a
// note that it cannot be read, and no envelope breaks the model.
func TestSharedVectors(t *testing.T) {
	for _, c := range feedtest.Load(t).Cases {
		h := newHarness(t)
		for i := range c.Envelopes {
			before := len(h.m.tr.entries)
			h.recv(c.Envelope(t, i))
			switch c.FirstType(i) {
			case "spoofed":
				if len(h.m.tr.entries) != before {
					t.Errorf("%s: envelope %d is spoofed, yet drawn:\n%s", c.Name, i, h.screen())
				}
			case "malformed":
				if n, ok := h.m.tr.entries[len(h.m.tr.entries)-1].(*noteEntry); !ok || !strings.Contains(n.text, "cannot be read") {
					t.Errorf("%s: envelope %d is malformed, yet not said:\n%s", c.Name, i, h.screen())
				}
			}
		}
		_ = h.screen() // every frame draws
	}
}
