package gateway_test

import (
	"context"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/mew-protocol/mew/gateway"
	"github.com/mew-protocol/mew/gateway/cluster"
	"github.com/mew-protocol/mew/internal/testutil"
)

// TestClusterRevokeDuringCut: a grant revoked on node 1 while node 2 is cut
// off from the cluster is never honoured by node 2 after the heal. Node 2
// comes back with its copy of the grants as it was before the cut; it
// refuses everything until its watches have re-read the state (and holds
// the welcome of its return until then), so the first envelope it accepts
// is judged with the revoke applied. Round after round, sending at once
// after the heal and again until the verdict comes. Meanwhile the cut-off
// node answers /health and HTTP injections at once, not after its
// reconnect loop's dial.
func TestClusterRevokeDuringCut(t *testing.T) {
	c, proxy := proxiedCluster(t)
	b := c.gs[1]
	human, agent := joinPair(t, c, "human", "agent")

	// Node 1's own view of the shared state, to know when a revoke made
	// there has reached the fabric.
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	w, err := c.nodes[0].State().Watch(ctx, "shared")
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	for e := range w.Changes() {
		if e.Op == cluster.OpSynced {
			break
		}
	}
	hasProposal := func(m testutil.Msg) bool {
		you, _ := m.Payload()["you"].(map[string]any)
		return strings.Contains(fmt.Sprint(you["capabilities"]), "mcp/proposal")
	}
	const call = `{"id":"%s","kind":"mcp/proposal","payload":{"jsonrpc":"2.0","id":1,"method":"tools/call"}}`

	rounds := 100
	if testing.Short() {
		rounds = 10
	}
	var verdict []time.Duration // from the heal to the first answer that is not "unavailable"
	refusedMeanwhile := 0
	var answers []time.Duration // /health and an injection on the cut-off node
	for i := range rounds {
		g := fmt.Sprintf("g%d", i)
		human.SendText(fmt.Sprintf(`{"id":"%s","kind":"capability/grant","payload":{"recipient":"agent","capabilities":[{"kind":"mcp/proposal"}]}}`, g))
		agent.ExpectFunc("system/welcome", hasProposal)

		proxy.Cut()
		proxy.Reset() // node 2 sees its connection go at once, and cannot reconnect
		for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(5 * time.Millisecond) {
			if code, _ := get(t, b, "/health", ""); code == http.StatusServiceUnavailable {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("round %d: node 2 does not report the cut", i)
			}
		}
		// A cut-off node answers at once: /health, and an HTTP
		// injection refused as unavailable.
		start := time.Now()
		if code, _ := get(t, b, "/health", ""); code != http.StatusServiceUnavailable {
			t.Fatalf("round %d: /health of the cut-off node: %d", i, code)
		}
		if code, body := post(t, b, "agent", "agent-token", `{"kind":"chat","payload":{"text":"cut"}}`); code != http.StatusServiceUnavailable {
			t.Fatalf("round %d: injection on the cut-off node: %d %v", i, code, body)
		}
		answers = append(answers, time.Since(start))
		human.SendText(fmt.Sprintf(`{"id":"v%d","kind":"capability/revoke","payload":{"recipient":"agent","grant_id":"%s"}}`, i, g))
		key := cluster.GrantKey("agent", g)
		for e := range w.Changes() {
			if e.Key == key && e.Op == cluster.OpDelete {
				break
			}
		}

		proxy.Heal()
		healed := time.Now()
		// The welcome of the node's return may come before the first
		// verdict: the watchdog's look and the next proposal race.
		welcomed := false
		returned := func(m testutil.Msg) bool { return m.Kind() == "system/welcome" && !hasProposal(m) }
		for n := 0; ; n++ {
			id := fmt.Sprintf("p%d-%d", i, n)
			e := outcomeSeeing(t, agent, id, fmt.Sprintf(call, id), func(m testutil.Msg) { welcomed = welcomed || returned(m) })
			if e == nil {
				t.Fatalf("round %d: node 2 accepted a proposal under grant %s, revoked during its cut", i, g)
			}
			if e["error"] == "capability_violation" {
				verdict = append(verdict, time.Since(healed))
				break
			}
			if e["error"] != gateway.ErrorClusterUnavailable {
				t.Fatalf("round %d: %v, want %s or capability_violation", i, e, gateway.ErrorClusterUnavailable)
			}
			refusedMeanwhile++
			if time.Since(healed) > 15*time.Second {
				t.Fatalf("round %d: node 2 still refuses 15 s after the heal", i)
			}
			time.Sleep(5 * time.Millisecond) // within the sender's rate limit

		}
		// The welcome of its return, sent once its copy is current, shows
		// the revoke.
		if !welcomed {
			agent.Within(10*time.Second, "node 2's welcome after the heal", returned)
		}
	}
	slices.Sort(verdict)
	slices.Sort(answers)
	if worst := answers[len(answers)-1]; worst > time.Second {
		t.Errorf("the cut-off node took %v to answer /health and an injection", worst)
	}
	t.Logf("cut-off node: /health and an injection answered in p50 %v max %v",
		answers[len(answers)/2].Round(time.Millisecond), answers[len(answers)-1].Round(time.Millisecond))
	t.Logf("%d rounds: from the heal to the first verdict p50 %v max %v; %d envelopes refused as unavailable meanwhile",
		rounds, verdict[len(verdict)/2].Round(time.Millisecond), verdict[len(verdict)-1].Round(time.Millisecond), refusedMeanwhile)
}

