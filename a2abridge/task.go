package a2abridge

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/google/uuid"

	"github.com/mew-protocol/mew/a2a"
	"github.com/mew-protocol/mew/internal/clip"
)

// Polling of an agent that does not stream, for a task that is still
// working when SendMessage returns.
const (
	pollFirst = 200 * time.Millisecond
	pollMax   = 5 * time.Second
	// maxArtifacts bounds the artifacts an outcome keeps.
	maxArtifacts = 64
)

// outcome is what the bridge knows of a task after an exchange: where it
// stands and what it produced, or the agent's direct reply.
type outcome struct {
	taskID, contextID string
	state             a2a.TaskState // "" before the agent named one, and for a direct reply
	status            string        // the text of the latest status message
	artifacts         []a2a.Artifact
	reply             *a2a.Message // an answer without a task
	size              int          // bytes of the parts kept
	clipped           bool         // parts were left out past Options.MaxAnswerBytes
}

// settled reports whether the exchange is over: a direct reply, or a task
// that finished or waits for its client.
func (o *outcome) settled() bool {
	return o.reply != nil || o.state.Terminal() || o.state.Interrupted()
}

// progress is one thing worth showing while a task runs.
type progress struct {
	state    a2a.TaskState
	text     string // a status message's text
	artifact string // the name (or id) of an artifact that began
}

// apply takes one event into o and returns what is worth showing of it.
func (o *outcome) apply(ev a2a.StreamResponse, maxBytes int) (progress, bool) {
	switch {
	case ev.Task != nil:
		t := ev.Task
		o.taskID, o.contextID = t.ID, t.ContextID
		o.setState(t.Status)
		o.artifacts, o.size = nil, 0
		for _, a := range t.Artifacts {
			o.addArtifact(a, false, maxBytes)
		}
		return progress{state: t.Status.State, text: o.status}, o.status != ""
	case ev.StatusUpdate != nil:
		u := ev.StatusUpdate
		o.taskID, o.contextID = u.TaskID, u.ContextID
		o.setState(u.Status)
		return progress{state: u.Status.State, text: u.Status.Message.Text()}, u.Status.Message.Text() != ""
	case ev.ArtifactUpdate != nil:
		u := ev.ArtifactUpdate
		o.taskID, o.contextID = u.TaskID, u.ContextID
		isNew := o.addArtifact(u.Artifact, u.Append, maxBytes)
		name := u.Artifact.Name
		if name == "" {
			name = u.Artifact.ArtifactID
		}
		return progress{state: o.state, artifact: name}, isNew
	case ev.Message != nil:
		m := *ev.Message
		o.reply = &m
		o.taskID, o.contextID = m.TaskID, m.ContextID
		o.size, o.clipped = 0, false
		m.Parts = o.keepParts(m.Parts, maxBytes)
	}
	return progress{}, false
}

func (o *outcome) setState(st a2a.TaskStatus) {
	if st.State != "" {
		o.state = st.State
	}
	o.status = st.Message.Text() // a status without a message says nothing more
}

// addArtifact keeps an artifact, or adds to the one of its id (append),
// and reports whether it is new.
func (o *outcome) addArtifact(a a2a.Artifact, appendParts bool, maxBytes int) bool {
	for i := range o.artifacts {
		if o.artifacts[i].ArtifactID == a.ArtifactID && a.ArtifactID != "" {
			parts := o.keepParts(a.Parts, maxBytes)
			if appendParts {
				// A chunk of text goes on the text it continues.
				have := o.artifacts[i].Parts
				if n := len(have); n > 0 && len(parts) > 0 && have[n-1].Kind() == "text" && parts[0].Kind() == "text" {
					have[n-1] = a2a.TextPart(have[n-1].Text + parts[0].Text)
					parts = parts[1:]
				}
				o.artifacts[i].Parts = append(have, parts...)
			} else {
				o.artifacts[i].Parts = parts
			}
			return false
		}
	}
	if len(o.artifacts) >= maxArtifacts {
		o.clipped = true
		return false
	}
	a.Parts = o.keepParts(a.Parts, maxBytes)
	o.artifacts = append(o.artifacts, a)
	return true
}

