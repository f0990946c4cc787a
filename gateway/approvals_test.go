package gateway_test

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/mew-protocol/mew/gateway"
	"github.com/mew-protocol/mew/internal/testutil"
	"github.com/mew-protocol/mew/protocol"
)

// approvalSpace: the agent proposes, files carries tool calls out, and two
// of alice, bob and carol must approve a write; lead approves what waits
// too long. Reads need one approval and never escalate; deletions always
// ask.
const approvalSpace = `
space: {id: approvals}
participants:
  agent:
    tokens: [agent-token]
    capabilities: [{kind: chat}, {kind: mcp/proposal}, {kind: mcp/withdraw}]
  alice:
    tokens: [alice-token]
    capabilities: [{kind: "*"}]
  bob:
    tokens: [bob-token]
    capabilities: [{kind: chat}, {kind: mcp/reject}, {kind: mcp/request}]
  carol:
    tokens: [carol-token]
    capabilities: [{kind: chat}, {kind: mcp/proposal}]
  lead:
    tokens: [lead-token]
    capabilities: [{kind: chat}]
  files:
    tokens: [files-token]
    capabilities: [{kind: mcp/response}]
approvals:
  - name: writes
    reason: files change on disk
    match: {to: [files], payload: {method: tools/call, params: {name: "write_*"}}}
    approvers: [alice, bob, carol]
    required: 2
    within_ms: 60000
    then: escalate
    escalate: {approvers: [lead], within_ms: 60000}
  - name: reads
    match: {payload: {method: tools/call, params: {name: "read_*"}}}
    approvers: [alice]
    within_ms: 30000
  - name: deletions
    match: {payload: {method: tools/call, params: {name: "delete_*"}}}
    approvers: [alice, bob]
    always_ask: true
`

func call(kind, id, tool, arg string, corr ...string) string {
	c := ""
	if len(corr) > 0 {
		c = `,"correlation_id":["` + strings.Join(corr, `","`) + `"]`
	}
	return `{"id":"` + id + `","kind":"` + kind + `","to":["files"]` + c +
		`,"payload":{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"` + tool + `","arguments":{"text":"` + arg + `"}}}}`
}

func approveMsg(id, proposal string) string {
	return `{"id":"` + id + `","kind":"approval/approve","correlation_id":["` + proposal + `"],"payload":{}}`
}

// approvalState waits on p for the system/approval of proposal in state.
func approvalState(t *testing.T, p *testutil.Peer, proposal, state string) protocol.Approval {
	t.Helper()
	return approvalWhere(t, p, proposal, state, func(protocol.Approval) bool { return true })
}

// approved waits on p for the system/approval of proposal awaiting n more
// approvals after those of by.
func approved(t *testing.T, p *testutil.Peer, proposal string, by ...string) protocol.Approval {
	t.Helper()
	return approvalWhere(t, p, proposal, protocol.ApprovalAwaiting, func(a protocol.Approval) bool { return slices.Equal(a.ApprovedBy, by) })
}

func approvalWhere(t *testing.T, p *testutil.Peer, proposal, state string, ok func(protocol.Approval) bool) protocol.Approval {
	t.Helper()
	var got protocol.Approval
	p.Within(5*time.Second, "system/approval "+state+" of "+proposal, func(m testutil.Msg) bool {
		if m.Kind() != protocol.KindSystemApproval {
			return false
		}
		var env struct{ Payload protocol.Approval }
		if err := json.Unmarshal(m.Raw, &env); err != nil {
			t.Fatalf("system/approval: %v", err)
		}
		if env.Payload.Proposal == proposal && env.Payload.State == state && ok(env.Payload) {
			got = env.Payload
			return true
		}
		return false
	})
	return got
}

// onApprovals runs f on one gateway serving approvalSpace, then on three
// nodes of a cluster on each backend, the participants spread over them
// (approvalPeers). Every node has opts (a clock) besides its cluster.
func onApprovals(t *testing.T, opts gateway.Options, f func(t *testing.T, gs []*testutil.Gateway)) {
	t.Run("one", func(t *testing.T) {
		t.Setenv(testutil.ClusterEnv, "")
		f(t, []*testutil.Gateway{testutil.StartGateway(t, approvalSpace, opts)})
	})
	for _, b := range backends {
		t.Run(string(b), func(t *testing.T) { f(t, newTestClusterWith(t, 3, b, approvalSpace, opts, nil).gs) })
	}
}

