package clusterlink_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/mew-protocol/mew/gateway/cluster"
	"github.com/mew-protocol/mew/gateway/cluster/clustertest"
	"github.com/mew-protocol/mew/gateway/cluster/memory"
	"github.com/mew-protocol/mew/gateway/internal/clusterlink"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

var quiet = slog.New(slog.NewTextHandler(io.Discard, nil))

// nodes returns two nodes of one in-memory cluster, closed with the test.
func nodes(t *testing.T) (a, b cluster.Node) {
	t.Helper()
	c := memory.New(memory.Options{})
	t.Cleanup(func() { _ = c.Close() })
	na, err := c.Node("a")
	if err != nil {
		t.Fatal(err)
	}
	nb, err := c.Node("b")
	if err != nil {
		t.Fatal(err)
	}
	return na, nb
}

func writer(t *testing.T, n cluster.Node) *clusterlink.Writer {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	w := clusterlink.NewWriter(ctx, n, "s", quiet)
	t.Cleanup(func() { cancel(); <-w.Done() })
	return w
}

// The writer makes the writes in the order queued, and Own tells the
// node's own writes (and what loses to them) from another node's.
func TestWriterOrderAndOwn(t *testing.T) {
	a, b := nodes(t)
	ctx := context.Background()
	watch, err := a.State().Watch(ctx, "s")
	if err != nil {
		t.Fatal(err)
	}
	defer watch.Stop()
	clustertest.NextChange(t, watch, 5*time.Second) // the empty snapshot's end
	w := writer(t, a)
	for _, v := range []string{"1", "2", "3"} {
		w.Put("grant/x/g", []byte(v), 0)
	}
	w.Enqueue(clusterlink.Op{Key: "alias/r", Value: []byte("first"), Create: true})
	w.Flush(ctx)
	var last cluster.Entry
	for _, want := range []string{"1", "2", "3"} {
		e := clustertest.NextChange(t, watch, 5*time.Second)
		if e.Key != "grant/x/g" || string(e.Value) != want {
			t.Fatalf("change %q %q, want grant/x/g %q", e.Key, e.Value, want)
		}
		if !w.Own(e) {
			t.Fatalf("own write %q not recognised", e.Value)
		}
		last = e
	}
	if e := clustertest.NextChange(t, watch, 5*time.Second); e.Key != "alias/r" || w.Own(e) {
		t.Fatalf("alias change %+v: a create is not tracked as own", e)
	}
	// Another node's later write of the key is not ours.
	rev, err := b.State().Put(ctx, "s", "grant/x/g", []byte("theirs"), cluster.PutOptions{})
	if err != nil {
		t.Fatal(err)
	}
	e := clustertest.NextChange(t, watch, 5*time.Second)
	if e.Revision != rev || w.Own(e) {
		t.Fatalf("another node's write %+v taken as own (ours ended at %d)", e, last.Revision)
	}
	// A create loses to what is stored: no error, the stored value stays.
	w.Enqueue(clusterlink.Op{Key: "alias/r", Value: []byte("second"), Create: true})
	w.Flush(ctx)
	got, err := a.State().Get(ctx, "s", "alias/r")
	if err != nil || string(got.Value) != "first" {
		t.Fatalf("alias/r = %q, %v; want the first binding", got.Value, err)
	}
}

// While a write of ours is queued, a change of its key that arrives first
// loses to ours and is not applied.
func TestWriterPendingWins(t *testing.T) {
	a, _ := nodes(t)
	w := writer(t, a)
	w.Put("control/x", []byte("ours"), 0)
	if !w.Own(cluster.Entry{Key: "control/x", Op: cluster.OpPut, Revision: 1}) {
		t.Fatal("a change of a key with a write of ours pending is applied over ours")
	}
	w.Flush(context.Background())
	if w.Own(cluster.Entry{Key: "control/y", Op: cluster.OpPut, Revision: 1}) {
		t.Fatal("a key never written is taken as own")
	}
}

