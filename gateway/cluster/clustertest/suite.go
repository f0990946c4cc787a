package clustertest

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/mew-protocol/mew/gateway/cluster"
)

// PresenceTTL is the presence TTL a Factory must configure: short, so that
// expiry tests are quick, and a whole second, the granularity of NATS.
const PresenceTTL = time.Second

// Harness is n nodes of one cluster, made by a Factory.
type Harness struct {
	Nodes []cluster.Node
	// Crash stops node i as a SIGKILL would: no graceful leave, no more
	// presence refreshes. The node is not used afterwards.
	Crash func(i int)
}

// Factory makes n nodes of a fresh cluster whose presence TTL is
// PresenceTTL, and registers their cleanup with t.
type Factory func(t *testing.T, n int) *Harness

// Run runs the conformance suite against the implementation f makes.
func Run(t *testing.T, f Factory) {
	t.Run("BrokerOrderPerSender", func(t *testing.T) { testBrokerOrder(t, f) })
	t.Run("BrokerSpaces", func(t *testing.T) { testBrokerSpaces(t, f) })
	t.Run("StateWatch", func(t *testing.T) { testStateWatch(t, f) })
	t.Run("StateCAS", func(t *testing.T) { testStateCAS(t, f) })
	t.Run("StateDeleteAtOnce", func(t *testing.T) { testDeleteAtOnce(t, f) })
	t.Run("StatePropagation", func(t *testing.T) { testStatePropagation(t, f) })
	t.Run("StateTTL", func(t *testing.T) { testStateTTL(t, f) })
	t.Run("StateHostile", func(t *testing.T) { testStateHostile(t, f) })
	t.Run("PresenceReplace", func(t *testing.T) { testPresenceReplace(t, f) })
	t.Run("PresenceCrash", func(t *testing.T) { testPresenceCrash(t, f) })
	t.Run("PresenceLeaveAtOnce", func(t *testing.T) { testLeaveAtOnce(t, f) })
	t.Run("FloorContest", func(t *testing.T) { testFloorContest(t, f) })
	t.Run("LogOrder", func(t *testing.T) { testLogOrder(t, f, stateLog) })
	t.Run("LargeRecords", func(t *testing.T) { testLarge(t, f, stateLog) })
	t.Run("HistoryOrder", func(t *testing.T) { testLogOrder(t, f, historyLog) })
	t.Run("HistoryLarge", func(t *testing.T) { testLarge(t, f, historyLog) })
	t.Run("HistorySeparate", func(t *testing.T) { testHistorySeparate(t, f) })
	t.Run("Keep", func(t *testing.T) { testKeep(t, f) }) // keep.go
	t.Run("Close", func(t *testing.T) { testClose(t, f) })
	t.Run("StreamNumbers", func(t *testing.T) { testStreamNumbers(t, f) }) // streams.go
	t.Run("StreamChanges", func(t *testing.T) { testStreamChanges(t, f) })
}

const wait = 10 * time.Second // the most a test waits for something that must happen

func ctxT(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	return ctx
}

// warm is the prefix of warm-up messages, which the broker tests ignore.
const warm = "warm-up"

// warmUp publishes warm-up messages from every node to space until every
// other node has received one from each: a subscription takes effect on
// the node's own NATS server at once, but reaches the other servers of a
// NATS cluster a moment later. seen(i, from) reports whether node i got a
// warm-up from node from.
func warmUp(t *testing.T, ctx context.Context, h *Harness, space string, seen func(i int, from string) bool) {
	t.Helper()
	deadline := time.Now().Add(wait)
	for {
		all := true
		for i := range h.Nodes {
			for j, from := range h.Nodes {
				if i != j && !seen(i, from.ID()) {
					all = false
				}
			}
		}
		if all {
			return
		}
		if time.Now().After(deadline) {
			t.Fatal("subscriptions not in effect everywhere after the warm-up")
		}
		for _, n := range h.Nodes {
			if err := n.Broker().Publish(ctx, space, []byte(warm)); err != nil {
				t.Fatal(err)
			}
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func testClose(t *testing.T, f Factory) {
	h := f(t, 2)
	ctx := ctxT(t)
	a := h.Nodes[0]
	w, err := a.State().Watch(ctx, "s")
	if err != nil {
		t.Fatal(err)
	}
	pw, err := a.Presence().Watch(ctx, "s")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := a.Broker().Subscribe(ctx, "s", func(cluster.Message) {}); err != nil {
		t.Fatal(err)
	}
	if err := a.Presence().Join(ctx, "s", member("p", "a-1")); err != nil {
		t.Fatal(err)
	}
	if err := a.Err(); err != nil {
		t.Fatalf("Err of an open node: %v", err)
	}
	if err := a.Close(); err != nil {
		t.Fatal(err)
	}
	for _, w := range []cluster.Watcher{w, pw} {
		timeout := time.After(wait)
	drain:
		for {
			select {
			case _, ok := <-w.Changes():
				if !ok {
					break drain
				}
			case <-timeout:
				t.Fatal("a watch outlived its node's Close")
			}
		}
	}
	if err := a.Err(); !errors.Is(err, cluster.ErrClosed) {
		t.Errorf("Err after Close: %v, want ErrClosed", err)
	}
	if err := a.Broker().Publish(ctx, "s", []byte("x")); !errors.Is(err, cluster.ErrClosed) {
		t.Errorf("Publish after Close: %v, want ErrClosed", err)
	}
	if _, err := a.State().Watch(ctx, "s"); !errors.Is(err, cluster.ErrClosed) {
		t.Errorf("Watch after Close: %v, want ErrClosed", err)
	}
	// A graceful Close removed the node's presence.
	list, err := h.Nodes[1].Presence().List(ctx, "s")
	if err != nil || len(list) != 0 {
		t.Errorf("presence after Close: %+v %v", list, err)
	}
	if err := a.Close(); err != nil {
		t.Errorf("second Close: %v", err)
	}
}
