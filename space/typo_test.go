package space

import (
	"errors"
	"slices"
	"strings"
	"testing"
)

// TestUnknownKeysDidYouMean: misspelt keys are tolerated, listed with
// their key path and the known key they resemble; keys unlike any known
// one get no suggestion.
func TestUnknownKeysDidYouMean(t *testing.T) {
	yaml := `
space: {id: typos, nmae: x}
participants:
  mew:
    capabilites: [{kind: chat}]
    auto_strat: true
    colour: red
    mcp_server: {command: mew, arg: [x]}
floor_contrl: {enabled: false}
`
	c, err := Parse([]byte(yaml), "/s/space.yaml")
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{
		"space.nmae":                      "name",
		"participants.mew.capabilites":    "capabilities",
		"participants.mew.auto_strat":     "auto_start",
		"participants.mew.mcp_server.arg": "args",
		"floor_contrl":                    "floor_control",
		"participants.mew.colour":         "",
	}
	for k, s := range want {
		if !slices.Contains(c.Unknown, k) {
			t.Errorf("%s not in Unknown %v", k, c.Unknown)
		}
		if c.DidYouMean[k] != s {
			t.Errorf("DidYouMean[%s] = %q, want %q", k, c.DidYouMean[k], s)
		}
	}
	lines := strings.Join(c.Warnings(), "\n")
	for _, w := range []string{
		"/s/space.yaml: unknown key participants.mew.capabilites ignored (did you mean capabilities?)",
		"/s/space.yaml: unknown key participants.mew.colour ignored\n",
	} {
		if !strings.Contains(lines+"\n", w) {
			t.Errorf("warnings lack %q:\n%s", w, lines)
		}
	}
}

// TestReservedParticipantNames: the gateway's own names are refused at
// load, with the key path and the reason.
func TestReservedParticipantNames(t *testing.T) {
	for _, id := range []string{"gateway", "system:gateway", "system:me", "System:Other"} {
		_, err := Parse([]byte("space: {id: s}\nparticipants:\n  \""+id+"\": {capabilities: [{kind: chat}]}\n"), "space.yaml")
		if err == nil || !errors.Is(err, ErrInvalidParticipantID) || !strings.Contains(err.Error(), "reserved") || !strings.Contains(err.Error(), "participants."+id) {
			t.Errorf("participant %q: %v", id, err)
		}
	}
}
