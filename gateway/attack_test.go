package gateway_test

// Attacks on the running gateway, one class of the threat model
// (docs/security.md) per test: each runs a real gateway on 127.0.0.1 with
// real WebSocket and HTTP clients, tries what a hostile participant or an
// unauthenticated stranger would, and checks that nothing escalates, nothing
// leaks, memory stays bounded and bystanders keep receiving.

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/coder/websocket"

	"github.com/mew-protocol/mew/gateway"
	"github.com/mew-protocol/mew/internal/testutil"
)

// joinAs connects without a bearer header and joins with a join message,
// as the reference's clients do, under the runtime id alias ("" for none).
func joinAs(t *testing.T, g *testutil.Gateway, token, alias string) (*testutil.Peer, testutil.Msg) {
	t.Helper()
	p := testutil.Dial(t, g.WSURL, "")
	p.SendText(fmt.Sprintf(`{"type":"join","participantId":%q,"space":"test","token":%q}`, alias, token))
	m := p.Next()
	return p, m
}

// expectChat waits for a chat with text on p.
func expectChat(t *testing.T, p *testutil.Peer, text string) {
	t.Helper()
	p.ExpectFunc("chat", func(m testutil.Msg) bool { return m.Payload()["text"] == text })
}

// TestAttackReservedIDs: nobody joins, aliases or is invited under the
// gateway's ids, in any casing; bystanders never see an envelope from
// system:gateway that the gateway did not send.
func TestAttackReservedIDs(t *testing.T) {
	g := start(t, gateway.Options{})
	bystander, _ := testutil.Join(t, g.WSURL, "bob-token")
	for _, id := range []string{"system:gateway", "System:Gateway", "SYSTEM:GATEWAY", " system:gateway",
		"system:gateway ", "system:", "system:admin", "gateway", "Gateway", "GATEWAY "} {
		p, m := joinAs(t, g, "alice-token", id)
		if m.Kind() != "system/error" || m.Payload()["error"] != gateway.ErrorIdentityMismatch ||
			!strings.Contains(m.Payload()["message"].(string), "reserved") {
			t.Errorf("join as %q: got %s", id, m.Raw)
		}
		if code, _ := p.Closed(5 * time.Second); code != websocket.StatusPolicyViolation {
			t.Errorf("join as %q: closed with %d, want 1008", id, code)
		}
		// The same names through an invitation.
		st, body := post(t, g, "alice", "alice-token", fmt.Sprintf(`{"kind":"space/invite","payload":{"participant_id":%q}}`, id))
		if st == http.StatusOK || body["token"] != nil {
			t.Errorf("invite %q: %d %v", id, st, body)
		}
	}
	// An envelope claiming the gateway's from is refused, not relayed.
	alice, _ := testutil.Join(t, g.WSURL, "alice-token")
	for _, from := range []string{"system:gateway", "gateway"} {
		alice.SendText(fmt.Sprintf(`{"id":"spoof","from":%q,"kind":"chat","payload":{"text":"spoofed"}}`, from))
		alice.ExpectFunc("system/error", func(m testutil.Msg) bool { return m.Payload()["error"] == gateway.ErrorIdentityMismatch })
	}
	alice.SendText(`{"kind":"chat","payload":{"text":"after"}}`)
	for {
		m := bystander.Next()
		if m.Kind() == "chat" && m.Payload()["text"] == "spoofed" {
			t.Fatalf("bystander got %s", m.Raw)
		}
		if m.Kind() == "chat" && m.Payload()["text"] == "after" {
			break
		}
		if m.From() == "system:gateway" && m.Kind() != "system/presence" {
			t.Fatalf("bystander got from the gateway: %s", m.Raw)
		}
	}
}

