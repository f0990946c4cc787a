package participant_test

import (
	"encoding/json"
	"testing"

	"github.com/mew-protocol/mew/gateway"
	"github.com/mew-protocol/mew/participant"
	"github.com/mew-protocol/mew/protocol"
)

// TestStatusFields: members set with SetStatusField ride along in every
// participant/status; the telemetry's own members cannot be overwritten.
func TestStatusFields(t *testing.T) {
	g := startSpace(t, ctlSpace, gateway.Options{})
	boss := joinReady(t, g, "boss", participant.Options{})
	worker := joinReady(t, g, "worker", participant.Options{})
	seen := watch(boss.Client())

	for _, name := range []string{"", "status", "tokens", "messages_in_context"} {
		if err := worker.SetStatusField(name, 1); err == nil {
			t.Errorf("SetStatusField(%q) accepted", name)
		}
	}
	if err := worker.SetStatusField("bad", func() {}); err == nil {
		t.Error("a value that is not JSON was accepted")
	}
	if err := worker.SetStatusField("floor_yields", 3); err != nil {
		t.Fatal(err)
	}
	if err := worker.SetStatusField("gone", "x"); err != nil {
		t.Fatal(err)
	}
	if err := worker.SetStatusField("gone", nil); err != nil {
		t.Fatal(err)
	}
	id := sendControl(t, boss, protocol.KindParticipantRequestStatus, "worker", protocol.RequestStatus{})
	st := seen.Wait(t, "the status", kindFrom(protocol.KindParticipantStatus, "worker", id))
	var raw map[string]any
	if err := json.Unmarshal(st.Payload, &raw); err != nil {
		t.Fatal(err)
	}
	if raw["floor_yields"] != 3.0 || raw["status"] != "active" || raw["gone"] != nil {
		t.Errorf("status %s", st.Payload)
	}
}
