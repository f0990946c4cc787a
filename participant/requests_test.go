package participant_test

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mew-protocol/mew/gateway"
	"github.com/mew-protocol/mew/internal/testutil"
	"github.com/mew-protocol/mew/participant"
	"github.com/mew-protocol/mew/protocol"
)

// mcpRichSpace is sdkSpace with two more participants: rogue, who may
// withdraw and reject proposals, and neg, who may send any MCP request but
// tools/call.
var mcpRichSpace = sdkSpace +
	testutil.Member("rogue", "chat", "mcp/withdraw", "mcp/reject") +
	testutil.Member("neg", "chat", `{kind: mcp/request, payload: {method: "!tools/call"}}`)

// mcpOutcome is what a Request running on another goroutine returned.
type mcpOutcome struct {
	raw json.RawMessage
	err error
}

// mcpRequestAsync runs p.Request on a goroutine of its own.
func mcpRequestAsync(ctx context.Context, p *participant.Participant, target string, payload any) <-chan mcpOutcome {
	ch := make(chan mcpOutcome, 1)
	go func() {
		raw, err := p.Request(ctx, target, payload)
		ch <- mcpOutcome{raw, err}
	}()
	return ch
}

func mcpOutcomeOf(t *testing.T, ch <-chan mcpOutcome) mcpOutcome {
	t.Helper()
	select {
	case o := <-ch:
		return o
	case <-time.After(10 * time.Second):
		t.Fatal("Request did not return")
		return mcpOutcome{}
	}
}

// mcpTextOf waits for the outcome of a request, fails the test if it is
// an error, and returns the text of its result; what names the request.
func mcpTextOf(t *testing.T, ch <-chan mcpOutcome, what string) string {
	t.Helper()
	o := mcpOutcomeOf(t, ch)
	if o.err != nil {
		t.Fatalf("%s: %v", what, o.err)
	}
	return mcpResult(t, o.raw).Text()
}

// mcpProposals collects the proposals p sees.
func mcpProposals(p *participant.Participant) <-chan *participant.Proposal {
	ch := make(chan *participant.Proposal, 16)
	p.OnProposal(func(pr *participant.Proposal) {
		select {
		case ch <- pr:
		default:
		}
	})
	return ch
}

func mcpNextProposal(t *testing.T, ch <-chan *participant.Proposal) *participant.Proposal {
	t.Helper()
	select {
	case pr := <-ch:
		return pr
	case <-time.After(5 * time.Second):
		t.Fatal("no proposal arrived")
		return nil
	}
}

// mcpCalcSpace starts sdkSpace (or spaceYAML) with calc serving add and
// human connected.
func mcpCalcSpace(t *testing.T, spaceYAML string) (g *testutil.Gateway, calc, human *participant.Participant, joinAs func(id string, opts participant.Options) *participant.Participant) {
	t.Helper()
	gw := startSpace(t, spaceYAML, gateway.Options{})
	calc, _ = mcpCalc(t, gw)
	human = mcpJoin(t, gw, "human", participant.Options{})
	return gw, calc, human, func(id string, opts participant.Options) *participant.Participant { return mcpJoin(t, gw, id, opts) }
}

func TestProposalFulfilled(t *testing.T) {
	_, _, human, joinAs := mcpCalcSpace(t, "")
	agent := joinAs("agent", participant.Options{})
	proposals := mcpProposals(human)
	ctx := mcpCtx(t)

	res := mcpRequestAsync(ctx, agent, "calc", mcpCall("add", map[string]any{"a": 2, "b": 3}))
	pr := mcpNextProposal(t, proposals)
	if pr.From() != "agent" || !slices.Equal(pr.To(), []string{"calc"}) || pr.Method != "tools/call" || pr.ToolName() != "add" || pr.Envelope.Kind != protocol.KindMCPProposal {
		t.Fatalf("proposal from %s to %v: %s %s", pr.From(), pr.To(), pr.Method, pr.ToolName())
	}
	if got, ok := human.Proposal(pr.ID()); !ok || got != pr {
		t.Fatal("Proposal(id) does not find the proposal")
	}
	raw, err := human.Fulfill(ctx, pr)
	if err != nil {
		t.Fatal(err)
	}
	if r := mcpResult(t, raw); r.Text() != "5" {
		t.Fatalf("fulfiller got %s", raw)
	}
	if got := mcpTextOf(t, res, "the proposer's request"); got != "5" {
		t.Fatalf("proposer got %q", got)
	}
	if by := pr.FulfilledBy(); by != "human" {
		t.Fatalf("FulfilledBy = %q", by)
	}
}

