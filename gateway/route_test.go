package gateway_test

import (
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/coder/websocket"

	"github.com/mew-protocol/mew/gateway"
	"github.com/mew-protocol/mew/internal/testutil"
)

func TestVisibility(t *testing.T) {
	g := start(t, gateway.Options{})
	alice, _ := testutil.Join(t, g.WSURL, "alice-token")
	bob, _ := testutil.Join(t, g.WSURL, "bob-token")
	carol, _ := testutil.Join(t, g.WSURL, g.Token(t, "carol"))
	alice.Expect("system/presence")
	alice.Expect("system/presence")
	bob.Expect("system/presence")

	// Broadcast and addressed envelopes reach everyone, the sender included,
	// byte for byte the same.
	for _, msg := range []string{
		`{"kind":"chat","payload":{"text":"to all"}}`,
		`{"id":"m2","kind":"chat","to":["bob"],"payload":{"text":"to bob"}}`,
	} {
		alice.SendText(msg)
		a := alice.Expect("chat")
		b := bob.Expect("chat")
		c := carol.Expect("chat")
		if string(a.Raw) != string(b.Raw) || string(b.Raw) != string(c.Raw) {
			t.Fatalf("copies differ:\n%s\n%s\n%s", a.Raw, b.Raw, c.Raw)
		}
		if a.From() != "alice" || a.ID() == "" || a.Env["ts"] == nil || a.Env["protocol"] != "mew/v0.4" {
			t.Fatalf("not filled in: %s", a.Raw)
		}
	}
	// Exact bytes: the gateway adds protocol, id, ts, from and keeps the rest.
	alice.SendText(`{"id":"fixed","ts":"2026-11-22T10:03:38.659Z","kind":"chat","to":["bob"],"correlation_id":["m2"],"context":"c1","payload":{"text":"x","format":"plain"},"x-extra":{"a":1}}`)
	want := `{"protocol":"mew/v0.4","id":"fixed","ts":"2026-11-22T10:03:38.659Z","from":"alice","to":["bob"],"kind":"chat","correlation_id":["m2"],"context":"c1","payload":{"text":"x","format":"plain"},"x-extra":{"a":1}}`
	if m := bob.ExpectFunc("chat", func(m testutil.Msg) bool { return m.ID() == "fixed" }); string(m.Raw) != want {
		t.Fatalf("relayed\n%s\nwant\n%s", m.Raw, want)
	}
	waitFile(t, g.Config.Resolve("logs/watcher.jsonl"), want)
}

// refusalCase is one envelope a participant sends and how the gateway must
// answer it.
type refusalCase struct {
	name    string
	send    string
	binary  bool
	code    string // "" = accepted
	corr    string // expected correlation id
	checkFn func(t *testing.T, m testutil.Msg)
}

