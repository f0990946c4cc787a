package testutil_test

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/mew-protocol/mew/internal/testutil"
	"github.com/mew-protocol/mew/space"
)

// What SpaceYAML and Member write is read by the loader as the space it
// means: the id, each member's token, and each capability as given, a
// bare kind and a whole capability alike.
func TestSpaceYAML(t *testing.T) {
	yaml := testutil.SpaceYAML("built",
		testutil.Member("human", "*"),
		testutil.Member("agent", "chat", "reasoning/*", `{kind: mcp/request, payload: {method: "tools/list"}}`),
		"  quiet:\n    tokens: [hush]\n    capabilities: []\n",
	)
	path := filepath.Join(t.TempDir(), "space.yaml")
	if err := os.WriteFile(path, []byte(yaml), 0o644); err != nil {
		t.Fatal(err)
	}
	cfg, err := space.Load(path)
	if err != nil {
		t.Fatalf("%v\n%s", err, yaml)
	}
	if cfg.Space.ID != "built" || len(cfg.Participants) != 3 {
		t.Fatalf("space %q with %d participants:\n%s", cfg.Space.ID, len(cfg.Participants), yaml)
	}
	for _, want := range []struct {
		id, token string
		caps      []string
	}{
		{"human", "human-token", []string{`{"kind":"*"}`}},
		{"agent", "agent-token", []string{`{"kind":"chat"}`, `{"kind":"reasoning/*"}`, `{"kind":"mcp/request","payload":{"method":"tools/list"}}`}},
		{"quiet", "hush", nil},
	} {
		p := cfg.Participant(want.id)
		if p == nil {
			t.Errorf("no participant %s:\n%s", want.id, yaml)
			continue
		}
		var caps []string
		for _, c := range p.Capabilities {
			caps = append(caps, strings.ReplaceAll(string(c), " ", ""))
		}
		if !slices.Equal(p.Tokens, []string{want.token}) || !slices.Equal(caps, want.caps) {
			t.Errorf("%s: tokens %v, capabilities %v; want %s and %v", want.id, p.Tokens, caps, want.token, want.caps)
		}
	}
}
