package audit

import (
	"strconv"
	"testing"
	"testing/synctest"
	"time"
)

// TestWriterGroupsSteadyTraffic: records arriving one a millisecond, the
// pace at which the writer used to be woken and to write once per record,
// are written in groups of about groupWindow's worth, and none is lost or
// held back at the end. In a synctest bubble, so the pace is exact.
func TestWriterGroupsSteadyTraffic(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		dir := t.TempDir()
		l, err := Open(Options{Dir: dir, EnvelopeHistory: true})
		if err != nil {
			t.Fatal(err)
		}
		const n = 200
		for i := range n {
			id := "m" + strconv.Itoa(i)
			l.Envelope(EnvelopeRecord{Event: Received, ID: id, Envelope: []byte(`{"id":"` + id + `"}`), Participant: "p", Space: "s"})
			time.Sleep(time.Millisecond)
		}
		// The last group is on its way: within the window, without Close.
		time.Sleep(2 * groupWindow)
		synctest.Wait()
		s := l.Stats()
		if s.Lines != n {
			t.Fatalf("%d lines written before Close, want %d", s.Lines, n)
		}
		// One write at the start, then one per window of the 200 ms.
		if most := uint64(n*time.Millisecond/groupWindow) + 2; s.Writes > most {
			t.Errorf("%d writes for %d records a millisecond apart, want at most %d", s.Writes, n, most)
		}
		if s.Writes < 10 {
			t.Errorf("%d writes: records were held back beyond the window", s.Writes)
		}
		closeT(t, l)
		if got := readRaw(t, envPath(dir)); len(got) != n {
			t.Errorf("%d lines in the file, want %d", len(got), n)
		}
	})
}

// TestWriterBurstNotHeldBack: a burst of groupFull records reaching a
// gathering writer is written without waiting for the window to end.
func TestWriterBurstNotHeldBack(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		l, err := Open(Options{Dir: t.TempDir(), EnvelopeHistory: true})
		if err != nil {
			t.Fatal(err)
		}
		defer closeT(t, l)
		rec := EnvelopeRecord{Event: Received, ID: "x", Envelope: []byte(`{"id":"x"}`), Participant: "p", Space: "s"}
		l.Envelope(rec)
		synctest.Wait() // written; the writer now gathers
		if s := l.Stats(); s.Lines != 1 {
			t.Fatalf("first record: %d lines", s.Lines)
		}
		start := time.Now()
		for range groupFull {
			l.Envelope(rec)
		}
		synctest.Wait()
		if s := l.Stats(); s.Lines < groupFull || time.Since(start) != 0 {
			t.Errorf("after a burst of %d: %d lines, %v later", groupFull, s.Lines, time.Since(start))
		}
	})
}
