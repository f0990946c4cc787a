package participant_test

import (
	"context"
	"encoding/json"
	"errors"
	"slices"
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

// toolServer answers tools/list over a layer-1 client, as a participant
// with tools would. The participant package's own tool registry is not
// used, so that these tests depend on discovery alone.
type toolServer struct {
	id       string
	mu       sync.Mutex
	tools    []map[string]any // nil: never answer
	forgeAll bool             // also answer tools/list addressed to others
	asked    atomic.Int32     // tools/list addressed to it
}

func (s *toolServer) setTools(tools []map[string]any) {
	s.mu.Lock()
	s.tools = tools
	s.mu.Unlock()
}

// serve registers the answering handler on c.
func (s *toolServer) serve(c *client.Client) {
	c.OnKind(protocol.KindMCPRequest, func(req *protocol.Envelope) {
		var m protocol.MCPMessage
		if req.DecodePayload(&m) != nil || m.Method != "tools/list" {
			return
		}
		mine := slices.Contains(req.To, s.id)
		if mine {
			s.asked.Add(1)
		}
		s.mu.Lock()
		tools := s.tools
		s.mu.Unlock()
		if tools == nil || (!mine && !s.forgeAll) {
			return
		}
		env, err := protocol.New(protocol.KindMCPResponse, map[string]any{
			"jsonrpc": "2.0", "id": m.ID, "result": map[string]any{"tools": tools},
		})
		if err != nil {
			panic(err)
		}
		env.To, env.CorrelationID = []string{req.From}, []string{req.ID}
		_ = c.Send(context.Background(), env)
	})
}

// serveTools connects participant id as a toolServer.
func serveTools(t *testing.T, g *testutil.Gateway, s *toolServer) *client.Client {
	t.Helper()
	return rawClient(t, g, s.id, s.serve)
}

var addTool = map[string]any{
	"name": "add", "description": "adds two numbers",
	"inputSchema": map[string]any{"type": "object", "properties": map[string]any{"a": map[string]any{"type": "number"}}},
}

var mulTool = map[string]any{"name": "multiply", "description": "multiplies"}

func TestDiscoveryFollowsJoinsAndLeaves(t *testing.T) {
	g := startSpace(t, "", gateway.Options{})
	seeker := joinReady(t, g, "agent", participant.Options{AutoDiscovery: true, DiscoveryTimeout: 300 * time.Millisecond})

	// human has tools and also answers every tools/list it sees, as an
	// impostor would; calc has none; mute never answers.
	human := &toolServer{id: "human", tools: []map[string]any{mulTool, addTool, {"description": "no name"}}, forgeAll: true}
	calc := &toolServer{id: "calc", tools: []map[string]any{}}
	mute := &toolServer{id: "mute"}
	humanC := serveTools(t, g, human)
	serveTools(t, g, calc)
	muteC := serveTools(t, g, mute)

	waitUntil(t, "the seeker knows all three", func() bool { return len(seeker.DiscoveryStatus()) == 3 })
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := seeker.WaitForPendingDiscoveries(ctx); err != nil {
		t.Fatal(err)
	}
	st := seeker.DiscoveryStatus()
	if s := st["human"]; s.State != participant.DiscoveryCompleted || s.Tools != 2 || s.Attempts != 1 || s.Fetched.IsZero() {
		t.Errorf("human: %+v", s)
	}
	if s := st["calc"]; s.State != participant.DiscoveryNoTools || s.Tools != 0 {
		t.Errorf("calc (the impostor's answer must not count): %+v", s)
	}
	if s := st["mute"]; s.State != participant.DiscoveryFailed || s.Attempts != 3 || !strings.Contains(s.Err, "no answer") {
		t.Errorf("mute: %+v", s)
	}
	if n := mute.asked.Load(); n != 3 {
		t.Errorf("mute was asked %d times, want 3", n)
	}

	tools := seeker.AvailableTools()
	if len(tools) != 2 || tools[0].Name != "add" || tools[1].Name != "multiply" || tools[0].Participant != "human" {
		t.Fatalf("available tools %+v", tools)
	}
	var schema map[string]any
	if err := json.Unmarshal(tools[0].InputSchema, &schema); err != nil || schema["type"] != "object" {
		t.Errorf("add's schema %s", tools[0].InputSchema)
	}
	if tools[0].Description != "adds two numbers" || tools[1].InputSchema != nil {
		t.Errorf("tools %+v", tools)
	}

	// Leaving forgets a participant and its tools.
	_ = muteC.Close()
	_ = humanC.Close()
	waitUntil(t, "the seeker forgets those who left", func() bool {
		st := seeker.DiscoveryStatus()
		_, m := st["mute"]
		_, h := st["human"]
		return !m && !h
	})
	if tools := seeker.AvailableTools(); len(tools) != 0 {
		t.Errorf("tools of participants who left: %+v", tools)
	}
}

func TestDiscoveryFromWelcomeWithTTL(t *testing.T) {
	g := startSpace(t, "", gateway.Options{})
	human := &toolServer{id: "human", tools: []map[string]any{addTool}}
	serveTools(t, g, human)
	seeker := joinReady(t, g, "agent", participant.Options{
		AutoDiscovery: true, DiscoveryTimeout: 300 * time.Millisecond, DiscoveryTTL: 500 * time.Millisecond,
	})
	waitUntil(t, "the welcome's participant is discovered", func() bool {
		return seeker.DiscoveryStatus()["human"].State == participant.DiscoveryCompleted
	})
	fetched := seeker.DiscoveryStatus()["human"].Fetched

	// Within the TTL, DiscoverTools answers from the list.
	human.setTools([]map[string]any{addTool, mulTool})
	tools, err := seeker.DiscoverTools(testCtx(t), "human")
	if err != nil || len(tools) != 1 || human.asked.Load() != 1 {
		t.Fatalf("within the TTL: %v, %v, asked %d times", tools, err, human.asked.Load())
	}
	// When it expires, auto-discovery lists the tools again.
	waitUntil(t, "the list is refreshed", func() bool { return len(seeker.AvailableTools()) == 2 })
	if d := seeker.DiscoveryStatus()["human"].Fetched.Sub(fetched); d < 400*time.Millisecond {
		t.Errorf("refreshed after %v, want the TTL", d)
	}

	// RefreshDiscovery asks again at once.
	human.setTools([]map[string]any{mulTool})
	seeker.RefreshDiscovery("human")
	if err := seeker.WaitForPendingDiscoveries(testCtx(t)); err != nil {
		t.Fatal(err)
	}
	if tools := seeker.AvailableTools(); len(tools) != 1 || tools[0].Name != "multiply" {
		t.Errorf("after RefreshDiscovery: %+v", tools)
	}
}

func TestDiscoverToolsOnDemand(t *testing.T) {
	g := startSpace(t, "", gateway.Options{})
	human := &toolServer{id: "human", tools: []map[string]any{addTool}}
	serveTools(t, g, human)
	mute := &toolServer{id: "mute"}
	serveTools(t, g, mute)
	seeker := joinReady(t, g, "agent", participant.Options{DiscoveryTimeout: 200 * time.Millisecond})

	waitUntil(t, "the seeker knows the others", func() bool { return len(seeker.DiscoveryStatus()) == 2 })
	for id, s := range seeker.DiscoveryStatus() {
		if s.State != participant.DiscoveryNotStarted {
			t.Errorf("%s: %+v without AutoDiscovery", id, s)
		}
	}

	// Concurrent discoveries of one participant share one request.
	var wg sync.WaitGroup
	for range 3 {
		wg.Go(func() {
			tools, err := seeker.DiscoverTools(testCtx(t), "human")
			if err != nil || len(tools) != 1 || tools[0].Name != "add" {
				t.Errorf("DiscoverTools: %+v, %v", tools, err)
			}
		})
	}
	wg.Wait()
	if n := human.asked.Load(); n != 1 {
		t.Errorf("human asked %d times, want 1", n)
	}

	// A participant that never answers fails after three attempts.
	_, err := seeker.DiscoverTools(testCtx(t), "mute")
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("DiscoverTools of a silent participant: %v, want a deadline error", err)
	}
	if s := seeker.DiscoveryStatus()["mute"]; s.State != participant.DiscoveryFailed || s.Attempts != 3 {
		t.Errorf("mute: %+v", s)
	}
	// A caller's context ends the wait, not the discovery.
	short, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer cancel()
	if _, err := seeker.DiscoverTools(short, "mute"); !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("DiscoverTools with a short context: %v", err)
	}
	if s := seeker.DiscoveryStatus()["mute"]; s.State != participant.DiscoveryInProgress {
		t.Errorf("mute after the caller gave up: %+v", s)
	}
	if _, err := seeker.DiscoverTools(testCtx(t), "agent"); err == nil {
		t.Error("a participant discovered its own tools")
	}
}

