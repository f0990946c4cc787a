package gateway_test

import (
	"context"
	"fmt"
	"log/slog"
	"net"
	"net/url"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/mew-protocol/mew/gateway"
	"github.com/mew-protocol/mew/gateway/cluster"
	"github.com/mew-protocol/mew/gateway/cluster/natscluster"
	"github.com/mew-protocol/mew/internal/testutil"
)

// histCluster is a cluster whose gateway nodes are started one at a time,
// so that a test can start one after envelopes were sent.
type histCluster struct {
	*fabric
	nodes []cluster.Node
	gs    []*testutil.Gateway
	opts  gateway.Options // of the gateways add starts, before their cluster
}

func newHistCluster(t *testing.T, b backend) *histCluster {
	t.Helper()
	return &histCluster{fabric: newFabric(t, b)}
}

// add starts one more gateway node serving clusterSpace; wrap, if set,
// wraps its cluster node.
func (c *histCluster) add(t *testing.T, wrap func(cluster.Node) cluster.Node) *testutil.Gateway {
	t.Helper()
	node := c.node(t, len(c.nodes), fmt.Sprintf("n%d", len(c.nodes)+1), nil)
	c.nodes = append(c.nodes, node)
	if wrap != nil {
		node = wrap(node)
	}
	opts := c.opts
	opts.Cluster.Node, opts.Cluster.Name, opts.Logger = node, "test", slog.New(slog.NewTextHandler(tlog{t}, nil))
	g := testutil.StartGateway(t, clusterSpace, opts)
	c.gs = append(c.gs, g)
	return g
}

// onHistoryBackends runs f on each backend.
func onHistoryBackends(t *testing.T, f func(*testing.T, *histCluster)) {
	for _, b := range backends {
		t.Run(string(b), func(t *testing.T) { f(t, newHistCluster(t, b)) })
	}
}

// pollPage polls g as who and returns the status, the envelopes, the cursor
// and the error code, if any.
func pollPage(t *testing.T, g *testutil.Gateway, who, token, query string) (int, []map[string]any, string, string) {
	t.Helper()
	code, body := get(t, g, "/participants/"+who+"/messages"+query, token)
	var out []map[string]any
	if msgs, ok := body["messages"].([]any); ok {
		for _, m := range msgs {
			out = append(out, m.(map[string]any))
		}
	}
	c, _ := body["cursor"].(string)
	e, _ := body["error"].(string)
	return code, out, c, e
}

func chatText(m map[string]any) string {
	p, _ := m["payload"].(map[string]any)
	s, _ := p["text"].(string)
	return s
}

// collectChats polls, on the node pick(i) gives for the i-th poll, with
// the cursor each poll returns, until want chats came (or the deadline):
// none may come twice.
func collectChats(t *testing.T, pick func(i int) *testutil.Gateway, who, token string, limit, want int) []string {
	t.Helper()
	var got []string
	seen := map[string]bool{}
	cursor := ""
	deadline := time.Now().Add(15 * time.Second)
	for i := 0; len(got) < want; i++ {
		q := fmt.Sprintf("?limit=%d", limit)
		if cursor != "" {
			q += "&cursor=" + url.QueryEscape(cursor)
		}
		code, msgs, next, _ := pollPage(t, pick(i), who, token, q)
		if code != 200 || next == "" {
			t.Fatalf("poll %d: %d, cursor %q", i, code, next)
		}
		if len(msgs) > limit {
			t.Fatalf("poll %d: %d envelopes, limit %d", i, len(msgs), limit)
		}
		for _, m := range msgs {
			id, _ := m["id"].(string)
			if seen[id] {
				t.Fatalf("poll %d returned %s (%s) again", i, id, m["kind"])
			}
			seen[id] = true
			if m["kind"] == "chat" {
				got = append(got, chatText(m))
			}
		}
		cursor = next
		if time.Now().After(deadline) {
			t.Fatalf("polled %d chats of %d: %v", len(got), want, got)
		}
		if len(msgs) == 0 {
			time.Sleep(10 * time.Millisecond) // another node's appends are on their way
		}
	}
	return got
}

func chatBody(text string) string {
	return fmt.Sprintf(`{"kind":"chat","payload":{"text":%q}}`, text)
}

