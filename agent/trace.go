package agent

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"time"

	"github.com/mew-protocol/mew/llm"
	"github.com/mew-protocol/mew/participant"
	"github.com/mew-protocol/mew/protocol"
)

// Batching of streamed model output into trace frames: a frame goes out
// when this much text is waiting or this long passed since the last one.
const (
	traceBatchBytes = 256
	traceBatchDelay = 100 * time.Millisecond
	traceOpenWait   = 2 * time.Second
)

// trace is the stream a reasoning is mirrored into: every thought and
// observation, and the model's output as it is generated. Its methods do
// nothing on a nil trace, the reasoning without a stream. It is used by the
// goroutine answering the chat only.
type trace struct {
	a      *Agent
	id     string
	kind   string // the type of the text waiting in buf
	buf    strings.Builder
	last   time.Time
	broken bool // a frame failed: send no more
}

// traceEvent is one frame of a trace, a JSON object.
type traceEvent struct {
	// Type is "thought", "observation", "content" (answer text as it is
	// generated) or "reasoning" (the model's reasoning as it is
	// generated).
	Type   string `json:"type"`
	Text   string `json:"text,omitempty"`
	Action string `json:"action,omitempty"`
	Tool   string `json:"tool,omitempty"`
}

// openTrace asks for an upload stream for the reasoning whose reasoning/start
// is id, and returns nil when the agent may not open one or the gateway
// does not answer in time.
func (a *Agent) openTrace(ctx context.Context, id string) *trace {
	meta, _ := json.Marshal(map[string]string{"reasoning_id": id})
	ctx, cancel := context.WithTimeout(ctx, traceOpenWait)
	defer cancel()
	sid, err := a.p.RequestStream(ctx, protocol.StreamRequest{
		Direction:   protocol.DirectionUpload,
		Description: "reasoning " + id,
		ContentType: "application/json",
		Metadata:    meta,
	})
	if err != nil {
		if !errors.Is(err, participant.ErrNotAllowed) {
			a.log.Info("agent: no reasoning stream", "reasoning", id, "err", err)
		}
		return nil
	}
	return &trace{a: a, id: sid, last: time.Now()}
}

// write sends ev as one frame, after the text waiting.
func (t *trace) write(ctx context.Context, ev traceEvent) {
	if t == nil {
		return
	}
	t.flush(ctx)
	t.frame(ctx, ev)
}

// delta returns the function that collects the model's streamed output.
func (t *trace) delta(ctx context.Context) func(llm.Delta) {
	return func(d llm.Delta) {
		kind, text := "content", d.Content
		if d.Reasoning != "" {
			kind, text = "reasoning", d.Reasoning
		}
		if text == "" {
			return // a piece of a tool call: the thought will name it
		}
		if kind != t.kind {
			t.flush(ctx)
			t.kind = kind
		}
		t.buf.WriteString(text)
		if t.buf.Len() >= traceBatchBytes || time.Since(t.last) >= traceBatchDelay {
			t.flush(ctx)
		}
	}
}

// flush sends the text waiting, if any.
func (t *trace) flush(ctx context.Context) {
	if t == nil || t.buf.Len() == 0 {
		return
	}
	ev := traceEvent{Type: t.kind, Text: t.buf.String()}
	t.buf.Reset()
	t.frame(ctx, ev)
}

// frame sends one event.
func (t *trace) frame(ctx context.Context, ev traceEvent) {
	t.last = time.Now()
	if t.broken {
		return
	}
	data, err := json.Marshal(ev)
	if err == nil {
		ctx, cancel := context.WithTimeout(ctx, sendTimeout)
		err = t.a.p.SendStreamData(ctx, t.id, data)
		cancel()
	}
	if err != nil && ctx.Err() == nil {
		t.broken = true
		t.a.log.Warn("agent: reasoning stream broken; no more frames", "stream", t.id, "err", err)
	}
}

// close flushes and closes the stream; reason "" means complete.
func (t *trace) close(ctx context.Context, reason string) {
	if t == nil {
		return
	}
	if reason == "" {
		t.flush(ctx)
	}
	ctx, cancel := context.WithTimeout(ctx, sendTimeout)
	defer cancel()
	if err := t.a.p.CloseStream(ctx, t.id, reason); err != nil {
		t.a.log.Warn("agent: reasoning stream not closed", "stream", t.id, "err", err)
	}
}
