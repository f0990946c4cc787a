package participant_test

import (
	"errors"
	"slices"
	"sync"
	"testing"

	"github.com/mew-protocol/mew/gateway"
	"github.com/mew-protocol/mew/participant"
	"github.com/mew-protocol/mew/protocol"
)

// streamByID returns p's active stream id.
func streamByID(p *participant.Participant, id string) (protocol.StreamInfo, bool) {
	for _, s := range p.ActiveStreams() {
		if s.StreamID == id {
			return s, true
		}
	}
	return protocol.StreamInfo{}, false
}

// frames collects the data frames of one stream.
type frames struct {
	mu  sync.Mutex
	got []string
}

func (f *frames) add(data []byte) {
	f.mu.Lock()
	f.got = append(f.got, string(data))
	f.mu.Unlock()
}

func (f *frames) list() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.got)
}

func TestStreamLifecycle(t *testing.T) {
	g := startSpace(t, ctlSpace, gateway.Options{})
	boss := joinReady(t, g, "boss", participant.Options{})
	worker := joinReady(t, g, "worker", participant.Options{})
	ctx := testCtx(t)

	sid, err := worker.RequestStream(ctx, protocol.StreamRequest{
		Direction:   protocol.DirectionUpload,
		Description: "reasoning trace",
		ContentType: "text/plain",
		Format:      "utf8",
	})
	if err != nil {
		t.Fatal(err)
	}
	if sid == "" {
		t.Fatal("no stream id")
	}
	var atBoss, atWorker frames
	removeBoss := boss.OnStreamData(sid, atBoss.add)
	defer removeBoss()
	worker.OnStreamData(sid, atWorker.add)

	for _, p := range []*participant.Participant{boss, worker} {
		waitUntil(t, "the stream is described at "+p.ID(), func() bool {
			s, ok := streamByID(p, sid)
			return ok && s.Description == "reasoning trace"
		})
		s, _ := streamByID(p, sid)
		if s.Owner != "worker" || !slices.Equal(s.AuthorizedWriters, []string{"worker"}) ||
			s.Direction != "upload" || s.ContentType != "text/plain" || s.Format != "utf8" || s.Created == "" {
			t.Errorf("%s sees %+v", p.ID(), s)
		}
	}

	for _, data := range []string{"one", "two"} {
		if err := worker.SendStreamData(ctx, sid, []byte(data)); err != nil {
			t.Fatal(err)
		}
	}
	waitUntil(t, "the frames reach the boss", func() bool { return slices.Equal(atBoss.list(), []string{"one", "two"}) })
	waitUntil(t, "the frames come back to the writer", func() bool { return slices.Equal(atWorker.list(), []string{"one", "two"}) })

	// A late joiner learns the stream from its welcome.
	other := joinReady(t, g, "other", participant.Options{})
	waitUntil(t, "the late joiner knows the stream", func() bool {
		s, ok := streamByID(other, sid)
		return ok && s.Owner == "worker" && s.Description == "reasoning trace" && s.Format == "utf8"
	})

	// Only the owner closes it.
	seen := watch(other.Client())
	if err := other.CloseStream(ctx, sid, ""); err != nil {
		t.Fatal(err)
	}
	seen.Wait(t, "the gateway refuses the non-owner's close", func(e *protocol.Envelope) bool {
		var se protocol.SystemError
		return e.Kind == protocol.KindSystemError && e.DecodePayload(&se) == nil && se.Error == "not_stream_owner"
	})
	if _, ok := streamByID(boss, sid); !ok {
		t.Fatal("the stream went away after a refused close")
	}
	if err := worker.CloseStream(ctx, sid, ""); err != nil {
		t.Fatal(err)
	}
	for _, p := range []*participant.Participant{boss, worker, other} {
		waitUntil(t, "the stream is closed at "+p.ID(), func() bool { _, ok := streamByID(p, sid); return !ok })
	}
	late := joinReady(t, g, "quiet", participant.Options{})
	if len(late.ActiveStreams()) != 0 {
		t.Errorf("a closed stream in a later welcome: %+v", late.ActiveStreams())
	}
}

func TestStreamRequestRefused(t *testing.T) {
	g := startSpace(t, ctlSpace, gateway.Options{})
	worker := joinReady(t, g, "worker", participant.Options{})
	quiet := joinReady(t, g, "quiet", participant.Options{})
	ctx := testCtx(t)

	_, err := worker.RequestStream(ctx, protocol.StreamRequest{Direction: protocol.DirectionUpload, Target: []string{"ghost"}})
	var ge *participant.GatewayError
	if !errors.As(err, &ge) || ge.Code != "target_not_found" {
		t.Errorf("a stream for a missing target: %v, want target_not_found", err)
	}
	if _, err := worker.RequestStream(ctx, protocol.StreamRequest{}); err == nil {
		t.Error("a stream without a direction was requested")
	}
	if _, err := quiet.RequestStream(ctx, protocol.StreamRequest{Direction: protocol.DirectionDownload}); !errors.Is(err, participant.ErrNotAllowed) {
		t.Errorf("RequestStream without the capability: %v, want ErrNotAllowed", err)
	}
	if err := quiet.CloseStream(ctx, "stream-1", ""); !errors.Is(err, participant.ErrNotAllowed) {
		t.Errorf("CloseStream without the capability: %v, want ErrNotAllowed", err)
	}
	if err := worker.SendStreamData(ctx, "bad#id", nil); err == nil {
		t.Error("SendStreamData accepted a stream id with #")
	}
}
