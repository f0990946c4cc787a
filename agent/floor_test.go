package agent_test

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mew-protocol/mew/agent"
	"github.com/mew-protocol/mew/gateway"
	"github.com/mew-protocol/mew/internal/testutil"
	"github.com/mew-protocol/mew/llm"
	"github.com/mew-protocol/mew/participant"
	"github.com/mew-protocol/mew/protocol"
)

// floorSpace is a space of a human and n agents "agent-1"... that may claim
// the floor, with floor control on or off at the gateway.
func floorSpace(n int, enabled bool) string {
	var b strings.Builder
	fmt.Fprintf(&b, "space: {id: floor}\nfloor_control: {enabled: %v}\nparticipants:\n", enabled)
	b.WriteString("  human:\n    tokens: [human-token]\n    capabilities: [{kind: \"*\"}]\n")
	for i := 1; i <= n; i++ {
		fmt.Fprintf(&b, "  agent-%d:\n    tokens: [agent-%d-token]\n    capabilities: [{kind: chat}, {kind: \"chat/*\"}, {kind: \"reasoning/*\"}, {kind: \"floor/*\"}, {kind: \"participant/*\"}]\n", i, i)
	}
	return b.String()
}

// floorModel answers the classifier at once with yes, and every question
// after a random latency in [minLat, maxLat), naming the agent (its model).
func floorModel(t *testing.T, minLat, maxLat time.Duration) *testutil.LLMServer {
	srv := testutil.NewLLMServer(t)
	var mu sync.Mutex
	rng := rand.New(rand.NewPCG(1, 2))
	srv.SetFallback(func(r testutil.LLMRequest) testutil.LLMStep {
		if isClassifier(r) {
			return testutil.LLMReply(`{"shouldRespond": true, "confidence": 0.9, "reason": "a question"}`)
		}
		mu.Lock()
		lat := minLat + time.Duration(rng.Int64N(int64(maxLat-minLat)))
		mu.Unlock()
		step := testutil.LLMReply("answer from " + r.Model)
		step.Delay = lat
		return step
	})
	return srv
}

// startFloorAgent connects agent id with the scripted model.
func startFloorAgent(t *testing.T, g *testutil.Gateway, id string, srv *testutil.LLMServer, cfg agent.Config, now func() time.Time) *agent.Agent {
	t.Helper()
	prov, err := llm.NewOpenAI(llm.Config{BaseURL: srv.URL(), APIKey: "k", MaxRetries: -1})
	if err != nil {
		t.Fatal(err)
	}
	cfg.Model = id
	cfg.AutoRespond = true
	cfg.DiscoveryWait = -1
	a, err := agent.New(agent.Options{
		Participant: participantOpts(g, id),
		Provider:    prov,
		Config:      cfg,
		Now:         now,
	})
	if err != nil {
		t.Fatal(err)
	}
	connect(t, a)
	return a
}

// answers counts, per question, the agents' chats correlated to it.
type answers struct {
	mu     sync.Mutex
	sent   map[string]time.Time
	by     map[string][]string // question id → answering agents, in order
	first  map[string]time.Duration
	claims map[string]int // question id → floor claims
}

func watchAnswers(human *participant.Participant) *answers {
	a := &answers{sent: map[string]time.Time{}, by: map[string][]string{}, first: map[string]time.Duration{}, claims: map[string]int{}}
	human.Client().OnKind(protocol.KindFloorRespondingTo, func(e *protocol.Envelope) {
		if len(e.CorrelationID) > 0 {
			a.mu.Lock()
			a.claims[e.CorrelationID[0]]++
			a.mu.Unlock()
		}
	})
	human.Client().OnKind(protocol.KindChat, func(e *protocol.Envelope) {
		if !strings.HasPrefix(e.From, "agent-") || len(e.CorrelationID) == 0 {
			return
		}
		a.mu.Lock()
		defer a.mu.Unlock()
		q := e.CorrelationID[0]
		if _, ok := a.first[q]; !ok {
			a.first[q] = time.Since(a.sent[q])
		}
		a.by[q] = append(a.by[q], e.From)
	})
	return a
}

