package bridge_test

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/mew-protocol/mew/bridge"
	"github.com/mew-protocol/mew/internal/mcptest"
	"github.com/mew-protocol/mew/internal/mcpver"
	"github.com/mew-protocol/mew/internal/testutil"
	"github.com/mew-protocol/mew/participant"
	"github.com/mew-protocol/mew/protocol"
)

// elicitSpace is bridgeSpace where the bridge may ask the space, helper may
// answer elicitations (for anyone), and agent may not.
var elicitSpace = testutil.SpaceYAML("bridge",
	testutil.Member("files", "mcp/response", "participant/status", "chat", "elicitation/*"),
	testutil.Member("human", "*"),
	testutil.Member("helper", `{kind: elicitation/response, to: [files]}`),
	testutil.Member("agent", `{kind: mcp/request, payload: {method: tools/call}}`),
)

// answerWith answers, as p, every elicitation addressed to caller with
// answer (called on its own goroutine, after delay, and again while the
// answer is refused), and returns the errors AnswerElicitation returned.
func answerWith(t *testing.T, p *participant.Participant, caller string, delay time.Duration, answer func(*participant.Elicitation) (string, any)) <-chan error {
	t.Helper()
	errs := make(chan error, 16)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	t.Cleanup(func() { cancel(); <-done })
	seen := make(chan *participant.Elicitation, 16)
	remove := p.OnElicitation(func(e *participant.Elicitation) {
		if e.For(caller) {
			seen <- e
		}
	})
	t.Cleanup(remove)
	go func() {
		defer close(done)
		for {
			select {
			case e := <-seen:
				select {
				case <-time.After(delay):
				case <-ctx.Done():
					return
				}
				// A refused answer leaves the elicitation open: answer again.
				for range 3 {
					action, content := answer(e)
					actx, acancel := context.WithTimeout(ctx, 10*time.Second)
					err := p.AnswerElicitation(actx, e, action, content)
					acancel()
					errs <- err
					if !errors.Is(err, participant.ErrElicitationRefused) {
						break
					}
				}
			case <-ctx.Done():
				return
			}
		}
	}()
	return errs
}

// TestBridgeElicitation: a bridged server asks for a form during a call,
// under 2026-07-28 (an InputRequiredResult) and under 2025-11-25
// (elicitation/create); the bridge asks the caller in the space, which
// answers after the call's own timeout would have passed, and the call
// completes with the answer. A form that does not fit is refused with the
// reason and may be answered again; the elicitation is closed with
// elicitation/done for every participant.
func TestBridgeElicitation(t *testing.T) {
	for _, v := range []string{mcpver.Stateless, mcpver.LatestSession} {
		t.Run(v, func(t *testing.T) {
			g := startSpace(t, elicitSpace)
			b := startBridge(t, g, bridge.Options{Server: goServer(t, "normal", mcptest.EnvRevisions+"="+v), NoRestart: true, RequestTimeout: 700 * time.Millisecond})
			if got := b.Status().Protocol; got != v {
				t.Fatalf("agreed on %s", got)
			}
			human := join(t, g, "human", participant.Options{})
			seen := watch(join(t, g, "helper", participant.Options{}), protocol.KindElicitationRequest, protocol.KindElicitationDone)
			tries := 0
			errs := answerWith(t, human, "human", time.Second, func(e *participant.Elicitation) (string, any) {
				tries++
				if e.Request.Mode != "form" || e.Request.Message != "Who is travelling?" || e.Request.Method != "tools/call" || e.Request.Name != "ask" ||
					e.Request.Server != mcptest.Name || !strings.Contains(string(e.Request.RequestedSchema), `"seats"`) || e.Request.ExpiresAt == "" {
					t.Errorf("elicitation %+v", e.Request)
				}
				if tries == 1 {
					return protocol.ElicitationAccept, map[string]any{"seats": 12} // no name, too many seats
				}
				return protocol.ElicitationAccept, map[string]any{"name": "Ada", "seats": 2}
			})
			defer func() {
				if t.Failed() {
					t.Logf("bridge logs:\n%s", b.logs)
				}
			}()
			res := callTool(t, human, "ask", map[string]any{})
			if res.text() != `accept {"name":"Ada","seats":2}` {
				t.Errorf("the call answered %q", res.text())
			}
			var refused *participant.ElicitationRefusedError
			if err := <-errs; !errors.As(err, &refused) || !strings.Contains(refused.Reason, "name") || !strings.Contains(refused.Reason, "seats") {
				t.Errorf("the form that does not fit: %v", err)
			}
			if err := <-errs; err != nil {
				t.Errorf("the answer: %v", err)
			}
			waitFor(t, "helper sees the elicitation closed", func() bool {
				return seen.Find(func(env *protocol.Envelope) bool {
					var d protocol.ElicitationDone
					return env.Kind == protocol.KindElicitationDone && env.DecodePayload(&d) == nil && d.Status == "answered" && d.By == "human" && d.Action == "accept"
				}) != nil
			})
			if req := seen.Find(func(env *protocol.Envelope) bool { return env.Kind == protocol.KindElicitationRequest }); req == nil || len(req.To) != 1 || req.To[0] != "human" || len(req.CorrelationID) != 1 {
				t.Errorf("elicitation/request as helper saw it: %+v", req)
			}
			if n := len(human.PendingElicitations()); n != 0 {
				t.Errorf("%d elicitations still open", n)
			}
		})
	}
}