// TestClusterPublishConfirmed: node 2's connection to NATS is cut silently
// while its participant floods the space; node 2 goes on accepting until
// missed pings tell it. Every envelope node 2 accepted either reaches the
// participant on node 1 or its sender is told (a correlated
// cluster_unavailable) that it may not have: none is lost in silence, as
// those written into the cut connection were.
func TestClusterPublishConfirmed(t *testing.T) {
	c, proxy := proxiedCluster(t)
	b := c.gs[1]
	bob, human := joinPair(t, c, "bob", "human")

	const n = 600
	for round := range 2 {
		ids := make([]string, n)
		got, told := map[string]bool{}, map[string]bool{}
		for i := range n {
			ids[i] = fmt.Sprintf("f%d-%d", round, i)
			human.SendText(fmt.Sprintf(`{"id":"%s","kind":"chat","payload":{"text":"%d"}}`, ids[i], i))
			if i == n/2 {
				for !got[ids[n/4]] { // flowing
					m := bob.Next()
					if m.Kind() == "chat" {
						got[m.ID()] = true
					}
				}
				proxy.Cut() // a silent cut: what node 2 writes now goes nowhere, and it cannot know yet
			}
			time.Sleep(200 * time.Microsecond) // a steady flow, not one burst
		}
		// Node 2 notices (missed pings), then the network heals.
		for deadline := time.Now().Add(20 * time.Second); ; time.Sleep(20 * time.Millisecond) {
			if code, _ := get(t, b, "/health", ""); code == http.StatusServiceUnavailable {
				break
			}
			if time.Now().After(deadline) {
				t.Fatal("node 2 did not notice the cut")
			}
		}
		proxy.Heal()
		// What reached node 1, and what node 2 told human: read until both
		// go quiet.
		drain := func(p *testutil.Peer, f func(testutil.Msg)) {
			for {
				m, err := p.Read(1500 * time.Millisecond)
				if err != nil {
					return
				}
				f(m)
			}
		}
		drain(bob, func(m testutil.Msg) {
			if m.Kind() == "chat" {
				got[m.ID()] = true
			}
		})
		drain(human, func(m testutil.Msg) {
			if m.Kind() != "system/error" || m.Payload()["error"] != gateway.ErrorClusterUnavailable {
				return
			}
			if c, _ := m.Env["correlation_id"].([]any); len(c) == 1 {
				told[fmt.Sprint(c[0])] = true
			}
		})
		silent := 0
		for _, id := range ids {
			if !got[id] && !told[id] {
				silent++
			}
		}
		t.Logf("round %d: %d of %d reached node 1, %d senders told, %d lost in silence", round, len(got), n, len(told), silent)
		if silent > 0 {
			t.Errorf("round %d: %d envelopes accepted by node 2 reached no other node and nobody was told", round, silent)
		}
		// Both nodes up again before the next round.
		for deadline := time.Now().Add(15 * time.Second); ; time.Sleep(20 * time.Millisecond) {
			if code, _ := get(t, b, "/health", ""); code == http.StatusOK {
				break
			}
			if time.Now().After(deadline) {
				t.Fatal("node 2 did not come back")
			}
		}
	}
}

// joinPair joins first on node 1 and second on node 2 (each with the token
// "<name>-token"), once first has seen second join.
func joinPair(t *testing.T, c *testCluster, first, second string) (*testutil.Peer, *testutil.Peer) {
	t.Helper()
	p1, _ := testutil.Join(t, c.gs[0].WSURL, first+"-token")
	p2, _ := testutil.Join(t, c.gs[1].WSURL, second+"-token")
	p1.ExpectFunc("system/presence", presence("join", second))
	return p1, p2
}
