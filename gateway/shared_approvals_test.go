package gateway_test

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mew-protocol/mew/gateway"
	"github.com/mew-protocol/mew/gateway/cluster"
	"github.com/mew-protocol/mew/internal/testutil"
	"github.com/mew-protocol/mew/protocol"
)

// On three nodes, a rejection (alice's) and the approval completing the
// quorum (bob's) sent at once from two nodes end the proposal one way on every node: each
// participant reads the same end, and a fulfilment is taken or refused on
// every node alike.
func TestClusterApprovalRace(t *testing.T) {
	onClusters(t, 3, approvalSpace, func(t *testing.T, c *testCluster) {
		agent, alice, bob, carol, _, files := approvalPeers(t, c.gs)
		peers := map[string]*testutil.Peer{"agent": agent, "alice": alice, "bob": bob, "carol": carol}
		ends := map[string]int{}
		for round := range 8 {
			p := fmt.Sprintf("race%d", round)
			agent.SendText(call("mcp/proposal", p, "write_file", p))
			for _, who := range []*testutil.Peer{alice, bob, carol} {
				approvalState(t, who, p, protocol.ApprovalAwaiting)
			}
			carol.SendText(approveMsg(p+"a", p))
			approved(t, bob, p, "carol")
			approved(t, alice, p, "carol")
			approve := func() { bob.SendText(approveMsg(p+"b", p)) }
			reject := func() {
				alice.SendText(`{"id":"` + p + `r","kind":"mcp/reject","correlation_id":["` + p + `"],"payload":{"reason":"race"}}`)
			}
			if round%2 == 0 {
				approve()
				reject()
			} else {
				reject()
				approve()
			}
			// An approval first may be followed by the rejection of the
			// approved proposal; either way every node tells the same.
			reads := map[string][]string{}
			var mu sync.Mutex
			var wg sync.WaitGroup
			for name, who := range peers { // at once: each waits for quiet
				wg.Go(func() {
					got := endsOf(who, p)
					mu.Lock()
					reads[name] = got
					mu.Unlock()
				})
			}
			wg.Wait()
			end := reads["agent"]
			for name, got := range reads {
				if len(got) == 0 || !slices.Equal(got, end) {
					t.Fatalf("round %d: %s reads %v, agent %v", round, name, got, end)
				}
			}
			ends[strings.Join(end, " then ")]++
			// Fulfilled (on alice's node) only if approved.
			e := outcome(t, alice, p+"f", call("mcp/request", p+"f", "write_file", p, p))
			switch last := end[len(end)-1]; {
			case last == protocol.ApprovalApproved && e != nil:
				t.Fatalf("round %d: approved, yet the fulfilment was refused: %v", round, e)
			case last == protocol.ApprovalRejected && (e == nil || e["error"] != gateway.ErrorApprovalRequired):
				t.Fatalf("round %d: rejected, yet the fulfilment: %v", round, e)
			case last == protocol.ApprovalApproved:
				files.ExpectFunc("mcp/request", func(m testutil.Msg) bool { return m.ID() == p+"f" })
			}
		}
		t.Logf("ends over 8 rounds: %v", ends)
		if n := ends["approved"] + ends["rejected"] + ends["approved then rejected"]; n != 8 {
			t.Fatalf("ends: %v", ends)
		}
	})
}

// A node that starts after a proposal was governed and approved elsewhere
// learns it from the cluster's State: its participant reads the state
// (GET, a fulfilment taken once), and approvals given there count.
func TestClusterApprovalLateNode(t *testing.T) {
	onClusters(t, 2, approvalSpace, func(t *testing.T, c *testCluster) {
		agent, alice, bob, _, _, files := approvalPeers(t, c.gs)
		agent.SendText(call("mcp/proposal", "p1", "write_file", "x"))
		agent.SendText(call("mcp/proposal", "p2", "write_file", "y"))
		approvalState(t, alice, "p2", protocol.ApprovalAwaiting)
		alice.SendText(approveMsg("a1", "p1"))
		alice.SendText(approveMsg("a2", "p2"))
		approved(t, bob, "p2", "alice")
		bob.SendText(approveMsg("b1", "p1"))
		approvalState(t, agent, "p1", protocol.ApprovalApproved)

		node := c.node(t, 2, "n3", nil)
		g3 := testutil.StartGateway(t, approvalSpace, gateway.Options{Logger: slog.New(slog.NewTextHandler(tlog{t}, nil)), Cluster: gateway.ClusterOptions{Node: node, Name: "test"}})
		carol, _ := testutil.Join(t, g3.WSURL, "carol-token")
		bob3, _ := testutil.Join(t, g3.WSURL, "bob-token")
		// p2 awaits one more: carol's approval, on the new node, is it.
		if e := outcome(t, carol, "c2", approveMsg("c2", "p2")); e != nil {
			t.Fatalf("carol approving p2 on the new node: %v", e)
		}
		approvalState(t, agent, "p2", protocol.ApprovalApproved)
		// p1 was approved before the node started: it takes no approval
		// there, and is fulfilled there once.
		if e := outcome(t, carol, "c3", approveMsg("c3", "p1")); e == nil {
			t.Fatal("the new node took an approval of an approved proposal")
		}
		if e := outcome(t, bob3, "f1", call("mcp/request", "f1", "write_file", "x", "p1")); e != nil {
			t.Fatalf("fulfilling p1 on the new node: %v", e)
		}
		files.ExpectFunc("mcp/request", func(m testutil.Msg) bool { return m.ID() == "f1" })
		approvalState(t, bob3, "p1", protocol.ApprovalFulfilled)
		if e := outcome(t, bob3, "f2", call("mcp/request", "f2", "write_file", "x", "p1")); e == nil || e["error"] != gateway.ErrorApprovalRequired {
			t.Fatalf("a second fulfilment on the new node: %v", e)
		}
	})
}