// approvalPeers joins the participants of approvalSpace, spread over gs:
// on three nodes, the proposer, each approver and the tool each on
// another node than the next.
func approvalPeers(t *testing.T, gs []*testutil.Gateway) (agent, alice, bob, carol, lead, files *testutil.Peer) {
	t.Helper()
	on := func(i int, tok string) *testutil.Peer {
		p, _ := testutil.Join(t, gs[i%len(gs)].WSURL, tok)
		return p
	}
	return on(0, "agent-token"), on(1, "alice-token"), on(2, "bob-token"), on(0, "carol-token"), on(1, "lead-token"), on(2, "files-token")
}

// Two of three: the proposer's own approval and a second approval by the
// same approver are not counted, a fulfilment before the quorum is
// refused, one after it goes once and only as approved; every state is
// announced to the space.
func TestApprovalTwoOfThree(t *testing.T) { onApprovals(t, gateway.Options{}, testApprovalTwoOfThree) }

func testApprovalTwoOfThree(t *testing.T, gs []*testutil.Gateway) {
	agent, alice, bob, _, _, files := approvalPeers(t, gs)

	agent.SendText(call("mcp/proposal", "p1", "write_file", "hello"))
	a := approvalState(t, alice, "p1", protocol.ApprovalAwaiting)
	if a.Rule != "writes" || a.Reason != "files change on disk" || a.Required != 2 || a.Remaining != 2 || a.Proposer != "agent" ||
		!slices.Equal(a.Approvers, []string{"alice", "bob", "carol"}) || a.Deadline == "" {
		t.Fatalf("awaiting: %+v", a)
	}
	// The welcome lists approval/approve among an approver's capabilities.
	_, w := testutil.Join(t, gs[0].WSURL, "carol-token")
	if !strings.Contains(string(w.Raw), `"approval/approve"`) {
		t.Errorf("carol's welcome does not list approval/approve: %s", w.Raw)
	}
	carol, _ := testutil.Join(t, gs[0].WSURL, "carol-token")

	refused(t, alice, "f0", call("mcp/request", "f0", "write_file", "hello", "p1"), gateway.ErrorApprovalRequired, "a fulfilment before any approval")
	taken(t, alice, "a1", approveMsg("a1", "p1"), "alice's approval")
	if a := approved(t, bob, "p1", "alice"); a.Remaining != 1 {
		t.Fatalf("after alice: %+v", a)
	}
	refused(t, alice, "a2", approveMsg("a2", "p1"), protocol.ErrorInvalidRequest, "alice approving twice")
	// carol proposes too, and cannot approve her own proposal.
	carol.SendText(call("mcp/proposal", "p2", "write_file", "mine"))
	approvalState(t, alice, "p2", protocol.ApprovalAwaiting)
	refused(t, carol, "a3", approveMsg("a3", "p2"), gateway.ErrorNotApprover, "carol approving her own proposal")
	if e := outcome(t, files, "a4", approveMsg("a4", "p1")); e == nil || e["error"] != "capability_violation" {
		t.Fatalf("files, no approver, approving: %v", e)
	}
	if e := outcome(t, alice, "f1", call("mcp/request", "f1", "write_file", "hello", "p1")); e == nil || e["error"] != gateway.ErrorApprovalRequired ||
		!strings.Contains(fmt.Sprint(e["message"]), "1 more") {
		t.Fatalf("a fulfilment with one approval of two: %v", e)
	}
	taken(t, bob, "a5", approveMsg("a5", "p1"), "bob's approval")
	if a := approvalState(t, agent, "p1", protocol.ApprovalApproved); !slices.Equal(a.ApprovedBy, []string{"alice", "bob"}) || a.Remaining != 0 {
		t.Fatalf("approved: %+v", a)
	}
	approvalState(t, alice, "p1", protocol.ApprovalApproved)
	approvalState(t, bob, "p1", protocol.ApprovalApproved)
	if e := outcome(t, alice, "a6", approveMsg("a6", "p1")); e == nil {
		t.Fatal("an approval of an approved proposal was taken")
	}
	// Bound to the exact arguments and addressees.
	refused(t, alice, "f2", call("mcp/request", "f2", "write_file", "HELLO", "p1"), gateway.ErrorApprovalMismatch, "a fulfilment with other arguments")
	// The fulfiller numbers its own JSON-RPC request: the id is not bound.
	taken(t, bob, "f3", strings.Replace(call("mcp/request", "f3", "write_file", "hello", "p1"), `"id":1`, `"id":7`, 1), "bob fulfilling the approved proposal")
	files.ExpectFunc("mcp/request", func(m testutil.Msg) bool { return m.ID() == "f3" })
	approvalState(t, agent, "p1", protocol.ApprovalFulfilled)
	approvalState(t, alice, "p1", protocol.ApprovalFulfilled)
	refused(t, alice, "f4", call("mcp/request", "f4", "write_file", "hello", "p1"), gateway.ErrorApprovalRequired, "a second fulfilment")
	// The lineage of the fulfilment (what `mew log why` prints) names the
	// rule, its approvers and the reason, beside the arguments proposed.
	var tree string
	for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		code, body := get(t, gs[1%len(gs)], "/participants/alice/lineage/f3", "alice-token")
		lin, _ := body["lineage"].(map[string]any)
		tree = flatten(lin)
		if code == 200 && strings.Contains(tree, "approval rule") || time.Now().After(deadline) {
			break
		}
	}
	for _, want := range []string{
		"approved_by: alice and bob under the space's approval rule writes, 2 of alice, bob, carol needed",
		"the rule says: files change on disk", "fulfills: mcp/proposal p1 from agent to files",
	} {
		if !strings.Contains(tree, want) {
			t.Errorf("the lineage of f3 lacks %q:\n%s", want, tree)
		}
	}
}