func TestProposalRejected(t *testing.T) {
	_, _, human, joinAs := mcpCalcSpace(t, "")
	agent := joinAs("agent", participant.Options{})
	human.OnProposal(func(pr *participant.Proposal) {
		go func() { _ = human.Reject(context.Background(), pr, protocol.ReasonUnsafe) }()
	})
	start := time.Now()
	_, err := agent.Request(mcpCtx(t), "calc", mcpCall("add", map[string]any{"a": 2, "b": 3}))
	var rej *participant.RejectedError
	if !errors.As(err, &rej) || rej.By != "human" || rej.Reason != "unsafe" {
		t.Fatalf("err = %v, want a rejection", err)
	}
	if err.Error() != "Proposal rejected by human: unsafe" {
		t.Fatalf("err = %q", err.Error())
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Fatalf("rejection took %v", d)
	}
}

// TestProposalRejectedWithWords: the words a person gives with a
// rejection (the reject's message) reach the proposer.
func TestProposalRejectedWithWords(t *testing.T) {
	_, _, human, joinAs := mcpCalcSpace(t, "")
	agent := joinAs("agent", participant.Options{})
	human.OnProposal(func(pr *participant.Proposal) {
		go func() { _ = human.RejectWith(context.Background(), pr, protocol.ReasonDisagree, "once is enough") }()
	})
	_, err := agent.Request(mcpCtx(t), "calc", mcpCall("add", map[string]any{"a": 2, "b": 3}))
	var rej *participant.RejectedError
	if !errors.As(err, &rej) || rej.By != "human" || rej.Reason != "disagree" || rej.Message != "once is enough" {
		t.Fatalf("err = %#v, want a rejection with the words", err)
	}
	if err.Error() != `Proposal rejected by human: disagree ("once is enough")` {
		t.Fatalf("err = %q", err.Error())
	}
}

func TestProposalTimeoutAndCancelWithdraw(t *testing.T) {
	_, _, human, joinAs := mcpCalcSpace(t, "")
	// A person takes longer than a tool: a proposal waits ProposalTimeout,
	// not the RequestTimeout of direct requests.
	agent := joinAs("agent", participant.Options{RequestTimeout: 100 * time.Millisecond, ProposalTimeout: 1500 * time.Millisecond})
	proposals := mcpProposals(human)
	withdrawals := mcpWatch(human, protocol.KindMCPWithdraw)
	ctx := mcpCtx(t)

	res0 := mcpRequestAsync(context.Background(), agent, "calc", mcpCall("add", map[string]any{"a": 2, "b": 2}))
	pr0 := mcpNextProposal(t, proposals)
	time.Sleep(600 * time.Millisecond) // the person reads it
	if _, err := human.Fulfill(ctx, pr0); err != nil {
		t.Fatalf("a proposal decided after 600 ms (RequestTimeout 100 ms): %v", err)
	}
	if o := mcpOutcomeOf(t, res0); o.err != nil {
		t.Fatalf("the proposer's outcome: %v", o.err)
	}

	// Options.ProposalTimeout applies to a context without a deadline: the
	// proposal is withdrawn as timed out, which is not a rejection.
	start := time.Now()
	_, err := agent.Request(context.Background(), "calc", mcpCall("add", map[string]any{"a": 1, "b": 1}))
	if !errors.Is(err, participant.ErrProposalTimedOut) || !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("err = %v, want ErrProposalTimedOut and a deadline error", err)
	}
	var rej *participant.RejectedError
	if errors.As(err, &rej) {
		t.Errorf("a timed-out proposal reads as a rejection: %v", err)
	}
	if d := time.Since(start); d < 1400*time.Millisecond {
		t.Errorf("the proposal gave up after %v, before its ProposalTimeout", d)
	}
	pr := mcpNextProposal(t, proposals)
	w := mcpWait(t, withdrawals, "the withdrawal", func(e *protocol.Envelope) bool { return e.CorrelatesWith(pr.ID()) })
	var payload protocol.Withdraw
	if err := w.DecodePayload(&payload); err != nil || w.From != "agent" || payload.Reason != "timeout" {
		t.Fatalf("withdrawal from %s: %s", w.From, w.Payload)
	}
	select {
	case <-pr.Withdrawn():
	case <-time.After(5 * time.Second):
		t.Fatal("the fulfiller's proposal is not marked withdrawn")
	}
	if reason, ok := pr.WithdrawReason(); !ok || reason != "timeout" {
		t.Fatalf("WithdrawReason = %q, %v", reason, ok)
	}
	if _, err := human.Fulfill(ctx, pr); !errors.Is(err, participant.ErrProposalWithdrawn) {
		t.Fatalf("Fulfill of a withdrawn proposal: %v", err)
	}

	// Cancelling the context withdraws with reason "cancelled".
	cctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	res := mcpRequestAsync(cctx, agent, "calc", mcpCall("add", map[string]any{"a": 1, "b": 2}))
	pr = mcpNextProposal(t, proposals)
	cancel()
	if o := mcpOutcomeOf(t, res); !errors.Is(o.err, context.Canceled) {
		t.Fatalf("err = %v, want cancelled", o.err)
	}
	w = mcpWait(t, withdrawals, "the withdrawal", func(e *protocol.Envelope) bool { return e.CorrelatesWith(pr.ID()) })
	if err := w.DecodePayload(&payload); err != nil || payload.Reason != "cancelled" {
		t.Fatalf("withdrawal: %s", w.Payload)
	}
}