// TestAttackAliasHistoryLeak: private answers (here the invite-ack with the
// new participant's token, and an error) stay with the participant they were
// for, whatever runtime id someone else later takes.
func TestAttackAliasHistoryLeak(t *testing.T) {
	g := start(t, gateway.Options{})
	// alice joins as "desk", invites someone (the token comes back to her
	// alone, privately), provokes an error, and leaves.
	alice, w := joinAs(t, g, "alice-token", "desk")
	if w.Kind() != "system/welcome" {
		t.Fatalf("welcome: %s", w.Raw)
	}
	alice.SendText(`{"id":"inv1","kind":"space/invite","payload":{"participant_id":"newbie"}}`)
	ack := alice.Expect("space/invite-ack")
	token, _ := ack.Payload()["token"].(string)
	if token == "" {
		t.Fatalf("invite-ack without a token: %s", ack.Raw)
	}
	alice.SendText(`{"id":"bad1","kind":"system/welcome","payload":{}}`)
	alice.Expect("system/error")
	_ = alice.Conn.Close(websocket.StatusNormalClosure, "")
	waitGone(t, g, "desk")

	// Others cannot take the alias, now or under another casing of the
	// same token's owner...
	for _, tok := range []string{"bob-token", "lazy-token"} {
		if _, m := joinAs(t, g, tok, "desk"); m.Kind() != "system/error" || m.Payload()["error"] != gateway.ErrorIdentityMismatch {
			t.Fatalf("%s took alice's alias: %s", tok, m.Raw)
		}
	}
	// ...nor read its history under that name or their own.
	for _, c := range []struct{ path, token string }{
		{"/participants/desk/messages", "bob-token"},
		{"/participants/bob/messages", "bob-token"},
		{"/participants/lazy/messages", "lazy-token"},
		{"/participants/desk/messages?cursor=0&limit=1000", "lazy-token"},
	} {
		st, body := get(t, g, c.path, c.token)
		if raw := fmt.Sprint(body); strings.Contains(raw, token) || strings.Contains(raw, "invite-ack") || strings.Contains(raw, "bad1") {
			t.Fatalf("GET %s with %s leaked a private answer (%d): %s", c.path, c.token, st, raw)
		}
	}
	// alice still finds her own private answers, under her name or the alias.
	for _, path := range []string{"/participants/alice/messages", "/participants/desk/messages"} {
		st, body := get(t, g, path, "alice-token")
		if st != http.StatusOK || !strings.Contains(fmt.Sprint(body), token) {
			t.Fatalf("GET %s by alice: %d, no invite-ack: %v", path, st, body)
		}
	}
	// alice can take her alias again.
	if _, m := joinAs(t, g, "alice-token", "desk"); m.Kind() != "system/welcome" {
		t.Fatalf("alice rejoining as desk: %s", m.Raw)
	}
}

// waitGone waits until the participants list no longer shows id connected.
func waitGone(t *testing.T, g *testutil.Gateway, id string) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for time.Now().Before(deadline) {
		_, body := get(t, g, "/participants", "")
		if !strings.Contains(fmt.Sprint(body), "id:"+id+" ") {
			return
		}
		time.Sleep(10 * time.Millisecond)
	}
	t.Fatalf("%s never left", id)
}

// TestAttackAliasExhaustion: one participant cannot fill the alias table.
func TestAttackAliasExhaustion(t *testing.T) {
	g := start(t, gateway.Options{})
	var refused bool
	for i := range 70 {
		p, m := joinAs(t, g, "bob-token", fmt.Sprintf("bob-%d", i))
		if m.Kind() == "system/error" {
			if i < 64 || m.Payload()["error"] != gateway.ErrorIdentityMismatch {
				t.Fatalf("alias %d refused: %s", i, m.Raw)
			}
			refused = true
			break
		}
		_ = p.Conn.Close(websocket.StatusNormalClosure, "")
	}
	if !refused {
		t.Fatal("70 aliases bound by one participant")
	}
	// Others are not affected.
	if _, m := joinAs(t, g, "alice-token", "alice-2"); m.Kind() != "system/welcome" {
		t.Fatalf("alice: %s", m.Raw)
	}
}