// An edit is a new proposal: its count starts again; the earlier one is
// withdrawn by its proposer, or rejected by an approver with a reason.
func TestApprovalEditRejectWithdraw(t *testing.T) {
	onApprovals(t, gateway.Options{}, testApprovalEditRejectWithdraw)
}

func testApprovalEditRejectWithdraw(t *testing.T, gs []*testutil.Gateway) {
	agent, alice, bob, _, _, _ := approvalPeers(t, gs)

	agent.SendText(call("mcp/proposal", "p1", "write_file", "v1"))
	approvalState(t, alice, "p1", protocol.ApprovalAwaiting)
	alice.SendText(approveMsg("a1", "p1"))
	approved(t, agent, "p1", "alice")
	// The agent edits: a new proposal naming the old, which it withdraws.
	agent.SendText(call("mcp/proposal", "p2", "write_file", "v2", "p1"))
	if a := approvalState(t, alice, "p2", protocol.ApprovalAwaiting); a.Remaining != 2 || len(a.ApprovedBy) != 0 {
		t.Fatalf("the edit starts with alice's approval of the first: %+v", a)
	}
	agent.SendText(`{"id":"w1","kind":"mcp/withdraw","correlation_id":["p1"],"payload":{"reason":"edited"}}`)
	if a := approvalState(t, bob, "p1", protocol.ApprovalWithdrawn); a.By != "agent" || a.Message != "edited" {
		t.Fatalf("withdrawn: %+v", a)
	}
	if e := outcome(t, alice, "a2", approveMsg("a2", "p1")); e == nil {
		t.Fatal("an approval of a withdrawn proposal was taken")
	}
	bob.SendText(`{"id":"r1","kind":"mcp/reject","correlation_id":["p2"],"payload":{"reason":"not like this"}}`)
	if a := approvalState(t, agent, "p2", protocol.ApprovalRejected); a.By != "bob" || a.Message != "not like this" {
		t.Fatalf("rejected: %+v", a)
	}
	refused(t, alice, "f1", call("mcp/request", "f1", "write_file", "v2", "p2"), gateway.ErrorApprovalRequired, "fulfilling a rejected proposal")
}

// A rule's time: reads settle as timed out; writes escalate to lead, whose
// single approval then suffices, and the first approvers' no longer count.
func TestApprovalTimeoutAndEscalation(t *testing.T) {
	clk := &clock{t: time.Now()}
	onApprovals(t, gateway.Options{Now: clk.Now, Timing: gateway.Timing{WriteTimeout: 100 * time.Millisecond}}, func(t *testing.T, gs []*testutil.Gateway) {
		testApprovalTimeoutAndEscalation(t, gs, clk)
	})
}

