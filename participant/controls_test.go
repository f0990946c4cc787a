package participant_test

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mew-protocol/mew/client"
	"github.com/mew-protocol/mew/gateway"
	"github.com/mew-protocol/mew/internal/testutil"
	"github.com/mew-protocol/mew/participant"
	"github.com/mew-protocol/mew/protocol"
)

// ctlSpace is the space of the control, chat and stream tests: a boss who
// may do anything, a worker with the kinds a capable agent has, another
// participant who may chat and cancel, and quiet, who may only report
// status.
const ctlSpace = `
space: {id: ctl}
participants:
  boss:
    tokens: [boss-token]
    capabilities: [{kind: "*"}]
  worker:
    tokens: [worker-token]
    capabilities:
      - {kind: chat}
      - {kind: "chat/*"}
      - {kind: "reasoning/*"}
      - {kind: "mcp/*"}
      - {kind: capability/grant-ack}
      - {kind: "participant/*"}
      - {kind: "stream/*"}
  other:
    tokens: [other-token]
    capabilities: [{kind: chat}, {kind: "chat/*"}, {kind: "stream/*"}]
  quiet:
    tokens: [quiet-token]
    capabilities: [{kind: participant/status}]
`

// Helpers shared by the tests of discovery, controls, chat and streams.

// watch collects what c receives from now on.
func watch(c *client.Client) *testutil.Inbox { return testutil.Watch(c) }

// kindFrom matches envelopes of kind from sender correlated to corr (any
// when corr is "").
func kindFrom(kind, from, corr string) func(*protocol.Envelope) bool {
	return func(e *protocol.Envelope) bool {
		return e.Kind == kind && e.From == from && (corr == "" || e.CorrelatesWith(corr))
	}
}

// statusIs additionally matches a participant/status's status.
func statusIs(from, corr, status string) func(*protocol.Envelope) bool {
	return func(e *protocol.Envelope) bool {
		if !kindFrom(protocol.KindParticipantStatus, from, corr)(e) {
			return false
		}
		var s protocol.Status
		return e.DecodePayload(&s) == nil && s.Status == status
	}
}

// waitUntil polls cond until it holds, failing the test after 5 s.
func waitUntil(t *testing.T, what string, cond func() bool) {
	t.Helper()
	testutil.WaitFor(t, 5*time.Second, what, cond)
}

// testCtx is a context for one step of a test.
func testCtx(t *testing.T) context.Context { return testutil.Context(t, 5*time.Second) }

// threeInCtlSpace starts ctlSpace and joins boss, worker and other, with
// an inbox of what boss sees.
func threeInCtlSpace(t *testing.T) (boss, worker, other *participant.Participant, seen *testutil.Inbox) {
	t.Helper()
	g := startSpace(t, ctlSpace, gateway.Options{})
	boss = joinReady(t, g, "boss", participant.Options{})
	worker = joinReady(t, g, "worker", participant.Options{})
	other = joinReady(t, g, "other", participant.Options{})
	return boss, worker, other, watch(boss.Client())
}

// joinReady is join, then waits until the participant's welcome handlers
// have run: Participant.Connect returns when the welcome arrived, before its
// capabilities are recorded, and CanSend is false until then.
func joinReady(t *testing.T, g *testutil.Gateway, id string, opts participant.Options) *participant.Participant {
	t.Helper()
	p := join(t, g, id, opts)
	waitUntil(t, id+" is ready", func() bool { return p.Client().State() == client.Ready })
	return p
}

