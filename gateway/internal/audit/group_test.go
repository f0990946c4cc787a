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
		// One write a record until the traffic has been steady for
		// steadyAfter, then one per window of the rest of the 200 ms.
		if most := uint64(n*time.Millisecond/groupWindow+steadyAfter/time.Millisecond) + 2; s.Writes > most {
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

// TestWriterAnswerNotHeldBack: after a quiet moment, the records of a short
// exchange (a request, the answer a millisecond later, and a few more) reach
// the file at once, each as it comes: the writer gathers only once traffic
// has been steady for steadyAfter. Scripts read the log right after their
// request (the reference suite's scenario 18 greps for the answer as soon as
// its HTTP post returns), so a 5 ms window after the request's own lines held
// the answer back from them.
func TestWriterAnswerNotHeldBack(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		l, err := Open(Options{Dir: t.TempDir(), EnvelopeHistory: true})
		if err != nil {
			t.Fatal(err)
		}
		defer closeT(t, l)
		for round := range 2 {
			time.Sleep(time.Second) // quiet
			base := l.Stats().Lines
			for i := range 5 {
				id := "r" + strconv.Itoa(round) + "-" + strconv.Itoa(i)
				l.Envelope(EnvelopeRecord{Event: Received, ID: id, Envelope: []byte(`{"id":"` + id + `"}`), Participant: "p", Space: "s"})
				synctest.Wait()
				if got := l.Stats().Lines - base; got != uint64(i+1) {
					t.Fatalf("round %d: record %d of an exchange after a quiet moment: %d lines in the file, want %d", round, i, got, i+1)
				}
				time.Sleep(time.Millisecond)
			}
		}
	})
}
