package auditlog_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/mew-protocol/mew/auditlog"
)

// BenchmarkLineageRequests compares what one lineage request of the
// gateway costs on a log of 20,000 envelopes (each delivered to three
// participants, with its capability check: about 9 MB) that gains five
// envelopes between requests: a full read of the log per request, as the
// gateway did, against a Follower that reads on from where it stopped.
// bytes-read/op is what the request read of the log; follower counts the
// Follower's first read, follower-after-first-read what follows it.
func BenchmarkLineageRequests(b *testing.B) {
	d := newLogDir(b)
	next := 0
	add := func(n int) {
		for range n {
			id := fmt.Sprintf("e%d", next)
			reply := ""
			if next > 0 {
				reply = fmt.Sprintf("e%d", next-1)
			}
			d.check(id, "alice", "chat")
			d.envelope(id, "alice", "chat", []string{"bob", "carol", "dave"}, reply, "", `{"text":"a message of a realistic length, about as long as a chat line usually is"}`)
			next++
		}
	}
	add(20000)
	if fi, err := os.Stat(filepath.Join(d.dir, auditlog.EnvelopeHistory)); err == nil {
		b.Logf("log: %d envelopes, %d bytes of envelope history", next, fi.Size())
	}
	ctx := context.Background()
	opts := auditlog.IndexOptions{Space: "s"}
	run := func(b *testing.B, index func() (*auditlog.Index, int64)) {
		var read int64
		for b.Loop() {
			b.StopTimer()
			add(5)
			b.StartTimer()
			ix, n := index()
			if _, err := ix.Lineage(fmt.Sprintf("e%d", next-1)); err != nil {
				b.Fatal(err)
			}
			read += n
		}
		b.ReportMetric(float64(read)/float64(b.N), "bytes-read/op")
	}
	b.Run("full-read", func(b *testing.B) {
		run(b, func() (*auditlog.Index, int64) {
			ix, err := auditlog.BuildIndex(ctx, d.dir, opts)
			if err != nil {
				b.Fatal(err)
			}
			return ix, ix.Envelopes.Bytes + ix.Decisions.Bytes
		})
	})
	follow := func(warm bool) func(b *testing.B) {
		return func(b *testing.B) {
			f := auditlog.NewFollower(d.dir, opts)
			var seen int64
			update := func() (*auditlog.Index, int64) {
				ix, err := f.Update(ctx)
				if err != nil {
					b.Fatal(err)
				}
				total := ix.Envelopes.Bytes + ix.Decisions.Bytes
				n := total - seen
				seen = total
				return ix, n
			}
			if warm {
				update()
			}
			run(b, update)
		}
	}
	b.Run("follower", follow(false))
	b.Run("follower-after-first-read", follow(true))
}
