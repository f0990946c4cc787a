package clusterhist

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mew-protocol/mew/gateway/cluster"
	"github.com/mew-protocol/mew/gateway/cluster/memory"
	"github.com/mew-protocol/mew/gateway/cluster/natscluster"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// queued hides its node's cluster.Keeper, for the Writer's queue.
type queued struct{ cluster.Node }

func (q queued) Broker() cluster.Broker { return struct{ cluster.Broker }{q.Node.Broker()} }

// node starts a node of a cluster of backend ("nats": an embedded NATS
// server of the test's own; "memory"; "queue": memory whose Broker is no
// cluster.Keeper).
func node(tb testing.TB, backend string) cluster.Node {
	tb.Helper()
	var n cluster.Node
	var err error
	if backend == "queue" {
		return queued{node(tb, "memory")}
	}
	if backend == "memory" {
		mc := memory.New(memory.Options{})
		tb.Cleanup(func() { _ = mc.Close() })
		n, err = mc.Node("n1")
	} else {
		ns, serr := natscluster.StartServer(natscluster.ServerOptions{StoreDir: tb.TempDir()})
		if serr != nil {
			tb.Fatal(serr)
		}
		tb.Cleanup(func() { ns.Shutdown(); ns.WaitForShutdown() })
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		n, err = natscluster.New(ctx, natscluster.Options{NodeID: "n1", Cluster: "test", URL: ns.ClientURL()})
		cancel()
	}
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { _ = n.Close() })
	return n
}

// TestWriterAndRead: what a writer pushes is read back in order, with its
// time, after Settle; a time filter, a page limit and a starting seq each
// select what they say; garbage another node appended is left out; a full
// queue drops and counts.
func TestWriterAndRead(t *testing.T) {
	for _, backend := range []string{"memory", "queue", "nats"} {
		t.Run(backend, func(t *testing.T) {
			n := node(t, backend)
			var dropped atomic.Int64
			w := NewWriter(n, Options{Max: 3, Dropped: func(k int) { dropped.Add(int64(k)) }})
			defer w.Close(context.Background())
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			if _, err := n.History().Append(ctx, "sp", []byte{1, 2, 3}); err != nil { // too short for a stamp
				t.Fatal(err)
			}
			t0 := time.Unix(1_800_000_000, 0)
			for i := range 3 {
				w.Push("sp", t0.Add(time.Duration(i)*time.Second), fmt.Appendf(nil, `{"n":%d}`, i))
			}
			w.Settle(ctx)
			all, last, err := Read(ctx, n.History(), "sp", 0, time.Time{}, 100)
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, e := range all {
				got = append(got, string(e.Data))
			}
			if !slices.Equal(got, []string{`{"n":0}`, `{"n":1}`, `{"n":2}`}) || !all[1].At.Equal(t0.Add(time.Second)) {
				t.Fatalf("read %q (at %v), want the three envelopes in order", got, all[1].At)
			}
			if last != all[2].Seq {
				t.Errorf("last looked at = %d, want %d", last, all[2].Seq)
			}
			if late, _, _ := Read(ctx, n.History(), "sp", 0, t0.Add(time.Second), 100); len(late) != 1 || string(late[0].Data) != `{"n":2}` {
				t.Errorf("since t0+1s: %v, want only the third", late)
			}
			if page, next, _ := Read(ctx, n.History(), "sp", 0, time.Time{}, 2); len(page) != 2 || next != page[1].Seq {
				t.Errorf("a page of 2: %d entries, next %d", len(page), next)
			} else if rest, _, _ := Read(ctx, n.History(), "sp", next, time.Time{}, 2); len(rest) != 1 || string(rest[0].Data) != `{"n":2}` {
				t.Errorf("after the page: %v", rest)
			}
			// The queue holds 3: pushes past that while the writer is busy
			// are dropped and counted; none is lost without a count.
			for i := range 50 {
				w.Push("sp", t0, fmt.Appendf(nil, `{"m":%d}`, i))
			}
			w.Settle(ctx)
			more, _, _ := Read(ctx, n.History(), "sp", last, time.Time{}, 100)
			if int64(len(more))+dropped.Load() != 50 {
				t.Errorf("%d appended and %d dropped of 50", len(more), dropped.Load())
			}
		})
	}
}

// TestWriterShare: with a Keeper, Share publishes to the other nodes and
// keeps in the history with one call, in order with Push; without one it
// does neither and says so.
func TestWriterShare(t *testing.T) {
	mc := memory.New(memory.Options{})
	t.Cleanup(func() { _ = mc.Close() })
	n1, err := mc.Node("n1")
	if err != nil {
		t.Fatal(err)
	}
	n2, err := mc.Node("n2")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	got := make(chan string, 4)
	if _, err := n2.Broker().Subscribe(ctx, "sp", func(m cluster.Message) { got <- string(m.Data) }); err != nil {
		t.Fatal(err)
	}
	w := NewWriter(n1, Options{Max: 10})
	defer w.Close(context.Background())
	t0 := time.Unix(1_800_000_000, 0)
	w.Push("sp", t0, []byte(`{"n":"system"}`))
	if shared, err := w.Share("sp", t0.Add(time.Second), []byte(`{"n":"chat"}`)); !shared || err != nil {
		t.Fatalf("Share: %v, %v", shared, err)
	}
	if m := <-got; m != `{"n":"chat"}` {
		t.Fatalf("the other node got %s", m)
	}
	w.Settle(ctx)
	all, _, err := Read(ctx, n2.History(), "sp", 0, time.Time{}, 10)
	if err != nil || len(all) != 2 || string(all[0].Data) != `{"n":"system"}` || string(all[1].Data) != `{"n":"chat"}` || !all[1].At.Equal(t0.Add(time.Second)) {
		t.Fatalf("history %v (%v)", all, err)
	}
	select {
	case m := <-got:
		t.Errorf("the other node also got %s", m)
	default:
	}
	wq := NewWriter(queued{n1}, Options{Max: 10})
	defer wq.Close(context.Background())
	if shared, err := wq.Share("sp", t0, []byte(`{}`)); shared || err != nil {
		t.Errorf("Share without a Keeper: %v, %v", shared, err)
	}
}