func TestForgedWithdrawIgnored(t *testing.T) {
	_, _, human, joinAs := mcpCalcSpace(t, mcpRichSpace)
	agent := joinAs("agent", participant.Options{})
	rogue := joinAs("rogue", participant.Options{})
	proposals := mcpProposals(human)
	withdrawals := mcpWatch(human, protocol.KindMCPWithdraw)
	ctx := mcpCtx(t)

	res := mcpRequestAsync(ctx, agent, "calc", mcpCall("add", map[string]any{"a": 20, "b": 22}))
	pr := mcpNextProposal(t, proposals)
	forged, err := protocol.New(protocol.KindMCPWithdraw, protocol.Withdraw{Reason: protocol.ReasonNoLongerNeeded})
	if err != nil {
		t.Fatal(err)
	}
	forged.CorrelationID = []string{pr.ID()}
	if err := rogue.Send(ctx, forged); err != nil {
		t.Fatal(err)
	}
	mcpWait(t, withdrawals, "the forged withdrawal", func(e *protocol.Envelope) bool { return e.From == "rogue" })
	if _, ok := pr.WithdrawReason(); ok {
		t.Fatal("a withdrawal by someone other than the proposer was honoured")
	}
	select {
	case <-pr.Withdrawn():
		t.Fatal("Withdrawn closed by a forged withdrawal")
	default:
	}
	if _, err := human.Fulfill(ctx, pr); err != nil {
		t.Fatal(err)
	}
	if got := mcpTextOf(t, res, "the proposer's request"); got != "42" {
		t.Fatalf("proposer got %q", got)
	}
}