// Records a buggy or hostile node might store change nothing: an end or
// an approval of a proposal never governed, an approval from someone who
// is no approver, a state no phase may end in, garbage.
func TestClusterApprovalBadRecords(t *testing.T) {
	onClusters(t, 2, approvalSpace, func(t *testing.T, c *testCluster) {
		agent, alice, bob, _, _, _ := approvalPeers(t, c.gs)
		agent.SendText(call("mcp/proposal", "p1", "write_file", "x"))
		approvalState(t, alice, "p1", protocol.ApprovalAwaiting)
		approvalState(t, bob, "p1", protocol.ApprovalAwaiting)
		st := c.nodes[0].State()
		ctx := context.Background()
		put := func(key string, v []byte) {
			t.Helper()
			if _, err := st.Put(ctx, "approvals", key, v, cluster.PutOptions{}); err != nil {
				t.Fatal(err)
			}
		}
		enc := func(v cluster.ApprovalEnd) []byte { b, _ := cluster.Encode(v); return b }
		vote := func(v cluster.ApprovalVote) []byte { b, _ := cluster.Encode(v); return b }
		put(cluster.ApprovalEndKey("p1", 1), enc(cluster.ApprovalEnd{Proposal: "p1", Phase: 1, State: "approved", Node: "x"}))     // not its phase
		put(cluster.ApprovalEndKey("p1", 0), enc(cluster.ApprovalEnd{Proposal: "p1", Phase: 0, State: "fulfilled", Node: "x"}))    // no end of phase 0
		put(cluster.ApprovalEndKey("p9", 0), enc(cluster.ApprovalEnd{Proposal: "p1", Phase: 0, State: "approved", Node: "x"}))     // another's key
		put(cluster.ApprovalVoteKey("p1", 0, "files"), vote(cluster.ApprovalVote{Proposal: "p1", Approver: "files", Node: "x"}))   // no approver
		put(cluster.ApprovalVoteKey("p1", 0, "agent"), vote(cluster.ApprovalVote{Proposal: "p1", Approver: "agent", Node: "x"}))   // the proposer
		put(cluster.ApprovalVoteKey("p1", 0, "nobody"), vote(cluster.ApprovalVote{Proposal: "p1", Approver: "nobody", Node: "x"})) // unknown
		put(cluster.ApprovalKey("p1")+"/zz", []byte(`{`))
		put(cluster.ApprovalKey("p1"), []byte(`not json`))
		// What a real approval does after them shows they were read and
		// passed over: one approval of two, and the fulfilment refused.
		alice.SendText(approveMsg("a1", "p1"))
		if a := approved(t, agent, "p1", "alice"); a.Remaining != 1 || !slices.Equal(a.Approvers, []string{"alice", "bob", "carol"}) {
			t.Fatalf("after the bad records and alice: %+v", a)
		}
		approved(t, bob, "p1", "alice")
		for _, p := range []*testutil.Peer{alice, bob} { // on each node
			if e := outcome(t, p, "f1", call("mcp/request", "f1", "write_file", "x", "p1")); e == nil || e["error"] != gateway.ErrorApprovalRequired {
				t.Fatalf("a fulfilment after the bad records: %v", e)
			}
		}
	})
}

// endsOf reads on p the states of proposal past awaiting, until none has
// come for a while after the first (none in 5 s: nil).
func endsOf(p *testutil.Peer, proposal string) []string {
	var states []string
	wait := 5 * time.Second
	for {
		m, err := p.Read(wait)
		if err != nil {
			return states
		}
		var a protocol.Approval
		if m.Kind() != protocol.KindSystemApproval || json.Unmarshal(m.Raw, &struct{ Payload *protocol.Approval }{&a}) != nil {
			continue
		}
		if a.Proposal == proposal && a.State != protocol.ApprovalAwaiting {
			states = append(states, a.State)
			wait = 300 * time.Millisecond
		}
	}
}
