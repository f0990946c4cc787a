package gateway_test

import (
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mew-protocol/mew/gateway"
	"github.com/mew-protocol/mew/internal/testutil"
)

func floorSpace(enabled bool) string {
	return fmt.Sprintf(`
space: {id: floor}
floor_control: {enabled: %v, ttl_ms: 1000}
participants:
  human: {tokens: [human-token], capabilities: [{kind: "*"}]}
  a1: {tokens: [a1-token], capabilities: [{kind: chat}, {kind: "floor/*"}]}
  a2: {tokens: [a2-token], capabilities: [{kind: chat}, {kind: "floor/*"}]}
  a3: {tokens: [a3-token], capabilities: [{kind: chat}, {kind: "floor/*"}]}
`, enabled)
}

type floorPeers struct {
	human      *testutil.Peer
	a1, a2, a3 *testutil.Peer
}

func floorJoin(t *testing.T, g *testutil.Gateway) floorPeers {
	t.Helper()
	var f floorPeers
	f.human, _ = testutil.Join(t, g.WSURL, "human-token")
	f.a1, _ = testutil.Join(t, g.WSURL, "a1-token")
	f.a2, _ = testutil.Join(t, g.WSURL, "a2-token")
	f.a3, _ = testutil.Join(t, g.WSURL, "a3-token")
	return f
}

// ask broadcasts a question from the human (or addresses it) and waits
// until every agent has seen it.
func (f floorPeers) ask(t *testing.T, id string, to string) {
	t.Helper()
	msg := `{"id":"` + id + `","kind":"chat","payload":{"text":"question ` + id + `"}}`
	if to != "" {
		msg = `{"id":"` + id + `","kind":"chat","to":["` + to + `"],"payload":{"text":"question ` + id + `"}}`
	}
	f.human.SendText(msg)
	for _, p := range []*testutil.Peer{f.a1, f.a2, f.a3} {
		p.ExpectFunc("chat", func(m testutil.Msg) bool { return m.ID() == id })
	}
}

func claim(p *testutil.Peer, msg string, startedAt int64) {
	p.SendText(fmt.Sprintf(`{"kind":"floor/responding-to","correlation_id":[%q],"payload":{"started_at":%d}}`, msg, startedAt))
}

// expectYield waits for a floor/yield about msg naming winner.
func expectYield(t *testing.T, p *testutil.Peer, msg, winner string, winnerStarted int64) {
	t.Helper()
	y := p.Expect("floor/yield")
	c := y.Env["correlation_id"].([]any)
	if c[0] != msg || y.Payload()["winner"] != winner || int64(y.Payload()["winner_started_at"].(float64)) != winnerStarted || y.From() != "system:gateway" {
		t.Fatalf("yield %s, want for %s winner %s at %d", y.Raw, msg, winner, winnerStarted)
	}
}

// noYield checks that no floor/yield arrives for a while.
func noYield(t *testing.T, p *testutil.Peer) {
	t.Helper()
	if m, quiet := p.Quiet(150*time.Millisecond, func(m testutil.Msg) bool { return m.Kind() != "floor/yield" }); !quiet {
		t.Fatalf("unexpected yield %s", m.Raw)
	}
}

