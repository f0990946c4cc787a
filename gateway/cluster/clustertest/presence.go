package clustertest

import (
	"fmt"
	"testing"
	"time"

	"github.com/mew-protocol/mew/gateway/cluster"
)

func member(p, conn string) cluster.Member {
	return cluster.Member{Participant: p, Conn: conn, RuntimeID: p}
}

func testPresenceReplace(t *testing.T, f Factory) {
	h := f(t, 2)
	ctx := ctxT(t)
	a, b := h.Nodes[0].Presence(), h.Nodes[1].Presence()
	w := syncedWatch(ctx, t, a, "s")
	if err := a.Join(ctx, "s", member("human", "a-1")); err != nil {
		t.Fatal(err)
	}
	if err := b.Join(ctx, "s", member("agent", "b-1")); err != nil {
		t.Fatal(err)
	}
	for range 2 {
		e := next(t, w)
		m, err := cluster.DecodeMember(e.Value)
		if err != nil || e.Op != cluster.OpPut || e.Key != m.Participant {
			t.Fatalf("%+v %v", e, err)
		}
	}
	// The human connects again, on node b: node a learns its connection
	// is replaced.
	if err := b.Join(ctx, "s", member("human", "b-2")); err != nil {
		t.Fatal(err)
	}
	e := next(t, w)
	m, err := cluster.DecodeMember(e.Value)
	if err != nil || e.Key != "human" || m.Conn != "b-2" || m.Node != h.Nodes[1].ID() {
		t.Fatalf("replacement %+v %+v %v", e, m, err)
	}
	// The replaced connection's leave does not remove the new one.
	if err := a.Leave(ctx, "s", "human", "a-1"); err != nil {
		t.Fatal(err)
	}
	// A replica may answer List a moment behind (as State.Get).
	var list []cluster.Member
	eventually(func() bool {
		list, err = a.List(ctx, "s")
		return err == nil && len(list) == 2 && list[0].Node == h.Nodes[1].ID() && list[1].Node == h.Nodes[1].ID()
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(list) != 2 {
		t.Fatalf("list %+v, want human and agent", list)
	}
	for _, m := range list {
		if m.Node != h.Nodes[1].ID() {
			t.Errorf("%+v is not on node b", m)
		}
	}
	if err := b.Leave(ctx, "s", "agent", "b-1"); err != nil {
		t.Fatal(err)
	}
	if e := next(t, w); e.Op != cluster.OpDelete || e.Key != "agent" {
		t.Fatalf("%+v, want agent's leave", e)
	}
}

// testLeaveAtOnce leaves the moment it has joined, 60 times, on nodes
// whose reads may lag behind their writes: no entry may be left behind.
func testLeaveAtOnce(t *testing.T, f Factory) {
	h := f(t, 3)
	ctx := ctxT(t)
	p := h.Nodes[2].Presence()
	for i := range 60 {
		id := fmt.Sprintf("p%d", i%6)
		conn := fmt.Sprintf("c-%d", i)
		if err := p.Join(ctx, "s", member(id, conn)); err != nil {
			t.Fatal(err)
		}
		if err := p.Leave(ctx, "s", id, conn); err != nil {
			t.Fatal(err)
		}
	}
	list, err := h.Nodes[0].Presence().List(ctx, "s")
	if err != nil {
		t.Fatal(err)
	}
	if len(list) != 0 {
		t.Fatalf("after every leave, %d entries stay: %+v", len(list), list)
	}
}

func testPresenceCrash(t *testing.T, f Factory) {
	h := f(t, 2)
	ctx := ctxT(t)
	a, b := h.Nodes[0].Presence(), h.Nodes[1].Presence()
	if ttl := a.TTL(); ttl != PresenceTTL {
		t.Fatalf("presence TTL %v, want %v", ttl, PresenceTTL)
	}
	if err := b.Join(ctx, "s", member("agent", "b-1")); err != nil {
		t.Fatal(err)
	}
	// The crashed node has a watch and a subscription open: the crash
	// ends them too.
	bw, err := b.Watch(ctx, "s")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := h.Nodes[1].Broker().Subscribe(ctx, "s", func(cluster.Message) {}); err != nil {
		t.Fatal(err)
	}
	w, err := a.Watch(ctx, "s")
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	if e := next(t, w); e.Op != cluster.OpPut || e.Key != "agent" {
		t.Fatalf("%+v", e)
	}
	if e := next(t, w); e.Op != cluster.OpSynced {
		t.Fatalf("%+v", e)
	}
	// While b lives, its entry outlives several TTLs.
	time.Sleep(3 * PresenceTTL)
	if list, err := a.List(ctx, "s"); err != nil || len(list) != 1 {
		t.Fatalf("after 3 TTLs: %+v %v", list, err)
	}
	start := time.Now()
	h.Crash(1)
	for range bw.Changes() {
	}
	e := next(t, w)
	for e.Op == cluster.OpPut { // a refresh may have been in flight
		e = next(t, w)
	}
	d := time.Since(start)
	if e.Op != cluster.OpDelete || e.Key != "agent" {
		t.Fatalf("%+v, want agent's expiry", e)
	}
	if d > 2*PresenceTTL+time.Second {
		t.Errorf("presence left %v after the crash; TTL %v", d, PresenceTTL)
	}
	t.Logf("presence left %v after the crash (TTL %v)", d, PresenceTTL)
}