func TestRefusals(t *testing.T) {
	g := start(t, gateway.Options{Limits: gateway.Limits{MaxMessageSize: 64 << 10}})
	bob, _ := testutil.Join(t, g.WSURL, "bob-token")
	alice, _ := testutil.Join(t, g.WSURL, "alice-token")
	bob.Expect("system/presence")
	big := strings.Repeat("x", 10<<20)
	cases := []refusalCase{
		{name: "malformed JSON", send: `{"kind":"chat",`, code: "invalid_envelope"},
		{name: "JSON array", send: `[{"kind":"chat"}]`, code: "invalid_envelope"},
		{name: "JSON string", send: `"chat"`, code: "invalid_envelope"},
		{name: "binary garbage", send: "\xff\xfe\x00\x01\x02", binary: true, code: "invalid_envelope"},
		{name: "empty message", send: "", code: "invalid_envelope"},
		{name: "duplicate key", send: `{"kind":"chat","kind":"mcp/request","payload":{"text":"x"}}`, code: "invalid_envelope"},
		{name: "missing kind", send: `{"id":"k1","payload":{"text":"x"}}`, code: "invalid_envelope"},
		{name: "wrong protocol", send: `{"protocol":"mew/v0.3","id":"p1","kind":"chat","payload":{"text":"x"}}`, code: "invalid_envelope", corr: "p1"},
		// An envelope that does not decode is still answered with its id.
		{name: "correlation_id as number", send: `{"id":"c1","kind":"chat","correlation_id":7,"payload":{"text":"x"}}`, code: "invalid_envelope", corr: "c1"},
		{name: "to as string", send: `{"kind":"chat","to":"alice","id":"c2","payload":{"text":"x"}}`, code: "invalid_envelope", corr: "c2"},
		{name: "chat without text", send: `{"id":"t1","kind":"chat","payload":{}}`, code: "invalid_envelope", corr: "t1"},
		{name: "bad kind characters", send: `{"id":"k2","kind":"chat bomb","payload":{"text":"x"}}`, code: "invalid_envelope", corr: "k2"},
		{name: "10 MiB frame", send: `{"kind":"chat","payload":{"text":"` + big + `"}}`, code: "too_large"},
		{name: "from spoofed", send: `{"id":"f1","from":"alice","kind":"chat","payload":{"text":"x"}}`, code: "identity_mismatch", corr: "f1"},
		{name: "from gateway", send: `{"id":"f2","from":"system:gateway","kind":"chat","payload":{"text":"x"}}`, code: "identity_mismatch", corr: "f2"},
		{name: "system/welcome", send: `{"id":"w1","kind":"system/welcome","payload":{"you":{"id":"bob","capabilities":[{"kind":"*"}]},"participants":[]}}`, code: "reserved_kind", corr: "w1"},
		{name: "system/register", send: `{"id":"r1","kind":"system/register","payload":{"capabilities":[{"kind":"*"}]}}`, code: "reserved_kind", corr: "r1",
			checkFn: func(t *testing.T, m testutil.Msg) {
				if !strings.Contains(m.Payload()["message"].(string), "system/register is reserved for the gateway") {
					t.Errorf("message = %v", m.Payload()["message"])
				}
			}},
		{name: "floor/yield", send: `{"id":"y1","kind":"floor/yield","correlation_id":["m"],"payload":{"winner":"bob"}}`, code: "reserved_kind", corr: "y1"},
		{name: "capability violation", send: `{"id":"v1","kind":"mcp/request","to":["alice"],"payload":{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"x"}}}`, code: "capability_violation", corr: "v1",
			checkFn: func(t *testing.T, m testutil.Msg) {
				p := m.Payload()
				if p["attempted_kind"] != "mcp/request" || len(p["your_capabilities"].([]any)) != 5 {
					t.Errorf("payload = %v", p)
				}
			}},
		{name: "stream frame without stream", send: "#s1#data", code: "unauthorized_stream_write"},
		{name: "allowed by payload pattern", send: `{"kind":"mcp/request","to":["alice"],"payload":{"jsonrpc":"2.0","id":2,"method":"tools/list"}}`},
		{name: "heartbeat", send: `{"kind":"system/heartbeat"}`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			typ := websocket.MessageText
			if c.binary {
				typ = websocket.MessageBinary
			}
			if err := bob.Write(typ, []byte(c.send)); err != nil {
				t.Fatal(err)
			}
			// A marker after each case: the connection is alive and the
			// answer came before it.
			bob.SendText(`{"kind":"chat","payload":{"text":"marker"}}`)
			var got []testutil.Msg
			for {
				m := bob.Next()
				if m.Kind() == "chat" && m.Payload()["text"] == "marker" {
					break
				}
				got = append(got, m)
			}
			if c.code == "" {
				for _, m := range got {
					if m.Kind() == "system/error" {
						t.Fatalf("refused: %s", m.Raw)
					}
				}
				return
			}
			if len(got) != 1 || got[0].Kind() != "system/error" {
				t.Fatalf("got %d messages before the marker, want one system/error: %v", len(got), got)
			}
			m := got[0]
			if m.Payload()["error"] != c.code || m.Payload()["message"] == "" {
				t.Fatalf("error = %s, want %s", m.Raw, c.code)
			}
			if to := m.Env["to"].([]any); len(to) != 1 || to[0] != "bob" {
				t.Fatalf("to = %v", to)
			}
			corr, _ := m.Env["correlation_id"].([]any)
			if c.corr != "" && (len(corr) != 1 || corr[0] != c.corr) {
				t.Fatalf("correlation_id = %v, want [%s]", corr, c.corr)
			}
			if c.checkFn != nil {
				c.checkFn(t, m)
			}
		})
	}
	// Alice saw none of the refused envelopes and no errors, only bob's
	// markers and the accepted request.
	deadline := time.Now().Add(2 * time.Second)
	markers := 0
	for time.Now().Before(deadline) && markers < len(cases) {
		m, err := alice.Read(time.Until(deadline))
		if err != nil {
			break
		}
		switch {
		case m.Kind() == "chat" && m.Payload()["text"] == "marker":
			markers++
		case m.Kind() == "mcp/request":
		default:
			t.Fatalf("alice got %s", m.Raw)
		}
	}
	if markers != len(cases) {
		t.Fatalf("alice got %d markers, want %d", markers, len(cases))
	}
}

