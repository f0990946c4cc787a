package gateway_test

// What the reference's own participants and scripts send, which the spec
// would refuse but the reference gateway tolerates: normalised at the door,
// and relayed and logged in the normalised form.

import (
	"context"
	"net/http"
	"strings"
	"testing"

	"github.com/mew-protocol/mew/gateway"
	"github.com/mew-protocol/mew/internal/testutil"
)

// TestLoneStringCorrelationID: a correlation_id given as one string is a
// list of one, over WebSocket and HTTP, for everyone who sees it and in the
// audit log.
func TestLoneStringCorrelationID(t *testing.T) {
	g := start(t, gateway.Options{})
	alice, _ := testutil.Join(t, g.WSURL, "alice-token")
	bob, _ := testutil.Join(t, g.WSURL, "bob-token")
	alice.Expect("system/presence")

	bob.SendText(`{"id":"ws-1","kind":"chat","correlation_id":"q-1","payload":{"text":"over ws"}}`)
	if st, body := post(t, g, "bob", "bob-token", `{"id":"http-1","kind":"chat","correlation_id":"q-2","payload":{"text":"over http"}}`); st != http.StatusOK {
		t.Fatalf("post: %d %v", st, body)
	}
	// The two arrive in either order: nothing orders a WebSocket message
	// and an HTTP post of one sender.
	want := map[string]string{"ws-1": "q-1", "http-1": "q-2"}
	for len(want) > 0 {
		m := alice.ExpectFunc("chat", func(m testutil.Msg) bool { _, ok := want[m.ID()]; return ok })
		if !strings.Contains(string(m.Raw), `"correlation_id":["`+want[m.ID()]+`"]`) {
			t.Errorf("relayed as %s", m.Raw)
		}
		delete(want, m.ID())
	}
	_ = g.Close(context.Background())
	b := waitFile(t, g.LogPath("envelope-history.jsonl"), `"id":"http-1"`)
	for _, corr := range []string{"q-1", "q-2"} {
		if !strings.Contains(string(b), `"correlation_id":["`+corr+`"]`) || strings.Contains(string(b), `"correlation_id":"`+corr+`"`) {
			t.Errorf("audit log does not hold the normalised correlation_id %s", corr)
		}
	}
}

// TestReasoningCancelContextInPayload: a reasoning/cancel that names its
// context in payload.context gets it on the envelope.
func TestReasoningCancelContextInPayload(t *testing.T) {
	g := start(t, gateway.Options{})
	alice, _ := testutil.Join(t, g.WSURL, "alice-token")
	bob, _ := testutil.Join(t, g.WSURL, "bob-token")
	alice.Expect("system/presence")
	bob.SendText(`{"id":"c1","kind":"reasoning/cancel","correlation_id":"chat-9","payload":{"context":"reasoning-1","reason":"user"}}`)
	m := alice.ExpectFunc("reasoning/cancel", func(m testutil.Msg) bool { return m.ID() == "c1" })
	if m.Env["context"] != "reasoning-1" {
		t.Errorf("context not moved to the envelope: %s", m.Raw)
	}
	// An envelope context wins over the payload's.
	bob.SendText(`{"id":"c2","kind":"reasoning/cancel","context":"own","payload":{"context":"other"}}`)
	m = alice.ExpectFunc("reasoning/cancel", func(m testutil.Msg) bool { return m.ID() == "c2" })
	if m.Env["context"] != "own" {
		t.Errorf("context = %v, want own", m.Env["context"])
	}
}

// TestUndecodableEnvelopeCorrelated: an envelope that fails to decode but
// whose id can be read gets a correlated system/error, and its rejected
// audit line carries the id.
func TestUndecodableEnvelopeCorrelated(t *testing.T) {
	g := start(t, gateway.Options{})
	bob, _ := testutil.Join(t, g.WSURL, "bob-token")
	bob.SendText(`{"id":"bad-7","kind":"chat","to":"alice","payload":{"text":"x"}}`)
	m := bob.Expect("system/error")
	if c, _ := m.Env["correlation_id"].([]any); len(c) != 1 || c[0] != "bad-7" || m.Payload()["error"] != gateway.ErrorInvalidEnvelope {
		t.Fatalf("error: %s", m.Raw)
	}
	// Over HTTP the answer names it too.
	st, body := post(t, g, "bob", "bob-token", `{"id":"bad-8","kind":"chat","correlation_id":7}`)
	if st != http.StatusBadRequest || body["id"] != "bad-8" {
		t.Fatalf("post: %d %v", st, body)
	}
	_ = g.Close(context.Background())
	b := waitFile(t, g.LogPath("envelope-history.jsonl"), `"event":"rejected","id":"bad-8"`)
	if !strings.Contains(string(b), `"event":"rejected","id":"bad-7"`) {
		t.Errorf("no rejected line with the id bad-7:\n%s", b)
	}
}
