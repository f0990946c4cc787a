package client_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mew-protocol/mew/client"
	"github.com/mew-protocol/mew/gateway"
	"github.com/mew-protocol/mew/gateway/cluster/natscluster"
	"github.com/mew-protocol/mew/internal/testutil"
	"github.com/mew-protocol/mew/protocol"
)

// sendSeq has c send n chats "seq i", one every gap, in a goroutine; the
// returned function waits for the last.
func sendSeq(t *testing.T, c *client.Client, n int, gap time.Duration) func() {
	t.Helper()
	var wg sync.WaitGroup
	wg.Go(func() {
		for i := range n {
			env, err := protocol.New(protocol.KindChat, protocol.Chat{Text: fmt.Sprintf("seq %d", i)})
			if err != nil {
				t.Error(err)
				return
			}
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			err = c.Send(ctx, env)
			cancel()
			if err != nil {
				t.Errorf("send seq %d: %v", i, err)
				return
			}
			time.Sleep(gap)
		}
	})
	return wg.Wait
}

// seqs returns how many times each "seq i" chat from sender reached ev, and
// whether they came in order.
func seqs(ev *events, sender string, n int) (counts []int, ordered bool) {
	counts, ordered = make([]int, n), true
	last := -1
	ev.with(func(ev *events) {
		for _, e := range ev.envs {
			var i int
			if e.From != sender || e.Kind != protocol.KindChat {
				continue
			}
			if _, err := fmt.Sscanf(chatText(e), "seq %d", &i); err != nil || i < 0 || i >= n {
				continue
			}
			counts[i]++
			if i < last {
				ordered = false
			}
			last = i
		}
	})
	return counts, ordered
}

// expectOnce waits until ev has every "seq i" chat (i < n) of sender, and
// checks that each came once, in order; what says across what.
func expectOnce(t *testing.T, ev *events, sender string, n int, what string) {
	t.Helper()
	waitFor(t, "every chat of "+sender, func() bool {
		counts, _ := seqs(ev, sender, n)
		lost, _ := lostAndDoubled(counts)
		return lost == 0
	})
	counts, ordered := seqs(ev, sender, n)
	if lost, doubled := lostAndDoubled(counts); lost != 0 || doubled != 0 || !ordered {
		t.Errorf("%s's chats %s: %d lost, %d doubled, in order %v", sender, what, lost, doubled, ordered)
	}
}

// lostAndDoubled counts the chats never received and those received more
// than once.
func lostAndDoubled(counts []int) (lost, doubled int) {
	for _, c := range counts {
		switch {
		case c == 0:
			lost++
		case c > 1:
			doubled++
		}
	}
	return lost, doubled
}

// proxiedAlice starts a gateway with limits, alice's reconnecting client
// reaching it through a proxy that can cut her off, and carol's client,
// connected directly; it returns the proxy, alice's events and carol.
func proxiedAlice(t *testing.T, limits gateway.Limits) (*testutil.Proxy, *events, *client.Client) {
	t.Helper()
	g := startGateway(t, gateway.Options{Limits: limits})
	proxy := testutil.StartProxy(t, g.Addr)
	_, ev := connectRecorded(t, nil, fast(client.Options{Gateway: "ws://" + proxy.Addr, Token: "alice-token"}))
	return proxy, ev, connect(t, g, client.Options{Token: "carol-token"})
}

// TestResumeAfterBlips: a client whose connection is reset three times
// while another participant chats receives every chat exactly once, in
// order: each reconnect names the last envelope it saw and the gateway
// replays what came after it.
func TestResumeAfterBlips(t *testing.T) {
	proxy, ev, carol := proxiedAlice(t, gateway.Limits{Rate: -1})

	const n = 300
	wait := sendSeq(t, carol, n, 2*time.Millisecond)
	for range 3 {
		time.Sleep(120 * time.Millisecond)
		proxy.Reset()
	}
	wait()
	expectOnce(t, ev, "carol", n, "across 3 resets")
	if w := welcomes(ev); w < 2 {
		t.Errorf("%d welcomes: the resets did not make alice reconnect", w)
	}
}

// TestResumeGap: a client away for longer than the gateway's history holds
// is told that what it missed cannot all be replayed (resume_gap), and
// goes on with what comes next.
func TestResumeGap(t *testing.T) {
	proxy, ev, carol := proxiedAlice(t, gateway.Limits{Rate: -1, HistorySize: 16})
	first := chat(t, "before")
	send(t, carol, first)
	ev.waitEnv(t, "the first chat", withID(first.ID))

	proxy.Cut()
	proxy.Reset() // alice cannot come back until the heal
	sendSeq(t, carol, 40, 0)()
	proxy.Heal()
	gap := ev.waitEnv(t, "the resume_gap notice", func(e *protocol.Envelope) bool {
		return e.Kind == protocol.KindSystemError && strings.Contains(string(e.Payload), `"error":"resume_gap"`)
	})
	if !strings.Contains(string(gap.Payload), first.ID) {
		t.Errorf("the notice does not name the envelope alice resumed from: %s", gap.Payload)
	}
	after := chat(t, "after")
	send(t, carol, after)
	ev.waitEnv(t, "a chat after the gap", withID(after.ID))
}