// floorRun is the outcome of one simulated run.
type floorRun struct {
	perQuestion float64       // answers per question
	unanswered  int           // questions without an answer
	median      time.Duration // median time to the first answer
	wrong       int           // mention runs: questions the mentioned agent did not answer
	collisions  int           // questions two or more agents claimed
}

// simulate asks n broadcast questions, one every interval, of a space of 5
// agents, and counts the answers once the space is quiet. With nodes > 1
// the space is served by that many gateway nodes of a cluster, the human on
// the first and the agents spread round robin.
func simulate(t *testing.T, floorOn, mention bool, n int, interval time.Duration, nodes int) floorRun {
	const agents = 5
	opts := gateway.Options{Limits: gateway.Limits{Rate: 5000, Burst: 5000}}
	gs := []*testutil.Gateway{}
	if nodes > 1 {
		gs = testutil.StartCluster(t, nodes, floorSpace(agents, floorOn), opts)
	} else {
		gs = append(gs, testutil.StartGateway(t, floorSpace(agents, floorOn), opts))
	}
	// The scripted model answers in 20-100 ms. On three nodes a claim is
	// arbitrated through NATS after it is relayed; on a loaded machine, and
	// under the race detector, those round trips take tens of milliseconds,
	// so the model there takes 60-300 ms (a real one takes longer still): the
	// property tested is one answer per question when arbitration is faster
	// than the model.
	lo, hi := 20*time.Millisecond, 100*time.Millisecond
	if nodes > 1 {
		lo, hi = 60*time.Millisecond, 300*time.Millisecond
	}
	srv := floorModel(t, lo, hi)
	human := join(t, gs[0], "human")
	for i := 1; i <= agents; i++ {
		startFloorAgent(t, gs[i%len(gs)], fmt.Sprintf("agent-%d", i), srv, agent.Config{
			QueueSize:    2 * n,
			ChatResponse: agent.ChatResponse{AnswersPerMinute: -1},
			FloorControl: agent.FloorControl{Disabled: !floorOn, MinDelay: 10 * time.Millisecond, MaxDelay: 60 * time.Millisecond},
		}, nil)
	}
	ans := watchAnswers(human)
	ids := make([]string, n)
	target := make([]string, n)
	for i := range n {
		text := fmt.Sprintf("question %d: what do you think?", i)
		if mention {
			target[i] = fmt.Sprintf("agent-%d", i%agents+1)
			text = "@" + target[i] + " " + text
		}
		ans.mu.Lock()
		ids[i] = sendChat(t, human, text)
		ans.sent[ids[i]] = time.Now()
		ans.mu.Unlock()
		time.Sleep(interval)
	}
	// Quiet: no new answer for a second, and every question answered (or
	// 30 s passed).
	deadline := time.Now().Add(30 * time.Second)
	last, lastCount := time.Now(), -1
	for time.Now().Before(deadline) {
		ans.mu.Lock()
		count, answered := 0, 0
		for _, id := range ids {
			count += len(ans.by[id])
			if len(ans.by[id]) > 0 {
				answered++
			}
		}
		ans.mu.Unlock()
		if count != lastCount {
			last, lastCount = time.Now(), count
		}
		if answered == n && time.Since(last) > time.Second {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	ans.mu.Lock()
	defer ans.mu.Unlock()
	var r floorRun
	var firsts []time.Duration
	total := 0
	for i, id := range ids {
		total += len(ans.by[id])
		if ans.claims[id] > 1 {
			r.collisions++
		}
		if len(ans.by[id]) == 0 {
			r.unanswered++
			continue
		}
		firsts = append(firsts, ans.first[id])
		if mention && !slices.Contains(ans.by[id], target[i]) {
			r.wrong++
		}
	}
	r.perQuestion = float64(total) / float64(n)
	sort.Slice(firsts, func(i, j int) bool { return firsts[i] < firsts[j] })
	if len(firsts) > 0 {
		r.median = firsts[len(firsts)/2]
	}
	return r
}

// TestFloorSimulation: five agents and 100 broadcast questions, with floor
// control off and on, then with @mentions. The numbers are in
// docs/floor-control.md (go test -run FloorSimulation -v ./agent).
func TestFloorSimulation(t *testing.T) {
	const n = 100
	off := simulate(t, false, false, n, 60*time.Millisecond, 1)
	on := simulate(t, true, false, n, 60*time.Millisecond, 1)
	mentioned := simulate(t, true, true, n, 60*time.Millisecond, 1)
	nodes := simulate(t, true, false, n, 60*time.Millisecond, 3)
	for _, row := range []struct {
		name string
		r    floorRun
	}{{"floor control off", off}, {"floor control on", on}, {"on, with @mentions", mentioned}, {"on, on 3 nodes", nodes}} {
		t.Logf("%-20s answers/question %.2f  unanswered %d  median first answer %v  claim collisions %d  mentioned agent missing %d",
			row.name, row.r.perQuestion, row.r.unanswered, row.r.median.Round(time.Millisecond), row.r.collisions, row.r.wrong)
	}
	if off.perQuestion < 4.5 {
		t.Errorf("off: %.2f answers per question, want about 5", off.perQuestion)
	}
	if on.perQuestion > 1.05 {
		t.Errorf("on: %.2f answers per question, want at most 1.05", on.perQuestion)
	}
	// Under the race detector cross-node round trips slow several times
	// over: a yield may still come after an answer went (measured 1.09 and
	// 1.10 with -race on a loaded 2-core machine with a 20-100 ms model).
	limit := 1.05
	if testutil.Race {
		limit = 1.15
	}
	if nodes.perQuestion > limit {
		t.Errorf("on 3 nodes: %.2f answers per question, want at most %.2f", nodes.perQuestion, limit)
	}
	if mentioned.perQuestion > 1.05 || mentioned.wrong > 0 {
		t.Errorf("mentions: %.2f answers per question, %d questions the mentioned agent did not answer", mentioned.perQuestion, mentioned.wrong)
	}
	for _, r := range []floorRun{off, on, mentioned, nodes} {
		if r.unanswered > 0 {
			t.Errorf("%d questions unanswered", r.unanswered)
		}
	}
}

// barrierModel answers the classifier only when both agents have asked
// (so that they leave it together and claim at once), and every question
// after 300 ms.
func barrierModel(t *testing.T) *testutil.LLMServer {
	srv := testutil.NewLLMServer(t)
	var mu sync.Mutex
	arrivals := 0
	gates := map[int]chan struct{}{}
	srv.SetFallback(func(r testutil.LLMRequest) testutil.LLMStep {
		if !isClassifier(r) {
			step := testutil.LLMReply("answer from " + r.Model)
			step.Delay = 300 * time.Millisecond
			return step
		}
		mu.Lock()
		round := arrivals / 2
		arrivals++
		gate, ok := gates[round]
		if !ok {
			gate = make(chan struct{})
			gates[round] = gate
		}
		if arrivals%2 == 0 {
			close(gate)
		}
		mu.Unlock()
		select {
		case <-gate:
		case <-time.After(5 * time.Second):
		}
		return testutil.LLMReply(`{"shouldRespond": true, "confidence": 0.9}`)
	})
	return srv
}

// TestFloorRace: two agents claim a question at the same millisecond (a
// fixed clock); the gateway's tie-break by id lets exactly one answer, the
// other cancels and reports the yield in its status. An agent that sees the
// other's claim before making its own skips the question instead; such a
// round still must have exactly one answer, and the test asks again until
// a round has both claims.
//
// It runs on one gateway, then on three gateway nodes of a cluster with the
// human and each agent on a different node, where the claims are arbitrated
// by compare-and-swap in the cluster's state.
func TestFloorRace(t *testing.T) {
	t.Run("one-gateway", func(t *testing.T) {
		floorRace(t, []*testutil.Gateway{testutil.StartGateway(t, floorSpace(2, true), gateway.Options{})})
	})
	t.Run("three-nodes", func(t *testing.T) {
		floorRace(t, testutil.StartCluster(t, 3, floorSpace(2, true), gateway.Options{}))
	})
}

// floorRace runs TestFloorRace with the human on gs[0] and agent i on
// gs[i%len(gs)].
func floorRace(t *testing.T, gs []*testutil.Gateway) {
	at := func(i int) *testutil.Gateway { return gs[i%len(gs)] }
	srv := barrierModel(t)
	human := join(t, at(0), "human")
	fixed := time.UnixMilli(1_800_000_000_000)
	clock := func() time.Time { return fixed }
	cfg := agent.Config{ReasoningEnabled: true, FloorControl: agent.FloorControl{MinDelay: time.Millisecond, MaxDelay: time.Millisecond}}
	startFloorAgent(t, at(1), "agent-1", srv, cfg, clock)
	loser := startFloorAgent(t, at(2), "agent-2", srv, cfg, clock)
	rec := record(t, human)
	loserRec := record(t, loser.Participant())
	ans := watchAnswers(human)
	stops := map[string]int{}
	for round := 1; ; round++ {
		q := sendChat(t, human, fmt.Sprintf("who wants this one? (%d)", round))
		first := rec.wait(t, "an answer", func(e *protocol.Envelope) bool {
			return e.Kind == protocol.KindChat && strings.HasPrefix(e.From, "agent-") && e.CorrelatesWith(q)
		})
		// The other agent counts the answer it gave up (a yield, or a skip of a claimed
		// question) when it stops; until it has, a second answer could still come.
		other := "agent-1"
		if first.From == other {
			other = "agent-2"
		}
		for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(20 * time.Millisecond) {
			if n := floorStops(t, human, rec, other); n > stops[other] {
				stops[other] = n
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("round %d: %s never gave the question up", round, other)
			}
		}
		ans.mu.Lock()
		answers, claims := append([]string(nil), ans.by[q]...), ans.claims[q]
		ans.mu.Unlock()
		if len(answers) != 1 {
			t.Fatalf("round %d: answers from %v, want exactly one", round, answers)
		}
		for _, e := range rec.all() {
			var rt protocol.RespondingTo
			if e.Kind == protocol.KindFloorRespondingTo && e.CorrelatesWith(q) && (e.DecodePayload(&rt) != nil || rt.StartedAt != fixed.UnixMilli()) {
				t.Errorf("claim %s", e.Payload)
			}
		}
		if claims < 2 {
			t.Logf("round %d: one claim only (the other agent saw it first); again", round)
			if round == 10 {
				t.Fatal("in 10 rounds the two agents never claimed together")
			}
			continue
		}
		if first.From != "agent-1" {
			t.Fatalf("round %d: %s answered; the tie goes to agent-1", round, first.From)
		}
		yield := loserRec.wait(t, "the yield to agent-2", func(e *protocol.Envelope) bool {
			return e.Kind == protocol.KindFloorYield && e.CorrelatesWith(q)
		})
		var y protocol.Yield
		if err := yield.DecodePayload(&y); err != nil || y.Winner != "agent-1" || y.WinnerStartedAt != fixed.UnixMilli() || yield.To[0] != "agent-2" {
			t.Errorf("yield %s to %v: %v", yield.Payload, yield.To, err)
		}
		rec.wait(t, "agent-2's reasoning/cancel", func(e *protocol.Envelope) bool {
			return e.Kind == protocol.KindReasoningCancel && e.From == "agent-2" && strings.Contains(string(e.Payload), "yielded the floor to agent-1")
		})
		waitStatus(t, human, rec, "agent-2", `"floor_yields":1`)
		return
	}
}

// askStatus sends id a participant/request-status and returns its answer.
func askStatus(t *testing.T, human *participant.Participant, rec *recorder, id string) *protocol.Envelope {
	t.Helper()
	req, err := protocol.New(protocol.KindParticipantRequestStatus, map[string]any{})
	if err != nil {
		t.Fatal(err)
	}
	req.ID, req.To = protocol.NewID(), []string{id}
	sendEnv(t, human, req)
	return rec.wait(t, id+"'s status", func(e *protocol.Envelope) bool {
		return e.Kind == protocol.KindParticipantStatus && e.CorrelatesWith(req.ID)
	})
}

// floorStops asks id for its status and returns how many answers it has given up: its
// floor_yields plus answers_suppressed.
func floorStops(t *testing.T, human *participant.Participant, rec *recorder, id string) int {
	t.Helper()
	st := askStatus(t, human, rec, id)
	var p struct {
		Yields     int `json:"floor_yields"`
		Suppressed int `json:"answers_suppressed"`
	}
	if err := json.Unmarshal(st.Payload, &p); err != nil {
		t.Fatalf("%s's status %s: %v", id, st.Payload, err)
	}
	return p.Yields + p.Suppressed
}

// waitStatus asks id for its status until it holds want.
func waitStatus(t *testing.T, human *participant.Participant, rec *recorder, id, want string) {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); {
		st := askStatus(t, human, rec, id)
		if strings.Contains(string(st.Payload), want) {
			return
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Fatalf("%s's status never held %s", id, want)
}

// TestFloorSkipsClaimed: a question someone else claimed during the wait is
// left to them and counted as suppressed.
func TestFloorSkipsClaimed(t *testing.T) {
	g := testutil.StartGateway(t, floorSpace(1, true), gateway.Options{})
	srv := floorModel(t, time.Millisecond, 2*time.Millisecond)
	human := join(t, g, "human")
	startFloorAgent(t, g, "agent-1", srv, agent.Config{FloorControl: agent.FloorControl{MinDelay: 300 * time.Millisecond, MaxDelay: 300 * time.Millisecond}}, nil)
	rec := record(t, human)
	q := sendChat(t, human, "anyone?")
	claim, err := protocol.New(protocol.KindFloorRespondingTo, protocol.RespondingTo{StartedAt: time.Now().UnixMilli()})
	if err != nil {
		t.Fatal(err)
	}
	claim.CorrelationID = []string{q}
	sendEnv(t, human, claim)
	waitStatus(t, human, rec, "agent-1", `"answers_suppressed":1`)
	for _, e := range rec.all() {
		if e.From == "agent-1" && e.CorrelatesWith(q) {
			t.Errorf("agent-1 acted on a claimed question: %s %s", e.Kind, e.Payload)
		}
	}
	if n := len(srv.Requests()); n != 0 {
		t.Errorf("%d model calls for a claimed question", n)
	}
}

// TestFloorExemptions: chats addressed to the agent, mentioning it, or from
// an operator are answered at once, without a claim.
func TestFloorExemptions(t *testing.T) {
	g := testutil.StartGateway(t, floorSpace(1, true), gateway.Options{})
	srv := floorModel(t, time.Millisecond, 2*time.Millisecond)
	human := join(t, g, "human")
	slow := agent.FloorControl{MinDelay: time.Hour, MaxDelay: time.Hour, Operators: []string{"human"}}
	startFloorAgent(t, g, "agent-1", srv, agent.Config{FloorControl: slow}, nil)
	rec := record(t, human)
	for _, q := range []string{
		sendChat(t, human, "direct?", "agent-1"),
		sendChat(t, human, "@agent-1 mention?"),
		sendChat(t, human, "from an operator?"),
	} {
		rec.wait(t, "the answer", answerTo("agent-1", q))
	}
	for _, e := range rec.all() {
		if e.Kind == protocol.KindFloorRespondingTo {
			t.Errorf("a claim for an exempt chat: %s", e.Payload)
		}
	}
}