func TestDiscoveryNotAllowed(t *testing.T) {
	g := startSpace(t, "", gateway.Options{})
	human := &toolServer{id: "human", tools: []map[string]any{addTool}}
	serveTools(t, g, human)
	// calc may not send mcp/request at all: it neither asks nor proposes.
	calc := joinReady(t, g, "calc", participant.Options{AutoDiscovery: true, DiscoveryTimeout: 200 * time.Millisecond})
	seen := watch(calc.Client())

	_, err := calc.DiscoverTools(testCtx(t), "human")
	if !errors.Is(err, participant.ErrNotAllowed) {
		t.Fatalf("DiscoverTools: %v, want ErrNotAllowed", err)
	}
	if err := calc.WaitForPendingDiscoveries(testCtx(t)); err != nil {
		t.Fatal(err)
	}
	s := calc.DiscoveryStatus()["human"]
	if s.State != participant.DiscoveryFailed || !strings.Contains(s.Err, "may not send tools/list") {
		t.Errorf("status %+v", s)
	}
	if human.asked.Load() != 0 || len(seen.All(func(e *protocol.Envelope) bool {
		return e.Kind == protocol.KindMCPProposal || e.Kind == protocol.KindMCPRequest
	})) != 0 {
		t.Error("a participant without the capability sent a request or a proposal")
	}
}