// A node started after envelopes were sent serves them to its pollers, in
// order.
func TestClusterHistoryLateNode(t *testing.T) {
	onHistoryBackends(t, func(t *testing.T, c *histCluster) {
		a := c.add(t, nil)
		var want []string
		for i := range 12 {
			want = append(want, fmt.Sprintf("early %d", i))
			if code, body := post(t, a, "human", "human-token", chatBody(want[i])); code != 200 {
				t.Fatalf("post: %d %v", code, body)
			}
		}
		b := c.add(t, nil)
		got := collectChats(t, func(int) *testutil.Gateway { return b }, "bob", "bob-token", 5, len(want))
		if !slices.Equal(got, want) {
			t.Fatalf("bob polled node 2: %q, want %q", got, want)
		}
	})
}

// A poller alternating between two nodes with the cursor each returns gets
// every envelope once, in the cluster's order, while two senders on the two
// nodes write.
func TestClusterHistoryAlternatingPoller(t *testing.T) {
	onHistoryBackends(t, func(t *testing.T, c *histCluster) {
		a, b := c.add(t, nil), c.add(t, nil)
		const per = 30
		var wg sync.WaitGroup
		for _, s := range []struct {
			g          *testutil.Gateway
			who, token string
		}{{a, "human", "human-token"}, {b, "agent", "agent-token"}} {
			wg.Go(func() {
				for i := range per {
					if code, body := post(t, s.g, s.who, s.token, chatBody(fmt.Sprintf("%s %02d", s.who, i))); code != 200 {
						t.Errorf("post: %d %v", code, body)
						return
					}
				}
			})
		}
		got := collectChats(t, func(i int) *testutil.Gateway { return []*testutil.Gateway{a, b}[i%2] }, "carol", "carol-token", 7, 2*per)
		wg.Wait()
		if len(got) != 2*per {
			t.Fatalf("polled %d chats, want %d", len(got), 2*per)
		}
		next := map[string]int{}
		for _, text := range got {
			who, n, _ := strings.Cut(text, " ")
			if want := fmt.Sprintf("%02d", next[who]); n != want {
				t.Fatalf("%s's chat %s came where %s was due: %q", who, n, want, got)
			}
			next[who]++
		}
		// The same order, read at once from either node.
		for i, g := range []*testutil.Gateway{a, b} {
			all := collectChats(t, func(int) *testutil.Gateway { return g }, "bob", "bob-token", 1000, 2*per)
			if !slices.Equal(all, got) {
				t.Fatalf("node %d's history in one poll differs from the alternating poller's:\n%q\n%q", i+1, all, got)
			}
		}
	})
}

// hasError counts the system/error answers to id in msgs.
func hasError(msgs []map[string]any, id string) int {
	n := 0
	for _, m := range msgs {
		if c, _ := m["correlation_id"].([]any); m["kind"] == "system/error" && len(c) == 1 && c[0] == id {
			n++
		}
	}
	return n
}

// A private answer made by node 1 is polled by its participant on node 1,
// by no one else, and not again when the poller moves to node 2 and back.
func TestClusterHistoryPrivate(t *testing.T) {
	onHistoryBackends(t, func(t *testing.T, c *histCluster) {
		a, b := c.add(t, nil), c.add(t, nil)
		bob, _ := testutil.Join(t, a.WSURL, "bob-token")
		bad := `{"id":"%s","kind":"mcp/request","to":["human"],"payload":{"jsonrpc":"2.0","id":1,"method":"tools/list"}}`
		if e := outcome(t, bob, "bad1", fmt.Sprintf(bad, "bad1")); e == nil {
			t.Fatal("bob's mcp/request was accepted")
		}
		code, msgs, c1, _ := pollPage(t, a, "bob", "bob-token", "")
		if code != 200 || hasError(msgs, "bad1") != 1 {
			t.Fatalf("bob polling node 1: %d, %v", code, msgs)
		}
		for _, g := range []*testutil.Gateway{a, b} {
			if _, msgs, _, _ := pollPage(t, g, "carol", "carol-token", ""); hasError(msgs, "bad1") != 0 {
				t.Fatalf("carol polled bob's error: %v", msgs)
			}
		}
		if _, msgs, _, _ := pollPage(t, b, "bob", "bob-token", ""); hasError(msgs, "bad1") != 0 {
			t.Fatalf("node 2 served node 1's private answer: %v", msgs)
		}
		// bob moves to node 2 and back: his error is not repeated.
		_, msgs, c2, _ := pollPage(t, b, "bob", "bob-token", "?cursor="+url.QueryEscape(c1))
		if hasError(msgs, "bad1") != 0 {
			t.Fatalf("node 2: %v", msgs)
		}
		_, msgs, c3, _ := pollPage(t, a, "bob", "bob-token", "?cursor="+url.QueryEscape(c2))
		if hasError(msgs, "bad1") != 0 {
			t.Fatalf("back on node 1, bob's error came again: %v", msgs)
		}
		// A new answer made on node 1 comes once, with node 1's cursor.
		if e := outcome(t, bob, "bad2", fmt.Sprintf(bad, "bad2")); e == nil {
			t.Fatal("bob's mcp/request was accepted")
		}
		_, msgs, c4, _ := pollPage(t, a, "bob", "bob-token", "?cursor="+url.QueryEscape(c3))
		if hasError(msgs, "bad2") != 1 || hasError(msgs, "bad1") != 0 {
			t.Fatalf("node 1 after bob's second error: %v", msgs)
		}
		if _, msgs, _, _ := pollPage(t, a, "bob", "bob-token", "?cursor="+url.QueryEscape(c4)); len(msgs) != 0 {
			t.Fatalf("at the end of node 1's history: %v", msgs)
		}
		// A plain integer cursor (the single-node form) is a History seq:
		// private answers made before it are not served.
		if code, msgs, next, _ := pollPage(t, a, "bob", "bob-token", "?cursor=1"); code != 200 || hasError(msgs, "bad2") != 0 || strings.Count(next, ".") != 2 {
			t.Fatalf("plain cursor: %d %q %v", code, next, msgs)
		}
	})
}

