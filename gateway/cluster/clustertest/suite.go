package clustertest

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
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

func testBrokerOrder(t *testing.T, f Factory) {
	h := f(t, 3)
	ctx := ctxT(t)
	const perSender = 500
	type got struct {
		mu     sync.Mutex
		seen   map[string][]int // by sender node
		warmed map[string]bool  // by sender node
		n      int
		all    chan struct{}
	}
	recv := make([]*got, len(h.Nodes))
	for i, n := range h.Nodes {
		g := &got{seen: make(map[string][]int), warmed: make(map[string]bool), all: make(chan struct{})}
		recv[i] = g
		want := 2 * perSender // from the two other nodes
		_, err := n.Broker().Subscribe(ctx, "sp", func(m cluster.Message) {
			if string(m.Data) == warm {
				g.mu.Lock()
				g.warmed[m.Node] = true
				g.mu.Unlock()
				return
			}
			var k int
			if _, err := fmt.Sscanf(string(m.Data), "%d", &k); err != nil {
				t.Errorf("node %d: message %q", i, m.Data)
				return
			}
			g.mu.Lock()
			defer g.mu.Unlock()
			g.seen[m.Node] = append(g.seen[m.Node], k)
			g.n++
			if g.n == want {
				close(g.all)
			}
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	warmUp(t, ctx, h, "sp", func(i int, from string) bool {
		recv[i].mu.Lock()
		defer recv[i].mu.Unlock()
		return recv[i].warmed[from]
	})
	var wg sync.WaitGroup
	for _, n := range h.Nodes {
		wg.Go(func() {
			for k := range perSender {
				if err := n.Broker().Publish(ctx, "sp", fmt.Appendf(nil, "%d", k)); err != nil {
					t.Error(err)
					return
				}
			}
		})
	}
	wg.Wait()
	for i, g := range recv {
		select {
		case <-g.all:
		case <-time.After(wait):
			g.mu.Lock()
			t.Fatalf("node %d got %d of %d messages", i, g.n, 2*perSender)
		}
		g.mu.Lock()
		if _, own := g.seen[h.Nodes[i].ID()]; own {
			t.Errorf("node %d got its own messages back", i)
		}
		for from, ks := range g.seen {
			for j, k := range ks {
				if k != j {
					t.Fatalf("node %d: message %d from %s arrived as number %d", i, k, from, j)
				}
			}
		}
		g.mu.Unlock()
	}
	time.Sleep(50 * time.Millisecond)
	for i, g := range recv {
		g.mu.Lock()
		if g.n != 2*perSender {
			t.Errorf("node %d got %d messages, want %d", i, g.n, 2*perSender)
		}
		g.mu.Unlock()
	}
}

func testBrokerSpaces(t *testing.T, f Factory) {
	h := f(t, 2)
	ctx := ctxT(t)
	a, b := h.Nodes[0], h.Nodes[1]
	var mu sync.Mutex
	warmed := map[string]bool{}
	filter := func(space string, ch chan cluster.Message) func(cluster.Message) {
		return func(m cluster.Message) {
			if string(m.Data) == warm {
				mu.Lock()
				warmed[space] = true
				mu.Unlock()
				return
			}
			ch <- m
		}
	}
	const odd = "space.with*odd >chars"
	got := make(chan cluster.Message, 16)
	sub, err := b.Broker().Subscribe(ctx, odd, filter(odd, got))
	if err != nil {
		t.Fatal(err)
	}
	other := make(chan cluster.Message, 16)
	if _, err := b.Broker().Subscribe(ctx, "space", filter("space", other)); err != nil {
		t.Fatal(err)
	}
	for _, sp := range []string{odd, "space"} {
		warmUp(t, ctx, h, sp, func(i int, _ string) bool {
			mu.Lock()
			defer mu.Unlock()
			return i == 0 || warmed[sp] // only b subscribed
		})
	}
	if err := a.Broker().Publish(ctx, odd, []byte("one")); err != nil {
		t.Fatal(err)
	}
	select {
	case m := <-got:
		if string(m.Data) != "one" || m.Node != a.ID() {
			t.Fatalf("got %+v", m)
		}
	case <-time.After(wait):
		t.Fatal("no message")
	}
	if err := sub.Unsubscribe(); err != nil {
		t.Fatal(err)
	}
	if err := a.Broker().Publish(ctx, odd, []byte("two")); err != nil {
		t.Fatal(err)
	}
	if err := a.Broker().Publish(ctx, "space", []byte("three")); err != nil {
		t.Fatal(err)
	}
	select {
	case m := <-other:
		if string(m.Data) != "three" {
			t.Fatalf("other space got %q", m.Data)
		}
	case <-time.After(wait):
		t.Fatal("no message in the other space")
	}
	select {
	case m := <-got:
		t.Fatalf("got %q after Unsubscribe", m.Data)
	case <-time.After(100 * time.Millisecond):
	}
	if err := a.Broker().Publish(ctx, "", []byte("x")); !errors.Is(err, cluster.ErrInvalid) {
		t.Errorf("publish to an empty space name: %v, want ErrInvalid", err)
	}
}

// next reads one change from w, failing the test after wait.
// syncedWatch opens a watch of space on src and reads its snapshot up to
// OpSynced (the space is empty); the watch stops when the test ends.
func syncedWatch(ctx context.Context, t *testing.T, src interface {
	Watch(context.Context, string) (cluster.Watcher, error)
}, space string) cluster.Watcher {
	t.Helper()
	w, err := src.Watch(ctx, space)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(w.Stop)
	if e := next(t, w); e.Op != cluster.OpSynced {
		t.Fatalf("%+v, want synced", e)
	}
	return w
}

// eventually calls cond until it holds, for up to 2 s, and reports whether
// it did: on a replicated fabric a read may lag a moment behind a write or
// an expiry (cluster.State.Get), and a replica catches up within that.
func eventually(cond func() bool) bool {
	deadline := time.Now().Add(2 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			return false
		}
		time.Sleep(20 * time.Millisecond) // a replica catching up
	}
	return true
}

// settled reads key with st until ok holds for what Get answers (see
// eventually), and returns the last answer.
func settled(ctx context.Context, st cluster.State, space, key string, ok func(cluster.Entry, error) bool) (e cluster.Entry, err error) {
	eventually(func() bool {
		e, err = st.Get(ctx, space, key)
		return ok(e, err)
	})
	return e, err
}

func notFound(_ cluster.Entry, err error) bool { return errors.Is(err, cluster.ErrNotFound) }

func next(t *testing.T, w cluster.Watcher) cluster.Entry {
	t.Helper()
	select {
	case e, ok := <-w.Changes():
		if !ok {
			t.Fatal("watch ended")
		}
		return e
	case <-time.After(wait):
		t.Fatal("no change")
	}
	panic("unreachable")
}

func testStateWatch(t *testing.T, f Factory) {
	h := f(t, 2)
	ctx := ctxT(t)
	a, b := h.Nodes[0].State(), h.Nodes[1].State()
	key := cluster.GrantKey("agent.one", "g 1")
	r0, err := a.Put(ctx, "s1", key, []byte("before"), cluster.PutOptions{})
	if err != nil {
		t.Fatal(err)
	}
	w, err := b.Watch(ctx, "s1")
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	// The current value, then synced. On a replicated fabric the snapshot
	// may be read from a replica that has not seen the write yet (Get and
	// Watch may lag, as State documents): then synced comes first and the
	// value right after it, as a change.
	first, second := next(t, w), next(t, w)
	if first.Op == cluster.OpSynced {
		first, second = second, first
	}
	if first.Op != cluster.OpPut || first.Key != key || string(first.Value) != "before" || first.Revision != r0 {
		t.Fatalf("first change %+v, want the current value", first)
	}
	if second.Op != cluster.OpSynced {
		t.Fatalf("second change %+v, want synced", second)
	}
	r1, err := a.Put(ctx, "s1", key, []byte("after"), cluster.PutOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if r1 <= r0 {
		t.Errorf("revision %d after %d", r1, r0)
	}
	// A key of another space is not seen.
	if _, err := a.Put(ctx, "s2", key, []byte("elsewhere"), cluster.PutOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := a.Delete(ctx, "s1", key, 0); err != nil {
		t.Fatal(err)
	}
	// The put may be skipped, superseded by the delete before it was
	// delivered; the last change of a key never is.
	e := next(t, w)
	if e.Op == cluster.OpPut {
		if string(e.Value) != "after" || e.Revision != r1 {
			t.Fatalf("change %+v, want the put", e)
		}
		e = next(t, w)
	}
	if e.Op != cluster.OpDelete || e.Key != key || e.Revision <= r1 {
		t.Fatalf("change %+v, want the delete", e)
	}
	if _, err := settled(ctx, b, "s1", key, notFound); !errors.Is(err, cluster.ErrNotFound) {
		t.Fatalf("get after delete: %v", err)
	}
	if err := a.Delete(ctx, "s1", key, 0); err != nil {
		t.Errorf("deleting a missing key: %v", err)
	}
	e, err = settled(ctx, b, "s2", key, func(e cluster.Entry, err error) bool { return err == nil && string(e.Value) == "elsewhere" })
	if err != nil || string(e.Value) != "elsewhere" {
		t.Fatalf("get s2: %+v %v", e, err)
	}
	w.Stop()
	for range w.Changes() {
	}
}

// testDeleteAtOnce deletes keys on another node the moment they are
// written (a grant revoked at once): no delete may be lost, even where
// that node's reads lag behind the writes (a replica of a NATS cluster).
func testDeleteAtOnce(t *testing.T, f Factory) {
	h := f(t, 3)
	ctx := ctxT(t)
	a, c := h.Nodes[0].State(), h.Nodes[2].State()
	const n = 60
	for i := range n {
		key := cluster.GrantKey("p", fmt.Sprintf("g%d", i))
		if _, err := a.Put(ctx, "s", key, []byte("x"), cluster.PutOptions{}); err != nil {
			t.Fatal(err)
		}
		if err := c.Delete(ctx, "s", key, 0); err != nil {
			t.Fatal(err)
		}
	}
	// A lost delete is lost for good; a replica that lags catches up: so
	// each node's snapshot must be empty within a moment.
	for i, node := range h.Nodes {
		var left []string
		if !eventually(func() bool {
			left = snapshotKeys(ctx, t, node.State(), "s")
			return len(left) == 0
		}) {
			t.Errorf("node %d: %d keys survived their delete: %v", i, len(left), left)
		}
	}
}

// snapshotKeys returns the keys a fresh watch of space delivers before
// OpSynced.
func snapshotKeys(ctx context.Context, t *testing.T, st cluster.State, space string) []string {
	t.Helper()
	w, err := st.Watch(ctx, space)
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	var keys []string
	for {
		e := next(t, w)
		if e.Op == cluster.OpSynced {
			return keys
		}
		keys = append(keys, e.Key)
	}
}

func testStateCAS(t *testing.T, f Factory) {
	h := f(t, 3)
	ctx := ctxT(t)
	a, b := h.Nodes[0].State(), h.Nodes[1].State()
	key := cluster.ControlKey("p")
	r, err := a.Put(ctx, "s", key, []byte("1"), cluster.PutOptions{IfAbsent: true})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := b.Put(ctx, "s", key, []byte("2"), cluster.PutOptions{IfAbsent: true}); !errors.Is(err, cluster.ErrConflict) {
		t.Fatalf("create over an existing key: %v, want ErrConflict", err)
	}
	r2, err := b.Put(ctx, "s", key, []byte("2"), cluster.PutOptions{IfRevision: r})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := a.Put(ctx, "s", key, []byte("3"), cluster.PutOptions{IfRevision: r}); !errors.Is(err, cluster.ErrConflict) {
		t.Fatalf("stale update: %v, want ErrConflict", err)
	}
	if err := a.Delete(ctx, "s", key, r); !errors.Is(err, cluster.ErrConflict) {
		t.Fatalf("stale delete: %v, want ErrConflict", err)
	}
	if err := a.Delete(ctx, "s", key, r2); err != nil {
		t.Fatal(err)
	}
	// A deleted key can be created again.
	if _, err := b.Put(ctx, "s", key, []byte("again"), cluster.PutOptions{IfAbsent: true}); err != nil {
		t.Fatalf("create after delete: %v", err)
	}

	// Counters incremented by CAS from every node lose no increment.
	const per = 15
	ckey := "counter/c"
	var wg sync.WaitGroup
	for _, n := range h.Nodes {
		for range 2 {
			wg.Go(func() {
				st := n.State()
				for range per {
					for {
						e, err := st.Get(ctx, "s", ckey)
						var v int
						var o cluster.PutOptions
						switch {
						case errors.Is(err, cluster.ErrNotFound):
							o.IfAbsent = true
						case err != nil:
							t.Error(err)
							return
						default:
							fmt.Sscanf(string(e.Value), "%d", &v)
							o.IfRevision = e.Revision
						}
						_, err = st.Put(ctx, "s", ckey, fmt.Appendf(nil, "%d", v+1), o)
						if err == nil {
							break
						}
						if !errors.Is(err, cluster.ErrConflict) {
							t.Error(err)
							return
						}
					}
				}
			})
		}
	}
	wg.Wait()
	want := fmt.Sprint(len(h.Nodes) * 2 * per)
	e, err := settled(ctx, a, "s", ckey, func(e cluster.Entry, err error) bool { return err == nil && string(e.Value) == want })
	if err != nil {
		t.Fatal(err)
	}
	if string(e.Value) != want {
		t.Fatalf("counter %s, want %s", e.Value, want)
	}
}

func testStateTTL(t *testing.T, f Factory) {
	h := f(t, 2)
	ctx := ctxT(t)
	a, b := h.Nodes[0].State(), h.Nodes[1].State()
	w := syncedWatch(ctx, t, b, "s")
	g := cluster.GrantKey("p", "g1")
	keep := cluster.GrantKey("p", "g2")
	start := time.Now()
	if _, err := a.Put(ctx, "s", g, []byte("expiring"), cluster.PutOptions{TTL: time.Second}); err != nil {
		t.Fatal(err)
	}
	if _, err := a.Put(ctx, "s", keep, []byte("kept"), cluster.PutOptions{}); err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{g, keep} {
		if e := next(t, w); e.Op != cluster.OpPut || e.Key != k {
			t.Fatalf("%+v, want the put of %s", e, k)
		}
	}
	e := next(t, w)
	if e.Op != cluster.OpDelete || e.Key != g {
		t.Fatalf("%+v, want the expiry of %s", e, g)
	}
	if d := time.Since(start); d < 900*time.Millisecond || d > 3*time.Second {
		t.Errorf("a 1s TTL expired after %v", d)
	}
	if _, err := settled(ctx, b, "s", g, notFound); !errors.Is(err, cluster.ErrNotFound) {
		t.Errorf("expired key, 2s after its expiry was watched: %v", err)
	}
	if _, err := b.Get(ctx, "s", keep); err != nil {
		t.Errorf("kept key: %v", err)
	}
}

func testStateHostile(t *testing.T, f Factory) {
	h := f(t, 2)
	ctx := ctxT(t)
	a, b := h.Nodes[0].State(), h.Nodes[1].State()
	for _, k := range []string{"", "a//b", "/a", "a/", string([]byte{0xff})} {
		if _, err := a.Put(ctx, "s", k, nil, cluster.PutOptions{}); !errors.Is(err, cluster.ErrInvalid) {
			t.Errorf("key %q: %v, want ErrInvalid", k, err)
		}
	}
	if _, err := a.Put(ctx, "s", "k", make([]byte, cluster.MaxValueLen+1), cluster.PutOptions{}); !errors.Is(err, cluster.ErrInvalid) {
		t.Errorf("oversized value: %v, want ErrInvalid", err)
	}
	// A buggy node stored garbage as a floor claim: the claim is arbitrated
	// as if there were none, and nobody panics.
	if _, err := a.Put(ctx, "s", cluster.FloorKey("m1"), []byte("{not json"), cluster.PutOptions{}); err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	w, _, err := cluster.ClaimFloor(ctx, b, "s", "m1", cluster.Claim{Holder: "p", ID: "p", StartedAt: 5}, time.Minute, now)
	if err != nil || w.Holder != "p" {
		t.Fatalf("claim over garbage: %+v %v", w, err)
	}
	for _, bad := range [][]byte{nil, []byte("null"), []byte(`{"participant":"","node":"n","conn":"c"}`), []byte(`{} {}`), []byte(`[1]`)} {
		if _, err := cluster.DecodeMember(bad); !errors.Is(err, cluster.ErrInvalid) {
			t.Errorf("DecodeMember(%q): %v, want ErrInvalid", bad, err)
		}
	}
}

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

func testFloorContest(t *testing.T, f Factory) {
	h := f(t, 3)
	ctx := ctxT(t)
	now := time.Now()
	type result struct {
		w   cluster.Claim
		err error
	}
	const per = 5
	results := make(chan result, len(h.Nodes)*per)
	var wg sync.WaitGroup
	start := make(chan struct{})
	for i, n := range h.Nodes {
		for j := range per {
			wg.Go(func() {
				<-start
				id := fmt.Sprintf("agent-%d-%d", i, j)
				c := cluster.Claim{Holder: id, ID: id, StartedAt: int64(1000 + (i*per+j)%4)}
				w, _, err := cluster.ClaimFloor(ctx, n.State(), "s", "msg-1", c, time.Minute, now)
				results <- result{w, err}
			})
		}
	}
	close(start)
	wg.Wait()
	close(results)
	// The winner is the earliest start, tie by the smallest id: 1000 is
	// the start of ids 0, 4, 8, 12 → agent-0-0.
	final, err := settled(ctx, h.Nodes[2].State(), "s", cluster.FloorKey("msg-1"), func(e cluster.Entry, err error) bool {
		c, derr := cluster.DecodeClaim(e.Value)
		return err == nil && derr == nil && c.ID == "agent-0-0"
	})
	if err != nil {
		t.Fatal(err)
	}
	c, err := cluster.DecodeClaim(final.Value)
	if err != nil || c.ID != "agent-0-0" || c.StartedAt != 1000 {
		t.Fatalf("floor held by %+v %v, want agent-0-0", c, err)
	}
	for r := range results {
		if r.err != nil {
			t.Fatal(r.err)
		}
		// Each claimant saw a winner at least as good as itself, never a
		// claim the final one beats... except the final one itself.
		if c.Beats(r.w) && r.w.ID != c.ID {
			continue // it won for a moment and was displaced later: allowed
		}
		if r.w.ID != c.ID {
			t.Errorf("a claimant was told %+v holds the floor, but it is %+v", r.w, c)
		}
	}
	// A later, worse claim loses and learns the winner.
	w, displaced, err := cluster.ClaimFloor(ctx, h.Nodes[1].State(), "s", "msg-1",
		cluster.Claim{Holder: "late", ID: "late", StartedAt: 999999}, time.Minute, now)
	if err != nil || w.ID != "agent-0-0" || displaced != nil {
		t.Fatalf("late claim: %+v %+v %v", w, displaced, err)
	}
	// An earlier claim displaces it.
	w, displaced, err = cluster.ClaimFloor(ctx, h.Nodes[1].State(), "s", "msg-1",
		cluster.Claim{Holder: "early", ID: "early", StartedAt: 1}, time.Minute, now)
	if err != nil || w.ID != "early" || displaced == nil || displaced.ID != "agent-0-0" {
		t.Fatalf("early claim: %+v %+v %v", w, displaced, err)
	}
	// A repeated claim by the holder keeps its earlier start and its id.
	w, displaced, err = cluster.ClaimFloor(ctx, h.Nodes[2].State(), "s", "msg-1",
		cluster.Claim{Holder: "early", ID: "early-alias", StartedAt: 50}, time.Minute, now)
	if err != nil || w.ID != "early" || w.StartedAt != 1 || displaced != nil {
		t.Fatalf("repeated claim: %+v %+v %v", w, displaced, err)
	}
	// Once expired, any claim takes the floor.
	later := now.Add(2 * time.Minute)
	w, displaced, err = cluster.ClaimFloor(ctx, h.Nodes[0].State(), "s", "msg-1",
		cluster.Claim{Holder: "late", ID: "late", StartedAt: 999999}, time.Minute, later)
	if err != nil || w.ID != "late" || displaced != nil {
		t.Fatalf("claim after expiry: %+v %+v %v", w, displaced, err)
	}
	// The winner carries its key's revision; a losing claim learns it too.
	e, err := settled(ctx, h.Nodes[1].State(), "s", cluster.FloorKey("msg-1"), func(e cluster.Entry, err error) bool { return err == nil && e.Revision == w.Revision })
	if err != nil || w.Revision == 0 || w.Revision != e.Revision {
		t.Fatalf("the winner's revision %d, the key's %d (%v)", w.Revision, e.Revision, err)
	}
	lost, _, err := cluster.ClaimFloor(ctx, h.Nodes[2].State(), "s", "msg-1",
		cluster.Claim{Holder: "later", ID: "later", StartedAt: 9999999}, time.Minute, later)
	if err != nil || lost.ID != "late" || lost.Revision != e.Revision {
		t.Fatalf("losing claim: %+v (key revision %d) %v", lost, e.Revision, err)
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

// collector gathers the records a Follow delivers.
type collector struct {
	mu   sync.Mutex
	recs []cluster.Record
}

func (c *collector) add(r cluster.Record) {
	c.mu.Lock()
	c.recs = append(c.recs, r)
	c.mu.Unlock()
}

func (c *collector) wait(t *testing.T, n int) []cluster.Record {
	t.Helper()
	deadline := time.Now().Add(wait)
	for {
		c.mu.Lock()
		got := append([]cluster.Record(nil), c.recs...)
		c.mu.Unlock()
		if len(got) >= n {
			return got
		}
		if time.Now().After(deadline) {
			t.Fatalf("followed %d records of %d", len(got), n)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// The two logs of a node, which the log tests run on alike.
func stateLog(n cluster.Node) cluster.Log   { return n.Log() }
func historyLog(n cluster.Node) cluster.Log { return n.History() }

func testLogOrder(t *testing.T, f Factory, lg func(cluster.Node) cluster.Log) {
	h := f(t, 3)
	ctx := ctxT(t)
	const per = 50
	total := per * len(h.Nodes)
	cols := make([]*collector, len(h.Nodes))
	for i, n := range h.Nodes {
		cols[i] = &collector{}
		if _, err := lg(n).Follow(ctx, "sp", 0, cols[i].add); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := lg(h.Nodes[0]).Append(ctx, "other", []byte("elsewhere")); err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	for _, n := range h.Nodes {
		wg.Go(func() {
			for k := range per {
				if _, err := lg(n).Append(ctx, "sp", fmt.Appendf(nil, "%d", k)); err != nil {
					t.Error(err)
					return
				}
			}
		})
	}
	wg.Wait()
	var first []cluster.Record
	for i, c := range cols {
		got := c.wait(t, total)
		if len(got) != total {
			t.Fatalf("node %d followed %d records, want %d", i, len(got), total)
		}
		next := map[string]int{}
		for j, r := range got {
			if j > 0 && r.Seq <= got[j-1].Seq {
				t.Fatalf("node %d: seq %d after %d", i, r.Seq, got[j-1].Seq)
			}
			if want := fmt.Sprint(next[r.Node]); string(r.Data) != want {
				t.Fatalf("node %d: record %q from %s, want %s", i, r.Data, r.Node, want)
			}
			next[r.Node]++
		}
		if first == nil {
			first = got
			continue
		}
		for j := range got {
			if got[j].Seq != first[j].Seq || got[j].Node != first[j].Node || string(got[j].Data) != string(first[j].Data) {
				t.Fatalf("node %d saw record %d as %+v, node 0 as %+v: the order differs", i, j, got[j], first[j])
			}
		}
	}
	// Reading pages through the same order, on any node.
	var read []cluster.Record
	for after := uint64(0); ; {
		page, err := lg(h.Nodes[1]).Read(ctx, "sp", after, 40)
		if err != nil {
			t.Fatal(err)
		}
		if len(page) == 0 {
			break
		}
		if len(page) > 40 {
			t.Fatalf("a page of %d records, limit 40", len(page))
		}
		read = append(read, page...)
		after = page[len(page)-1].Seq
	}
	if len(read) != total {
		t.Fatalf("read %d records, want %d", len(read), total)
	}
	for j := range read {
		if read[j].Seq != first[j].Seq || string(read[j].Data) != string(first[j].Data) {
			t.Fatalf("read record %d as %+v, followed as %+v", j, read[j], first[j])
		}
	}
	// Following from the middle gets the rest.
	mid := &collector{}
	sub, err := lg(h.Nodes[2]).Follow(ctx, "sp", first[total-10].Seq, mid.add)
	if err != nil {
		t.Fatal(err)
	}
	if got := mid.wait(t, 9); len(got) != 9 || got[0].Seq != first[total-9].Seq {
		t.Fatalf("followed from the middle: %d records from seq %d", len(got), got[0].Seq)
	}
	if err := sub.Unsubscribe(); err != nil {
		t.Fatal(err)
	}
	if _, err := lg(h.Nodes[0]).Append(ctx, "sp", make([]byte, cluster.MaxRecordLen+1)); !errors.Is(err, cluster.ErrInvalid) {
		t.Errorf("oversized record: %v, want ErrInvalid", err)
	}
}

// testLarge sends an envelope and a log record of the largest size allowed
// (MaxRecordLen, the gateway's default envelope limit).
func testLarge(t *testing.T, f Factory, lg func(cluster.Node) cluster.Log) {
	h := f(t, 2)
	ctx := ctxT(t)
	big := make([]byte, cluster.MaxRecordLen)
	for i := range big {
		big[i] = byte('a' + i%26)
	}
	got := make(chan cluster.Message, 64)
	if _, err := h.Nodes[1].Broker().Subscribe(ctx, "sp", func(m cluster.Message) { got <- m }); err != nil {
		t.Fatal(err)
	}
	deadline := time.After(wait)
	for done := false; !done; {
		if err := h.Nodes[0].Broker().Publish(ctx, "sp", big); err != nil {
			t.Fatal(err)
		}
		select {
		case m := <-got:
			if string(m.Data) != string(big) {
				t.Fatalf("a message of %d bytes arrived as %d", len(big), len(m.Data))
			}
			done = true
		case <-time.After(100 * time.Millisecond):
		case <-deadline:
			t.Fatal("no large message")
		}
	}
	seq, err := lg(h.Nodes[0]).Append(ctx, "sp", big)
	if err != nil {
		t.Fatal(err)
	}
	// Another node reads it once its server has the record: on a cluster
	// with replicas, a read that goes to a replica may come a moment early.
	readBy := time.Now().Add(wait)
	for {
		recs, err := lg(h.Nodes[1]).Read(ctx, "sp", seq-1, 1)
		if err == nil && len(recs) == 1 {
			if string(recs[0].Data) != string(big) {
				t.Fatalf("a record of %d bytes read back as %d", len(big), len(recs[0].Data))
			}
			return
		}
		if time.Now().After(readBy) {
			t.Fatalf("read back %d records, %v", len(recs), err)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// testHistorySeparate checks that History and Log are two logs: what one
// holds the other does not, and appending to one evicts nothing of the
// other.
func testHistorySeparate(t *testing.T, f Factory) {
	h := f(t, 2)
	ctx := ctxT(t)
	a, b := h.Nodes[0], h.Nodes[1]
	if _, err := a.Log().Append(ctx, "sp", []byte("change")); err != nil {
		t.Fatal(err)
	}
	recs := make([]cluster.Pending, 0, 50)
	for k := range 50 {
		recs = append(recs, cluster.Pending{Space: "sp", Data: fmt.Appendf(nil, "chat %d", k)})
	}
	if ba, ok := a.History().(cluster.BatchAppender); ok {
		if failed, err := ba.AppendBatch(ctx, recs); failed != 0 || err != nil {
			t.Fatalf("AppendBatch: %d failed, %v", failed, err)
		}
		if failed, err := ba.AppendBatch(ctx, []cluster.Pending{{Space: "", Data: []byte("x")}, {Space: "sp", Data: make([]byte, cluster.MaxRecordLen+1)}}); failed != 2 || err == nil {
			t.Fatalf("AppendBatch of a bad space and an oversized record: %d failed, %v", failed, err)
		}
	} else {
		for _, r := range recs {
			if _, err := a.History().Append(ctx, r.Space, r.Data); err != nil {
				t.Fatal(err)
			}
		}
	}
	var hist []cluster.Record
	deadline := time.Now().Add(wait)
	for len(hist) < len(recs) {
		page, err := b.History().Read(ctx, "sp", 0, cluster.MaxReadLen)
		if err != nil {
			t.Fatal(err)
		}
		hist = page
		if time.Now().After(deadline) {
			t.Fatalf("history holds %d records, want %d", len(hist), len(recs))
		}
		if len(hist) < len(recs) {
			time.Sleep(20 * time.Millisecond)
		}
	}
	for k, r := range hist {
		if want := fmt.Sprintf("chat %d", k); string(r.Data) != want || r.Node != a.ID() {
			t.Fatalf("history record %d is %q from %s, want %q from %s", k, r.Data, r.Node, want, a.ID())
		}
	}
	changes, err := b.Log().Read(ctx, "sp", 0, cluster.MaxReadLen)
	if err != nil {
		t.Fatal(err)
	}
	if len(changes) != 1 || string(changes[0].Data) != "change" {
		t.Fatalf("the log holds %d records (%v): the history's went into it", len(changes), changes)
	}
	if recs, err := b.History().Read(ctx, "sp", ^uint64(0), 10); err != nil || len(recs) != 0 {
		t.Fatalf("reading after the last sequence number: %d records, %v", len(recs), err)
	}
}

// PropagationBound is the most a State change may take, at the 99th
// percentile, from a write on one node to another node's watch: the bound
// within which a grant or a revoke made on one node is enforced on all.
const PropagationBound = 50 * time.Millisecond

func testStatePropagation(t *testing.T, f Factory) {
	h := f(t, 2)
	ctx := ctxT(t)
	a, b := h.Nodes[0].State(), h.Nodes[1].State()
	w, err := b.Watch(ctx, "s")
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	if e := next(t, w); e.Op != cluster.OpSynced {
		t.Fatalf("%+v", e)
	}
	const changes = 300
	lat := make([]time.Duration, 0, changes)
	for i := range changes {
		key := cluster.GrantKey("agent", fmt.Sprint(i%16))
		if i%4 == 3 {
			key = cluster.GrantKey("agent", fmt.Sprint((i-1)%16)) // the one just granted
		}
		start := time.Now()
		var rev uint64
		var err error
		if i%4 == 3 {
			err = a.Delete(ctx, "s", key, 0) // a revoke
		} else {
			rev, err = a.Put(ctx, "s", key, []byte(`{"n":1}`), cluster.PutOptions{})
		}
		if err != nil {
			t.Fatal(err)
		}
		for {
			e := next(t, w)
			if e.Key == key && (rev == 0 && e.Op == cluster.OpDelete || rev != 0 && e.Revision >= rev) {
				break
			}
		}
		lat = append(lat, time.Since(start))
	}
	slices.Sort(lat)
	p50, p99 := lat[len(lat)/2], lat[len(lat)*99/100]
	t.Logf("write on one node to another's watch, %d changes: p50 %v, p99 %v, max %v", changes, p50, p99, lat[len(lat)-1])
	if p99 > PropagationBound {
		t.Errorf("p99 %v is over the %v bound", p99, PropagationBound)
	}
}