// BenchmarkClusterHistoryAppend measures how many envelopes a second one
// node's history writer appends: the rate past which its queue fills and
// it drops. The producer waits while the queue is near full, so nothing is
// dropped and the rate is the writer's.
func BenchmarkClusterHistoryAppend(b *testing.B) {
	for _, backend := range []string{"nats", "memory"} {
		b.Run(backend, func(b *testing.B) {
			n := node(b, backend)
			var dropped atomic.Int64
			const max = 10_000
			w := NewWriter(n, Options{Max: max, Dropped: func(k int) { dropped.Add(int64(k)) }})
			defer w.Close(context.Background())
			env := fmt.Appendf(nil, `{"protocol":"mew/v0.4","id":"%040d","ts":"2026-01-01T00:00:00.000Z","from":"alice","kind":"chat","payload":{"text":"%0200d"}}`, 0, 0)
			now := time.Now()
			b.SetBytes(int64(len(env)))
			b.ResetTimer()
			start := time.Now()
			for range b.N {
				for w.Queued() >= max-Batch {
					time.Sleep(50 * time.Microsecond)
				}
				w.Push("sp", now, env)
			}
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			w.Settle(ctx)
			cancel()
			b.ReportMetric(float64(b.N)/time.Since(start).Seconds(), "envelopes/s")
			if d := dropped.Load(); d != 0 {
				b.Fatalf("%v dropped", d)
			}
		})
	}
}

// FuzzCursor: any cursor a poller sends is parsed or refused, never a
// panic, and what parses in the three-part form prints as a cursor that
// parses the same (leading zeros aside).
func FuzzCursor(f *testing.F) {
	for _, s := range []string{"", "0", "12", "12.3.abcdef01", "-1", "1.2.ABCDEF01", "18446744073709551616", "1..", "1.2.3.4"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		c, private, err := ParseCursor(s)
		if err != nil {
			return
		}
		if len(s) > MaxCursorLen {
			t.Fatalf("%q parsed though longer than %d bytes", s, MaxCursorLen)
		}
		if c.Hash != "" {
			if again, _, err := ParseCursor(c.String()); err != nil || again != c {
				t.Fatalf("%q parsed as %+v, which prints as %q and parses back as %+v, %v", s, c, c.String(), again, err)
			}
		}
		if c.Hash == "" && private && s != "" && s != "0" {
			t.Fatalf("%q: private entries honoured without a node mark", s)
		}
	})
}

// A page merges the cluster's records and the node's private answers by
// time, takes the limit, and its cursor moves each part past what was
// taken of its own: the next page starts where this one ended, nothing
// twice, nothing skipped.
func TestPage(t *testing.T) {
	at := func(ms int) time.Time { return time.Unix(0, int64(ms)*int64(time.Millisecond)) }
	pub := []Entry{{Seq: 11, At: at(1), Data: []byte(`"p1"`)}, {Seq: 12, At: at(3), Data: []byte(`"p3"`)}, {Seq: 14, At: at(5), Data: []byte(`"p5"`)}}
	priv := []Entry{{Seq: 4, At: at(2), Data: []byte(`"q2"`)}, {Seq: 6, At: at(3), Data: []byte(`"q3"`)}}
	start := Cursor{Log: 10, Priv: 4, Hash: "0badcafe"}

	out, next := Page(start, "0badcafe", pub, 14, priv, 7, 3)
	if got := string(bytes.Join(rawBytes(out), []byte(","))); got != `"p1","q2","p3"` {
		t.Fatalf("first page %s", got)
	}
	if next != (Cursor{Log: 12, Priv: 5, Hash: "0badcafe"}) {
		t.Fatalf("first cursor %+v", next)
	}
	// The rest: what remains of each part, up to the end of both.
	out, next = Page(next, "0badcafe", pub[2:], 14, priv[1:], 7, 3)
	if got := string(bytes.Join(rawBytes(out), []byte(","))); got != `"q3","p5"` {
		t.Fatalf("second page %s", got)
	}
	if next != (Cursor{Log: 14, Priv: 7, Hash: "0badcafe"}) {
		t.Fatalf("second cursor %+v: both parts at their end", next)
	}
	// Nothing new: the cursor stays, and a limit of 0 takes nothing.
	if out, again := Page(next, "0badcafe", nil, 14, nil, 7, 5); len(out) != 0 || again != next {
		t.Fatalf("an empty page moved the cursor: %+v", again)
	}
	if out, _ := Page(start, "0badcafe", pub, 14, priv, 7, 0); len(out) != 0 {
		t.Fatal("a limit of 0 returned messages")
	}
}

func rawBytes(in []json.RawMessage) [][]byte {
	out := make([][]byte, len(in))
	for i, r := range in {
		out[i] = r
	}
	return out
}
