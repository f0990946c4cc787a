package gateway

import (
	"context"
	"path/filepath"
	"strconv"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/coder/websocket"

	"github.com/mew-protocol/mew/space"
)

// timedSink records when each frame was written and how many writes there
// were.
type timedSink struct {
	mu      sync.Mutex
	writes  int
	written map[string]time.Time
}

func (k *timedSink) write(_ context.Context, fs []frame) error {
	k.mu.Lock()
	defer k.mu.Unlock()
	k.writes++
	for _, f := range fs {
		k.written[string(f.data)] = time.Now()
	}
	return nil
}
func (*timedSink) idle() error                        { return nil }
func (*timedSink) close(websocket.StatusCode, string) {}

// TestWriteCoalesce feeds one session a frame a millisecond, in a synctest
// bubble so that the clock is exact, and checks the writes: with the
// default coalescing, about one per 2 ms, no frame held longer than that,
// and a frame after a quiet spell written at once; with coalescing off, one
// write per frame; either way, a frame addressed to the participant is not
// held back.
func TestWriteCoalesce(t *testing.T) {
	for _, c := range []struct {
		name     string
		coalesce time.Duration
		most     int           // writes for the 100 steady frames
		held     time.Duration // the longest a frame may wait
	}{
		{"default", 0, 52, 2 * time.Millisecond},
		{"off", -1, 100, 0},
	} {
		t.Run(c.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				cfg, err := space.Parse([]byte("space: {id: w}\nparticipants:\n  p: {tokens: [tok], capabilities: [{kind: chat}]}\n"),
					filepath.Join(t.TempDir(), "space.yaml"))
				if err != nil {
					t.Fatal(err)
				}
				srv, err := New(Options{Spaces: []*space.Config{cfg}, Timing: Timing{WriteCoalesce: c.coalesce}, Audit: AuditOptions{Off: true}})
				if err != nil {
					t.Fatal(err)
				}
				defer func() { _ = srv.Close(context.Background()) }()
				sp := srv.order[0]
				k := &timedSink{written: map[string]time.Time{}}
				s := newSession(sp, sp.members["p"], "p", transportWebSocket, 1024, 1<<20, k)
				ran := make(chan struct{})
				go func() { defer close(ran); s.run(nil) }()
				defer func() { s.kill(websocket.StatusNormalClosure, ""); <-ran }()

				sent := map[string]time.Time{}
				send := func(name string) {
					sent[name] = time.Now()
					if !s.enqueue(frame{data: []byte(name)}) {
						t.Fatalf("%s not queued", name)
					}
				}
				for i := range 100 {
					send("m" + strconv.Itoa(i))
					time.Sleep(time.Millisecond)
				}
				time.Sleep(time.Second) // quiet
				synctest.Wait()
				k.mu.Lock()
				steady := k.writes
				k.mu.Unlock()
				send("after the quiet")
				time.Sleep(10 * time.Millisecond)
				synctest.Wait()

				k.mu.Lock()
				defer k.mu.Unlock()
				if steady > c.most {
					t.Errorf("%d writes for 100 frames a millisecond apart, want at most %d", steady, c.most)
				}
				for name, at := range sent {
					w, ok := k.written[name]
					switch {
					case !ok:
						t.Errorf("%s never written", name)
					case w.Sub(at) > c.held:
						t.Errorf("%s waited %v, want at most %v", name, w.Sub(at), c.held)
					}
				}
				if w := k.written["after the quiet"]; !w.Equal(sent["after the quiet"]) {
					t.Errorf("the frame after a quiet spell waited %v", w.Sub(sent["after the quiet"]))
				}
				k.mu.Unlock()

				// An addressed frame coming while the writer gathers leaves at
				// once, and what was gathered with it.
				send("bystander 1")
				time.Sleep(500 * time.Microsecond)
				send("bystander 2")
				time.Sleep(500 * time.Microsecond)
				sent["addressed"] = time.Now()
				if !s.enqueue(frame{data: []byte("addressed"), addressed: true}) {
					t.Fatal("addressed not queued")
				}
				time.Sleep(10 * time.Millisecond)
				synctest.Wait()
				k.mu.Lock()
				if w := k.written["addressed"]; !w.Equal(sent["addressed"]) {
					t.Errorf("an addressed frame waited %v", w.Sub(sent["addressed"]))
				}
				if w := k.written["bystander 2"]; c.coalesce >= 0 && !w.Equal(sent["addressed"]) {
					t.Errorf("bystander 2 left %v after it came, not with the addressed frame", w.Sub(sent["bystander 2"]))
				}
			})
		})
	}
}
