package gateway_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/coder/websocket"

	"github.com/mew-protocol/mew/gateway"
	"github.com/mew-protocol/mew/internal/bench"
	"github.com/mew-protocol/mew/internal/testutil"
)

// Stream frame throughput, one writer to N readers over loopback
// WebSockets, through the gateway and, in the same run, through the bare
// relay of internal/bench (which forwards every message to every
// connection, so a frame sent to it reaches all, as a broadcast stream's
// frames do through the gateway). In both, the writer also receives its own
// frames, and it never runs more than streamBenchWindow frames ahead of the
// slowest recipient, so that neither server drops or blocks anyone.
//
//	go test -run XXX -bench StreamFanout ./gateway/

// streamBenchWindow is how far the writer may run ahead of the slowest
// recipient, in frames.
const streamBenchWindow = 2048

// BenchmarkStreamFanout reports frames/s and MB/s of one stream (what each
// reader receives) and deliveries/s (frames received by all readers
// together); each gateway run also reports gateway/relay, its frames/s over
// the relay's in the same configuration.
func BenchmarkStreamFanout(b *testing.B) {
	for _, readers := range []int{1, 10} {
		for _, size := range []int{128, 16 << 10} {
			b.Run(fmt.Sprintf("readers=%d/size=%d", readers, size), func(b *testing.B) {
				// The relay first, so that the gateway's run can report
				// its ratio to the relay's final rate as a metric.
				var relay float64
				b.Run("relay", func(b *testing.B) {
					relay = streamBench(b, "relay", readers, size)
				})
				b.Run("gateway", func(b *testing.B) {
					if gw := streamBench(b, "gateway", readers, size); relay > 0 {
						b.ReportMetric(gw/relay, "gateway/relay")
					}
				})
			})
		}
	}
}

// streamBench runs b.N frames of size bytes from one writer to readers
// readers through target ("gateway" or "relay") and returns the frames per
// second each reader received.
func streamBench(b *testing.B, target string, readers, size int) float64 {
	ids := []string{"w"}
	for i := range readers {
		ids = append(ids, fmt.Sprintf("r%d", i))
	}
	var (
		url    string
		tokens map[string]string
		stop   func()
	)
	switch target {
	case "gateway":
		var y strings.Builder
		y.WriteString("space: {id: bench}\nparticipants:\n")
		tokens = make(map[string]string)
		for _, id := range ids {
			fmt.Fprintf(&y, "  %s:\n    tokens: [tok-%s]\n    capabilities: [{kind: \"stream/*\"}]\n", id, id)
			tokens[id] = "tok-" + id
		}
		// Rate -1 turns the stream's frame bucket off with the rest.
		g := testutil.StartGateway(b, y.String(), gateway.Options{
			Limits: gateway.Limits{
				Rate:      -1,
				SendQueue: 4 * streamBenchWindow,
			},
			Audit: gateway.AuditOptions{Off: true},
		})
		url, stop = g.WSURL, func() { g.Stop(b) }
	case "relay":
		ep, err := bench.RelayTarget{}.Start(context.Background(), ids)
		if err != nil {
			b.Fatal(err)
		}
		url, tokens = ep.URL, ep.Tokens
		stop = func() {
			if err := ep.Close(); err != nil {
				b.Error(err)
			}
		}
	}
	defer stop()

	want := int64(b.N)
	progress := make(chan struct{}, 1)
	var all []*frameCounter
	defer func() {
		for _, c := range all {
			_ = c.conn.CloseNow()
			<-c.exit
		}
	}()
	for _, id := range ids[1:] {
		all = append(all, dialCounter(b, url, tokens[id], want))
	}
	w := dialCounter(b, url, tokens["w"], want)
	all = append(all, w)

	streamID := "s1"
	if target == "gateway" {
		streamID = openBenchStream(b, w.conn)
	}
	for _, c := range all {
		go c.run(progress)
	}
	frame := make([]byte, size)
	for i := range frame {
		frame[i] = 'a' + byte(i%26)
	}
	copy(frame, "#"+streamID+"#")

	ctx := context.Background()
	b.ResetTimer()
	start := time.Now()
	for i := int64(0); i < want; i++ {
		if i%64 == 0 {
			waitWindow(b, all, i, progress)
		}
		if err := w.conn.Write(ctx, websocket.MessageBinary, frame); err != nil {
			b.Fatalf("write: %v", err)
		}
	}
	timeout := time.NewTimer(60 * time.Second)
	defer timeout.Stop()
	for _, c := range all {
		select {
		case <-c.done:
		case <-c.exit:
			b.Fatalf("a connection ended after %d of %d frames", c.got.Load(), want)
		case <-timeout.C:
			b.Fatalf("a recipient has %d of %d frames after 60 s", c.got.Load(), want)
		}
	}
	elapsed := time.Since(start)
	b.StopTimer()

	fps := float64(want) / elapsed.Seconds()
	b.ReportMetric(fps, "frames/s")
	b.ReportMetric(fps*float64(size)/1e6, "MB/s")
	b.ReportMetric(fps*float64(readers), "deliveries/s")
	return fps
}