// The invite-ack carries the invited participant's token: it stays on the
// node that made it, and no token ever reaches the shared history.
func TestClusterHistoryTokenStaysLocal(t *testing.T) {
	onHistoryBackends(t, func(t *testing.T, c *histCluster) {
		a, b := c.add(t, nil), c.add(t, nil)
		human, _ := testutil.Join(t, a.WSURL, "human-token")
		human.SendText(`{"id":"i1","kind":"space/invite","payload":{"participant_id":"dave","initial_capabilities":[{"kind":"chat"}]}}`)
		wsTok, _ := human.Expect("space/invite-ack").Payload()["token"].(string)
		code, body := post(t, a, "human", "human-token", `{"id":"i2","kind":"space/invite","payload":{"participant_id":"erin","initial_capabilities":[{"kind":"chat"}]}}`)
		httpTok, _ := body["token"].(string)
		if wsTok == "" || code != 200 || httpTok == "" {
			t.Fatalf("invitations: ws token %q, http %d %v", wsTok, code, body)
		}
		// The inviter polls its ack on node 1; nobody else, anywhere.
		_, msgs, _, _ := pollPage(t, a, "human", "human-token", "?limit=1000")
		if !strings.Contains(fmt.Sprint(msgs), wsTok) {
			t.Fatalf("the inviter's poll on node 1 lacks its invite-ack: %v", msgs)
		}
		for _, g := range []*testutil.Gateway{a, b} {
			_, msgs, _, _ := pollPage(t, g, "carol", "carol-token", "?limit=1000")
			if raw := fmt.Sprint(msgs); strings.Contains(raw, wsTok) || strings.Contains(raw, httpTok) {
				t.Fatalf("carol polled a token: %s", raw)
			}
			if !strings.Contains(fmt.Sprint(msgs), "erin") {
				t.Fatalf("carol's poll lacks erin's invitation: %v", msgs)
			}
		}
		if _, msgs, _, _ := pollPage(t, b, "human", "human-token", "?limit=1000"); strings.Contains(fmt.Sprint(msgs), wsTok) {
			t.Fatal("node 2 served node 1's invite-ack")
		}
		// The shared history, read raw: no token, though it holds the
		// invitations' presence.
		raw := historyRaw(t, c)
		if !strings.Contains(raw, "dave") || !strings.Contains(raw, "erin") {
			t.Fatalf("the shared history lacks the invitations: %s", raw)
		}
		for _, tok := range []string{wsTok, httpTok} {
			if strings.Contains(raw, tok) {
				t.Fatalf("a token is in the shared history: %s", raw)
			}
		}
	})
}