// TestBridgeElicitationAnsweredForAnother: helper, allowed to answer
// elicitations, answers the one addressed to the agent that made the call;
// the agent, not allowed to, is told so before anything is sent; a second
// answer is told it came too late. A URL elicitation, declined, and one
// nobody answers (expired: the server is told "cancel") end the call too.
func TestBridgeElicitationAnsweredForAnother(t *testing.T) {
	g := startSpace(t, elicitSpace)
	startBridge(t, g, bridge.Options{Server: goServer(t, "normal"), NoRestart: true, ElicitationTimeout: 1500 * time.Millisecond})
	agent := join(t, g, "agent", participant.Options{})
	helper := join(t, g, "helper", participant.Options{})
	human := join(t, g, "human", participant.Options{})

	errs := answerWith(t, helper, "agent", 0, func(*participant.Elicitation) (string, any) {
		return protocol.ElicitationAccept, map[string]any{"name": "Grace"}
	})
	// The agent's own answer is refused locally: it holds no capability.
	agentErr := make(chan error, 1)
	agent.OnElicitation(func(e *participant.Elicitation) {
		go func() { agentErr <- agent.AnswerElicitation(context.Background(), e, protocol.ElicitationDecline, nil) }()
	})
	// The human answers too, late: refused (already answered) or over.
	late := answerWith(t, human, "agent", 500*time.Millisecond, func(*participant.Elicitation) (string, any) {
		return protocol.ElicitationDecline, nil
	})
	if got := callTool(t, agent, "ask", map[string]any{}).text(); got != `accept {"name":"Grace","seats":1}` {
		t.Errorf("the call answered %q (the form's default fills seats)", got)
	}
	if err := <-errs; err != nil {
		t.Errorf("helper's answer: %v", err)
	}
	if err := <-agentErr; !errors.Is(err, participant.ErrNotAllowed) {
		t.Errorf("the agent's answer: %v", err)
	}
	if err := <-late; !errors.Is(err, participant.ErrElicitationOver) && !errors.Is(err, participant.ErrElicitationRefused) {
		t.Errorf("the late answer: %v", err)
	}

	// A URL, declined by helper.
	errs = answerWith(t, helper, "agent", 0, func(e *participant.Elicitation) (string, any) {
		if e.Request.Mode != "url" || e.Request.URL != mcptest.AskURL || e.Request.ElicitationID == "" {
			t.Errorf("URL elicitation %+v", e.Request)
		}
		return protocol.ElicitationDecline, nil
	})
	if got := callTool(t, agent, "ask_url", map[string]any{}).text(); got != "decline" {
		t.Errorf("ask_url answered %q", got)
	}
	<-errs
}

// TestBridgeElicitationExpires: nobody answers; after ElicitationTimeout
// the server is told "cancel" and the call completes with it; the space
// is told the elicitation expired.
func TestBridgeElicitationExpires(t *testing.T) {
	g := startSpace(t, elicitSpace)
	startBridge(t, g, bridge.Options{Server: goServer(t, "normal"), NoRestart: true, ElicitationTimeout: 300 * time.Millisecond})
	human := join(t, g, "human", participant.Options{})
	seen := watch(human, protocol.KindElicitationDone)
	if got := callTool(t, human, "ask", map[string]any{}).text(); got != "cancel" {
		t.Errorf("the call answered %q", got)
	}
	waitFor(t, "elicitation/done expired", func() bool {
		return seen.Find(func(env *protocol.Envelope) bool {
			var d protocol.ElicitationDone
			return env.DecodePayload(&d) == nil && d.Status == protocol.ElicitationExpired
		}) != nil
	})
}

// TestBridgeElicitationNotAllowed: a bridge without a capability for
// elicitation/request refuses the server's question explicitly (the call
// fails with the reason) instead of leaving it unanswered.
func TestBridgeElicitationNotAllowed(t *testing.T) {
	g := startSpace(t, "")
	startBridge(t, g, bridge.Options{Server: goServer(t, "normal"), NoRestart: true})
	human := join(t, g, "human", participant.Options{})
	raw, err := human.Request(testutil.Context(t, 20*time.Second), "files", call("ask", map[string]any{}))
	var r toolResult
	_ = json.Unmarshal(raw, &r)
	if !strings.Contains(r.text()+errString(err), "no capability for elicitation/request") {
		t.Errorf("ask without the capability: %s, %v", raw, err)
	}
}

func errString(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}
