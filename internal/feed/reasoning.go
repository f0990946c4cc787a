package feed

import (
	"slices"

	"github.com/mew-protocol/mew/protocol"
)

// open returns the reasoning id names, opening it for env's sender when
// it is new; nil when it is another's, for nobody speaks in another's
// reasoning. A new one may end the oldest, evicted.
func (r *Reader) open(env *protocol.Envelope, m Meta, id string) (*reasoning, []Event) {
	if x := r.reasonings[id]; x != nil {
		if x.from != env.From {
			return nil, nil
		}
		return x, nil
	}
	var evs []Event
	if len(r.reaOrder) >= MaxReasonings {
		evs = append(evs, r.end(m, r.reaOrder[0], Evicted, false, ""))
	}
	x := &reasoning{from: env.From}
	r.reasonings[id] = x
	r.reaOrder = append(r.reaOrder, id)
	return x, append(evs, &ReasoningStarted{Meta: m, Reasoning: id})
}

// start takes in a reasoning/start: the reasoning's id is the envelope's.
func (r *Reader) start(env *protocol.Envelope, m Meta) []Event {
	if env.ID == "" {
		return nil
	}
	x, evs := r.open(env, m, env.ID)
	if x == nil || len(evs) == 0 {
		return nil // a second start of one reasoning, or another's
	}
	if len(env.CorrelationID) > 0 {
		x.question = env.CorrelationID[0]
		evs[len(evs)-1].(*ReasoningStarted).Question = x.question
	}
	return evs
}

// thought takes in a reasoning/thought; a thought of a reasoning whose
// start was not seen (sent before I joined) opens it.
func (r *Reader) thought(env *protocol.Envelope, m Meta) ([]Event, error) {
	p, err := decode[protocol.Reasoning](env)
	if err != nil {
		return nil, err
	}
	if env.Context == "" {
		return nil, nil // a thought of no reasoning
	}
	x, evs := r.open(env, m, env.Context)
	if x == nil {
		return nil, nil
	}
	x.thoughts++
	return append(evs, x.step(m, env.Context, func(s *ReasoningStep) { s.Thought = p })), nil
}

// conclude ends a reasoning at its reasoning/conclusion or at its
// reasoner's reasoning/cancel; a cancel from another asks the reasoner to
// stop, a Control.
func (r *Reader) conclude(env *protocol.Envelope, m Meta) ([]Event, error) {
	p, err := decode[struct {
		Cancelled bool   `json:"cancelled"`
		Reason    string `json:"reason"`
	}](env)
	if err != nil {
		return nil, err
	}
	x := r.reasonings[env.Context]
	if x == nil || x.from != env.From {
		if env.Kind == protocol.KindReasoningCancel {
			return []Event{&Control{Meta: m, Reason: p.Reason}}, nil
		}
		return nil, nil // its start was not seen, or the answer came first
	}
	if env.Kind == protocol.KindReasoningCancel {
		return []Event{r.end(m, env.Context, Cancelled, true, p.Reason)}, nil
	}
	return []Event{r.end(m, env.Context, Concluded, p.Cancelled, p.Reason)}, nil
}

// end forgets reasoning id and sums it up.
func (r *Reader) end(m Meta, id, cause string, cancelled bool, reason string) *ReasoningEnded {
	x := r.reasonings[id]
	delete(r.reasonings, id)
	r.reaOrder = slices.DeleteFunc(r.reaOrder, func(s string) bool { return s == id })
	return &ReasoningEnded{Meta: m, Reasoning: id, Reasoner: x.from, Cause: cause, Thoughts: x.thoughts,
		Tools: slices.Clone(x.tools), Cancelled: cancelled, Reason: reason}
}

// step is an event of x's progress; set fills in what happened.
func (x *reasoning) step(m Meta, id string, set func(*ReasoningStep)) *ReasoningStep {
	s := &ReasoningStep{Meta: m, Reasoning: id, Thoughts: x.thoughts, Tools: slices.Clone(x.tools)}
	set(s)
	return s
}

// used records that x called tool, once, up to MaxTools.
func (x *reasoning) used(tool string) {
	if tool != "" && !slices.Contains(x.tools, tool) && len(x.tools) < MaxTools {
		x.tools = append(x.tools, tool)
	}
}
