package a2abridge_test

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/mew-protocol/mew/a2abridge"
	"github.com/mew-protocol/mew/participant"
)

// A participant that may only propose a skill's call waits for a person
// to approve it; the approved call runs the agent's task.
func TestSkillCallApproved(t *testing.T) {
	g := startSpace(t)
	r := startRemote(t, true)
	human := joinAs(t, g, "human-token")
	intern := joinAs(t, g, "intern-token")
	startBridge(t, g, r.URL, a2abridge.Options{})
	approved := make(chan error, 1)
	human.OnProposal(func(pr *participant.Proposal) {
		go func() {
			_, err := human.Fulfill(context.Background(), pr)
			approved <- err
		}()
	})
	raw, err := intern.Request(testCtx(t), "helper", map[string]any{"method": "tools/call",
		"params": map[string]any{"name": "echo", "arguments": map[string]any{"message": "approved?"}}})
	if err != nil {
		t.Fatal(err)
	}
	if err := <-approved; err != nil {
		t.Fatalf("approval: %v", err)
	}
	var res participant.ToolResult
	if err := json.Unmarshal(raw, &res); err != nil || res.Text() != "echo: approved?" {
		t.Errorf("result %s: %v", raw, err)
	}
}