func TestForgedResponseIgnored(t *testing.T) {
	_, calc, human, joinAs := mcpCalcSpace(t, "")
	agent := joinAs("agent", participant.Options{})
	release := make(chan struct{})
	var once sync.Once
	t.Cleanup(func() { once.Do(func() { close(release) }) })
	if err := calc.RegisterTool(participant.Tool{Name: "slow", Execute: func(ctx context.Context, _ json.RawMessage) (any, error) {
		select {
		case <-release:
			return "real", nil
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}}); err != nil {
		t.Fatal(err)
	}
	seen := mcpWatch(agent, protocol.KindMCPRequest)
	responses := mcpWatch(human, protocol.KindMCPResponse)
	ctx := mcpCtx(t)

	res := mcpRequestAsync(ctx, human, "calc", mcpCall("slow", nil))
	req := mcpWait(t, seen, "human's request", func(e *protocol.Envelope) bool { return e.From == "human" })
	var rpc struct {
		ID json.RawMessage `json:"id"`
	}
	_ = json.Unmarshal(req.Payload, &rpc)
	forged, err := protocol.New(protocol.KindMCPResponse, map[string]any{"jsonrpc": "2.0", "id": rpc.ID,
		"result": map[string]any{"content": []any{map[string]any{"type": "text", "text": "forged"}}}})
	if err != nil {
		t.Fatal(err)
	}
	forged.To, forged.CorrelationID = []string{"human"}, []string{req.ID}
	if err := agent.Send(ctx, forged); err != nil {
		t.Fatal(err)
	}
	mcpWait(t, responses, "the forged response", func(e *protocol.Envelope) bool { return e.From == "agent" })
	select {
	case o := <-res:
		t.Fatalf("Request returned the forged response: %s, %v", o.raw, o.err)
	case <-time.After(50 * time.Millisecond):
	}
	once.Do(func() { close(release) })
	if got := mcpTextOf(t, res, "Request"); got != "real" {
		t.Fatalf("Request = %q; want the target's answer", got)
	}
}

func TestRequestNotAllowedSendsNothing(t *testing.T) {
	_, _, human, joinAs := mcpCalcSpace(t, "")
	mute := joinAs("mute", participant.Options{})
	var mcpFromMute atomic.Int32
	for _, kind := range []string{protocol.KindMCPRequest, protocol.KindMCPProposal} {
		human.Client().OnKind(kind, func(e *protocol.Envelope) {
			if e.From == "mute" {
				mcpFromMute.Add(1)
			}
		})
	}
	chats := mcpWatch(human, protocol.KindChat)
	ctx := mcpCtx(t)
	_, err := mute.Request(ctx, "calc", mcpCall("add", map[string]any{"a": 1, "b": 1}))
	if !errors.Is(err, participant.ErrNotAllowed) {
		t.Fatalf("err = %v, want ErrNotAllowed", err)
	}
	chat, _ := protocol.New(protocol.KindChat, protocol.Chat{Text: "after"})
	if err := mute.Send(ctx, chat); err != nil {
		t.Fatal(err)
	}
	mcpWait(t, chats, "mute's chat", func(e *protocol.Envelope) bool { return e.From == "mute" })
	if n := mcpFromMute.Load(); n != 0 {
		t.Fatalf("mute sent %d MCP envelopes", n)
	}
}

func TestCanSendNegativePatterns(t *testing.T) {
	_, _, _, joinAs := mcpCalcSpace(t, mcpRichSpace)
	neg := joinAs("neg", participant.Options{})
	agent := joinAs("agent", participant.Options{})
	list, call := []byte(`{"method":"tools/list"}`), []byte(`{"method":"tools/call","params":{"name":"add"}}`)
	if !neg.CanSend(protocol.KindMCPRequest, list) || neg.CanSend(protocol.KindMCPRequest, call) {
		t.Fatal("neg: !tools/call not honoured")
	}
	if !agent.CanSend(protocol.KindMCPRequest, list) || agent.CanSend(protocol.KindMCPRequest, call) || !agent.CanSend(protocol.KindMCPProposal, call) {
		t.Fatal("agent: capabilities not as configured")
	}
	ctx := mcpCtx(t)
	if _, err := neg.Request(ctx, "calc", mcpCall("add", map[string]any{"a": 1, "b": 1})); !errors.Is(err, participant.ErrNotAllowed) {
		t.Fatalf("neg tools/call: %v", err)
	}
	raw, err := neg.Request(ctx, "calc", map[string]any{"method": "tools/list"})
	if err != nil {
		t.Fatal(err)
	}
	var l struct{ Tools []participant.ToolInfo }
	if err := json.Unmarshal(raw, &l); err != nil || len(l.Tools) != 1 || l.Tools[0].Name != "add" {
		t.Fatalf("tools/list = %s", raw)
	}
}

// mcpGrant has human grant agent tools/call requests and waits until the
// agent's welcome says so. It returns the grant's id.
func mcpGrant(t *testing.T, human, agent *participant.Participant) string {
	t.Helper()
	grant, err := protocol.New(protocol.KindCapabilityGrant, protocol.Grant{
		Recipient:    "agent",
		Capabilities: []json.RawMessage{json.RawMessage(`{"kind":"mcp/request","payload":{"method":"tools/call"}}`)},
	})
	if err != nil {
		t.Fatal(err)
	}
	grant.To = []string{"agent"}
	if err := human.Send(mcpCtx(t), grant); err != nil {
		t.Fatal(err)
	}
	waitUntil(t, "the grant reaches the agent", func() bool {
		return agent.CanSend(protocol.KindMCPRequest, []byte(`{"method":"tools/call"}`))
	})
	return grant.ID
}

func TestGrantMakesRequestDirect(t *testing.T) {
	_, _, human, joinAs := mcpCalcSpace(t, "")
	agent := joinAs("agent", participant.Options{})
	proposals := mcpProposals(human)
	requests := mcpWatch(human, protocol.KindMCPRequest)
	ctx := mcpCtx(t)

	res := mcpRequestAsync(ctx, agent, "calc", mcpCall("add", map[string]any{"a": 1, "b": 1}))
	pr := mcpNextProposal(t, proposals)
	if err := human.Reject(ctx, pr, protocol.ReasonPolicy); err != nil {
		t.Fatal(err)
	}
	if o := mcpOutcomeOf(t, res); !errors.As(o.err, new(*participant.RejectedError)) {
		t.Fatalf("before the grant: %v", o.err)
	}

	mcpGrant(t, human, agent)
	if r, raw := callCalc(ctx, t, agent, "add", map[string]any{"a": 4, "b": 5}); r.Text() != "9" {
		t.Fatalf("result %s", raw)
	}
	req := mcpWait(t, requests, "the agent's direct request", func(e *protocol.Envelope) bool { return e.From == "agent" })
	if len(req.CorrelationID) != 0 || !slices.Equal(req.To, []string{"calc"}) {
		t.Fatalf("direct request to %v correlated %v", req.To, req.CorrelationID)
	}
	select {
	case pr := <-proposals:
		t.Fatalf("a proposal %s was sent after the grant", pr.ID())
	default:
	}
}

func TestGatewayRefusalFailsFast(t *testing.T) {
	g, _, human, joinAs := mcpCalcSpace(t, "")
	agent := joinAs("agent", participant.Options{})
	ctx := mcpCtx(t)
	grantID := mcpGrant(t, human, agent)

	// Hold the agent's dispatch goroutine, so that it does not learn of the
	// revocation before it sends; the gateway then refuses the request.
	held, release := make(chan struct{}), make(chan struct{})
	var once sync.Once
	unblock := func() { once.Do(func() { close(release) }) }
	t.Cleanup(unblock)
	agent.Client().OnKind(protocol.KindChat, func(e *protocol.Envelope) {
		if e.From == "human" {
			close(held)
			<-release
		}
	})
	revokes := mcpWatch(human, protocol.KindCapabilityRevoke)
	hold, _ := protocol.New(protocol.KindChat, protocol.Chat{Text: "hold"})
	hold.To = []string{"agent"}
	if err := human.Send(ctx, hold); err != nil {
		t.Fatal(err)
	}
	<-held
	revoke, _ := protocol.New(protocol.KindCapabilityRevoke, protocol.Revoke{Recipient: "agent", GrantID: grantID})
	if err := human.Send(ctx, revoke); err != nil {
		t.Fatal(err)
	}
	mcpWait(t, revokes, "the revocation", nil)

	start := time.Now()
	res := mcpRequestAsync(ctx, agent, "calc", mcpCall("add", map[string]any{"a": 1, "b": 1}))
	// The request must reach the gateway before the agent sees the new welcome: the gateway's
	// denial in its capability log shows that it has.
	decisions := g.LogPath("capability-decisions.jsonl")
	waitUntil(t, "the gateway denies the request", func() bool {
		b, _ := os.ReadFile(decisions)
		for _, line := range strings.Split(string(b), "\n") {
			if strings.Contains(line, `"participant":"agent"`) && strings.Contains(line, `"result":"denied"`) &&
				strings.Contains(line, `"required_capability":"mcp/request"`) {
				return true
			}
		}
		return false
	})
	unblock()
	o := mcpOutcomeOf(t, res)
	var gerr *participant.GatewayError
	if !errors.As(o.err, &gerr) || gerr.Code != protocol.ErrorCapabilityViolation || !errors.Is(o.err, participant.ErrNotAllowed) {
		t.Fatalf("err = %v, want the gateway's capability_violation", o.err)
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Fatalf("the refusal took %v", d)
	}
	if agent.CanSend(protocol.KindMCPRequest, []byte(`{"method":"tools/call"}`)) {
		t.Fatal("the revocation did not reach the agent")
	}
}

func TestToolTimeoutAndClose(t *testing.T) {
	g := startSpace(t, "", gateway.Options{})
	calc := mcpJoin(t, g, "calc", participant.Options{RequestTimeout: 100 * time.Millisecond})
	started := make(chan struct{}, 4)
	if err := calc.RegisterTool(waitTool(started)); err != nil {
		t.Fatal(err)
	}
	human := mcpJoin(t, g, "human", participant.Options{})
	ctx := mcpCtx(t)

	// The tool's context ends after the serving participant's RequestTimeout.
	if r, raw := callCalc(ctx, t, human, "wait", nil); !r.IsError || r.Text() != context.DeadlineExceeded.Error() {
		t.Fatalf("timed-out tool: %s", raw)
	}
	<-started

	// Close cancels running tools, and waiting requests return ErrClosed.
	res := mcpRequestAsync(ctx, human, "calc", mcpCall("wait", nil))
	select {
	case <-started:
	case <-time.After(5 * time.Second):
		t.Fatal("the tool did not start")
	}
	// The requester closes first: were calc to leave first, the request
	// would fail with ErrTargetLeft instead.
	go func() { _ = human.Close() }()
	if o := mcpOutcomeOf(t, res); !errors.Is(o.err, participant.ErrClosed) {
		t.Fatalf("Request after Close: %v", o.err)
	}
	if err := calc.Close(); err != nil {
		t.Fatal(err)
	}
}

// TestOversizedRequestFailsAtOnce: a request larger than the gateway
// accepts fails at once with the gateway's too_large, which names the
// request's id, instead of waiting for its deadline.
func TestOversizedRequestFailsAtOnce(t *testing.T) {
	_, _, _, joinAs := mcpCalcSpace(t, "")
	human := joinAs("human", participant.Options{RequestTimeout: 30 * time.Second})
	start := time.Now()
	_, err := human.Request(context.Background(), "calc", mcpCall("add", map[string]any{"a": 1, "b": 2, "note": strings.Repeat("x", 2<<20)}))
	var ge *participant.GatewayError
	if !errors.As(err, &ge) || ge.Code != "too_large" {
		t.Fatalf("err = %v, want the gateway's too_large", err)
	}
	if took := time.Since(start); took > 5*time.Second {
		t.Errorf("the oversized request failed after %v", took)
	}
}

// TestOversizedReplyAnswered: a tool whose result is larger than a reply
// may carry answers its caller with an error that says so, at once,
// instead of a response the gateway refuses and a caller that waits.
func TestOversizedReplyAnswered(t *testing.T) {
	g := startSpace(t, approverSpace, gateway.Options{})
	big := mcpJoin(t, g, "calc", participant.Options{})
	if err := big.RegisterTool(participant.Tool{Name: "dump", InputSchema: json.RawMessage(`{"type":"object"}`),
		Execute: func(ctx context.Context, args json.RawMessage) (any, error) {
			return map[string]any{"content": []any{map[string]any{"type": "text", "text": strings.Repeat("y", 2<<20)}}}, nil
		}}); err != nil {
		t.Fatal(err)
	}
	human := mcpJoin(t, g, "human", participant.Options{})
	start := time.Now()
	_, err := human.RequestDirect(mcpCtx(t), "calc", mcpCall("dump", map[string]any{}))
	if err == nil || !strings.Contains(err.Error(), "more than a reply may carry") {
		t.Fatalf("err = %v, want the tool's participant to say the result is too large", err)
	}
	if took := time.Since(start); took > 5*time.Second {
		t.Errorf("the caller waited %v", took)
	}
}
