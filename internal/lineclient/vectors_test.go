package lineclient

import (
	"strings"
	"testing"

	"github.com/mew-protocol/mew/internal/feed"
	"github.com/mew-protocol/mew/internal/feed/feedtest"
)

// TestSharedVectors runs the feed's shared vectors through the line
// client: a spoofed envelope prints nothing, a malformed one prints that
// it cannot be read, and no envelope stops the client.
func TestSharedVectors(t *testing.T) {
	for _, c := range feedtest.Load(t).Cases {
		var out strings.Builder
		lc := &lineClient{disp: &plainDisplay{out: &out}, feed: feed.NewReader(), reasonings: map[string]*reasoning{},
			calls: map[string]call{}, typed: map[string]bool{}, roster: map[string]bool{}}
		for i := range c.Envelopes {
			out.Reset()
			lc.mu.Lock()
			for _, ev := range lc.feed.Read(c.Envelope(t, i)) {
				if s := lc.take(ev, "human"); s != "" {
					lc.printf("%s", s)
				}
			}
			lc.mu.Unlock()
			switch want := c.FirstType(i); {
			case want == "spoofed" && out.Len() > 0:
				t.Errorf("%s: envelope %d is spoofed, yet printed %q", c.Name, i, out.String())
			case want == "malformed" && !strings.Contains(out.String(), "cannot be read"):
				t.Errorf("%s: envelope %d is malformed, yet printed %q", c.Name, i, out.String())
			}
		}
	}
}