// keepParts returns the parts that fit in what is left of maxBytes; a
// text part that does not fit whole is cut.
func (o *outcome) keepParts(parts []a2a.Part, maxBytes int) []a2a.Part {
	var kept []a2a.Part
	for _, p := range parts {
		n := len(p.Text) + len(p.Raw) + len(p.URL) + len(p.Data)
		left := maxBytes - o.size
		switch {
		case n <= left:
		case p.Kind() == "text" && left > 0:
			p = a2a.TextPart(clip.Bytes(p.Text, left))
			n = len(p.Text)
			o.clipped = true
		default:
			o.clipped = true
			continue
		}
		o.size += n
		kept = append(kept, p)
	}
	return kept
}

// answer is the text an outcome gives the space: the reply, else the
// artifacts, else the status message.
func (o *outcome) answer() string {
	var b strings.Builder
	add := func(parts []a2a.Part) {
		for _, p := range parts {
			if s := partText(p); s != "" {
				if b.Len() > 0 {
					b.WriteString("\n\n")
				}
				b.WriteString(s)
			}
		}
	}
	switch {
	case o.reply != nil:
		add(o.reply.Parts)
	default:
		for _, a := range o.artifacts {
			add(a.Parts)
		}
	}
	if b.Len() == 0 {
		b.WriteString(o.status)
	}
	if o.clipped {
		b.WriteString("\n\n[cut: the agent's answer is longer than the bridge takes]")
	}
	return b.String()
}

// partText is a part as text: its text, its data as JSON, a file by name
// and type, a URL as it is.
func partText(p a2a.Part) string {
	switch p.Kind() {
	case "text":
		return p.Text
	case "data":
		return string(p.Data)
	case "url":
		return p.URL
	case "raw":
		name := p.Filename
		if name == "" {
			name = "a file"
		}
		return fmt.Sprintf("[%s: %s, %d bytes]", name, orDefault(p.MediaType, "application/octet-stream"), len(p.Raw))
	}
	return ""
}

func orDefault(s, def string) string {
	if s == "" {
		return def
	}
	return s
}

// clipText shortens s for a message.
func clipText(s string, n int) string { return clip.Mark(s, n) }

// userMessage is a message to the agent: text, an optional data part, the
// skill in metadata when one is named, continuing task and context when
// given.
func userMessage(text string, data json.RawMessage, skill, taskID, contextID string) a2a.Message {
	m := a2a.Message{MessageID: uuid.NewString(), Role: a2a.RoleUser, TaskID: taskID, ContextID: contextID}
	if text != "" {
		m.Parts = append(m.Parts, a2a.TextPart(text))
	}
	if len(data) > 0 {
		m.Parts = append(m.Parts, a2a.Part{Data: data, MediaType: "application/json"})
	}
	if skill != "" {
		m.Metadata, _ = json.Marshal(map[string]string{"skillId": skill})
	}
	return m
}

// exchange sends msg and follows its task until it finishes, waits for
// input, or ctx ends: over a stream when the card says the agent streams,
// else by polling. show receives what is worth showing, in order. The
// outcome is never nil: after an error it holds what was learned (the
// task id, to cancel it). A stream that breaks is subscribed to once
// more; a second break, or more events than Options.MaxEvents, is an
// error.
func (b *Bridge) exchange(ctx context.Context, msg a2a.Message, show func(progress)) (*outcome, error) {
	o := &outcome{taskID: msg.TaskID, contextID: msg.ContextID}
	if show == nil {
		show = func(progress) {}
	}
	req := a2a.SendMessageRequest{Message: &msg}
	if b.card.Capabilities.Streaming == nil || !*b.card.Capabilities.Streaming {
		return o, b.poll(ctx, req, o, show)
	}
	s, err := b.rc.SendStreamingMessage(ctx, req)
	if err != nil {
		return o, err
	}
	defer func() { _ = s.Close() }()
	resubscribed := false
	for events := 0; ; events++ {
		if events >= b.opts.MaxEvents {
			return o, fmt.Errorf("%w: more than %d events", ErrStreamLimit, b.opts.MaxEvents)
		}
		ev, err := s.Next()
		switch {
		case errors.Is(err, io.EOF):
			if !o.settled() {
				return o, fmt.Errorf("%w: the stream ended with the task %s", ErrStreamBroken, stateName(o.state))
			}
			return o, nil
		case err != nil && ctx.Err() != nil:
			return o, context.Cause(ctx)
		case err != nil:
			var rpcErr *a2a.Error
			if errors.As(err, &rpcErr) || o.taskID == "" || resubscribed {
				return o, b.afterBreak(ctx, o, err)
			}
			// The stream dropped: the task may well go on. Subscribe once.
			resubscribed = true
			b.log.Info("the agent's stream broke; subscribing to the task again", "task", o.taskID, "err", err)
			_ = s.Close()
			if s, err = b.rc.SubscribeToTask(ctx, a2a.SubscribeToTaskRequest{ID: o.taskID}); err != nil {
				return o, b.afterBreak(ctx, o, err)
			}
			continue
		}
		// The task that opens the stream of a message continuing it may
		// still show the question it answers: that does not end it.
		stale := events == 0 && msg.TaskID != "" && ev.Task != nil && ev.Task.Status.State.Interrupted()
		if p, ok := o.apply(ev, b.opts.MaxAnswerBytes); ok && !stale {
			show(p)
		}
		if ev.Ends() && !stale {
			return o, nil
		}
	}
}