// historyRaw returns every record of the cluster's history, as stored: on
// NATS read straight from the stream with a client of its own.
func historyRaw(t *testing.T, c *histCluster) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	var b strings.Builder
	if len(c.urls) == 0 {
		recs, err := c.nodes[0].History().Read(ctx, "shared", 0, cluster.MaxReadLen)
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range recs {
			b.Write(r.Data)
			b.WriteByte('\n')
		}
		return b.String()
	}
	js := testutil.JetStream(t, c.urls[0])
	cons, err := js.OrderedConsumer(ctx, "mew_"+c.name+"_history", jetstream.OrderedConsumerConfig{})
	if err != nil {
		t.Fatal(err)
	}
	for {
		batch, err := cons.FetchNoWait(500)
		if err != nil {
			t.Fatal(err)
		}
		n := 0
		for m := range batch.Messages() {
			b.Write(m.Data())
			b.WriteByte('\n')
			n++
		}
		if n == 0 {
			break
		}
	}
	return b.String()
}

// Hostile cursors and limits are refused with 400 and a message; a cursor
// far ahead is served, empty.
func TestClusterHistoryHostileCursors(t *testing.T) {
	onHistoryBackends(t, func(t *testing.T, c *histCluster) {
		a := c.add(t, nil)
		post(t, a, "human", "human-token", chatBody("x"))
		for _, cur := range []string{
			"x", "-1", "+1", " 1", "1.2", "1..abcdef01", "..", "1.2.3.4", "1.2.ABCDEF01", "1.2.abcdef0", "1.2.abcdef012",
			"1.2.zzzzzzzz", "-1.0.abcdef01", "1.-2.abcdef01", "18446744073709551616", "1.18446744073709551616.abcdef01",
			"99999999999999999999999999.0.abcdef01", strings.Repeat("1", 10<<10), strings.Repeat("1.", 5<<10),
		} {
			code, _, _, e := pollPage(t, a, "carol", "carol-token", "?cursor="+url.QueryEscape(cur))
			if code != 400 || e != "invalid_request" {
				t.Fatalf("cursor %.40q: %d %s, want 400 invalid_request", cur, code, e)
			}
		}
		for _, q := range []string{"?limit=-1", "?limit=1001", "?limit=x", "?since=yesterday"} {
			if code, _, _, e := pollPage(t, a, "carol", "carol-token", q); code != 400 || e != "invalid_request" {
				t.Fatalf("%s: %d %s", q, code, e)
			}
		}
		// Ahead of everything: nothing, and no error; a foreign node's
		// mark is no error either.
		for _, cur := range []string{"18446744073709551615", "18446744073709551615.18446744073709551615.abcdef01", "0.0.00000000"} {
			code, msgs, next, _ := pollPage(t, a, "carol", "carol-token", "?cursor="+cur)
			if code != 200 || next == "" {
				t.Fatalf("cursor %s: %d %q", cur, code, next)
			}
			if strings.HasPrefix(cur, "1844") && len(msgs) != 0 {
				t.Fatalf("cursor %s: %d envelopes", cur, len(msgs))
			}
		}
		// limit bounds the page; since filters by time.
		for range 5 {
			post(t, a, "human", "human-token", chatBody("y"))
		}
		if _, msgs, _, _ := pollPage(t, a, "carol", "carol-token", "?limit=2"); len(msgs) != 2 {
			t.Fatalf("limit 2: %d envelopes", len(msgs))
		}
		future := url.QueryEscape(time.Now().Add(time.Second).UTC().Format(time.RFC3339Nano))
		if _, msgs, _, _ := pollPage(t, a, "carol", "carol-token", "?since="+future); len(msgs) != 0 {
			t.Fatalf("since the future: %d envelopes", len(msgs))
		}
		_, all, _, _ := pollPage(t, a, "carol", "carol-token", "")
		var mid string
		for _, m := range all {
			if m["kind"] == "chat" && chatText(m) == "x" {
				mid, _ = m["ts"].(string)
			}
		}
		_, msgs, _, _ := pollPage(t, a, "carol", "carol-token", "?since="+url.QueryEscape(mid))
		var texts []string
		for _, m := range msgs {
			if m["kind"] == "chat" {
				texts = append(texts, chatText(m))
			}
		}
		// ts is in milliseconds and the filter compares the full time, as on
		// one node: the first chat itself may pass.
		if j := strings.Join(texts, ""); mid == "" || (j != "yyyyy" && j != "xyyyyy") {
			t.Fatalf("since the first chat's ts %q: %q", mid, texts)
		}
	})
}

