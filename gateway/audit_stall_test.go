//go:build unix

package gateway_test

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/coder/websocket"

	"github.com/mew-protocol/mew/gateway"
	"github.com/mew-protocol/mew/internal/testutil"
)

const stallSpace = `
space: {id: stall}
participants:
  flood: {tokens: [flood-token], capabilities: [{kind: chat}]}
  owner: {tokens: [owner-token], capabilities: [{kind: "stream/*"}, {kind: chat}]}
  viewer: {tokens: [viewer-token], capabilities: [{kind: chat}]}
  late: {tokens: [late-token], capabilities: [{kind: chat}]}
`

// TestStalledAuditDisk: with the audit log's file stalled (a FIFO nobody
// reads, as a disk that stops answering) and its queue full, the gateway
// stops taking in the chatty sender's envelopes and a new join, holding no
// lock while they wait: a bystander's stream frames still reach the others
// at once, and /health answers. When the disk answers again everything the sender sent
// is delivered and recorded: nothing is lost.
func TestStalledAuditDisk(t *testing.T) {
	dir := t.TempDir()
	fifo := filepath.Join(dir, "envelope-history.jsonl")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatalf("mkfifo: %v", err)
	}
	g := testutil.StartGateway(t, stallSpace, gateway.Options{Limits: gateway.Limits{Rate: -1}, Audit: gateway.AuditOptions{Dir: dir, QueueSize: 64}})
	// The FIFO's reader, which reads nothing until the disk is to answer
	// again (release); the cleanup releases it whatever happened, so that
	// the gateway's audit log can close.
	rd, err := os.OpenFile(fifo, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		t.Fatal(err)
	}
	var log bytes.Buffer
	drained := make(chan error, 1)
	var once sync.Once
	release := func() {
		once.Do(func() {
			go func() {
				_, err := io.Copy(&log, rd)
				drained <- err
			}()
		})
	}
	t.Cleanup(func() {
		release()
		g.Stop(t)
		<-drained
		rd.Close()
	})
	owner, _ := testutil.Join(t, g.WSURL, "owner-token")
	viewer, _ := testutil.Join(t, g.WSURL, "viewer-token")
	flood, _ := testutil.Join(t, g.WSURL, "flood-token")
	id := openStream(t, owner, "s1", `{"direction":"upload"}`, viewer, flood)

	// The flood: chats of 1 KB as fast as the socket takes them, far more
	// than the FIFO's 64 KiB and the queue's 64 records hold.
	const total = 2000
	filler := strings.Repeat("x", 1000)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var sent sync.WaitGroup
	sent.Go(func() {
		for i := range total {
			msg := fmt.Sprintf(`{"id":"f%d","kind":"chat","payload":{"text":"%s"}}`, i, filler)
			if flood.Conn.Write(ctx, websocket.MessageText, []byte(msg)) != nil {
				return
			}
		}
	})

	// The gateway takes in the flood until the audit log's queue is full,
	// then stops: the viewer's count of flood chats stops growing.
	got := 0
	countFlood := func(wait time.Duration) bool { // reports whether one came
		m, err := viewer.Read(wait)
		if err != nil {
			return false
		}
		if m.Env != nil && m.Kind() == "chat" && strings.HasPrefix(m.ID(), "f") {
			got++
		}
		return true
	}
	deadline := time.Now().Add(20 * time.Second)
	for countFlood(500 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("the flood was never held back: %d chats delivered", got)
		}
	}
	if got == 0 || got >= total {
		t.Fatalf("%d of %d flood chats delivered while the audit log is stalled, want some, not all", got, total)
	}

	// Someone joins now: a join is recorded (its welcome and presence),
	// so it waits for the audit log too, and must do so holding no lock.
	late := testutil.Dial(t, g.WSURL, "late-token")

	// A bystander's stream frames reach the viewer at once: no space lock
	// is held by a sender or a join waiting for the audit log.
	var worst time.Duration
	for i := range 20 {
		start := time.Now()
		frame := fmt.Sprintf("#%s#frame %d", id, i)
		send(t, owner, frame)
		expectFrame(t, viewer, frame)
		worst = max(worst, time.Since(start))
	}
	if worst > time.Second {
		t.Errorf("a stream frame took %v to cross a space whose audit log is stalled", worst)
	}
	start := time.Now()
	resp, err := http.Get(g.URL + "/health")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if d := time.Since(start); resp.StatusCode != http.StatusOK || d > time.Second {
		t.Errorf("/health: %d after %v", resp.StatusCode, d)
	}

	// The disk answers again: every chat is delivered, then recorded.
	release()
	deadline = time.Now().Add(60 * time.Second)
	for got < total {
		if !countFlood(time.Until(deadline)) {
			t.Fatalf("%d of %d flood chats delivered after the disk answered", got, total)
		}
	}
	sent.Wait()
	late.Expect("system/welcome")
	g.Stop(t) // closes the audit log, and so the FIFO's last writer
	if err := <-drained; err != nil {
		t.Fatal(err)
	}
	drained <- nil // for the cleanup
	received := 0
	for _, l := range bytes.Split(log.Bytes(), []byte("\n")) {
		if bytes.Contains(l, []byte(`"event":"received","id":"f`)) {
			received++
		}
	}
	if received != total {
		t.Errorf("the audit log recorded %d of the %d chats received", received, total)
	}
}
