package space

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/mew-protocol/mew/capability"
)

func FuzzParse(f *testing.F) {
	for _, name := range []string{"example.yaml", "allkeys.yaml"} {
		data, err := os.ReadFile(filepath.Join("testdata", name))
		if err != nil {
			f.Fatal(err)
		}
		f.Add(data)
	}
	for _, s := range []string{
		"",
		"space: {id: s}\n",
		"space: {id: s}\nparticipants: {a: {capabilities: [{kind: chat, payload: {x: [1, 2.5, null, true]}}]}}\n",
		"space: &s {id: s}\nother: *s\nparticipants: {a: {<<: {command: x}, tokens: [t]}}\n",
		"space: {id: s}\nparticipants: [a, b]\n",
		"space:\n\tid: s\n",
		"space: {id: s}\n? [a]\n: b\n",
		billionLaughs(3),
		"space: {id: s}\nx: " + strings.Repeat("[", 70) + strings.Repeat("]", 70),
		"space: {id: s}\nfloor_control: {enabled: true, ttl_ms: 100}\ngateway_logging: {envelope_history: false}\n",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		c, err := Parse(data, "")
		if err != nil {
			var ce *ConfigError
			if !errors.As(err, &ce) {
				t.Fatalf("error %T %q is not a *ConfigError", err, err)
			}
			if c != nil {
				t.Fatal("both a Config and an error")
			}
			_ = err.Error()
			return
		}
		if err := idProblem(c.Space.ID); err != "" {
			t.Fatalf("accepted space id %q: %s", c.Space.ID, err)
		}
		seen := map[string]bool{}
		for _, p := range c.Participants {
			if err := ValidParticipantID(p.ID); err != nil {
				t.Fatalf("accepted participant id %q: %v", p.ID, err)
			}
			if seen[p.ID] {
				t.Fatalf("participant %q twice", p.ID)
			}
			seen[p.ID] = true
			if _, err := capability.Compile(p.Capabilities); err != nil {
				t.Fatalf("accepted capabilities that do not compile: %v", err)
			}
		}
		if _, err := capability.Compile(c.Defaults.Capabilities); err != nil {
			t.Fatalf("accepted default capabilities that do not compile: %v", err)
		}
		if !slices.IsSorted(c.Unknown) {
			t.Fatalf("Unknown not sorted: %q", c.Unknown)
		}
	})
}