// slowHistory is a cluster node whose History appends wait until released:
// the node's queue fills.
type slowHistory struct {
	cluster.Node
	log *gatedLog
}

func (s slowHistory) History() cluster.Log { return s.log }

// Broker hides the node's cluster.Keeper, whose keeps would reach the
// History past the gate: the history goes through the writer's queue.
func (s slowHistory) Broker() cluster.Broker { return struct{ cluster.Broker }{s.Node.Broker()} }

type gatedLog struct {
	cluster.Log
	open chan struct{}
}

func (l *gatedLog) Append(ctx context.Context, space string, data []byte) (uint64, error) {
	select {
	case <-l.open:
	case <-ctx.Done():
		return 0, ctx.Err()
	}
	return l.Log.Append(ctx, space, data)
}

// A full queue drops envelopes from the history and counts them; routing
// goes on meanwhile.
func TestClusterHistoryQueueFull(t *testing.T) {
	c := newHistCluster(t, onMemory)
	c.opts.Cluster.HistoryQueue = 4
	gl := &gatedLog{open: make(chan struct{})}
	a := c.add(t, func(n cluster.Node) cluster.Node {
		gl.Log = n.History()
		return slowHistory{Node: n, log: gl}
	})
	bob, _ := testutil.Join(t, a.WSURL, "bob-token")
	const sent = 30
	for i := range sent {
		if code, _ := post(t, a, "human", "human-token", chatBody(fmt.Sprint(i))); code != 200 {
			t.Fatalf("post %d: %d", i, code)
		}
	}
	for range sent {
		bob.Expect("chat") // delivered, though the history is stuck
	}
	dropped, _ := metricValue(t, a, "mew_gateway_cluster_history_dropped_total")
	if dropped < sent-10 {
		t.Fatalf("dropped %v of %d with a queue of 4", dropped, sent)
	}
	close(gl.open)
	got := collectChats(t, func(int) *testutil.Gateway { return a }, "bob", "bob-token", 100, 1)
	deadline := time.Now().Add(5 * time.Second)
	for {
		_, msgs, _, _ := pollPage(t, a, "bob", "bob-token", "?limit=1000")
		got = got[:0]
		for _, m := range msgs {
			if m["kind"] == "chat" {
				got = append(got, chatText(m))
			}
		}
		if float64(len(got))+dropped >= sent || time.Now().After(deadline) {
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	if float64(len(got))+dropped < sent || len(got) == 0 {
		t.Fatalf("kept %d chats (%q) and dropped %v of %d", len(got), got, dropped, sent)
	}
	for i := 1; i < len(got); i++ {
		var x, y int
		fmt.Sscan(got[i-1], &x)
		fmt.Sscan(got[i], &y)
		if y <= x {
			t.Fatalf("kept chats out of order: %q", got)
		}
	}
}

// A node cut off from NATS answers polls with 503 cluster_unavailable
// rather than a partial history.
func TestClusterHistoryUnavailable(t *testing.T) {
	c := newHistCluster(t, onNATS)
	a := c.add(t, nil)
	post(t, a, "human", "human-token", chatBody("before"))
	// The history is written behind delivery: wait until it holds the
	// chat, or the shutdown below can catch its append in flight.
	for deadline := time.Now().Add(5 * time.Second); ; {
		code, msgs, _, _ := pollPage(t, a, "carol", "carol-token", "")
		if code == 200 && strings.Contains(fmt.Sprint(msgs), "before") {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the chat never reached the cluster's history: %d %v", code, msgs)
		}
		time.Sleep(10 * time.Millisecond)
	}
	port := c.ns.Addr().(*net.TCPAddr).Port
	c.ns.Shutdown()
	c.ns.WaitForShutdown()
	deadline := time.Now().Add(5 * time.Second)
	for {
		code, _, _, e := pollPage(t, a, "carol", "carol-token", "")
		if code == 503 && e == gateway.ErrorClusterUnavailable {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("poll with NATS down: %d %s", code, e)
		}
		time.Sleep(10 * time.Millisecond) // the node notices the disconnection
	}
	ns2, err := natscluster.StartServer(natscluster.ServerOptions{Port: port, StoreDir: c.store})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ns2.Shutdown(); ns2.WaitForShutdown() })
	deadline = time.Now().Add(10 * time.Second)
	for {
		code, msgs, _, _ := pollPage(t, a, "carol", "carol-token", "")
		if code == 200 {
			if !strings.Contains(fmt.Sprint(msgs), "before") {
				t.Fatalf("after NATS came back: %v", msgs)
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("poll after NATS came back: %d", code)
		}
		time.Sleep(20 * time.Millisecond)
	}
	a.Stop(t) // while NATS is up
}

// Poll latency on a node, memory against NATS: 200 polls of a page of 50
// from a history of 100 chats.
func TestClusterHistoryPollLatency(t *testing.T) {
	onHistoryBackends(t, func(t *testing.T, c *histCluster) {
		a, b := c.add(t, nil), c.add(t, nil)
		for i := range 100 {
			post(t, a, "human", "human-token", chatBody(fmt.Sprint(i)))
		}
		collectChats(t, func(int) *testutil.Gateway { return b }, "bob", "bob-token", 1000, 100)
		var lat []time.Duration
		for range 200 {
			start := time.Now()
			code, msgs, _, _ := pollPage(t, b, "bob", "bob-token", "?limit=50")
			lat = append(lat, time.Since(start))
			if code != 200 || len(msgs) != 50 {
				t.Fatalf("poll: %d, %d envelopes", code, len(msgs))
			}
		}
		t.Logf("poll of 50 from the cluster's history on a node: p50 %v p99 %v", pct(lat, 50), pct(lat, 99))
	})
}

// A pause that times out ends on every node that applied it, and each
// tells its own participants; the history holds the resume once.
func TestClusterHistoryPauseTimeoutOnce(t *testing.T) {
	onHistoryBackends(t, func(t *testing.T, c *histCluster) {
		a, b := c.add(t, nil), c.add(t, nil)
		human, _ := testutil.Join(t, a.WSURL, "human-token")
		carol, _ := testutil.Join(t, a.WSURL, "carol-token")
		bob, _ := testutil.Join(t, b.WSURL, "bob-token")
		human.ExpectFunc("system/presence", func(m testutil.Msg) bool { return strings.Contains(string(m.Raw), `"bob"`) })
		human.SendText(`{"id":"pz","kind":"participant/pause","to":["bob"],"payload":{"reason":"wait","timeout_seconds":1}}`)
		bob.Expect("participant/pause")
		bob.Expect("participant/resume")   // node 2, bob's own
		carol.Expect("participant/resume") // node 1's, for its participants
		time.Sleep(300 * time.Millisecond) // both nodes' watchdogs have passed the timeout
		for _, g := range []*testutil.Gateway{a, b} {
			deadline := time.Now().Add(5 * time.Second)
			for {
				_, msgs, _, _ := pollPage(t, g, "carol", "carol-token", "?limit=1000")
				n := 0
				for _, m := range msgs {
					if m["kind"] == "participant/resume" {
						n++
					}
				}
				if n == 1 {
					break
				}
				if n > 1 || time.Now().After(deadline) {
					t.Fatalf("%d participant/resume in the history polled on %s: %v", n, g.Addr, msgs)
				}
				time.Sleep(50 * time.Millisecond)
			}
		}
	})
}

// Records another node wrote wrongly (too short for their time stamp, or
// not JSON) are left out of a poll's answer, which stays JSON.
func TestClusterHistoryGarbageRecords(t *testing.T) {
	onHistoryBackends(t, func(t *testing.T, c *histCluster) {
		a := c.add(t, nil)
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		stamp := []byte{0, 0, 0, 0, 0, 0, 0, 1}
		for _, rec := range [][]byte{
			{1, 2, 3},
			stamp,
			append(slices.Clone(stamp), "not json"...),
			append(slices.Clone(stamp), `{"kind":"chat","payload":`...),
			append(slices.Clone(stamp), 0xff, 0xfe),
		} {
			if _, err := c.nodes[0].History().Append(ctx, "shared", rec); err != nil {
				t.Fatal(err)
			}
		}
		if code, _ := post(t, a, "human", "human-token", chatBody("after the garbage")); code != 200 {
			t.Fatalf("post: %d", code)
		}
		code, msgs, _, _ := pollPage(t, a, "carol", "carol-token", "?limit=1000")
		if code != 200 {
			t.Fatalf("poll: %d", code)
		}
		var texts []string
		for _, m := range msgs {
			if m["kind"] == "chat" {
				texts = append(texts, chatText(m))
			}
		}
		if !slices.Equal(texts, []string{"after the garbage"}) {
			t.Fatalf("chats polled: %q (all: %v)", texts, msgs)
		}
	})
}
