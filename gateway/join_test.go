package gateway_test

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/coder/websocket"

	"github.com/mew-protocol/mew/gateway"
	"github.com/mew-protocol/mew/internal/testutil"
)

func TestJoinModesAndPaths(t *testing.T) {
	g := start(t, gateway.Options{})
	root := "ws://" + g.Addr + "/"
	cases := []struct {
		name, url, header, first string
		wantID                   string
	}{
		{"bearer at /ws", g.WSURL, "alice-token", "", "alice"},
		{"bearer at /", root, "alice-token", "", "alice"},
		{"type join at /", root, "", `{"type":"join","participantId":"alice","space":"test","token":"alice-token"}`, "alice"},
		{"type join at /ws without participantId", g.WSURL, "", `{"type":"join","token":"alice-token"}`, "alice"},
		{"system/join envelope", root, "", `{"protocol":"mew/v0.4","kind":"system/join","payload":{"participant":"alice","space":"test","token":"alice-token"}}`, "alice"},
		{"alias", root, "", `{"type":"join","participantId":"client-123","space":"test","token":"alice-token"}`, "client-123"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			p := testutil.Dial(t, c.url, c.header)
			if c.first != "" {
				p.SendText(c.first)
			}
			w := p.Expect("system/welcome")
			if got := w.Payload()["you"].(map[string]any)["id"]; got != c.wantID {
				t.Fatalf("welcome you.id = %v, want %s", got, c.wantID)
			}
			if to := w.Env["to"].([]any); len(to) != 1 || to[0] != c.wantID {
				t.Fatalf("welcome to = %v", to)
			}
			if w.From() != "system:gateway" {
				t.Fatalf("welcome from = %s", w.From())
			}
			// The connection works: a chat comes back with the runtime id.
			p.SendText(`{"kind":"chat","payload":{"text":"hi"}}`)
			m := p.Expect("chat")
			if m.From() != c.wantID {
				t.Fatalf("chat from = %s, want %s", m.From(), c.wantID)
			}
			_ = p.Conn.Close(websocket.StatusNormalClosure, "")
		})
	}
}

func TestWelcomeAndPresence(t *testing.T) {
	g := start(t, gateway.Options{})
	alice, w := testutil.Join(t, g.WSURL, "alice-token")
	you := w.Payload()["you"].(map[string]any)
	caps, _ := json.Marshal(you["capabilities"])
	// own, then defaults, then the baseline mcp/response.
	if want := `[{"kind":"*"},{"kind":"reasoning/*"},{"id":"mcp-response","kind":"mcp/response"}]`; string(caps) != want {
		t.Fatalf("capabilities = %s, want %s", caps, want)
	}
	if got := ids(w.Payload()["participants"]); !slices.Equal(got, []string{"watcher"}) {
		t.Fatalf("participants = %v, want [watcher]", got)
	}
	if as, ok := w.Payload()["active_streams"].([]any); !ok || len(as) != 0 {
		t.Fatalf("active_streams = %v", w.Payload()["active_streams"])
	}

	bob, w2 := testutil.Join(t, g.WSURL, "bob-token")
	if got := ids(w2.Payload()["participants"]); !slices.Equal(got, []string{"watcher", "alice"}) {
		t.Fatalf("bob's participants = %v", got)
	}
	pj := alice.Expect("system/presence")
	if pj.Payload()["event"] != "join" || pj.Payload()["participant"].(map[string]any)["id"] != "bob" {
		t.Fatalf("presence = %s", pj.Raw)
	}
	if _, ok := pj.Env["to"]; ok {
		t.Fatalf("presence has a to: %s", pj.Raw)
	}
	// The joiner does not get its own presence.
	if m, quiet := bob.Quiet(200*time.Millisecond, nil); !quiet {
		t.Fatalf("bob got %s", m.Raw)
	}
	_ = bob.Conn.Close(websocket.StatusNormalClosure, "bye")
	pl := alice.Expect("system/presence")
	if pl.Payload()["event"] != "leave" || pl.Payload()["participant"].(map[string]any)["id"] != "bob" {
		t.Fatalf("leave = %s", pl.Raw)
	}
	// The output_log participant saw both.
	waitFile(t, g.Config.Resolve("logs/watcher.jsonl"), `"event":"leave","participant":{"id":"bob"}`)
}

