package tui

import (
	"encoding/json"
	"os"
	"strings"
	"testing"

	"github.com/mew-protocol/mew/protocol"
)

// TestSharedVectors runs the feed's shared vectors through the terminal
// UI: a spoofed envelope adds nothing to the transcript, a malformed one a
// note that it cannot be read, and no envelope breaks the model.
func TestSharedVectors(t *testing.T) {
	raw, err := os.ReadFile("../internal/feed/testdata/vectors.json")
	if err != nil {
		t.Fatal(err)
	}
	var vf struct {
		Cases []struct {
			Name      string              `json:"name"`
			Envelopes []json.RawMessage   `json:"envelopes"`
			Events    [][]json.RawMessage `json:"events"`
		} `json:"cases"`
	}
	if err := json.Unmarshal(raw, &vf); err != nil {
		t.Fatal(err)
	}
	for _, c := range vf.Cases {
		h := newHarness(t)
		for i, rawEnv := range c.Envelopes {
			env := new(protocol.Envelope)
			if err := json.Unmarshal(rawEnv, env); err != nil {
				t.Fatalf("%s: %v", c.Name, err)
			}
			before := len(h.m.tr.entries)
			h.recv(env)
			var first struct {
				Type string `json:"type"`
			}
			if len(c.Events[i]) > 0 {
				_ = json.Unmarshal(c.Events[i][0], &first)
			}
			switch first.Type {
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
