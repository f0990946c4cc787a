package memory_test

import (
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
