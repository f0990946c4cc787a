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

// next reads one change from w, failing the test after wait.
// syncedWatch is SyncedWatch.
func syncedWatch(ctx context.Context, t *testing.T, src interface {
	Watch(context.Context, string) (cluster.Watcher, error)
}, space string) cluster.Watcher {
	t.Helper()
	return SyncedWatch(ctx, t, src, space)
}

// SyncedWatch opens a watch of space on src (a State or a Presence) and
// reads its snapshot up to OpSynced, failing the test if anything comes
// before it (the space must be empty); the watch stops when the test ends.
func SyncedWatch(ctx context.Context, t testing.TB, src interface {
	Watch(context.Context, string) (cluster.Watcher, error)
}, space string) cluster.Watcher {
	t.Helper()
	w, err := src.Watch(ctx, space)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(w.Stop)
	if e := NextChange(t, w, wait); e.Op != cluster.OpSynced {
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
	return NextChange(t, w, wait)
}

// NextChange returns w's next change, failing the test when the watch ends
// or has no change within d.
func NextChange(t testing.TB, w cluster.Watcher, d time.Duration) cluster.Entry {
	t.Helper()
	select {
	case e, ok := <-w.Changes():
		if !ok {
			t.Fatal("watch ended")
		}
		return e
	case <-time.After(d):
		t.Fatalf("no change in %v", d)
	}
	return cluster.Entry{} // not reached: Fatal ends the test's goroutine
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