func TestJoinRefusals(t *testing.T) {
	g := start(t, gateway.Options{Timing: gateway.Timing{JoinTimeout: 300 * time.Millisecond}})
	root := "ws://" + g.Addr + "/"
	cases := []struct {
		name, header, first, wantErr string
	}{
		{"unknown bearer token", "nope", "", "unauthorized"},
		{"unknown join token", "", `{"type":"join","participantId":"alice","token":"nope"}`, "unauthorized"},
		{"join without token", "", `{"type":"join","participantId":"alice"}`, "unauthorized"},
		{"wrong space", "", `{"type":"join","space":"other","token":"alice-token"}`, "unauthorized"},
		{"first message not a join", "", `{"kind":"chat","payload":{"text":"hi"}}`, "join_required"},
		{"garbage first message", "", "\x00\x01garbage", "join_required"},
		{"no first message", "", "", "join_required"},
		{"alias of another participant", "", `{"type":"join","participantId":"bob","token":"alice-token"}`, "identity_mismatch"},
		{"alias with a slash", "", `{"type":"join","participantId":"a/b","token":"alice-token"}`, "identity_mismatch"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			p := testutil.Dial(t, root, c.header)
			if c.first != "" {
				p.SendText(c.first)
			}
			m := p.Next()
			if m.Kind() != "system/error" || m.Payload()["error"] != c.wantErr {
				t.Fatalf("got %s, want system/error %s", m.Raw, c.wantErr)
			}
			if strings.Contains(string(m.Raw), "alice-token") {
				t.Fatalf("error echoes the token: %s", m.Raw)
			}
			if code, _ := p.Closed(3 * time.Second); code != websocket.StatusPolicyViolation {
				t.Fatalf("close code = %v, want 1008", code)
			}
		})
	}
}

func TestAliasInUseByAnotherParticipant(t *testing.T) {
	g := start(t, gateway.Options{})
	root := "ws://" + g.Addr + "/"
	a := testutil.Dial(t, root, "")
	a.SendText(`{"type":"join","participantId":"shared-name","token":"alice-token"}`)
	a.Expect("system/welcome")
	b := testutil.Dial(t, root, "")
	b.SendText(`{"type":"join","participantId":"shared-name","token":"bob-token"}`)
	if m := b.Next(); m.Payload()["error"] != "identity_mismatch" {
		t.Fatalf("got %s", m.Raw)
	}
	// Alice, under her alias, is undisturbed.
	a.SendText(`{"kind":"chat","payload":{"text":"still here"}}`)
	if m := a.Expect("chat"); m.From() != "shared-name" {
		t.Fatalf("from = %s", m.From())
	}
	// Her logical name is also accepted in from; anything else is not.
	a.SendText(`{"kind":"chat","from":"alice","payload":{"text":"by name"}}`)
	a.ExpectFunc("chat", func(m testutil.Msg) bool { return m.Payload()["text"] == "by name" })
}