// A conditional delete at a revision no longer stored removes nothing.
func TestWriterConditionalDelete(t *testing.T) {
	a, b := nodes(t)
	ctx := context.Background()
	rev, err := a.State().Put(ctx, "s", "floor/m", []byte("c1"), cluster.PutOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := b.State().Put(ctx, "s", "floor/m", []byte("c2"), cluster.PutOptions{}); err != nil {
		t.Fatal(err)
	}
	w := writer(t, a)
	w.Enqueue(clusterlink.Op{Key: "floor/m", Rev: rev, Del: true})
	w.Flush(ctx)
	if e, err := a.State().Get(ctx, "s", "floor/m"); err != nil || string(e.Value) != "c2" {
		t.Fatalf("floor/m = %q, %v; the stale delete removed the newer claim", e.Value, err)
	}
}

// Drain makes what is queued before the writer returns; Flush after that
// returns at once.
func TestWriterDrain(t *testing.T) {
	a, _ := nodes(t)
	w := writer(t, a)
	m := cluster.Member{Participant: "p", Node: "a", Conn: "a:1", Since: time.Now()}
	w.Enqueue(clusterlink.Op{Join: &m})
	for i := range 50 {
		w.Put("grant/p/"+string(rune('a'+i%26))+string(rune('a'+i/26)), []byte("v"), 0)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	w.Drain(ctx)
	select {
	case <-w.Done():
	default:
		t.Fatal("Drain returned before the writer")
	}
	snap, err := a.State().Watch(ctx, "s")
	if err != nil {
		t.Fatal(err)
	}
	defer snap.Stop()
	n := 0
	for e := clustertest.NextChange(t, snap, 5*time.Second); e.Op != cluster.OpSynced; e = clustertest.NextChange(t, snap, 5*time.Second) {
		n++
	}
	if n != 50 {
		t.Fatalf("%d keys stored before the drain ended, want 50", n)
	}
	list, err := a.Presence().List(ctx, "s")
	if err != nil || len(list) != 1 {
		t.Fatalf("presence %v, %v; want the join", list, err)
	}
	w.Flush(ctx) // must not wait for a writer that is gone
}

// A crashed node's writes fail at once, and do not stay pending.
func TestWriterUnreachable(t *testing.T) {
	c := memory.New(memory.Options{})
	defer func() { _ = c.Close() }()
	n, err := c.Node("a")
	if err != nil {
		t.Fatal(err)
	}
	w := writer(t, n)
	c.Crash("a")
	if n.Err() == nil {
		t.Fatal("a crashed node reports no error")
	}
	w.Put("control/x", []byte("v"), 0)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	w.Flush(ctx)
	if ctx.Err() != nil {
		t.Fatal("the write of an unreachable node waited for its timeout")
	}
	if w.Own(cluster.Entry{Key: "control/x", Revision: 7}) {
		t.Fatal("a failed write stays pending: the key's changes would never apply again")
	}
}

// The Hold delivers in arrival order, each when it is ready, the later ones
// behind it; one not ready goes at its limit, the late callback told.
func TestHold(t *testing.T) {
	var mu sync.Mutex
	var got, late []string
	h := clusterlink.NewHold(&mu, 50*time.Millisecond, func(s string) { got = append(got, s) }, func(s string) { late = append(late, s) })
	ready := false
	mu.Lock()
	h.AddLocked("a", nil)
	h.AddLocked("b", func() bool { return ready })
	h.AddLocked("c", nil)
	if len(got) != 1 {
		t.Fatalf("delivered %v, want [a]: c must wait behind b", got)
	}
	ready = true
	h.ReleaseLocked(false)
	h.AddLocked("d", func() bool { return false })
	h.AddLocked("e", nil)
	mu.Unlock()
	deadline := time.Now().Add(5 * time.Second)
	for {
		mu.Lock()
		n := len(got)
		mu.Unlock()
		if n == 5 || time.Now().After(deadline) {
			break
		}
		time.Sleep(5 * time.Millisecond)
	}
	mu.Lock()
	defer mu.Unlock()
	if want := "abcde"; strings.Join(got, "") != want || strings.Join(late, "") != "d" {
		t.Fatalf("delivered %v (late %v), want %s (late d)", got, late, want)
	}
}

// Dropped items are never delivered, and a stopped Hold's timer does
// nothing.
func TestHoldDropAndStop(t *testing.T) {
	var mu sync.Mutex
	var got []string
	h := clusterlink.NewHold(&mu, 20*time.Millisecond, func(s string) { got = append(got, s) }, func(string) {})
	mu.Lock()
	h.AddLocked("x", func() bool { return false })
	h.DropLocked()
	h.AddLocked("y", func() bool { return false })
	h.StopLocked()
	mu.Unlock()
	time.Sleep(100 * time.Millisecond)
	mu.Lock()
	defer mu.Unlock()
	if len(got) != 0 {
		t.Fatalf("delivered %v after a drop and a stop", got)
	}
}

// The watchdog's reading: an outage announced once, its end once, a short
// one seen by the counter alone, and the counter moving just after the
// status comes back is the same outage.
func TestOutage(t *testing.T) {
	var o clusterlink.Outage
	down := errors.New("no route")
	steps := []struct {
		err  error
		rc   uint64
		want clusterlink.Change
	}{
		{nil, 0, clusterlink.Unchanged},
		{down, 0, clusterlink.Lost},
		{down, 0, clusterlink.Unchanged},
		{nil, 0, clusterlink.Back},
		{nil, 1, clusterlink.Unchanged}, // counted in the reconnect callback, after the status
		{nil, 1, clusterlink.Unchanged},
		{nil, 2, clusterlink.Blip},
		{nil, 2, clusterlink.Unchanged},
		{down, 2, clusterlink.Lost},
	}
	for i, s := range steps {
		if got := o.Look(s.err, s.rc); got != s.want {
			t.Fatalf("look %d (err %v, reconnects %d) = %v, want %v", i, s.err, s.rc, got, s.want)
		}
	}
}

// Watches: the snapshots' ends are awaited; a node without epochs is always
// current.
func TestWatches(t *testing.T) {
	a, b := nodes(t)
	ctx, cancel := context.WithCancel(context.Background())
	sw, err := a.State().Watch(ctx, "s")
	if err != nil {
		t.Fatal(err)
	}
	pw, err := a.Presence().Watch(ctx, "s")
	if err != nil {
		t.Fatal(err)
	}
	ws := clusterlink.NewWatches(a)
	changes := make(chan cluster.Entry, 4)
	var wg sync.WaitGroup
	wg.Go(func() { ws.Follow(ctx, clusterlink.StateWatch, sw, func(e cluster.Entry) { changes <- e }) })
	wg.Go(func() { ws.Follow(ctx, clusterlink.PresenceWatch, pw, func(cluster.Entry) {}) })
	defer func() { cancel(); wg.Wait() }()
	if err := ws.WaitSynced(5 * time.Second); err != nil {
		t.Fatal(err)
	}
	if !ws.Current() || ws.Epoch() != 0 {
		t.Fatalf("current %v epoch %d, want a node without epochs current at 0", ws.Current(), ws.Epoch())
	}
	if _, err := b.State().Put(ctx, "s", "control/p", []byte("v"), cluster.PutOptions{}); err != nil {
		t.Fatal(err)
	}
	select {
	case e := <-changes:
		if e.Key != "control/p" || e.Op != cluster.OpPut {
			t.Fatalf("applied %+v", e)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("another node's change was not applied")
	}
}

// WaitSynced gives up when a snapshot does not arrive.
func TestWatchesNotSynced(t *testing.T) {
	a, _ := nodes(t)
	ws := clusterlink.NewWatches(a)
	if err := ws.WaitSynced(20 * time.Millisecond); err == nil {
		t.Fatal("no watch followed, yet synced")
	}
}

// Orphans keep the last change of each key, in order, within the bound.
func TestOrphans(t *testing.T) {
	var o clusterlink.Orphans
	put := func(key, v string) cluster.Entry { return cluster.Entry{Key: key, Op: cluster.OpPut, Value: []byte(v)} }
	o.Keep("bob", put("grant/bob/g1", "1"))
	o.Keep("bob", put("control/bob", "paused"))
	o.Keep("bob", put("grant/bob/g1", "2"))
	o.Keep("amy", put("control/amy", "x"))
	got := o.Take("bob")
	if len(got) != 2 || got[0].Key != "grant/bob/g1" || string(got[0].Value) != "2" || got[1].Key != "control/bob" {
		t.Fatalf("took %+v", got)
	}
	if len(o.Take("bob")) != 0 {
		t.Fatal("taken twice")
	}
	for i := range clusterlink.MaxOrphans - 1 {
		if !o.Keep("p", put(fmt.Sprintf("grant/p/%d", i), "v")) {
			t.Fatalf("dropped at %d, below the bound", i)
		}
	}
	if o.Keep("q", put("grant/q/1", "v")) {
		t.Fatal("kept past MaxOrphans")
	}
	if !o.Keep("amy", put("control/amy", "y")) {
		t.Fatal("the new value of a kept key must replace it, even at the bound")
	}
	if len(o.Take("p")) != clusterlink.MaxOrphans-1 || !o.Keep("q", put("grant/q/1", "v")) {
		t.Fatal("taking did not make room")
	}
}