func testApprovalTimeoutAndEscalation(t *testing.T, gs []*testutil.Gateway, clk *clock) {
	agent, alice, _, _, lead, _ := approvalPeers(t, gs)

	agent.SendText(call("mcp/proposal", "r1", "read_file", "x"))
	approvalState(t, alice, "r1", protocol.ApprovalAwaiting)
	agent.SendText(call("mcp/proposal", "w1", "write_file", "x"))
	approvalState(t, alice, "w1", protocol.ApprovalAwaiting)
	alice.SendText(approveMsg("a1", "w1"))
	approved(t, alice, "w1", "alice")

	clk.Advance(31 * time.Second)
	approvalState(t, agent, "r1", protocol.ApprovalTimedOut)
	approvalState(t, alice, "r1", protocol.ApprovalTimedOut)
	if e := outcome(t, alice, "a2", approveMsg("a2", "r1")); e == nil {
		t.Fatal("an approval after the timeout was taken")
	}
	refused(t, alice, "f1", call("mcp/request", "f1", "read_file", "x", "r1"), gateway.ErrorApprovalRequired, "fulfilling a timed-out proposal")
	clk.Advance(30 * time.Second)
	if a := approvalState(t, agent, "w1", protocol.ApprovalEscalated); !slices.Equal(a.Approvers, []string{"lead"}) || a.Required != 1 || a.Remaining != 1 || len(a.ApprovedBy) != 0 {
		t.Fatalf("escalated: %+v", a)
	}
	approvalState(t, alice, "w1", protocol.ApprovalEscalated)
	refused(t, alice, "a3", approveMsg("a3", "w1"), gateway.ErrorNotApprover, "alice approving after the escalation")
	approvalState(t, lead, "w1", protocol.ApprovalEscalated)
	lead.SendText(approveMsg("a4", "w1"))
	approvalState(t, agent, "w1", protocol.ApprovalApproved)
	approvalState(t, alice, "w1", protocol.ApprovalApproved)
	taken(t, alice, "f2", call("mcp/request", "f2", "write_file", "x", "w1"), "fulfilling after lead's approval")
}

// always_ask: no grant lets anyone send a deletion as a request of its
// own, not even a participant holding every capability; proposed and
// approved, it goes.
func TestApprovalAlwaysAsk(t *testing.T) { onApprovals(t, gateway.Options{}, testApprovalAlwaysAsk) }

func testApprovalAlwaysAsk(t *testing.T, gs []*testutil.Gateway) {
	agent, alice, bob, _, _, _ := approvalPeers(t, gs)

	refused(t, alice, "d1", call("mcp/request", "d1", "delete_file", "x"), gateway.ErrorApprovalRequired, "alice (kind *) deleting directly")
	alice.SendText(`{"id":"g1","kind":"capability/grant","payload":{"recipient":"agent","capabilities":[{"kind":"mcp/request"}]}}`)
	agent.ExpectFunc("system/welcome", func(testutil.Msg) bool { return true })
	refused(t, agent, "d2", call("mcp/request", "d2", "delete_file", "x"), gateway.ErrorApprovalRequired, "the agent, granted mcp/request, deleting directly")
	// Other tools are the grant's to allow.
	taken(t, agent, "d3", call("mcp/request", "d3", "list_files", "x"), "the agent, granted mcp/request, listing")
	agent.SendText(call("mcp/proposal", "p1", "delete_file", "x"))
	approvalState(t, bob, "p1", protocol.ApprovalAwaiting) // each acts on what it sees: on a cluster, its node's
	bob.SendText(approveMsg("a1", "p1"))
	approvalState(t, alice, "p1", protocol.ApprovalApproved)
	taken(t, alice, "d4", call("mcp/request", "d4", "delete_file", "x", "p1"), "fulfilling the approved deletion")
}

// Hostile approvals: without a correlation, naming two proposals, an
// unknown one, or a proposal no rule governs, are refused and change
// nothing.
func TestApprovalHostile(t *testing.T) { onApprovals(t, gateway.Options{}, testApprovalHostile) }

