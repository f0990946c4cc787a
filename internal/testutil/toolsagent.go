package testutil

import (
	"context"
	"encoding/json"
	"os"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mew-protocol/mew/toolsagent"
)

// CheckToolsServer checks what an MCP client connected to the tools agent
// of def is told: serverInfo name and version and the instructions as
// given, and exactly def's tools, each with its description and its input
// schema. The toolsagent and cli tests reach that server two ways, in
// process and as the built binary, and check it the same.
func CheckToolsServer(t testing.TB, session *mcp.ClientSession, def *toolsagent.Definition, name, version, instructions string) {
	t.Helper()
	init := session.InitializeResult()
	if init.ServerInfo.Name != name || init.ServerInfo.Version != version || init.Instructions != instructions {
		t.Errorf("initialize: serverInfo %+v, instructions %q", init.ServerInfo, init.Instructions)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	list, err := session.ListTools(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(list.Tools) != len(def.Tools) {
		t.Fatalf("%d tools listed, want %d", len(list.Tools), len(def.Tools))
	}
	for _, tool := range list.Tools {
		want, ok := def.Tool(tool.Name)
		if !ok || tool.Description != want.Description {
			t.Errorf("tool %s %q is not the definition's", tool.Name, tool.Description)
			continue
		}
		schema, err := want.InputSchema()
		if err != nil {
			t.Fatalf("tool %s: the definition's schema: %v", tool.Name, err)
		}
		var wantSchema, gotSchema any
		_ = json.Unmarshal(schema, &wantSchema)
		raw, _ := json.Marshal(tool.InputSchema)
		_ = json.Unmarshal(raw, &gotSchema)
		if diff := cmp.Diff(wantSchema, gotSchema); diff != "" {
			t.Errorf("tool %s: inputSchema (-definition +listed):\n%s", tool.Name, diff)
		}
	}
}

// WriteDefinition writes text to path, mode 0600, and loads it as a tools
// agent's definition, failing the test when it does not load.
func WriteDefinition(t testing.TB, path, text string) *toolsagent.Definition {
	t.Helper()
	if err := os.WriteFile(path, []byte(text), 0o600); err != nil {
		t.Fatal(err)
	}
	def, err := toolsagent.Load(path)
	if err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	return def
}