// TestResumeFailover: a client whose gateway node dies moves to another
// node of the cluster and receives, exactly once and in order, every chat
// sent meanwhile on the other node: the new node replays from its own
// history, from a little before the envelope named (nodes may deliver
// envelopes of different origins in different orders), and the client
// drops what it has seen.
func TestResumeFailover(t *testing.T) {
	gs := testutil.StartCluster(t, 2, sdkSpace, gateway.Options{Limits: gateway.Limits{Rate: -1}})
	_, ev := connectRecorded(t, nil, fast(client.Options{Gateways: []string{"ws://" + gs[0].Addr, "ws://" + gs[1].Addr}, Token: "alice-token"}))
	carol := connect(t, gs[1], client.Options{Token: "carol-token"})
	bob := connect(t, gs[0], client.Options{Token: "bob-token"}) // envelopes of node 1's origin too

	const n = 300
	waitCarol := sendSeq(t, carol, n, 3*time.Millisecond)
	sendSeq(t, bob, 30, time.Millisecond)() // before node 1 dies: bob has no other node
	time.Sleep(50 * time.Millisecond)
	gs[0].Stop(t) // node 1 dies: alice moves to node 2
	waitCarol()
	expectOnce(t, ev, "carol", n, "across the failover")
	expectOnce(t, ev, "bob", 30, "(node 1's) across the failover")
}

// TestResumeNodeAndServerKilled: three gateway nodes, each with a NATS
// server of its own in one NATS cluster with JetStream replicas 3 (as `mew
// space up --nodes 3` runs them); node 1 and its server stop together.
// Alice, who was on node 1, resumes on node 2 and loses and doubles none of
// the chats carol sends meanwhile from node 3.
func TestResumeNodeAndServerKilled(t *testing.T) {
	servers, err := natscluster.StartServers(3, natscluster.ServerOptions{StoreDir: t.TempDir(), ClusterName: "resume"})
	if err != nil {
		t.Fatal(err)
	}
	urls := make([]string, len(servers))
	for i, s := range servers {
		t.Cleanup(func() { s.Shutdown(); s.WaitForShutdown() })
		urls[i] = s.ClientURL()
	}
	var gs []*testutil.Gateway
	var nodes []*natscluster.Node
	for i := range servers {
		own := append([]string{urls[i]}, slices.Delete(slices.Clone(urls), i, i+1)...) // its own server first
		var node *natscluster.Node
		for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(250 * time.Millisecond) {
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			node, err = natscluster.New(ctx, natscluster.Options{
				NodeID: fmt.Sprintf("n%d", i+1), Cluster: "resume", URL: strings.Join(own, ","), InOrder: true,
				Replicas: 3, PresenceTTL: 2 * time.Second, RequestTimeout: 3 * time.Second,
			})
			cancel()
			if err == nil || time.Now().After(deadline) {
				break // while the JetStream cluster elects its leaders, ask again
			}
		}
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = node.Close() })
		nodes = append(nodes, node)
		o := gateway.Options{Limits: gateway.Limits{Rate: -1}}
		o.Cluster.Node, o.Cluster.Name = node, "resume"
		gs = append(gs, testutil.StartGateway(t, sdkSpace, o))
	}
	_, ev := connectRecorded(t, nil, fast(client.Options{Gateways: []string{"ws://" + gs[0].Addr, "ws://" + gs[1].Addr}, Token: "alice-token"}))
	carol := connect(t, gs[2], client.Options{Token: "carol-token"})

	const n = 300
	waitCarol := sendSeq(t, carol, n, 3*time.Millisecond)
	time.Sleep(50 * time.Millisecond)
	before := ev.count(func(ev *events) int { return ev.connected })
	killed := time.Now()
	gs[0].Stop(t) // node 1 and its NATS server die together
	_ = nodes[0].Close()
	servers[0].Shutdown()
	waitFor(t, "alice back, on node 2", func() bool { return ev.count(func(ev *events) int { return ev.connected }) > before })
	back := time.Since(killed)
	waitCarol()
	expectOnce(t, ev, "carol", n, "across the death of node 1 and its NATS server")
	t.Logf("alice rejoined on node 2 %v after the kill; none of carol's %d chats lost or doubled", back.Round(time.Millisecond), n)
}
