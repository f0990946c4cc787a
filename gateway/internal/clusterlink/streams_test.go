package clusterlink_test

import (
	"bytes"
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mew-protocol/mew/gateway/internal/clusterlink"
)

func TestFrameRoundTrip(t *testing.T) {
	msg := clusterlink.EncodeFrame(42, "writer-1", []byte("#stream-3#hello"))
	if !clusterlink.IsFrame(msg) || clusterlink.IsFrame([]byte(`{"kind":"chat"}`)) {
		t.Fatal("a frame and an envelope are not told apart")
	}
	f, err := clusterlink.ParseFrame(msg)
	if err != nil || f.Seq != 42 || f.Writer != "writer-1" || string(f.Data) != "#stream-3#hello" {
		t.Fatalf("parsed %+v, %v", f, err)
	}
}

// What a buggy or hostile node could publish is refused, never read past
// its end.
func TestFrameHostile(t *testing.T) {
	good := clusterlink.EncodeFrame(1, "w", []byte("#s#x"))
	for name, msg := range map[string][]byte{
		"empty":           nil,
		"envelope":        []byte(`{"id":"1"}`),
		"tag only":        {0},
		"seq cut":         {0, 0x80},
		"length cut":      {0, 1, 0x80},
		"writer too long": {0, 1, 200, 'w'},
		"huge length":     {0, 1, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01},
		"not a frame":     clusterlink.EncodeFrame(1, "w", []byte("no hash")),
		"cut frame":       good[:len(good)-3],
	} {
		if _, err := clusterlink.ParseFrame(msg); !errors.Is(err, clusterlink.ErrBadFrame) {
			t.Errorf("%s: %v, want ErrBadFrame", name, err)
		}
	}
}

func FuzzParseFrame(f *testing.F) {
	f.Add(clusterlink.EncodeFrame(3, "w", []byte("#s#data")))
	f.Fuzz(func(t *testing.T, msg []byte) {
		fr, err := clusterlink.ParseFrame(msg)
		if err != nil {
			return
		}
		again := clusterlink.EncodeFrame(fr.Seq, fr.Writer, fr.Data)
		g, err := clusterlink.ParseFrame(again)
		if err != nil || g.Seq != fr.Seq || g.Writer != fr.Writer || !bytes.Equal(g.Data, fr.Data) {
			t.Fatalf("%q: parsed %+v, re-encoded parses as %+v, %v", msg, fr, g, err)
		}
	})
}

// Frames go when their record is applied, each stream's in order; one
// claiming a record that never comes is dropped at the limit and holds up
// nobody.
func TestFrames(t *testing.T) {
	var mu sync.Mutex
	var applied uint64
	var got, dropped []string
	fs := clusterlink.NewFrames(&mu, 60*time.Millisecond, func() uint64 { return applied },
		func(f clusterlink.Frame) { got = append(got, string(f.Data)) },
		func(f clusterlink.Frame) { dropped = append(dropped, string(f.Data)) })
	frame := func(seq uint64, d string) clusterlink.Frame {
		f, err := clusterlink.ParseFrame(clusterlink.EncodeFrame(seq, "w", []byte(d)))
		if err != nil {
			t.Fatal(err)
		}
		return f
	}
	mu.Lock()
	fs.AddLocked(frame(0, "#a#1"))
	fs.AddLocked(frame(2, "#b#1"))
	fs.AddLocked(frame(9, "#c#1")) // its record never comes
	fs.AddLocked(frame(2, "#b#2"))
	fs.AddLocked(frame(0, "#a#2"))
	if want := "#a#1 #a#2"; strings.Join(got, " ") != want {
		t.Fatalf("delivered %q, want %q", strings.Join(got, " "), want)
	}
	applied = 2
	fs.ReleaseLocked()
	if want := "#a#1 #a#2 #b#1 #b#2"; strings.Join(got, " ") != want || !fs.Waiting() {
		t.Fatalf("delivered %q, want %q with #c#1 still held", strings.Join(got, " "), want)
	}
	mu.Unlock()
	deadline := time.Now().Add(5 * time.Second)
	for {
		mu.Lock()
		n := len(dropped)
		mu.Unlock()
		if n > 0 || time.Now().After(deadline) {
			break
		}
		time.Sleep(5 * time.Millisecond)
	}
	mu.Lock()
	defer mu.Unlock()
	if strings.Join(dropped, " ") != "#c#1" || fs.Waiting() {
		t.Fatalf("dropped %q, want #c#1 and nothing held", strings.Join(dropped, " "))
	}
	fs.StopLocked()
	fs.AddLocked(frame(0, "#a#3"))
	if len(got) != 4 {
		t.Fatal("a stopped Frames delivered")
	}
}

