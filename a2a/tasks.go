package a2a

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/google/uuid"
)

// settledCh returns the channel closed when t's running turn ends (a
// closed one when none runs).
func (t *task) settledCh(s *Server) <-chan struct{} {
	s.mu.Lock()
	defer s.mu.Unlock()
	return t.settled
}

// owned returns the caller's task id; another caller's is not found.
// Called with s.mu held.
func (s *Server) owned(caller, id string) (*task, *Error) {
	if id == "" {
		return nil, errorf(ErrInvalidParams, "id is required")
	}
	t, ok := s.tasks[id]
	if !ok || t.owner != caller {
		return nil, errorf(ErrTaskNotFound, "no task %q", clip(id))
	}
	return t, nil
}

// checkMessage checks a client's message.
func (s *Server) checkMessage(m *Message) *Error {
	switch {
	case m == nil:
		return errorf(ErrInvalidParams, "message is required")
	case m.MessageID == "":
		return errorf(ErrInvalidParams, "message.messageId is required")
	case len(m.MessageID) > maxIDBytes || len(m.ContextID) > maxIDBytes || len(m.TaskID) > maxIDBytes:
		return errorf(ErrInvalidParams, "message ids are at most %d bytes", maxIDBytes)
	case m.Role != RoleUser:
		return errorf(ErrInvalidParams, "message.role must be %s, got %q", RoleUser, clip(string(m.Role)))
	case len(m.Parts) == 0:
		return errorf(ErrInvalidParams, "message.parts needs at least one part")
	case len(m.Parts) > DefaultMaxParts:
		return errorf(ErrInvalidParams, "message.parts has more than %d parts", DefaultMaxParts)
	case !isObject(m.Metadata):
		return errorf(ErrInvalidParams, "message.metadata must be an object")
	}
	return nil
}

// send creates a task for a message, or continues the caller's task it
// names, subscribes sub (when not nil) and starts a turn. It returns the
// task as it was before the turn, a stream's first event.
func (s *Server) send(caller string, p SendMessageRequest, sub *subscriber) (*task, Task, *Error) {
	if e := s.checkMessage(p.Message); e != nil {
		return nil, Task{}, e
	}
	if p.Configuration != nil && len(p.Configuration.TaskPushNotificationConfig) > 0 &&
		!bytes.Equal(bytes.TrimSpace(p.Configuration.TaskPushNotificationConfig), []byte("null")) {
		return nil, Task{}, errorf(ErrPushNotificationNotSupported, "this agent does not push notifications")
	}
	if e := s.checkOutputModes(p.Configuration); e != nil {
		return nil, Task{}, e
	}
	m := *p.Message
	now := time.Now()
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return nil, Task{}, errorf(ErrInternal, "the agent is shutting down")
	}
	var t *task
	if m.TaskID != "" {
		var e *Error
		if t, e = s.owned(caller, m.TaskID); e != nil {
			return nil, Task{}, e
		}
		switch st := t.t.Status.State; {
		case st.Terminal():
			return nil, Task{}, errorf(ErrUnsupportedOperation, "task %s is %s and takes no more messages", t.t.ID, st)
		case t.running():
			return nil, Task{}, errorf(ErrUnsupportedOperation, "task %s is still working; send again when it asks for input", t.t.ID)
		}
		if m.ContextID != "" && m.ContextID != t.t.ContextID {
			return nil, Task{}, errorf(ErrInvalidParams, "message.contextId %q is not the task's context", clip(m.ContextID))
		}
		m.ContextID = t.t.ContextID
	} else {
		if !s.evict(now) {
			return nil, Task{}, errorf(ErrInternal, "the agent has too many tasks; try again later")
		}
		if s.activeTasks(caller) >= s.opts.MaxActivePerCaller {
			return nil, Task{}, errorf(ErrInternal, "you have %d unfinished tasks, the most this agent runs for one caller; wait for one to finish", s.opts.MaxActivePerCaller)
		}
		if m.ContextID == "" {
			m.ContextID = uuid.NewString()
		}
		t = &task{owner: caller, subs: map[*subscriber]struct{}{},
			t: Task{ID: uuid.NewString(), ContextID: m.ContextID, Status: TaskStatus{State: TaskStateSubmitted, Timestamp: Timestamp(now)}}}
		s.tasks[t.t.ID] = t
	}
	m.TaskID = t.t.ID
	s.addHistory(t, m)
	first := t.snapshot(nil, true)
	if sub != nil {
		sub.t = t
		t.subs[sub] = struct{}{}
	}
	s.startTurn(t, m)
	return t, first, nil
}

