package clustertest

import (
	"errors"
	"slices"
	"sync"
	"testing"

	"github.com/mew-protocol/mew/gateway/cluster"
)

// testStreamNumbers takes stream numbers on three nodes at once: every
// number is taken once, and they are 1..n, so that stream ids stay the
// reference's stream-1, stream-2... Garbage under the counter's key counts
// as 0 rather than stopping the space's streams.
func testStreamNumbers(t *testing.T, f Factory) {
	h := f(t, 3)
	ctx := ctxT(t)
	const per = 20
	var (
		mu  sync.Mutex
		got []uint64
		wg  sync.WaitGroup
	)
	for _, n := range h.Nodes {
		wg.Go(func() {
			for range per {
				k, err := cluster.NextStreamNumber(ctx, n.State(), "streams")
				if err != nil {
					t.Error(err)
					return
				}
				mu.Lock()
				got = append(got, k)
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	slices.Sort(got)
	for i, k := range got {
		if k != uint64(i+1) {
			t.Fatalf("numbers taken: %v, want 1..%d each once", got, per*len(h.Nodes))
		}
	}
	if _, err := h.Nodes[1].State().Put(ctx, "garbled", cluster.StreamCounterKey(), []byte("not a number"), cluster.PutOptions{}); err != nil {
		t.Fatal(err)
	}
	if k, err := cluster.NextStreamNumber(ctx, h.Nodes[0].State(), "garbled"); err != nil || k != 1 {
		t.Fatalf("after garbage: %d %v, want 1", k, err)
	}
}

// testStreamChanges sends a stream change through one node's Log and reads
// it on another, exactly; records that are no stream change, or are
// garbled, are told apart and refused without a panic.
func testStreamChanges(t *testing.T, f Factory) {
	h := f(t, 2)
	ctx := ctxT(t)
	c := cluster.StreamChange{
		Op: cluster.StreamOpOpen, Origin: "n1:x", Cause: "req-1",
		Stream:   cluster.Stream{ID: "stream-1", Seq: 1, Owner: "alice-1", OwnerOf: "alice", Writers: []string{"alice-1"}, Target: []string{"bob"}, Request: []byte(`{"direction":"upload","x":"<&>"}`)},
		Announce: []byte(`{"kind":"stream/open","payload":{"note":"<&>"}}`),
	}
	b, err := cluster.EncodeStreamChange(c)
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range [][]byte{[]byte(`{"kind":"chat"}`), b} {
		if _, err := h.Nodes[0].Log().Append(ctx, "sp", d); err != nil {
			t.Fatal(err)
		}
	}
	recs, err := h.Nodes[1].Log().Read(ctx, "sp", 0, 10)
	if err != nil || len(recs) != 2 {
		t.Fatalf("read %d records, %v", len(recs), err)
	}
	if cluster.IsStreamChange(recs[0].Data) || !cluster.IsStreamChange(recs[1].Data) {
		t.Fatal("IsStreamChange does not tell a stream change from another record")
	}
	back, err := cluster.DecodeStreamChange(recs[1].Data)
	if err != nil {
		t.Fatal(err)
	}
	if string(back.Announce) != string(c.Announce) || back.Stream.ID != "stream-1" || back.Stream.OwnerOf != "alice" ||
		!slices.Equal(back.Stream.Target, c.Stream.Target) || back.Cause != "req-1" {
		t.Fatalf("read back %+v, want %+v", back, c)
	}
	for _, bad := range []string{
		`{"stream_change":"open","origin":"n1","stream":{"id":"stream-1"}}`,           // no owner
		`{"stream_change":"explode","origin":"n1","stream":{"id":"s"}}`,               // unknown op
		`{"stream_change":"close","origin":"n1","stream":{"id":"a/b"}}`,               // bad id
		`{"stream_change":"left","origin":"n1","stream":{"id":"s"}}`,                  // no such op
		`{"stream_change":"close","origin":"n1","stream":{"id":"s"}} {}`,              // trailing data
		`{"stream_change":"close","origin":"n1","stream":{"id":"s"},"announce":"!!"}`, // not base64
		`{"stream_change":`,
	} {
		if _, err := cluster.DecodeStreamChange([]byte(bad)); !errors.Is(err, cluster.ErrInvalid) {
			t.Errorf("DecodeStreamChange(%s): %v, want ErrInvalid", bad, err)
		}
	}
	if _, err := cluster.EncodeStreamChange(cluster.StreamChange{Op: cluster.StreamOpClose, Stream: cluster.Stream{ID: "s"}, Announce: make([]byte, cluster.MaxRecordLen)}); !errors.Is(err, cluster.ErrInvalid) {
		t.Errorf("an oversized record encoded: %v", err)
	}
}