// drainUntil reads p until a chat with text arrives, and counts what came
// before: kinds, and the error code of each system/error.
func drainUntil(t *testing.T, p *testutil.Peer, text string) map[string]int {
	t.Helper()
	seen := map[string]int{}
	deadline := time.Now().Add(20 * time.Second)
	for {
		m, err := p.Read(time.Until(deadline))
		if err != nil {
			t.Fatalf("waiting for %q: %v (seen %v)", text, err, seen)
		}
		if m.Kind() == "chat" && m.Payload()["text"] == text {
			return seen
		}
		seen[m.Kind()]++
		if m.Kind() == "system/error" {
			code, _ := m.Payload()["error"].(string)
			seen[code]++
		}
	}
}

// heapMB returns the heap in use, after a collection, in MiB.
func heapMB() float64 {
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return float64(ms.HeapInuse) / (1 << 20)
}

// TestAttackPreAuthFlood: strangers without a token open many connections
// and each starts a 1 MiB message. The gateway holds little for them,
// refuses those over the caps with 503, and joined participants keep
// talking.
func TestAttackPreAuthFlood(t *testing.T) {
	g := start(t, gateway.Options{Limits: gateway.Limits{MaxPending: 64, MaxPendingPerAddr: 48}, Timing: gateway.Timing{JoinTimeout: 3 * time.Second}})
	alice, _ := testutil.Join(t, g.WSURL, "alice-token")
	bob, _ := testutil.Join(t, g.WSURL, "bob-token")
	before := heapMB()

	const n = 300
	var mu sync.Mutex
	statuses := map[int]int{}
	var conns []*websocket.Conn
	var wg sync.WaitGroup
	big := strings.Repeat("x", 1<<20)
	for range n {
		wg.Go(func() {
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			c, resp, err := websocket.Dial(ctx, g.WSURL, nil)
			mu.Lock()
			defer mu.Unlock()
			if err != nil {
				if resp != nil {
					statuses[resp.StatusCode]++
				} else {
					statuses[-1]++
				}
				return
			}
			statuses[101]++
			conns = append(conns, c)
			// Start a large message and never finish it.
			w, err := c.Writer(ctx, websocket.MessageText)
			if err == nil {
				_, _ = io.WriteString(w, big[:256<<10])
			}
		})
	}
	wg.Wait()
	during := heapMB()
	// Slots come back as the gateway closes connections over the join size,
	// so more than 48 may be upgraded in all; but never most of them.
	if statuses[http.StatusServiceUnavailable] < n/2 || statuses[-1] > 0 {
		t.Errorf("upgrade outcomes %v: want most refused with 503, none hanging", statuses)
	}
	// Bystanders are undisturbed while the flood is on.
	alice.SendText(`{"kind":"chat","payload":{"text":"during the flood"}}`)
	expectChat(t, bob, "during the flood")
	if grew := during - before; grew > 48 {
		t.Errorf("heap grew %.1f MiB under %d pre-auth connections (bound 48 MiB)", grew, n)
	}
	t.Logf("heap before %.1f MiB, during the flood %.1f MiB; upgrades %v", before, during, statuses)
	for _, c := range conns {
		_ = c.CloseNow()
	}
	// The slots come back: a legitimate join works at once.
	deadline := time.Now().Add(5 * time.Second)
	for {
		p := testutil.Dial(t, g.WSURL, "")
		p.SendText(`{"type":"join","token":"lazy-token"}`)
		m, err := p.Read(2 * time.Second)
		if err == nil && m.Kind() == "system/welcome" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("no join after the flood: %v %s", err, m.Raw)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// TestAttackOversizedJoin: a join message is small; a large one is refused
// with too_large before anything is authenticated.
func TestAttackOversizedJoin(t *testing.T) {
	g := start(t, gateway.Options{})
	for _, size := range []int{20 << 10, 200 << 10} {
		p := testutil.Dial(t, g.WSURL, "")
		pad := strings.Repeat("x", size)
		_ = p.Write(websocket.MessageText, []byte(`{"type":"join","token":"alice-token","pad":"`+pad+`"}`))
		m, err := p.Read(5 * time.Second)
		switch {
		case err == nil && (m.Kind() != "system/error" || m.Payload()["error"] != gateway.ErrorTooLarge):
			t.Errorf("join of %d bytes: %s", size, m.Raw)
		case err != nil && websocket.CloseStatus(err) != websocket.StatusMessageTooBig && websocket.CloseStatus(err) != websocket.StatusPolicyViolation:
			t.Errorf("join of %d bytes: %v", size, err)
		}
	}
}

// TestAttackLargeEnvelopeFlood: joined participants send many large
// envelopes. The byte budget refuses most, the polling history holds no
// more than its byte bound, and a bystander keeps receiving.
func TestAttackLargeEnvelopeFlood(t *testing.T) {
	g := start(t, gateway.Options{Limits: gateway.Limits{HistoryBytes: 8 << 20, SendQueue: 4096, ByteRate: 1, ByteBurst: 8 << 20}})
	alice, _ := testutil.Join(t, g.WSURL, "alice-token")
	bob, _ := testutil.Join(t, g.WSURL, "bob-token")
	before := heapMB()
	chat := `{"kind":"chat","payload":{"text":"` + strings.Repeat("y", 900<<10) + `"}}`
	for range 80 {
		alice.SendText(chat)
	}
	alice.SendText(`{"kind":"chat","payload":{"text":"small"}}`)
	// Both read everything (and let it go), so that what remains on the
	// heap is the gateway's; most of the flood was refused over the byte
	// budget.
	if n := drainUntil(t, bob, "small")["chat"]; n < 2 || n > 40 {
		t.Errorf("bob got %d chats of the 81 sent; the byte budget allows about 12", n)
	}
	if codes := drainUntil(t, alice, "small"); codes[gateway.ErrorRateLimited] < 1 {
		t.Errorf("alice was not told she is over her budget: %v", codes)
	}
	after := heapMB()
	// The history keeps at most 8 MiB; peers' queues have drained.
	if grew := after - before; grew > 40 {
		t.Errorf("heap grew %.1f MiB after 80 envelopes of 900 KiB (bound 40 MiB)", grew)
	}
	t.Logf("heap before %.1f MiB, after %.1f MiB", before, after)
	st, body := get(t, g, "/participants/bob/messages?limit=1000", "bob-token")
	if st != http.StatusOK {
		t.Fatalf("poll: %d", st)
	}
	size := len(fmt.Sprint(body["messages"]))
	if size > 9<<20 {
		t.Errorf("history holds %d bytes, bound 8 MiB", size)
	}
}

// TestAttackStreamFloodVictim: participants open targeted streams at one
// victim and flood them. Their frames count against their own budgets, the
// victim is never disconnected as a slow consumer for their flood, it is told
// what it missed, and others' messages still reach it.
func TestAttackStreamFloodVictim(t *testing.T) {
	g := testutil.StartGateway(t, `
space:
  id: test
participants:
  victim: {tokens: [victim-token], capabilities: [{kind: chat}]}
  friend: {tokens: [friend-token], capabilities: [{kind: chat}]}
  f1: {tokens: [f1-token], capabilities: [{kind: "stream/*"}, {kind: chat}]}
  f2: {tokens: [f2-token], capabilities: [{kind: "stream/*"}, {kind: chat}]}
  f3: {tokens: [f3-token], capabilities: [{kind: "stream/*"}, {kind: chat}]}
`, gateway.Options{Limits: gateway.Limits{SendQueue: 256, Rate: 20000, Burst: 20000}})
	// The victim reads, slowly: a few hundred microseconds a message.
	friend, _ := testutil.Join(t, g.WSURL, "friend-token")
	victim := testutil.DialStalled(t, g.WSURL, "victim-token")
	// A stalled dial returns before the join completes: wait for it, or the
	// streams below could target someone not in the space yet.
	friend.ExpectFunc("system/presence", func(m testutil.Msg) bool { return m.Payload()["event"] == "join" })
	var flooders []*testutil.Peer
	var streams []string
	for _, f := range []string{"f1", "f2", "f3"} {
		p, _ := testutil.Join(t, g.WSURL, f+"-token")
		flooders = append(flooders, p)
		for i := range 7 { // 21 streams in all
			rid := fmt.Sprintf("%s-r%d", f, i)
			p.SendText(`{"id":"` + rid + `","kind":"stream/request","to":["victim"],"payload":{"direction":"upload","target":["victim"]}}`)
			open := p.ExpectFunc("stream/open", func(m testutil.Msg) bool {
				c, _ := m.Env["correlation_id"].([]any)
				return len(c) == 1 && c[0] == rid
			})
			streams = append(streams, open.Payload()["stream_id"].(string))
		}
	}
	var readMu sync.Mutex
	var got []string
	readDone := make(chan error, 1)
	go func() {
		for {
			_, b, err := victim.Conn.Read(context.Background())
			if err != nil {
				readDone <- err
				return
			}
			readMu.Lock()
			got = append(got, string(b))
			readMu.Unlock()
			time.Sleep(200 * time.Microsecond)
		}
	}()
	var wg sync.WaitGroup
	for i, p := range flooders {
		wg.Go(func() {
			for k := range 3000 {
				sid := streams[i*7+k%7]
				if p.Write(websocket.MessageText, []byte("#"+sid+"#flood-flood-flood-flood")) != nil {
					return
				}
			}
		})
	}
	wg.Wait()
	friend.SendText(`{"kind":"chat","to":["victim"],"payload":{"text":"hello victim"}}`)
	// The victim gets the friend's chat and is told of the shed frames.
	deadline := time.Now().Add(20 * time.Second)
	var sawChat, sawNotice bool
	for !(sawChat && sawNotice) && time.Now().Before(deadline) {
		select {
		case err := <-readDone:
			t.Fatalf("victim disconnected: %v", err)
		case <-time.After(20 * time.Millisecond):
		}
		readMu.Lock()
		for _, m := range got {
			sawChat = sawChat || strings.Contains(m, "hello victim")
			sawNotice = sawNotice || strings.Contains(m, gateway.ErrorMessagesDropped)
		}
		readMu.Unlock()
	}
	if !sawChat {
		t.Fatal("the friend's chat never reached the victim")
	}
	if !sawNotice {
		t.Error("the victim was not told that frames were dropped")
	}
	// The flooders were told to slow down.
	flooders[0].ExpectFunc("system/error", func(m testutil.Msg) bool { return m.Payload()["error"] == gateway.ErrorRateLimited })
	// Still connected: a chat from the victim's side of the space gets through.
	select {
	case err := <-readDone:
		t.Fatalf("victim disconnected: %v", err)
	default:
	}
}

// TestAttackIdleHTTPConnections: keep-alive connections that idle, and TCP
// connections that send nothing, cannot starve the gateway: past the cap a
// connection is answered 503 at once, idle ones are closed to make room,
// and a WebSocket join still gets in.
func TestAttackIdleHTTPConnections(t *testing.T) {
	g := start(t, gateway.Options{Limits: gateway.Limits{MaxConnections: 40, ConnectionHeadroom: 10}, Timing: gateway.Timing{RequestTimeout: 2 * time.Second}})
	// 30 clients each keep one keep-alive connection open after /health.
	var clients []*http.Client
	for range 30 {
		c := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 1}}
		clients = append(clients, c)
		resp, err := c.Get(g.URL + "/health")
		if err != nil {
			t.Fatal(err)
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
	}
	t.Cleanup(func() {
		for _, c := range clients {
			c.CloseIdleConnections()
		}
	})
	// Silent TCP connections fill the rest.
	var silent []net.Conn
	for range 30 {
		c, err := net.Dial("tcp", g.Addr)
		if err != nil {
			t.Fatal(err)
		}
		silent = append(silent, c)
	}
	t.Cleanup(func() {
		for _, c := range silent {
			_ = c.Close()
		}
	})
	// A new connection is answered, not left hanging: 503 when full.
	c, err := net.Dial("tcp", g.Addr)
	if err != nil {
		t.Fatal(err)
	}
	_ = c.SetDeadline(time.Now().Add(5 * time.Second))
	_, _ = c.Write([]byte("GET /health HTTP/1.1\r\nHost: x\r\n\r\n"))
	line, err := bufio.NewReader(c).ReadString('\n')
	c.Close()
	if err != nil || !strings.Contains(line, "503") {
		t.Fatalf("a connection over the cap: %q %v", line, err)
	}
	// The silent ones time out; then a participant joins.
	deadline := time.Now().Add(10 * time.Second)
	for {
		p, err := testutil.TryDial(t, g.WSURL, "alice-token")
		if err == nil {
			if m, err := p.Read(2 * time.Second); err == nil && m.Kind() == "system/welcome" {
				break
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("no join while connections were held: %v", err)
		}
		time.Sleep(100 * time.Millisecond)
	}
	// And /health answers again once the silent connections are gone.
	for _, c := range silent {
		_ = c.Close()
	}
	deadline = time.Now().Add(10 * time.Second)
	for {
		resp, err := http.Get(g.URL + "/health")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				break
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("/health never recovered: %v", err)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// TestAttackTokensInFiles: a token never reaches a file the gateway writes,
// and those files are private (0600): an output_log participant's log after
// it invites someone, and the audit log after a refused join.
func TestAttackTokensInFiles(t *testing.T) {
	g := testutil.StartGateway(t, `
space:
  id: test
participants:
  admin:
    tokens: [admin-token]
    output_log: ./logs/admin.jsonl
    auto_connect: true
    capabilities: [{kind: space/invite}, {kind: chat}]
  alice: {tokens: [alice-token], capabilities: [{kind: chat}]}
`, gateway.Options{})
	st, body := post(t, g, "admin", "admin-token", `{"id":"inv","kind":"space/invite","payload":{"participant_id":"guest"}}`)
	token, _ := body["token"].(string)
	if st != http.StatusOK || token == "" {
		t.Fatalf("invite: %d %v", st, body)
	}
	alice, _ := testutil.Join(t, g.WSURL, "alice-token")
	// Joins sent after joining, some malformed so that they are refused
	// as envelopes rather than read as joins.
	for _, j := range []string{
		`{"kind":"system/join","type":1,"payload":{"token":"` + token + `"}}`,
		`{"kind":"system/join","payload":{"participantId":7,"token":"` + token + `"}}`,
		`{"kind":"system/join","token":"` + token + `","participantId":[]}`,
		`{"type":"join","kind":"system/join","token":"` + token + `","x":{}}`,
	} {
		alice.SendText(j)
	}
	alice.SendText(`{"kind":"chat","payload":{"text":"done"}}`)
	expectChat(t, alice, "done")
	waitFile(t, g.Config.Resolve("logs/admin.jsonl"), `invite-ack`)
	_ = g.Close(context.Background()) // flush the audit log
	files := []string{g.Config.Resolve("logs/admin.jsonl"), g.LogPath("envelope-history.jsonl"), g.LogPath("capability-decisions.jsonl")}
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		if strings.Contains(string(b), token) {
			t.Errorf("%s holds the invited participant's token", filepath.Base(f))
		}
		fi, _ := os.Stat(f)
		if fi.Mode().Perm() != 0o600 {
			t.Errorf("%s has mode %v, want 0600", filepath.Base(f), fi.Mode().Perm())
		}
	}
}