func TestDiscoveryRelistsOnToolsListChanged(t *testing.T) {
	g := startSpace(t, "", gateway.Options{})
	human := &toolServer{id: "human", tools: []map[string]any{addTool}}
	humanC := serveTools(t, g, human)
	seeker := joinReady(t, g, "agent", participant.Options{DiscoveryTimeout: time.Second})
	waitUntil(t, "the seeker knows human", func() bool { return len(seeker.DiscoveryStatus()) == 1 })
	if tools, err := seeker.DiscoverTools(testCtx(t), "human"); err != nil || len(tools) != 1 {
		t.Fatalf("DiscoverTools: %+v, %v", tools, err)
	}

	announce := func(to ...string) {
		t.Helper()
		env, err := protocol.New(protocol.KindMCPRequest, map[string]any{"jsonrpc": "2.0", "method": "notifications/tools/list_changed"})
		if err != nil {
			t.Fatal(err)
		}
		env.To = to
		if err := humanC.Send(testCtx(t), env); err != nil {
			t.Fatal(err)
		}
	}
	// A change announced to someone else is not the seeker's business.
	human.setTools([]map[string]any{addTool, mulTool})
	announce("calc")
	// A broadcast one is: the seeker lists human's tools again, although
	// its list is fresh and AutoDiscovery is off.
	announce()
	waitUntil(t, "the new tools are listed", func() bool { return len(seeker.AvailableTools()) == 2 })
	if n := human.asked.Load(); n != 2 {
		t.Errorf("human was asked %d times, want 2 (one per broadcast change)", n)
	}
	tools, err := seeker.DiscoverTools(testCtx(t), "human")
	if err != nil || len(tools) != 2 || human.asked.Load() != 2 {
		t.Errorf("after the refresh, DiscoverTools = %+v, %v (asked %d times)", tools, err, human.asked.Load())
	}
}