// waitWindow blocks until the slowest recipient is within
// streamBenchWindow frames of sent.
func waitWindow(b *testing.B, all []*frameCounter, sent int64, progress <-chan struct{}) {
	deadline := time.Now().Add(30 * time.Second)
	for {
		least := sent
		for _, c := range all {
			least = min(least, c.got.Load())
		}
		if sent-least <= streamBenchWindow {
			return
		}
		if time.Now().After(deadline) {
			b.Fatalf("recipients stalled %d frames behind", sent-least)
		}
		select {
		case <-progress:
		case <-time.After(5 * time.Millisecond):
		}
	}
}

// frameCounter is one connection of the benchmark: it counts the frames
// (messages starting with '#') it receives and ignores envelopes.
type frameCounter struct {
	conn *websocket.Conn
	want int64
	got  atomic.Int64
	done chan struct{} // closed when want frames have arrived
	exit chan struct{} // closed when run returns
}

// dialCounter connects with a bearer token and waits for the welcome, so
// that the connection is in the space before any frame is sent.
func dialCounter(b *testing.B, url, token string, want int64) *frameCounter {
	b.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	conn, _, err := websocket.Dial(ctx, url, &websocket.DialOptions{
		HTTPHeader: http.Header{"Authorization": {"Bearer " + token}},
	})
	if err != nil {
		b.Fatalf("dial: %v", err)
	}
	conn.SetReadLimit(1 << 24)
	if _, msg, err := conn.Read(ctx); err != nil || !strings.Contains(string(msg), `"system/welcome"`) {
		_ = conn.CloseNow()
		b.Fatalf("welcome: %q %v", msg, err)
	}
	return &frameCounter{conn: conn, want: want, done: make(chan struct{}), exit: make(chan struct{})}
}

// run reads until the connection ends, reusing one buffer, and signals
// progress every 64 frames.
func (c *frameCounter) run(progress chan<- struct{}) {
	defer close(c.exit)
	buf := make([]byte, 32<<10)
	for {
		_, rd, err := c.conn.Reader(context.Background())
		if err != nil {
			return
		}
		isFrame, first := false, true
		for {
			n, err := rd.Read(buf)
			if first && n > 0 {
				isFrame, first = buf[0] == '#', false
			}
			if errors.Is(err, io.EOF) {
				break
			}
			if err != nil {
				return
			}
		}
		if !isFrame {
			continue
		}
		n := c.got.Add(1)
		if n == c.want {
			close(c.done)
		}
		if n%64 == 0 {
			select {
			case progress <- struct{}{}:
			default:
			}
		}
	}
}

// openBenchStream asks the gateway for a stream on conn and returns its id.
func openBenchStream(b *testing.B, conn *websocket.Conn) string {
	b.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	req := `{"id":"bench-req","kind":"stream/request","payload":{"direction":"upload"}}`
	if err := conn.Write(ctx, websocket.MessageText, []byte(req)); err != nil {
		b.Fatal(err)
	}
	for {
		_, msg, err := conn.Read(ctx)
		if err != nil {
			b.Fatalf("waiting for stream/open: %v", err)
		}
		var env struct {
			Kind    string `json:"kind"`
			Payload struct {
				StreamID string `json:"stream_id"`
			} `json:"payload"`
		}
		if json.Unmarshal(msg, &env) == nil && env.Kind == "stream/open" {
			return env.Payload.StreamID
		}
	}
}
