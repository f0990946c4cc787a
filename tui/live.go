package tui

import (
	"cmp"
	"fmt"
	"slices"
	"time"

	tea "charm.land/bubbletea/v2"

	"github.com/mew-protocol/mew/internal/clip"
	"github.com/mew-protocol/mew/internal/feed"
	"github.com/mew-protocol/mew/internal/summary"
	"github.com/mew-protocol/mew/internal/termtext"
)

// thinking is the reasonings in progress, each a live line of the
// transcript, oldest first. It owns those lines' updates from the feed's
// events; the root adds the lines and keeps the clock ticking.
type thinking struct {
	byID    map[string]*reasoningEntry // by reasoning id
	order   []string
	ticking bool // a redraw of the live lines is scheduled
}

func newThinking() thinking { return thinking{byID: map[string]*reasoningEntry{}} }

// open is the number of reasonings in progress.
func (t *thinking) open() int { return len(t.byID) }

// tick schedules the next redraw of the live lines while a reasoning is
// open, with sched (Options.Tick; nil: tea.Tick).
func (t *thinking) tick(sched func(d time.Duration, f func(time.Time) tea.Msg) tea.Cmd) tea.Cmd {
	if t.ticking || len(t.byID) == 0 {
		return nil
	}
	t.ticking = true
	if sched == nil {
		sched = func(d time.Duration, f func(time.Time) tea.Msg) tea.Cmd { return tea.Tick(d, f) }
	}
	return sched(500*time.Millisecond, func(at time.Time) tea.Msg { return tickMsg(at) })
}

// ticked takes in the redraw scheduled.
func (t *thinking) ticked() { t.ticking = false }

// started opens a reasoning and returns its line.
func (t *thinking) started(ev *feed.ReasoningStarted, now time.Time) *reasoningEntry {
	r := &reasoningEntry{from: ev.From, start: now, question: ev.Question}
	t.byID[ev.Reasoning] = r
	t.order = append(t.order, ev.Reasoning)
	return r
}

// step follows a reasoning's progress on its line; it reports whether the
// step was a thought.
func (t *thinking) step(ev *feed.ReasoningStep) bool {
	r := t.byID[ev.Reasoning]
	if r == nil {
		return false
	}
	switch {
	case ev.Thought != nil:
		r.thoughts = ev.Thoughts
		r.doing = clip.Runes(summary.Step(ev.Thought), 60)
		r.thought(cmp.Or(ev.Thought.Reasoning, ev.Thought.Message))
		return true
	case ev.Calling != "":
		r.doing = "calling " + ev.Calling
		r.used(ev.Calling)
	case ev.Waiting != "":
		r.doing = "waiting for approval of " + termtext.Line(ev.Waiting)
	}
	return false
}

// ended closes a reasoning: its line stays, as a summary.
func (t *thinking) ended(ev *feed.ReasoningEnded, now time.Time) {
	r := t.byID[ev.Reasoning]
	if r == nil {
		return
	}
	if ev.Cancelled {
		r.cancelled = cmp.Or(ev.Reason, "cancelled")
	}
	r.done, r.end = true, now
	delete(t.byID, ev.Reasoning)
	t.order = slices.DeleteFunc(t.order, func(x string) bool { return x == ev.Reasoning })
}

// latest returns the reasoning opened last, with its id.
func (t *thinking) latest() (string, *reasoningEntry, bool) {
	if len(t.order) == 0 {
		return "", nil, false
	}
	id := t.order[len(t.order)-1]
	return id, t.byID[id], true
}

// of returns the open reasonings of participant from, oldest first.
func (t *thinking) of(from string) []*reasoningEntry {
	var out []*reasoningEntry
	for _, id := range t.order {
		if r := t.byID[id]; r.from == from {
			out = append(out, r)
		}
	}
	return out
}

// calls is the requests shown in the transcript, until their answer,
// which is drawn under its request.
type calls struct {
	byID  map[string]*requestEntry
	order []string // their ids, oldest first; the latest maxRequests are kept
}

func newCalls() calls { return calls{byID: map[string]*requestEntry{}} }

// add keeps a request's line until its answer.
func (c *calls) add(id string, e *requestEntry) {
	if id == "" {
		return
	}
	c.byID[id] = e
	c.order = append(c.order, id)
	if len(c.order) > maxRequests {
		delete(c.byID, c.order[0])
		c.order = c.order[1:]
	}
}

// answer puts a response under the request the feed paired it with.
func (c *calls) answer(ev *feed.Response) {
	e := c.byID[ev.Request]
	if e == nil || e.by != "" {
		return // unpaired: an answer to nothing shown, or not the addressee's
	}
	e.by = ev.From
	switch {
	case ev.Error != nil:
		e.failed = true
		e.answer = fmt.Sprintf("error %d: %s", ev.Error.Code, ev.Error.Message)
	default:
		e.failed = ev.IsError
		e.answer = resultText(ev.Result)
	}
	delete(c.byID, ev.Request)
}

// waiting reports whether one of ids is a call to target still waiting
// for its answer.
func (c *calls) waiting(target string, ids []string) bool {
	for _, id := range ids {
		if r := c.byID[id]; r != nil && r.by == "" && addressee(r.to, target) {
			return true
		}
	}
	return false
}