// checkOutputModes refuses a request that accepts none of the modes the
// agent answers in.
func (s *Server) checkOutputModes(cfg *SendMessageConfiguration) *Error {
	if cfg == nil || len(cfg.AcceptedOutputModes) == 0 || len(s.opts.Card.DefaultOutputModes) == 0 {
		return nil
	}
	for _, want := range cfg.AcceptedOutputModes {
		for _, have := range s.opts.Card.DefaultOutputModes {
			if strings.EqualFold(want, have) || want == "*/*" {
				return nil
			}
		}
	}
	return errorf(ErrContentTypeNotSupported, "this agent answers in %s", strings.Join(s.opts.Card.DefaultOutputModes, ", "))
}

// addHistory appends m to t's history, dropping the oldest past
// MaxHistory. Called with s.mu held.
func (s *Server) addHistory(t *task, m Message) {
	t.t.History = append(t.t.History, m)
	if over := len(t.t.History) - s.opts.MaxHistory; over > 0 {
		t.t.History = append(t.t.History[:0:0], t.t.History[over:]...)
	}
}

// startTurn runs the executor on m for t, on a goroutine of s. Called
// with s.mu held.
func (s *Server) startTurn(t *task, m Message) {
	t.turn++
	ctx, cancel := context.WithCancel(s.ctx)
	t.cancel = cancel
	t.settled = make(chan struct{})
	run := &Run{s: s, t: t, turn: t.turn, Caller: t.owner, TaskID: t.t.ID, ContextID: t.t.ContextID,
		Message: m, History: append([]Message(nil), t.t.History[:len(t.t.History)-1]...)}
	s.setStatus(t, TaskStatus{State: TaskStateWorking}, false)
	s.wg.Go(func() {
		defer cancel()
		err := s.execute(ctx, run)
		s.mu.Lock()
		defer s.mu.Unlock()
		if t.turn != run.turn || !t.running() {
			return
		}
		switch {
		case ctx.Err() != nil:
			s.endTurn(t, TaskStatus{State: TaskStateCanceled, Message: agentMessage(t, "The agent was stopped.")})
		case err != nil:
			s.endTurn(t, TaskStatus{State: TaskStateFailed, Message: agentMessage(t, err.Error())})
		default:
			s.endTurn(t, TaskStatus{State: TaskStateCompleted})
		}
	})
}

// execute runs the executor, turning a panic into an error: a bad input
// must not take the agent down.
func (s *Server) execute(ctx context.Context, run *Run) (err error) {
	defer func() {
		if v := recover(); v != nil {
			s.log.Error("a2a: the executor panicked", "task", run.TaskID, "panic", v)
			err = errors.New("the agent failed")
		}
	}()
	return s.opts.Executor.Execute(ctx, run)
}

// setStatus records a status and publishes it; with end, the streams
// close after it. Called with s.mu held.
func (s *Server) setStatus(t *task, st TaskStatus, end bool) {
	now := time.Now()
	if st.Timestamp == "" {
		st.Timestamp = Timestamp(now)
	}
	t.t.Status = st
	t.updated = now
	if st.Message != nil {
		s.addHistory(t, *st.Message)
	}
	ev := TaskStatusUpdateEvent{TaskID: t.t.ID, ContextID: t.t.ContextID, Status: st}
	ev.Status.Message = cloneMessage(st.Message)
	t.publish(StreamResponse{StatusUpdate: &ev}, end)
}

