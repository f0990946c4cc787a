package clustertest

import (
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/mew-protocol/mew/gateway/cluster"
)

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
