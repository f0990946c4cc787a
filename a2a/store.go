package a2a

import (
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"
)

// task is a stored task and what serves it. Every field is guarded by
// Server.mu.
type task struct {
	t       Task
	owner   string
	updated time.Time
	turn    int                // counts the turns; a Run of an older turn changes nothing
	cancel  context.CancelFunc // ends the running turn; nil between turns
	settled chan struct{}      // closed when the running turn ends
	subs    map[*subscriber]struct{}
}

// running reports whether a turn of t is under way.
func (t *task) running() bool { return t.cancel != nil }

// subscriber is one open stream of a task's events.
type subscriber struct {
	t       *task // the task it is subscribed to, once it is
	ch      chan StreamResponse
	dropped bool // closed because it fell behind
}

// snapshot copies t for a caller: history cut to historyLength (nil means
// all of it, 0 none), artifacts left out unless withArtifacts.
func (t *task) snapshot(historyLength *int32, withArtifacts bool) Task {
	out := t.t
	out.Status.Message = cloneMessage(t.t.Status.Message)
	out.History = nil
	h := t.t.History
	if historyLength != nil {
		n := max(int(*historyLength), 0)
		h = h[max(len(h)-n, 0):]
	}
	if len(h) > 0 {
		out.History = slices.Clone(h)
	}
	out.Artifacts = nil
	if withArtifacts && len(t.t.Artifacts) > 0 {
		out.Artifacts = slices.Clone(t.t.Artifacts)
	}
	return out
}

func cloneMessage(m *Message) *Message {
	if m == nil {
		return nil
	}
	c := *m
	return &c
}

// publish hands ev to every subscriber without blocking: one that cannot
// take it is closed and forgotten (its client may subscribe again). With
// end, every stream is closed after ev. Called with Server.mu held.
func (t *task) publish(ev StreamResponse, end bool) {
	for sub := range t.subs {
		select {
		case sub.ch <- ev:
		default:
			sub.dropped = true
			close(sub.ch)
			delete(t.subs, sub)
			continue
		}
		if end {
			close(sub.ch)
			delete(t.subs, sub)
		}
	}
}

// pageToken is the opaque cursor of ListTasks: the last task of a page, in
// the listing's order (update time descending, then id).
func pageToken(updated time.Time, id string) string {
	return base64.RawURLEncoding.EncodeToString([]byte(strconv.FormatInt(updated.UnixNano(), 10) + ":" + id))
}

func parsePageToken(s string) (time.Time, string, error) {
	b, err := base64.RawURLEncoding.DecodeString(s)
	if err != nil {
		return time.Time{}, "", errors.New("the page token is not one this server gave")
	}
	ns, id, ok := strings.Cut(string(b), ":")
	n, err := strconv.ParseInt(ns, 10, 64)
	if !ok || err != nil {
		return time.Time{}, "", errors.New("the page token is not one this server gave")
	}
	return time.Unix(0, n), id, nil
}

// before reports whether a comes before b in a listing.
func before(a, b *task) bool {
	if !a.updated.Equal(b.updated) {
		return a.updated.After(b.updated)
	}
	return a.t.ID < b.t.ID
}

// evict forgets finished tasks older than the retention, and, while the
// store is full, the oldest finished ones. It reports whether there is
// room for one more task. Called with Server.mu held.
func (s *Server) evict(now time.Time) bool {
	for id, t := range s.tasks {
		if t.t.Status.State.Terminal() && now.Sub(t.updated) > s.opts.Retention {
			delete(s.tasks, id)
		}
	}
	for len(s.tasks) >= s.opts.MaxTasks {
		var oldest *task
		for _, t := range s.tasks {
			if t.t.Status.State.Terminal() && len(t.subs) == 0 && (oldest == nil || t.updated.Before(oldest.updated)) {
				oldest = t
			}
		}
		if oldest == nil {
			return false
		}
		delete(s.tasks, oldest.t.ID)
	}
	return true
}

// activeTasks counts the caller's tasks that are not finished. Called with
// Server.mu held.
func (s *Server) activeTasks(caller string) int {
	n := 0
	for _, t := range s.tasks {
		if t.owner == caller && !t.t.Status.State.Terminal() {
			n++
		}
	}
	return n
}

// list answers ListTasks for caller.
func (s *Server) list(caller string, req ListTasksRequest) (*ListTasksResponse, *Error) {
	size := 50
	if req.PageSize != nil {
		if *req.PageSize < 1 || *req.PageSize > 100 {
			return nil, errorf(ErrInvalidParams, "pageSize must be between 1 and 100, got %d", *req.PageSize)
		}
		size = int(*req.PageSize)
	}
	if req.HistoryLength != nil && *req.HistoryLength < 0 {
		return nil, errorf(ErrInvalidParams, "historyLength must not be negative")
	}
	if req.Status != "" && req.Status != TaskStateUnspecified && !req.Status.Known() {
		return nil, errorf(ErrInvalidParams, "status %q is not a task state", clip(string(req.Status)))
	}
	var after time.Time
	if req.StatusTimestampAfter != "" {
		t, err := time.Parse(time.RFC3339Nano, req.StatusTimestampAfter)
		if err != nil {
			return nil, errorf(ErrInvalidParams, "statusTimestampAfter is not an RFC 3339 time")
		}
		after = t
	}
	var cursor *task
	if req.PageToken != "" {
		at, id, err := parsePageToken(req.PageToken)
		if err != nil {
			return nil, errorf(ErrInvalidParams, "%v", err)
		}
		cursor = &task{updated: at, t: Task{ID: id}}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	var match []*task
	for _, t := range s.tasks {
		switch {
		case t.owner != caller:
		case req.ContextID != "" && t.t.ContextID != req.ContextID:
		case req.Status != "" && req.Status != TaskStateUnspecified && t.t.Status.State != req.Status:
		case !after.IsZero() && !t.updated.After(after):
		default:
			match = append(match, t)
		}
	}
	slices.SortFunc(match, func(a, b *task) int {
		if before(a, b) {
			return -1
		}
		return 1
	})
	total := len(match)
	if cursor != nil {
		i := 0
		for i < len(match) && !before(cursor, match[i]) {
			i++
		}
		match = match[i:]
	}
	resp := &ListTasksResponse{Tasks: []Task{}, TotalSize: int32(total)}
	withArtifacts := req.IncludeArtifacts != nil && *req.IncludeArtifacts
	for i, t := range match {
		if i == size {
			last := match[i-1]
			resp.NextPageToken = pageToken(last.updated, last.t.ID)
			break
		}
		resp.Tasks = append(resp.Tasks, t.snapshot(req.HistoryLength, withArtifacts))
	}
	resp.PageSize = int32(len(resp.Tasks))
	return resp, nil
}

// clip shortens s for an error message.
func clip(s string) string {
	if len(s) > 64 {
		return fmt.Sprintf("%.64s…", s)
	}
	return s
}
