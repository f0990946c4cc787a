package studio_test

import (
	"encoding/json"
	"net/http"
	"slices"
	"strings"
	"testing"

	"github.com/mew-protocol/mew/toolsagent"
)

// A tool's A2A skill keys (tags, examples, inputModes, outputModes) are
// saved, read back and checked as the loader checks them.
func TestSkillKeys(t *testing.T) {
	d := writeDesk(t, 0o640)
	s := serve(t, d.path)
	echo := echoTool()
	echo["tags"] = []string{"poetry", "demo"}
	echo["examples"] = []string{"say hello"}
	echo["inputModes"] = []string{"text/plain"}
	echo["outputModes"] = []string{"text/plain", "application/json"}
	if code, body := s.post(t, "/api/save", map[string]any{"tools": []any{echo, noteTool()}}); code != http.StatusOK {
		t.Fatalf("save: %d %s", code, body)
	}
	def, err := toolsagent.Load(d.path)
	if err != nil {
		t.Fatal(err)
	}
	got, _ := def.Tool("echo")
	if !slices.Equal(got.Tags, []string{"poetry", "demo"}) || !slices.Equal(got.Examples, []string{"say hello"}) ||
		!slices.Equal(got.InputModes, []string{"text/plain"}) || !slices.Equal(got.OutputModes, []string{"text/plain", "application/json"}) {
		t.Errorf("saved skill keys %+v", got)
	}
	if card := def.Tools[0]; card.Name != "echo" {
		t.Errorf("order %v", def.Tools)
	}
	code, _, body := s.req(t, http.MethodGet, "/api/definition", nil, nil)
	var read struct{ Tools []map[string]any }
	if err := json.Unmarshal(body, &read); code != http.StatusOK || err != nil || len(read.Tools[0]["tags"].([]any)) != 2 {
		t.Errorf("definition: %d %s", code, body)
	}

	bad := echoTool()
	bad["tags"] = "poetry"
	if code, body := s.post(t, "/api/save", map[string]any{"tools": []any{bad}}); code != http.StatusUnprocessableEntity || !strings.Contains(string(body), "tags") {
		t.Errorf("tags as a string: %d %s", code, body)
	}
}