func testApprovalHostile(t *testing.T, gs []*testutil.Gateway) {
	agent, alice, _, _, _, _ := approvalPeers(t, gs)
	agent.SendText(`{"id":"free","kind":"mcp/proposal","to":["files"],"payload":{"jsonrpc":"2.0","id":1,"method":"tools/list"}}`)
	agent.SendText(call("mcp/proposal", "p1", "write_file", "x"))
	approvalState(t, alice, "p1", protocol.ApprovalAwaiting)
	for _, msg := range []string{
		`{"id":"h1","kind":"approval/approve","payload":{}}`,
		`{"id":"h1","kind":"approval/approve","correlation_id":["p1","free"],"payload":{}}`,
		`{"id":"h1","kind":"approval/approve","correlation_id":["nope"],"payload":{}}`,
		`{"id":"h1","kind":"approval/approve","correlation_id":["free"],"payload":{}}`,
		`{"id":"h1","kind":"system/approval","correlation_id":["p1"],"payload":{"proposal":"p1","state":"approved"}}`,
	} {
		if e := outcome(t, alice, "h1", msg); e == nil {
			t.Errorf("%s was taken", msg)
		}
	}
	refused(t, alice, "f1", call("mcp/request", "f1", "write_file", "x", "p1"), gateway.ErrorApprovalRequired, "after the hostile approvals, a fulfilment")
	// A proposal no rule governs is fulfilled as before.
	taken(t, alice, "f2", `{"id":"f2","kind":"mcp/request","to":["files"],"correlation_id":["free"],"payload":{"jsonrpc":"2.0","id":1,"method":"tools/list"}}`, "fulfilling an ungoverned proposal")
}

// GET /console/approvals lists, to a participant of the space, the governed
// proposals that still await approvers or their fulfilment, each as it
// was proposed (what a fulfilment must repeat) and with its state; on a
// cluster, from any node. An ungoverned or settled proposal is not listed;
// no token, a wrong one, or another space's gets 401.
func TestConsoleApprovals(t *testing.T) { onApprovals(t, gateway.Options{}, testConsoleApprovals) }

func testConsoleApprovals(t *testing.T, gs []*testutil.Gateway) {
	agent, alice, bob, _, _, _ := approvalPeers(t, gs)
	last := gs[len(gs)-1]
	agent.SendText(`{"id":"free","kind":"mcp/proposal","to":["files"],"payload":{"jsonrpc":"2.0","id":1,"method":"tools/list"}}`)
	agent.SendText(call("mcp/proposal", "p1", "write_file", "x y"))
	agent.SendText(call("mcp/proposal", "p2", "write_file", "z"))
	approvalState(t, bob, "p2", protocol.ApprovalAwaiting)
	list := func() []any {
		t.Helper()
		code, body := get(t, last, "/console/approvals?space=approvals", "alice-token")
		if code != 200 {
			t.Fatalf("GET /console/approvals: %d %v", code, body)
		}
		l, _ := body["approvals"].([]any)
		return l
	}
	testutil.WaitFor(t, 5*time.Second, "two governed proposals listed", func() bool { return len(list()) == 2 })
	first, _ := list()[0].(map[string]any)
	env, _ := first["envelope"].(map[string]any)
	state, _ := first["state"].(map[string]any)
	payload, _ := json.Marshal(env["payload"])
	if env["id"] != "p1" || env["kind"] != "mcp/proposal" || env["from"] != "agent" || fmt.Sprint(env["to"]) != "[files]" ||
		string(payload) != `{"jsonrpc":"2.0","method":"tools/call","params":{"arguments":{"text":"x y"},"name":"write_file"}}` ||
		state["state"] != "awaiting" || state["rule"] != "writes" || state["remaining"] != float64(2) {
		t.Fatalf("the first listed: %v", first)
	}
	// Listed as proposed: a fulfilment of its payload goes once approved.
	alice.SendText(approveMsg("a1", "p1"))
	approved(t, bob, "p1", "alice")
	bob.SendText(approveMsg("a2", "p1"))
	approvalState(t, alice, "p1", protocol.ApprovalApproved)
	req := `{"id":"f1","kind":"mcp/request","to":["files"],"correlation_id":["p1"],"payload":` + strings.Replace(string(payload), `"jsonrpc":"2.0",`, `"jsonrpc":"2.0","id":9,`, 1) + `}`
	taken(t, alice, "f1", req, "fulfilling the listed proposal")
	bob.SendText(`{"id":"r1","kind":"mcp/reject","correlation_id":["p2"],"payload":{"reason":"no"}}`)
	approvalState(t, alice, "p2", protocol.ApprovalRejected)
	testutil.WaitFor(t, 5*time.Second, "nothing listed once settled", func() bool { return len(list()) == 0 })
	for _, tok := range []string{"", "nope", "files-token-x"} {
		if code, _ := get(t, last, "/console/approvals?space=approvals", tok); code != 401 {
			t.Errorf("token %q: %d", tok, code)
		}
	}
	if code, _ := get(t, last, "/console/approvals?space=other", "alice-token"); code != 401 {
		t.Errorf("another space: %d", code)
	}
}
