package gateway

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"

	"github.com/coder/websocket"

	"github.com/mew-protocol/mew/space"
)

// discardSink stands in for a peer that reads as fast as it can.
type discardSink struct{}

func (discardSink) write(context.Context, []frame) error { return nil }
func (discardSink) idle() error                          { return nil }
func (discardSink) close(websocket.StatusCode, string)   {}

// benchServer returns a server whose space has n participants connected
// through discarding sinks, and the origin of the first. With limit the
// rate limiter runs, at a rate it never reaches.
func benchServer(b *testing.B, n int, audit, limit bool) (*liveSpace, origin) {
	b.Helper()
	var y strings.Builder
	y.WriteString("space: {id: bench}\nparticipants:\n")
	for i := range n {
		fmt.Fprintf(&y, "  p%d:\n    tokens: [tok-%d]\n    capabilities:\n", i, i)
		// A realistic list: the match falls through several patterns.
		y.WriteString("      - {kind: \"reasoning/*\"}\n      - {kind: mcp/proposal}\n      - {kind: mcp/request, payload: {method: \"tools/list\"}}\n")
		y.WriteString("      - {kind: mcp/request, payload: {method: tools/call, params: {name: \"read_*\"}}}\n      - {kind: chat}\n")
	}
	cfg, err := space.Parse([]byte(y.String()), filepath.Join(b.TempDir(), "space.yaml"))
	if err != nil {
		b.Fatal(err)
	}
	rate, bytes := -1.0, 0
	if limit {
		rate, bytes = 1e12, 1<<50 // the byte budget too, or the loop spends it
	}
	srv, err := New(Options{Spaces: []*space.Config{cfg}, Limits: Limits{Rate: rate, ByteRate: bytes, ByteBurst: bytes, SendQueue: 1 << 16}, Audit: AuditOptions{Off: !audit}})
	if err != nil {
		b.Fatal(err)
	}
	sp := srv.order[0]
	var first origin
	for i := range n {
		m := sp.members[fmt.Sprintf("p%d", i)]
		if !srv.track() {
			b.Fatal("closed")
		}
		s := newSession(sp, m, m.name, transportWebSocket, srv.opts.Limits.SendQueue, srv.opts.Limits.SendQueueBytes, discardSink{})
		if rf := sp.attach(s); rf != nil {
			b.Fatal(rf)
		}
		go func() {
			defer srv.wg.Done()
			s.run(nil)
			sp.detach(s)
		}()
		if i == 0 {
			first = origin{m: m, id: m.name, s: s, transport: transportWebSocket}
		}
	}
	b.Cleanup(func() { _ = srv.Close(context.Background()) })
	return sp, first
}

// BenchmarkRoute measures the routing hot path: decode, identity,
// validation, capability match, encode, audit hand-off and fan-out into
// every recipient's queue.
func BenchmarkRoute(b *testing.B) {
	msg := []byte(`{"protocol":"mew/v0.4","id":"m-1","kind":"chat","to":["p1"],"payload":{"text":"hello, this is a typical chat message of some length","format":"plain"}}`)
	for _, c := range []struct {
		n            int
		audit, limit bool
	}{{1, false, false}, {10, false, false}, {50, false, false}, {10, true, false}, {50, true, false}, {10, false, true}} {
		name := fmt.Sprintf("recipients=%d/audit=%v", c.n, c.audit)
		if c.limit {
			name += "/ratelimit" // the limiter's cost: compare with the same without
		}
		b.Run(name, func(b *testing.B) {
			sp, o := benchServer(b, c.n, c.audit, c.limit)
			st := &inState{}
			b.ReportAllocs()
			b.SetBytes(int64(len(msg)))
			for b.Loop() {
				if _, rf := sp.inbound(o, msg, st); rf != nil {
					b.Fatal(rf)
				}
			}
			b.ReportMetric(float64(c.n)*float64(b.N)/b.Elapsed().Seconds(), "deliveries/s")
		})
	}
}

// BenchmarkRefuse measures a capability refusal, the path a misbehaving
// participant exercises.
func BenchmarkRefuse(b *testing.B) {
	msg := []byte(`{"protocol":"mew/v0.4","id":"m-1","kind":"mcp/request","payload":{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"write_file"}}}`)
	sp, o := benchServer(b, 2, false, false)
	st := &inState{}
	b.ReportAllocs()
	for b.Loop() {
		if _, rf := sp.inbound(o, msg, st); rf == nil {
			b.Fatal("accepted")
		}
	}
}

// wsPair returns the gateway's side of a real loopback WebSocket, as a
// session's sink, whose peer reads and discards everything.
func wsPair(tb testing.TB) wsSink {
	tb.Helper()
	got := make(chan wsSink, 1)
	done := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hj := &corkHijacker{ResponseWriter: w}
		conn, err := websocket.Accept(hj, r, &websocket.AcceptOptions{CompressionMode: websocket.CompressionDisabled})
		if err != nil {
			return
		}
		defer conn.CloseNow()
		got <- wsSink{conn: conn, nc: hj.nc}
		<-done
	}))
	client, _, err := websocket.Dial(context.Background(), "ws"+strings.TrimPrefix(srv.URL, "http"), nil)
	if err != nil {
		tb.Fatal(err)
	}
	client.SetReadLimit(-1)
	reading := make(chan struct{})
	go func() { // the peer; it ends when the connection closes
		defer close(reading)
		for {
			_, rd, err := client.Reader(context.Background())
			if err != nil {
				return
			}
			if _, err := io.Copy(io.Discard, rd); err != nil { // allocates nothing, unlike Read
				return
			}
		}
	}()
	sk := <-got
	tb.Cleanup(func() {
		_ = client.CloseNow()
		<-reading
		close(done)
		srv.Close()
	})
	return sk
}

// batchOf returns n frames of size bytes.
func batchOf(n, size int) []frame {
	data := []byte(`{"kind":"chat","payload":{"text":"` + strings.Repeat("x", size) + `"}}`)
	fs := make([]frame, n)
	for i := range fs {
		fs[i] = frame{data: data}
	}
	return fs
}

// BenchmarkWriteBatch measures a session's writer on a real WebSocket: a
// batch of frames corked into as few socket writes as their size allows.
func BenchmarkWriteBatch(b *testing.B) {
	for _, n := range []int{1, 16} {
		b.Run(fmt.Sprintf("frames=%d", n), func(b *testing.B) {
			sk, fs := wsPair(b), batchOf(n, 200)
			b.ReportAllocs()
			for b.Loop() {
				if err := sk.write(context.Background(), fs); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(n*b.N)/b.Elapsed().Seconds(), "frames/s")
		})
	}
}

// The writer's path allocates nothing per frame: no context registration,
// and the cork buffer comes from a pool.
func TestWriteBatchAllocs(t *testing.T) {
	if raceEnabled {
		t.Skip("allocation counts differ under -race")
	}
	sk, fs := wsPair(t), batchOf(16, 200)
	if n := testing.AllocsPerRun(200, func() {
		if err := sk.write(context.Background(), fs); err != nil {
			t.Fatal(err)
		}
	}); n > 0.1 {
		t.Errorf("a batch of 16 frames allocates %.2f times, want none", n)
	}
}