// afterBreak decides what a stream's second break means: the task may
// have finished meanwhile (GetTask says), else the break is reported.
func (b *Bridge) afterBreak(ctx context.Context, o *outcome, cause error) error {
	if ctx.Err() != nil {
		return context.Cause(ctx)
	}
	var rpcErr *a2a.Error
	if o.taskID == "" || errors.As(cause, &rpcErr) && !errors.Is(cause, a2a.ErrUnsupportedOperation) {
		return cause
	}
	t, err := b.rc.GetTask(ctx, a2a.GetTaskRequest{ID: o.taskID})
	if err == nil {
		o.apply(a2a.StreamResponse{Task: t}, b.opts.MaxAnswerBytes)
		if o.settled() {
			return nil
		}
	}
	return fmt.Errorf("%w (task %s was %s when last seen): %w", ErrStreamBroken, o.taskID, stateName(o.state), cause)
}

// poll sends req with SendMessage and, while the task works, reads it
// with GetTask at growing intervals.
func (b *Bridge) poll(ctx context.Context, req a2a.SendMessageRequest, o *outcome, show func(progress)) error {
	res, err := b.rc.SendMessage(ctx, req)
	if err != nil {
		return err
	}
	if res.Message != nil {
		o.apply(a2a.StreamResponse{Message: res.Message}, b.opts.MaxAnswerBytes)
		return nil
	}
	last := ""
	ev := a2a.StreamResponse{Task: res.Task}
	wait := pollFirst
	for polls := 0; ; polls++ {
		if p, ok := o.apply(ev, b.opts.MaxAnswerBytes); ok && p.text != last {
			last = p.text
			show(p)
		}
		if o.settled() {
			return nil
		}
		if polls >= b.opts.MaxEvents {
			return fmt.Errorf("%w: the task still worked after %d polls", ErrStreamLimit, polls)
		}
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return context.Cause(ctx)
		case <-t.C:
		}
		wait = min(wait*2, pollMax)
		task, err := b.rc.GetTask(ctx, a2a.GetTaskRequest{ID: o.taskID})
		if err != nil {
			return err
		}
		ev = a2a.StreamResponse{Task: task}
	}
}

// cancelRemote tells the agent to cancel a task, within cancelTimeout
// (and ctx, which is not the task's: that one has ended):
// the bridge stopped caring (canceled in the space, timed out, cut). A
// task that already finished is left alone.
func (b *Bridge) cancelRemote(ctx context.Context, o *outcome, why string) {
	if o == nil || o.taskID == "" || o.state.Terminal() {
		return
	}
	ctx, cancel := context.WithTimeout(ctx, cancelTimeout)
	defer cancel()
	if _, err := b.rc.CancelTask(ctx, a2a.CancelTaskRequest{ID: o.taskID}); err != nil {
		b.log.Info("the agent did not cancel the task", "task", o.taskID, "why", why, "err", err)
		return
	}
	b.log.Info("canceled the task at the agent", "task", o.taskID, "why", why)
}

// stateName is a task state as people read it: "input-required".
func stateName(s a2a.TaskState) string {
	if s == "" {
		return "unknown"
	}
	return strings.ReplaceAll(strings.ToLower(strings.TrimPrefix(string(s), "TASK_STATE_")), "_", "-")
}
