package memory_test

import (
	"context"
	"fmt"
	"testing"

	"go.uber.org/goleak"

	"github.com/mew-protocol/mew/gateway/cluster"
	"github.com/mew-protocol/mew/gateway/cluster/clustertest"
	"github.com/mew-protocol/mew/gateway/cluster/memory"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func newNodes(t *testing.T, n int) *clustertest.Harness {
	c := memory.New(memory.Options{PresenceTTL: clustertest.PresenceTTL})
	t.Cleanup(func() { _ = c.Close() })
	h := &clustertest.Harness{}
	for i := range n {
		node, err := c.Node(fmt.Sprintf("n%d", i))
		if err != nil {
			t.Fatal(err)
		}
		h.Nodes = append(h.Nodes, node)
	}
	h.Crash = func(i int) { c.Crash(h.Nodes[i].ID()) }
	return h
}

func TestConformance(t *testing.T) { clustertest.Run(t, newNodes) }

var _ cluster.Node = (*memory.Node)(nil)

// BenchmarkStatePropagation is natscluster's benchmark of the same name on
// memory: the floor a networked implementation is compared with.
func BenchmarkStatePropagation(b *testing.B) {
	c := memory.New(memory.Options{})
	defer c.Close()
	a, _ := c.Node("a")
	n, _ := c.Node("b")
	clustertest.BenchStatePropagation(b, a, n)
}

// BenchmarkBrokerFanOut is natscluster's benchmark of the same name on
// memory.
func BenchmarkBrokerFanOut(b *testing.B) {
	c := memory.New(memory.Options{})
	defer c.Close()
	a, _ := c.Node("a")
	n1, _ := c.Node("b")
	n2, _ := c.Node("c")
	clustertest.BenchBrokerFanOut(b, a, n1, n2)
}

// The history keeps its own bounds, by count and by bytes, and evicts
// nothing of the Log.
func TestHistoryRetention(t *testing.T) {
	c := memory.New(memory.Options{LogRetention: 3, HistoryRetention: 5, HistoryBytes: 100})
	defer c.Close()
	n, err := c.Node("a")
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if _, err := n.Log().Append(ctx, "sp", []byte("change")); err != nil {
		t.Fatal(err)
	}
	read := func(l cluster.Log) []string {
		recs, err := l.Read(ctx, "sp", 0, cluster.MaxReadLen)
		if err != nil {
			t.Fatal(err)
		}
		var out []string
		for _, r := range recs {
			out = append(out, string(r.Data))
		}
		return out
	}
	for i := range 8 {
		if _, err := n.History().Append(ctx, "sp", fmt.Appendf(nil, "%d", i)); err != nil {
			t.Fatal(err)
		}
	}
	if got := fmt.Sprint(read(n.History())); got != "[3 4 5 6 7]" {
		t.Fatalf("history by count: %s", got)
	}
	// 40 bytes each: 100 bytes hold two.
	for i := range 3 {
		if _, err := n.History().Append(ctx, "sp", fmt.Appendf(nil, "%040d", i)); err != nil {
			t.Fatal(err)
		}
	}
	if got := read(n.History()); len(got) != 2 || got[0] != fmt.Sprintf("%040d", 1) || got[1] != fmt.Sprintf("%040d", 2) {
		t.Fatalf("history by bytes: %q", got)
	}
	if got := fmt.Sprint(read(n.Log())); got != "[change]" {
		t.Fatalf("the log after the history filled: %s", got)
	}
}
