package lineclient

import (
	"encoding/json"
	"os"
	"strings"
	"testing"

	"github.com/mew-protocol/mew/internal/feed"
	"github.com/mew-protocol/mew/protocol"
)

// TestSharedVectors runs the feed's shared vectors through the line
// client: a spoofed envelope prints nothing, a malformed one prints that
// it cannot be read, and no envelope stops the client.
func TestSharedVectors(t *testing.T) {
	raw, err := os.ReadFile("../feed/testdata/vectors.json")
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
		var out strings.Builder
		lc := &lineClient{disp: &plainDisplay{out: &out}, feed: feed.NewReader(), reasonings: map[string]*reasoning{},
			calls: map[string]call{}, typed: map[string]bool{}, roster: map[string]bool{}}
		for i, rawEnv := range c.Envelopes {
			var env protocol.Envelope
			if err := json.Unmarshal(rawEnv, &env); err != nil {
				t.Fatalf("%s: %v", c.Name, err)
			}
			want := firstType(c.Events[i])
			out.Reset()
			lc.mu.Lock()
			for _, ev := range lc.feed.Read(&env) {
				if s := lc.take(ev, "human"); s != "" {
					lc.printf("%s", s)
				}
			}
			lc.mu.Unlock()
			switch {
			case want == "spoofed" && out.Len() > 0:
				t.Errorf("%s: envelope %d is spoofed, yet printed %q", c.Name, i, out.String())
			case want == "malformed" && !strings.Contains(out.String(), "cannot be read"):
				t.Errorf("%s: envelope %d is malformed, yet printed %q", c.Name, i, out.String())
			}
		}
	}
}

// firstType is the type of the first of events, "" for none.
func firstType(events []json.RawMessage) string {
	var e struct {
		Type string `json:"type"`
	}
	if len(events) > 0 {
		_ = json.Unmarshal(events[0], &e)
	}
	return e.Type
}
