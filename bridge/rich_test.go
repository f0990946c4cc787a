package bridge_test

import (
	"encoding/json"
	"reflect"
	"testing"
	"time"

	"github.com/mew-protocol/mew/bridge"
	"github.com/mew-protocol/mew/internal/mcptest"
	"github.com/mew-protocol/mew/internal/testutil"
	"github.com/mew-protocol/mew/participant"
)

// TestBridgeRichContent: an image, audio, a resource link and an embedded
// resource in a tool result reach the caller through the bridge, the
// gateway and the SDK as the server wrote them.
func TestBridgeRichContent(t *testing.T) {
	g := startSpace(t, "")
	testutil.StartBooking(t, g, "files-token", bridge.Options{NoRestart: true})
	human := join(t, g, "human", participant.Options{})
	raw, err := human.Request(testutil.Context(t, 20*time.Second), "files", call("picture", map[string]any{}))
	if err != nil {
		t.Fatal(err)
	}
	var got struct {
		Content []any `json:"content"`
	}
	if err := json.Unmarshal(raw, &got); err != nil {
		t.Fatal(err)
	}
	b, err := json.Marshal(mcptest.RichContent())
	if err != nil {
		t.Fatal(err)
	}
	var want []any
	if err := json.Unmarshal(b, &want); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got.Content, want) {
		t.Errorf("content through the bridge:\n%s\nthe server's:\n%s", raw, b)
	}
}