func TestBurstIsRateLimitedAndOthersUndisturbed(t *testing.T) {
	g := start(t, gateway.Options{Limits: gateway.Limits{Rate: 1000, Burst: 500}})
	bob, _ := testutil.Join(t, g.WSURL, "bob-token")
	alice, _ := testutil.Join(t, g.WSURL, "alice-token")
	bob.Expect("system/presence")
	const n = 10000
	var wg sync.WaitGroup
	wg.Go(func() {
		for i := range n {
			if err := bob.Write(websocket.MessageText, fmt.Appendf(nil, `{"id":"b%d","kind":"chat","payload":{"text":"burst"}}`, i)); err != nil {
				t.Errorf("write %d: %v", i, err)
				return
			}
		}
	})
	wg.Wait()
	time.Sleep(1100 * time.Millisecond) // let the bucket refill a little
	bob.SendText(`{"kind":"chat","payload":{"text":"done"}}`)
	// Bob gets his accepted chats back and rate_limited answers (coalesced
	// to about one a second); his connection survives.
	chats, limited := 0, 0
	for {
		m := bob.Next()
		if m.Kind() == "system/error" {
			if m.Payload()["error"] != "rate_limited" {
				t.Fatalf("unexpected error %s", m.Raw)
			}
			limited++
			continue
		}
		if m.Kind() == "chat" && m.Payload()["text"] == "done" {
			break
		}
		if m.Kind() == "chat" {
			chats++
		}
	}
	if limited == 0 || chats < 500 || chats == n {
		t.Fatalf("accepted %d of %d, %d rate_limited answers", chats, n, limited)
	}
	// Alice received exactly what was accepted, and can still talk.
	got := 0
	for got < chats {
		if m := alice.Next(); m.Kind() == "chat" {
			got++
		}
	}
	alice.SendText(`{"kind":"chat","payload":{"text":"after"}}`)
	alice.ExpectFunc("chat", func(m testutil.Msg) bool { return m.Payload()["text"] == "after" })
	t.Logf("burst of %d: %d accepted, %d rate_limited answers", n, chats, limited)
}

func TestSlowConsumerIsolation(t *testing.T) {
	// The sender stays under its rate limit: a flood over the limit would be
	// refused, and an unlimited one would outrun healthy readers too.
	g := start(t, gateway.Options{Limits: gateway.Limits{Rate: 4000, Burst: 1000, ByteRate: 64 << 20}})
	sender, _ := testutil.Join(t, g.WSURL, "alice-token")
	fast, _ := testutil.Join(t, g.WSURL, "bob-token")
	stalled := testutil.DialStalled(t, g.WSURL, g.Token(t, "carol"))
	sender.Expect("system/presence")
	sender.Expect("system/presence")
	fast.Expect("system/presence")

	payload := strings.Repeat("y", 8<<10)
	const n = 4000 // 32 MiB: well past the stalled reader's socket buffers and queue
	start := time.Now()
	var sentAt time.Time
	var wg sync.WaitGroup
	wg.Go(func() {
		defer func() { sentAt = time.Now() }()
		tick := time.NewTicker(10 * time.Millisecond)
		defer tick.Stop()
		for i := range n {
			if i%25 == 0 {
				<-tick.C // about 2,500 envelopes (20 MB) a second
			}
			if err := sender.Write(websocket.MessageText, fmt.Appendf(nil, `{"kind":"chat","payload":{"text":"%d %s"}}`, i, payload)); err != nil {
				t.Errorf("write: %v", err)
				return
			}
		}
	})
	got, left := 0, false
	for got < n {
		m := fast.Next()
		switch m.Kind() {
		case "chat":
			got++
		case "system/presence":
			if m.Payload()["event"] == "leave" && m.Payload()["participant"].(map[string]any)["id"] == "carol" {
				left = true
			}
		}
	}
	doneAt := time.Now()
	wg.Wait()
	elapsed := doneAt.Sub(start)
	// Full rate: the fast reader has everything soon after the sender is
	// done (the race detector and a busy machine allow some lag), not after
	// the 10 s write timeout that waiting on the stalled one would cost.
	if lag := doneAt.Sub(sentAt); lag > 5*time.Second {
		t.Fatalf("the fast reader finished %v after the sender", lag)
	}
	if !left {
		m, _ := fast.Read(12 * time.Second)
		left = m.Kind() == "system/presence" && m.Payload()["event"] == "leave"
	}
	if !left {
		t.Fatal("the stalled reader was never disconnected")
	}
	t.Logf("fast reader got %d envelopes of 8 KiB in %v while one reader stalled", got, elapsed)
	// The stalled connection, once it reads, finds it was closed with 1013.
	code := stalledClose(t, stalled)
	if code != websocket.StatusTryAgainLater && code != -1 {
		t.Fatalf("stalled reader closed with %v", code)
	}
}

// stalledClose reads what a stalled peer was sent until the close.
func stalledClose(t *testing.T, p *testutil.Peer) websocket.StatusCode {
	t.Helper()
	for {
		ctxErr := func() error {
			_, _, err := p.Conn.Read(t.Context())
			return err
		}()
		if ctxErr != nil {
			return websocket.CloseStatus(ctxErr)
		}
	}
}