// endTurn ends t's running turn in st. Called with s.mu held.
func (s *Server) endTurn(t *task, st TaskStatus) {
	if t.cancel != nil {
		t.cancel()
		t.cancel = nil
		close(t.settled)
	}
	s.setStatus(t, st, true)
}

// agentMessage is a status message of the agent with text.
func agentMessage(t *task, text string) *Message {
	return &Message{MessageID: uuid.NewString(), ContextID: t.t.ContextID, TaskID: t.t.ID, Role: RoleAgent,
		Parts: []Part{TextPart(text)}}
}

// cancelTask cancels the caller's task id.
func (s *Server) cancelTask(caller, id string) (*Task, *Error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	t, e := s.owned(caller, id)
	if e != nil {
		return nil, e
	}
	if st := t.t.Status.State; st.Terminal() {
		return nil, errorf(ErrTaskNotCancelable, "task %s is already %s", t.t.ID, st)
	}
	s.endTurn(t, TaskStatus{State: TaskStateCanceled, Message: agentMessage(t, "Canceled by the client.")})
	snap := t.snapshot(nil, true)
	return &snap, nil
}

// Run is one turn of a task, as an Executor sees it.
type Run struct {
	s    *Server
	t    *task
	turn int

	// Caller is who sent the message (Options.Authenticate).
	Caller string
	// TaskID and ContextID name the task and its context.
	TaskID, ContextID string
	// Message is the message of this turn.
	Message Message
	// History is the task's messages before Message (the kept ones).
	History []Message
}

// ErrTurnOver: the turn already ended (in a final or interrupted state,
// or canceled); the update was not recorded.
var ErrTurnOver = errors.New("a2a: the turn is over")

// update applies f to the task while this turn is the running one.
func (r *Run) update(f func(t *task)) error {
	r.s.mu.Lock()
	defer r.s.mu.Unlock()
	if r.t.turn != r.turn || !r.t.running() {
		return ErrTurnOver
	}
	f(r.t)
	return nil
}

// Working reports progress: the task stays working, with text as its
// status message.
func (r *Run) Working(text string) error {
	return r.update(func(t *task) {
		r.s.setStatus(t, TaskStatus{State: TaskStateWorking, Message: agentMessage(t, text)}, false)
	})
}

// AddArtifact adds an artifact to the task (an id is made when it has
// none) and streams it.
func (r *Run) AddArtifact(a Artifact) error {
	if a.ArtifactID == "" {
		a.ArtifactID = uuid.NewString()
	}
	var full bool
	err := r.update(func(t *task) {
		if len(t.t.Artifacts) >= r.s.opts.MaxArtifacts {
			full = true
			return
		}
		t.t.Artifacts = append(t.t.Artifacts, a)
		t.updated = time.Now()
		t.publish(StreamResponse{ArtifactUpdate: &TaskArtifactUpdateEvent{TaskID: t.t.ID, ContextID: t.t.ContextID, Artifact: a, LastChunk: true}}, false)
	})
	if full {
		return fmt.Errorf("a2a: a task has at most %d artifacts", r.s.opts.MaxArtifacts)
	}
	return err
}

// End ends the turn in state, which must be final (completed, failed,
// rejected, canceled: the agent gave up) or interrupted (input-required,
// auth-required), with the agent's message saying why (parts may be
// none).
func (r *Run) End(state TaskState, parts ...Part) error {
	if !state.Interrupted() && !state.Terminal() {
		return fmt.Errorf("a2a: a turn cannot end in %s", state)
	}
	return r.update(func(t *task) {
		st := TaskStatus{State: state}
		if len(parts) > 0 {
			st.Message = agentMessage(t, "")
			st.Message.Parts = parts
		}
		r.s.endTurn(t, st)
	})
}