func TestReplacement(t *testing.T) {
	g := start(t, gateway.Options{})
	tok := g.Token(t, "carol")
	first, _ := testutil.Join(t, g.WSURL, tok)
	alice, _ := testutil.Join(t, g.WSURL, "alice-token")
	second, w := testutil.Join(t, g.WSURL, tok)
	if got := ids(w.Payload()["participants"]); slices.Contains(got, "carol") {
		t.Fatalf("the new connection's welcome lists the old one: %v", got)
	}
	code, reason := first.Closed(3 * time.Second)
	if code != gateway.CloseReplaced || !strings.Contains(reason, "replaced") {
		t.Fatalf("old connection closed with %v %q", code, reason)
	}
	// Alice sees carol leave and join again, in that order.
	l := alice.Expect("system/presence")
	j := alice.Expect("system/presence")
	if l.Payload()["event"] != "leave" || j.Payload()["event"] != "join" {
		t.Fatalf("presence order: %s then %s", l.Raw, j.Raw)
	}
	second.SendText(`{"kind":"chat","payload":{"text":"new"}}`)
	alice.ExpectFunc("chat", func(m testutil.Msg) bool { return m.From() == "carol" })
}

func TestRejoinOnJoinedConnection(t *testing.T) {
	g := start(t, gateway.Options{})
	p, _ := testutil.Join(t, g.WSURL, "alice-token")
	// Reference clients send a join even after a bearer header: same token, welcome again.
	p.SendText(`{"type":"join","participantId":"alice","space":"test","token":"alice-token"}`)
	p.Expect("system/welcome")
	// Another participant's token on a joined connection is refused; the connection stays.
	p.SendText(`{"type":"join","participantId":"bob","token":"bob-token"}`)
	if m := p.Expect("system/error"); m.Payload()["error"] != "identity_mismatch" {
		t.Fatalf("got %s", m.Raw)
	}
	p.SendText(`{"kind":"chat","payload":{"text":"ok"}}`)
	p.Expect("chat")
}

// TestResumeHostile: the resume parameter names only what its participant
// may see. An id that is not in the history (unknown, forged, oversized)
// gets a resume_gap notice, with the id cut short; a resume that names a
// private answer made for someone else replays none of that participant's
// private answers, only what the resuming one may see.
func TestResumeHostile(t *testing.T) {
	g := start(t, gateway.Options{})
	alice, _ := testutil.Join(t, g.WSURL, "alice-token")
	bob, _ := testutil.Join(t, g.WSURL, "bob-token")
	alice.Expect("system/presence")
	// A private answer for bob: his refused request.
	bob.SendText(`{"id":"b1","kind":"mcp/request","payload":{"method":"tools/call"}}`)
	secret := bob.Expect("system/error")
	alice.SendText(`{"id":"a1","kind":"chat","payload":{"text":"public"}}`)
	bob.ExpectFunc("chat", func(m testutil.Msg) bool { return m.ID() == "a1" })
	bob.SendText(`{"id":"b2","kind":"mcp/request","payload":{"method":"tools/call"}}`) // another, after a1
	bob.Expect("system/error")

	for _, id := range []string{"never-sent", strings.Repeat("x", 10000)} {
		p, _ := testutil.Join(t, g.WSURL+"&resume="+id, "alice-token")
		gap := p.ExpectFunc("system/error", func(m testutil.Msg) bool { return m.Payload()["error"] == gateway.ErrorResumeGap })
		if msg, _ := gap.Payload()["message"].(string); len(msg) > 1000 {
			t.Errorf("the gap notice repeats a %d-byte id: %d bytes", len(id), len(msg))
		}
		p.Conn.CloseNow()
	}
	// Alice resumes from bob's private error: the envelope is not hers,
	// but where it sits in the history is no secret; she gets a1, not b1's
	// answer or any other of bob's.
	p, _ := testutil.Join(t, g.WSURL+"&resume="+secret.ID(), "alice-token")
	p.ExpectFunc("chat", func(m testutil.Msg) bool { return m.ID() == "a1" })
	bobs := func(m testutil.Msg) bool { return strings.Contains(string(m.Raw), `"to":["bob"]`) }
	if m, quiet := p.Quiet(300*time.Millisecond, func(m testutil.Msg) bool { return !bobs(m) }); !quiet {
		t.Errorf("alice's resume replayed bob's private answer: %s", m.Raw)
	}
}