func TestFloorClaims(t *testing.T) {
	clk := &clock{t: time.Date(2026, 11, 23, 12, 0, 0, 0, time.UTC)}
	g := testutil.StartGateway(t, floorSpace(true), gateway.Options{Now: clk.Now})
	f := floorJoin(t, g)

	t.Run("later claim yields", func(t *testing.T) {
		f.ask(t, "q1", "")
		claim(f.a1, "q1", 1000)
		claim(f.a2, "q1", 2000)
		expectYield(t, f.a2, "q1", "a1", 1000)
		noYield(t, f.a1)
	})
	t.Run("earlier claim displaces the holder", func(t *testing.T) {
		claim(f.a3, "q1", 500)
		expectYield(t, f.a1, "q1", "a3", 500)
		noYield(t, f.a3)
	})
	t.Run("tie goes to the smaller id", func(t *testing.T) {
		f.ask(t, "q2", "")
		claim(f.a2, "q2", 100)
		f.human.ExpectFunc("floor/responding-to", func(m testutil.Msg) bool { return claimOf(m, "a2", "q2") })
		claim(f.a1, "q2", 100)
		expectYield(t, f.a2, "q2", "a1", 100)
	})
	t.Run("the holder's answer clears the claim", func(t *testing.T) {
		f.ask(t, "q3", "")
		claim(f.a1, "q3", 100)
		f.a1.SendText(`{"kind":"chat","correlation_id":["q3"],"payload":{"text":"answer"}}`)
		f.a2.ExpectFunc("chat", func(m testutil.Msg) bool { return m.From() == "a1" })
		claim(f.a2, "q3", 200)
		noYield(t, f.a2)
	})
	t.Run("the TTL clears the claim", func(t *testing.T) {
		f.ask(t, "q4", "")
		claim(f.a1, "q4", 100)
		f.human.ExpectFunc("floor/responding-to", func(m testutil.Msg) bool { return claimOf(m, "a1", "q4") })
		clk.Advance(1500 * time.Millisecond)
		claim(f.a2, "q4", 200)
		noYield(t, f.a2)
	})
	t.Run("addressed messages are not claimed", func(t *testing.T) {
		f.ask(t, "q5", "a3")
		claim(f.a1, "q5", 100)
		claim(f.a2, "q5", 50)
		noYield(t, f.a1)
		noYield(t, f.a2)
	})
	t.Run("claims are relayed to everyone", func(t *testing.T) {
		f.ask(t, "q6", "")
		claim(f.a3, "q6", 100)
		f.human.ExpectFunc("floor/responding-to", func(m testutil.Msg) bool { return claimOf(m, "a3", "q6") })
	})
	t.Run("an answer after a yield is delivered and counted", func(t *testing.T) {
		f.ask(t, "q8", "")
		claim(f.a1, "q8", 100)
		claim(f.a2, "q8", 200)
		expectYield(t, f.a2, "q8", "a1", 100)
		f.a2.SendText(`{"kind":"chat","correlation_id":["q8"],"payload":{"text":"answering anyway"}}`)
		f.human.ExpectFunc("chat", func(m testutil.Msg) bool { return m.From() == "a2" && m.Payload()["text"] == "answering anyway" })
		resp, err := http.Get(g.URL + "/metrics")
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if !strings.Contains(string(body), `mew_gateway_floor_total{event="ignored_yield"} 1`) {
			t.Errorf("metrics lack the ignored yield:\n%s", body)
		}
	})
	t.Run("leaving clears the claim", func(t *testing.T) {
		f.ask(t, "q7", "")
		claim(f.a3, "q7", 100)
		f.human.ExpectFunc("floor/responding-to", func(m testutil.Msg) bool { return claimOf(m, "a3", "q7") })
		_ = f.a3.Conn.CloseNow()
		f.human.ExpectFunc("system/presence", func(m testutil.Msg) bool { return m.Payload()["event"] == "leave" })
		claim(f.a1, "q7", 200)
		noYield(t, f.a1)
	})
}

func TestFloorSameMillisecond(t *testing.T) {
	// The gateway's clock stands still: on a loaded machine the rounds'
	// waits could outlast the claims' one-second TTL, and an expired claim
	// is no longer the one a later claim yields to.
	clk := &clock{t: time.Now()}
	g := testutil.StartGateway(t, floorSpace(true), gateway.Options{Now: clk.Now})
	f := floorJoin(t, g)
	for i := range 5 {
		msg := fmt.Sprintf("race-%d", i)
		f.ask(t, msg, "")
		var wg sync.WaitGroup
		for _, p := range []*testutil.Peer{f.a1, f.a2, f.a3} {
			wg.Go(func() { claim(p, msg, 42) })
		}
		wg.Wait()
		// Whatever the arrival order, a1 ends up with the floor and each
		// of the others is told to yield exactly once (naming whoever held
		// the floor when it lost, a1 or an interim holder).
		for _, p := range []*testutil.Peer{f.a2, f.a3} {
			y := p.Expect("floor/yield")
			if y.Env["correlation_id"].([]any)[0] != msg {
				t.Fatalf("yield %s", y.Raw)
			}
		}
		noYield(t, f.a1)
		noYield(t, f.a2)
		noYield(t, f.a3)
		// The floor is a1's: a later claim by a3 yields to a1.
		claim(f.a3, msg, 43)
		expectYield(t, f.a3, msg, "a1", 42)
	}
}

func TestFloorDisabled(t *testing.T) {
	g := testutil.StartGateway(t, floorSpace(false), gateway.Options{})
	f := floorJoin(t, g)
	f.ask(t, "q1", "")
	claim(f.a1, "q1", 100)
	claim(f.a2, "q1", 50)
	noYield(t, f.a1)
	noYield(t, f.a2)
	f.human.ExpectFunc("floor/responding-to", func(m testutil.Msg) bool { return claimOf(m, "a2", "q1") })
}

// claimOf reports whether m is from's claim on msg.
func claimOf(m testutil.Msg, from, msg string) bool {
	c, _ := m.Env["correlation_id"].([]any)
	return m.From() == from && len(c) == 1 && c[0] == msg
}