func TestFramesBound(t *testing.T) {
	var mu sync.Mutex
	fs := clusterlink.NewFrames(&mu, time.Minute, func() uint64 { return 0 }, func(clusterlink.Frame) {}, func(clusterlink.Frame) {})
	mu.Lock()
	defer mu.Unlock()
	defer fs.StopLocked()
	f, _ := clusterlink.ParseFrame(clusterlink.EncodeFrame(1, "w", []byte("#s#x")))
	for range clusterlink.MaxHeldFrames {
		if !fs.AddLocked(f) {
			t.Fatal("refused below the bound")
		}
	}
	if fs.AddLocked(f) {
		t.Fatal("held past MaxHeldFrames")
	}
}

func TestCauses(t *testing.T) {
	var c clusterlink.Causes
	c.Note("")
	if c.Has("") {
		t.Fatal("the empty id noted")
	}
	for i := range clusterlink.CauseMemory + 1 {
		c.Note(string(rune(0x4e00 + i)))
		c.Note(string(rune(0x4e00 + i))) // twice: remembered once
	}
	if c.Has(string(rune(0x4e00))) || !c.Has(string(rune(0x4e01))) || !c.Has(string(rune(0x4e00+clusterlink.CauseMemory))) {
		t.Fatal("not the last CauseMemory ids remembered")
	}
}

// The appender appends in order, publishes a frame at once when nothing
// waits and behind the changes before it otherwise, and a failed append
// lets the frames behind it go.
func TestAppender(t *testing.T) {
	var mu sync.Mutex
	var events []string
	gate := make(chan struct{})
	appendRec := func(ctx context.Context, rec []byte) (uint64, error) {
		if string(rec) == "slow" {
			<-gate
		}
		if string(rec) == "bad" {
			return 0, errors.New("log unreachable")
		}
		return 1, nil
	}
	a := clusterlink.NewAppender(&mu, appendRec,
		func(s string, seq uint64, err error) {
			if err != nil {
				events = append(events, "failed "+s)
				return
			}
			events = append(events, "appended "+s)
		},
		func(s, writer string, frame []byte) { events = append(events, "frame "+s+" "+string(frame)) })
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Go(func() { a.Run(ctx) })
	defer func() { cancel(); wg.Wait() }()

	mu.Lock()
	a.FrameLocked("s1", "w", []byte("f0")) // nothing waits: at once
	a.ChangeLocked([]byte("slow"), "s1")
	a.FrameLocked("s1", "w", []byte("f1"))
	a.ChangeLocked([]byte("bad"), "s2")
	a.FrameLocked("s2", "w", []byte("f2"))
	emptied := a.EmptiedLocked()
	mu.Unlock()
	if emptied == nil {
		t.Fatal("a queue with changes is empty")
	}
	close(gate)
	select {
	case <-emptied:
	case <-time.After(5 * time.Second):
		t.Fatal("the queue did not empty")
	}
	mu.Lock()
	defer mu.Unlock()
	if want := "frame s1 f0|appended s1|frame s1 f1|failed s2|frame s2 f2"; strings.Join(events, "|") != want {
		t.Fatalf("events\n%s\nwant\n%s", strings.Join(events, "|"), want)
	}
	if a.EmptiedLocked() != nil {
		t.Fatal("an empty queue has a channel to wait on")
	}
}