// rawClient returns a connected layer-1 client for participant id (token
// "<id>-token"); setup registers its handlers before it connects.
func rawClient(t *testing.T, g *testutil.Gateway, id string, setup func(*client.Client)) *client.Client {
	t.Helper()
	c, err := client.New(client.Options{Gateway: "ws://" + g.Addr, Space: g.Config.Space.ID, Token: id + "-token"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	if setup != nil {
		setup(c)
	}
	if err := c.Connect(testCtx(t)); err != nil {
		t.Fatalf("connect %s: %v", id, err)
	}
	return c
}

// sendControl sends a control of kind from p to target and returns its id.
func sendControl(t *testing.T, p *participant.Participant, kind, target string, payload any) string {
	t.Helper()
	env, err := protocol.New(kind, payload)
	if err != nil {
		t.Fatal(err)
	}
	env.To = []string{target}
	if err := p.Send(testCtx(t), env); err != nil {
		t.Fatalf("send %s: %v", kind, err)
	}
	return env.ID
}

// rawEnvelope builds a valid envelope of kind for the pause agreement test.
func rawEnvelope(t *testing.T, kind string) *protocol.Envelope {
	t.Helper()
	var payload any
	switch kind {
	case protocol.KindChat:
		payload = protocol.Chat{Text: "hello"}
	case protocol.KindMCPRequest, protocol.KindMCPProposal:
		payload = map[string]any{"jsonrpc": "2.0", "id": 1, "method": "tools/list"}
	case protocol.KindMCPResponse:
		payload = map[string]any{"jsonrpc": "2.0", "id": 1, "result": map[string]any{}}
	case protocol.KindParticipantStatus:
		payload = protocol.Status{MessagesInContext: 1}
	case protocol.KindStreamRequest:
		payload = protocol.StreamRequest{Direction: protocol.DirectionUpload}
	case protocol.KindParticipantForget:
		payload = protocol.Forget{Direction: protocol.ForgetOldest}
	}
	env, err := protocol.New(kind, payload)
	if err != nil {
		t.Fatal(err)
	}
	env.ID = protocol.NewID()
	switch kind {
	case protocol.KindReasoningCancel:
		env.Context = "reasoning-1"
	case protocol.KindParticipantResume, protocol.KindParticipantForget:
		env.To = []string{"boss"}
	}
	env.CorrelationID = []string{"earlier-envelope"}
	return env
}

func TestPauseAndResume(t *testing.T) {
	g := startSpace(t, ctlSpace, gateway.Options{})
	boss := joinReady(t, g, "boss", participant.Options{})
	worker := joinReady(t, g, "worker", participant.Options{})
	seen := watch(boss.Client())
	own := watch(worker.Client())

	var changes []bool
	var changesMu sync.Mutex
	worker.OnPauseChange(func(paused bool, reason string) {
		changesMu.Lock()
		changes = append(changes, paused)
		changesMu.Unlock()
	})

	pauseID := sendControl(t, boss, protocol.KindParticipantPause, "worker", protocol.Pause{Reason: "test_pause"})
	seen.Wait(t, "the paused status", statusIs("worker", pauseID, "paused:test_pause"))
	if !worker.Paused() {
		t.Fatal("worker not paused")
	}

	// The SDK refuses new work...
	if _, err := worker.Chat(testCtx(t), "still here"); !errors.Is(err, participant.ErrPaused) {
		t.Fatalf("Chat while paused: %v, want ErrPaused", err)
	}
	if err := worker.SendStreamData(testCtx(t), "stream-1", []byte("x")); !errors.Is(err, participant.ErrPaused) {
		t.Fatalf("SendStreamData while paused: %v, want ErrPaused", err)
	}
	if _, err := worker.DiscoverTools(testCtx(t), "boss"); !errors.Is(err, participant.ErrPaused) {
		t.Fatalf("DiscoverTools while paused: %v, want ErrPaused", err)
	}
	if s := worker.DiscoveryStatus()["boss"]; s.State != participant.DiscoveryFailed || s.Attempts != 1 {
		t.Errorf("discovery while paused: %+v, want failed after one attempt", s)
	}

	// ...and for every kind, the SDK and the gateway agree on what a paused
	// participant may send.
	kinds := []string{
		protocol.KindChatAcknowledge, protocol.KindChatCancel, protocol.KindReasoningCancel,
		protocol.KindMCPWithdraw, protocol.KindCapabilityGrantAck, protocol.KindParticipantStatus,
		protocol.KindParticipantCompactDone,
		protocol.KindChat, protocol.KindMCPRequest, protocol.KindMCPProposal, protocol.KindMCPResponse,
		protocol.KindReasoningStart, protocol.KindParticipantResume, protocol.KindParticipantForget,
		protocol.KindStreamRequest,
	}
	for _, kind := range kinds {
		sdkErr := worker.Send(testCtx(t), rawEnvelope(t, kind))
		sdkAllows := sdkErr == nil
		if !sdkAllows && !errors.Is(sdkErr, participant.ErrPaused) {
			t.Fatalf("%s: SDK error %v, want nil or ErrPaused", kind, sdkErr)
		}
		env := rawEnvelope(t, kind)
		if err := worker.Client().Send(testCtx(t), env); err != nil {
			t.Fatalf("%s: raw send: %v", kind, err)
		}
		answer := own.Wait(t, kind+" relayed or refused", func(e *protocol.Envelope) bool {
			return (e.ID == env.ID && e.From == "worker") || (e.Kind == protocol.KindSystemError && e.CorrelatesWith(env.ID))
		})
		gatewayAllows := answer.Kind != protocol.KindSystemError
		if !gatewayAllows {
			var se protocol.SystemError
			if err := answer.DecodePayload(&se); err != nil || se.Error != "paused" {
				t.Fatalf("%s: gateway refused with %s, want paused", kind, answer.Payload)
			}
		}
		if sdkAllows != gatewayAllows {
			t.Errorf("%s: SDK allows %v, gateway allows %v", kind, sdkAllows, gatewayAllows)
		}
	}

	resumeID := sendControl(t, boss, protocol.KindParticipantResume, "worker", protocol.Resume{})
	seen.Wait(t, "the active status", statusIs("worker", resumeID, "active"))
	if worker.Paused() {
		t.Fatal("worker still paused after resume")
	}
	if _, err := worker.Chat(testCtx(t), "back"); err != nil {
		t.Fatalf("Chat after resume: %v", err)
	}
	waitUntil(t, "two pause notifications", func() bool {
		changesMu.Lock()
		defer changesMu.Unlock()
		return len(changes) == 2
	})
	if changes[0] != true || changes[1] != false {
		t.Errorf("pause notifications %v, want [true false]", changes)
	}
}

func TestPauseTimesOut(t *testing.T) {
	// A short write timeout makes the gateway's watchdog, which ends pauses,
	// look every 100 ms.
	g := startSpace(t, ctlSpace, gateway.Options{Timing: gateway.Timing{WriteTimeout: 400 * time.Millisecond}})
	boss := joinReady(t, g, "boss", participant.Options{})
	worker := joinReady(t, g, "worker", participant.Options{})
	seen := watch(boss.Client())

	pauseID := sendControl(t, boss, protocol.KindParticipantPause, "worker", protocol.Pause{TimeoutSeconds: 1})
	seen.Wait(t, "the paused status", statusIs("worker", pauseID, "paused"))
	start := time.Now()
	if !worker.Paused() {
		t.Fatal("worker not paused")
	}
	waitUntil(t, "the pause times out", func() bool { return !worker.Paused() })
	if d := time.Since(start); d < 800*time.Millisecond {
		t.Errorf("pause ended after %v, want about 1 s", d)
	}
	resume := seen.Wait(t, "the gateway's resume", kindFrom(protocol.KindParticipantResume, protocol.GatewayID, pauseID))
	// The worker reports being active once, whether its own timer or the
	// gateway's resume came first.
	active := func(e *protocol.Envelope) bool {
		return statusIs("worker", pauseID, "active")(e) || statusIs("worker", resume.ID, "active")(e)
	}
	seen.Wait(t, "the active status", active)
	if _, err := worker.Chat(testCtx(t), "back"); err != nil {
		t.Fatalf("Chat after the timeout: %v", err)
	}
	// A status request reaches the worker after the gateway's resume and is answered in turn: by
	// its answer, a second active status for the resume would have been sent.
	reqID := sendControl(t, boss, protocol.KindParticipantRequestStatus, "worker", map[string]any{})
	seen.Wait(t, "the answer to the status request", statusIs("worker", reqID, "active"))
	if n := len(seen.All(active)); n != 1 {
		t.Errorf("%d active statuses, want 1", n)
	}
}

func TestControlHooks(t *testing.T) {
	g := startSpace(t, ctlSpace, gateway.Options{})
	boss := joinReady(t, g, "boss", participant.Options{})
	worker := joinReady(t, g, "worker", participant.Options{ContextTokens: 1000})
	seen := watch(boss.Client())

	// Chats addressed to the worker count toward its context.
	if _, err := boss.Chat(testCtx(t), "twelve bytes", "worker"); err != nil {
		t.Fatal(err)
	}
	waitUntil(t, "the chat is counted", func() bool { _, m := worker.ContextUsage(); return m == 1 })
	worker.RecordContextUsage(497, 9) // 500 tokens, 10 messages

	// request-status, limited to tokens.
	reqID := sendControl(t, boss, protocol.KindParticipantRequestStatus, "worker", protocol.RequestStatus{Fields: []string{"tokens"}})
	st := seen.Wait(t, "the requested status", kindFrom(protocol.KindParticipantStatus, "worker", reqID))
	var raw map[string]any
	if err := json.Unmarshal(st.Payload, &raw); err != nil {
		t.Fatal(err)
	}
	if raw["tokens"] != 500.0 || raw["messages_in_context"] != 10.0 || raw["status"] != "active" || raw["max_tokens"] != nil {
		t.Errorf("status payload %s", st.Payload)
	}
	if len(st.To) != 1 || st.To[0] != "boss" {
		t.Errorf("status to %v, want [boss]", st.To)
	}

	// forget
	type call struct {
		dir string
		n   int
	}
	forgets := make(chan call, 1)
	worker.OnForget(func(ctx context.Context, direction string, entries int) error {
		forgets <- call{direction, entries}
		worker.RecordContextUsage(-100, -3)
		return nil
	})
	id := sendControl(t, boss, protocol.KindParticipantForget, "worker", protocol.Forget{Direction: "oldest", Entries: 3})
	seen.Wait(t, "compacting after forget", statusIs("worker", id, "compacting"))
	seen.Wait(t, "compacted after forget", statusIs("worker", id, "compacted"))
	if c := <-forgets; c != (call{"oldest", 3}) {
		t.Errorf("forget hook got %v", c)
	}
	if tok, msg := worker.ContextUsage(); tok != 400 || msg != 7 {
		t.Errorf("usage after forget %d/%d, want 400/7", tok, msg)
	}

	// compact: no hook, a hook, a failing hook, a panicking hook.
	compactDone := func(id string) protocol.CompactDone {
		t.Helper()
		e := seen.Wait(t, "compact-done", kindFrom(protocol.KindParticipantCompactDone, "worker", id))
		if len(e.To) != 1 || e.To[0] != "boss" {
			t.Errorf("compact-done to %v, want [boss]", e.To)
		}
		var d protocol.CompactDone
		if err := e.DecodePayload(&d); err != nil {
			t.Fatal(err)
		}
		return d
	}
	id = sendControl(t, boss, protocol.KindParticipantCompact, "worker", protocol.Compact{})
	if d := compactDone(id); !d.Skipped || d.Status != "skipped" {
		t.Errorf("compact without a hook: %+v", d)
	}
	worker.OnCompact(func(ctx context.Context) (int, int, error) { return 100, 2, nil })
	id = sendControl(t, boss, protocol.KindParticipantCompact, "worker", protocol.Compact{Reason: "token_pressure"})
	seen.Wait(t, "compacting", statusIs("worker", id, "compacting"))
	if d := compactDone(id); d.Skipped || d.FreedTokens != 100 || d.FreedMessages != 2 || d.Status != "compacted" {
		t.Errorf("compact: %+v", d)
	}
	seen.Wait(t, "compacted", statusIs("worker", id, "compacted"))
	if tok, msg := worker.ContextUsage(); tok != 300 || msg != 5 {
		t.Errorf("usage after compact %d/%d, want 300/5", tok, msg)
	}
	worker.OnCompact(func(ctx context.Context) (int, int, error) { return 0, 0, errors.New("boom") })
	id = sendControl(t, boss, protocol.KindParticipantCompact, "worker", protocol.Compact{})
	if d := compactDone(id); !d.Skipped || d.Status != "failed" || d.Reason != "boom" {
		t.Errorf("failing compact: %+v", d)
	}
	seen.Wait(t, "compact_failed", statusIs("worker", id, "compact_failed:boom"))
	worker.OnCompact(func(ctx context.Context) (int, int, error) { panic("hook bug") })
	id = sendControl(t, boss, protocol.KindParticipantCompact, "worker", protocol.Compact{})
	if d := compactDone(id); d.Status != "failed" || !strings.Contains(d.Reason, "hook bug") {
		t.Errorf("panicking compact: %+v", d)
	}

	// clear
	var cleared atomic.Bool
	worker.OnClear(func(ctx context.Context) error { cleared.Store(true); return nil })
	id = sendControl(t, boss, protocol.KindParticipantClear, "worker", protocol.Clear{Reason: "test_clear"})
	st = seen.Wait(t, "cleared", statusIs("worker", id, "cleared:test_clear"))
	if !cleared.Load() {
		t.Error("clear hook not called")
	}
	var s protocol.Status
	if err := st.DecodePayload(&s); err != nil || s.MessagesInContext != 0 || s.Tokens != 0 {
		t.Errorf("status after clear %s", st.Payload)
	}

	// restart closes the worker's own streams first.
	sid, err := worker.RequestStream(testCtx(t), protocol.StreamRequest{Direction: protocol.DirectionUpload})
	if err != nil {
		t.Fatal(err)
	}
	var restarted atomic.Bool
	worker.OnRestart(func(ctx context.Context) error { restarted.Store(true); return nil })
	id = sendControl(t, boss, protocol.KindParticipantRestart, "worker", protocol.Restart{})
	closed := seen.Wait(t, "the restart's stream/close", kindFrom(protocol.KindStreamClose, "worker", ""))
	var sc protocol.StreamClose
	if err := closed.DecodePayload(&sc); err != nil || sc.StreamID != sid || sc.Reason != "restart" {
		t.Errorf("stream/close %s", closed.Payload)
	}
	seen.Wait(t, "restarted", statusIs("worker", id, "restarted"))
	if !restarted.Load() {
		t.Error("restart hook not called")
	}

	// shutdown
	var shut atomic.Bool
	worker.OnShutdown(func(ctx context.Context) error { shut.Store(true); return nil })
	id = sendControl(t, boss, protocol.KindParticipantShutdown, "worker", protocol.Shutdown{Reason: "test_shutdown"})
	seen.Wait(t, "shutting_down", statusIs("worker", id, "shutting_down:test_shutdown"))
	seen.Wait(t, "the worker leaves", func(e *protocol.Envelope) bool {
		var pr protocol.Presence
		return e.Kind == protocol.KindSystemPresence && e.DecodePayload(&pr) == nil &&
			pr.Event == protocol.PresenceLeave && pr.Participant.ID == "worker"
	})
	if !shut.Load() {
		t.Error("shutdown hook not called")
	}
	if _, err := worker.Chat(testCtx(t), "still here"); !errors.Is(err, participant.ErrShutdown) {
		t.Errorf("Chat after shutdown: %v, want ErrShutdown", err)
	}
}

func TestControlsAddressedToOthers(t *testing.T) {
	boss, worker, other, seen := threeInCtlSpace(t)

	var calls atomic.Int32
	other.OnClear(func(context.Context) error { calls.Add(1); return nil })
	sendControl(t, boss, protocol.KindParticipantPause, "worker", protocol.Pause{})
	id := sendControl(t, boss, protocol.KindParticipantClear, "worker", protocol.Clear{})
	seen.Wait(t, "the worker's cleared status", statusIs("worker", id, "cleared"))
	if other.Paused() || calls.Load() != 0 {
		t.Error("a control addressed to the worker acted on another participant")
	}
	if !worker.Paused() {
		t.Error("worker not paused")
	}
}

func TestSoftLimitAndStatus(t *testing.T) {
	g := startSpace(t, ctlSpace, gateway.Options{})
	boss := joinReady(t, g, "boss", participant.Options{})
	worker := joinReady(t, g, "worker", participant.Options{ContextTokens: 100, SoftLimit: 0.5})
	quiet := joinReady(t, g, "quiet", participant.Options{})
	seen := watch(boss.Client())
	nearLimit := func(e *protocol.Envelope) bool {
		return statusIs("worker", "", "near_limit")(e) && len(e.To) == 0
	}

	worker.RecordContextUsage(40, 1)
	worker.RecordContextUsage(20, 1) // 60 ≥ 50: crossing
	first := seen.Wait(t, "the near_limit status", nearLimit)
	var s protocol.Status
	if err := first.DecodePayload(&s); err != nil || s.Tokens != 60 || s.MaxTokens != 100 || s.MessagesInContext != 2 {
		t.Errorf("near_limit payload %s", first.Payload)
	}
	worker.RecordContextUsage(5, 0)  // still above: no second status
	worker.SetContextUsage(10, 1)    // below: re-armed
	worker.RecordContextUsage(60, 0) // crossing again
	if err := worker.ReportStatus(testCtx(t), "checkpoint"); err != nil {
		t.Fatal(err)
	}
	seen.Wait(t, "the reported status", statusIs("worker", "", "checkpoint"))
	waitUntil(t, "two near_limit statuses", func() bool { return len(seen.All(nearLimit)) == 2 })

	if err := worker.RequestStatus(testCtx(t), "boss", "tokens"); err != nil {
		t.Fatal(err)
	}
	seen.Wait(t, "the status request", func(e *protocol.Envelope) bool {
		return kindFrom(protocol.KindParticipantRequestStatus, "worker", "")(e) && len(e.To) == 1 && e.To[0] == "boss"
	})
	if err := quiet.RequestStatus(testCtx(t), "boss"); !errors.Is(err, participant.ErrNotAllowed) {
		t.Errorf("RequestStatus without the capability: %v, want ErrNotAllowed", err)
	}
	if len(seen.All(nearLimit)) != 2 {
		t.Errorf("%d near_limit statuses, want 2", len(seen.All(nearLimit)))
	}
}
