package participant

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"sync"

	"github.com/mew-protocol/mew/protocol"
)

// Elicitation in a space (a mew extension; protocol.KindElicitationRequest
// says how it goes): a bridged MCP server asked for input during a call,
// and the bridge asked the space. The participant keeps the elicitations it
// sees open until their elicitation/done; any participant the space allows
// to send elicitation/response may answer one, the caller it is addressed
// to or another on its behalf.

// maxOpenElicitations bounds the elicitations a participant keeps open; past
// it the oldest is forgotten.
const maxOpenElicitations = 256

// Errors of AnswerElicitation.
var (
	// ErrElicitationOver: the elicitation ended before this answer was
	// used: another participant answered it, nobody answered in time, or
	// its call ended. The *ElicitationOverError says which.
	ErrElicitationOver = errors.New("participant: the elicitation is over")
	// ErrElicitationRefused: the bridge did not use the answer; the
	// *ElicitationRefusedError says why. The elicitation stays open.
	ErrElicitationRefused = errors.New("participant: the answer was refused")
)

// ElicitationOverError is the error of an answer that came too late.
type ElicitationOverError struct {
	Done protocol.ElicitationDone
}

func (e *ElicitationOverError) Error() string {
	switch e.Done.Status {
	case protocol.ElicitationAnswered:
		return fmt.Sprintf("participant: the elicitation was answered by %s (%s)", e.Done.By, e.Done.Action)
	default:
		return fmt.Sprintf("participant: the elicitation is %s: %s", e.Done.Status, e.Done.Reason)
	}
}

func (e *ElicitationOverError) Unwrap() error { return ErrElicitationOver }

// ElicitationRefusedError is the error of an answer the bridge refused.
type ElicitationRefusedError struct {
	Reason string
}

func (e *ElicitationRefusedError) Error() string {
	return "participant: the answer was refused: " + e.Reason
}

func (e *ElicitationRefusedError) Unwrap() error { return ErrElicitationRefused }

// Elicitation is an open question of a bridged MCP server to the space.
type Elicitation struct {
	// Envelope is the elicitation/request: From is the bridge, To the
	// callers it is addressed to, CorrelationID the calls' mcp/request ids.
	Envelope *protocol.Envelope
	// Request is its payload: the message, the form (RequestedSchema) or
	// URL, and what call it is for.
	Request protocol.ElicitationRequest
}

// ID is the elicitation's id, its envelope's.
func (e *Elicitation) ID() string { return e.Envelope.ID }

// For reports whether the elicitation is addressed to participant id.
func (e *Elicitation) For(id string) bool { return slices.Contains(e.Envelope.To, id) }

// elicitBook holds the open elicitations seen, oldest first, and the
// waiters of answers.
type elicitBook struct {
	mu      sync.Mutex
	open    []*Elicitation
	waiters map[string]chan elicitOutcome // by elicitation id, of AnswerElicitation
	on      []*func(*Elicitation)
}

// elicitOutcome is what became of an answer.
type elicitOutcome struct {
	done    *protocol.ElicitationDone
	refused *protocol.ElicitationRefused
}

func (p *Participant) wireElicitation() {
	p.c.OnKind(protocol.KindElicitationRequest, p.onElicitationRequest)
	p.c.OnKind(protocol.KindElicitationDone, p.onElicitationDone)
	p.c.OnKind(protocol.KindElicitationRefused, p.onElicitationRefused)
}

func (p *Participant) onElicitationRequest(env *protocol.Envelope) {
	e := &Elicitation{Envelope: env}
	if err := env.DecodePayload(&e.Request); err != nil {
		p.log.Debug("elicitation/request with a malformed payload", "id", env.ID, "err", err)
		return
	}
	b := &p.elicits
	b.mu.Lock()
	if len(b.open) >= maxOpenElicitations {
		b.open = slices.Delete(b.open, 0, 1)
	}
	b.open = append(b.open, e)
	handlers := slices.Clone(b.on)
	b.mu.Unlock()
	for _, f := range handlers {
		(*f)(e)
	}
}

func (p *Participant) onElicitationDone(env *protocol.Envelope) {
	var done protocol.ElicitationDone
	if err := env.DecodePayload(&done); err != nil || len(env.CorrelationID) == 0 {
		return
	}
	id := env.CorrelationID[0]
	b := &p.elicits
	b.mu.Lock()
	// Only the bridge that asked may close it.
	i := slices.IndexFunc(b.open, func(e *Elicitation) bool { return e.ID() == id && e.Envelope.From == env.From })
	if i < 0 {
		b.mu.Unlock()
		return
	}
	b.open = slices.Delete(b.open, i, i+1)
	w := b.waiters[id]
	b.mu.Unlock()
	if w != nil {
		select {
		case w <- elicitOutcome{done: &done}:
		default:
		}
	}
}

func (p *Participant) onElicitationRefused(env *protocol.Envelope) {
	var refused protocol.ElicitationRefused
	if err := env.DecodePayload(&refused); err != nil || len(env.CorrelationID) == 0 || !env.AddressedTo(p.ID()) {
		return
	}
	b := &p.elicits
	b.mu.Lock()
	w := b.waiters[env.CorrelationID[0]]
	asked := slices.ContainsFunc(b.open, func(e *Elicitation) bool { return e.ID() == env.CorrelationID[0] && e.Envelope.From == env.From })
	b.mu.Unlock()
	if w != nil && asked {
		select {
		case w <- elicitOutcome{refused: &refused}:
		default:
		}
	}
}

// OnElicitation calls f for each elicitation/request the participant
// sees, addressed to it or not (Elicitation.For says; a person's UI may
// answer for another when the space allows it). f runs on the client's
// dispatch goroutine and must not block: answer from another goroutine.
func (p *Participant) OnElicitation(f func(*Elicitation)) (remove func()) {
	b := &p.elicits
	fp := &f
	b.mu.Lock()
	b.on = append(b.on, fp)
	b.mu.Unlock()
	return func() {
		b.mu.Lock()
		defer b.mu.Unlock()
		b.on = slices.DeleteFunc(b.on, func(g *func(*Elicitation)) bool { return g == fp })
	}
}

// PendingElicitations returns the open elicitations the participant has
// seen, oldest first: those no elicitation/done has closed.
func (p *Participant) PendingElicitations() []*Elicitation {
	p.elicits.mu.Lock()
	defer p.elicits.mu.Unlock()
	return slices.Clone(p.elicits.open)
}

// AnswerElicitation answers e with action (protocol.ElicitationAccept,
// ElicitationDecline or ElicitationCancel) and, for accept of a form, the
// filled form as content (any value that encodes as a JSON object; nil for
// none). It waits until the bridge closes the elicitation or refuses the
// answer, within ctx: nil means this answer went to the server; an error
// wrapping ErrElicitationRefused (a *ElicitationRefusedError with the
// reason; the elicitation stays open, answer again) or ErrElicitationOver
// (a *ElicitationOverError: another answer won, or it expired or was
// cancelled) says otherwise. Sending needs a capability for
// elicitation/response. Do not call it from the dispatch goroutine (an
// OnElicitation handler): it waits for envelopes that goroutine delivers.
func (p *Participant) AnswerElicitation(ctx context.Context, e *Elicitation, action string, content any) error {
	resp := protocol.ElicitationResponse{Action: action}
	if content != nil {
		raw, err := json.Marshal(content)
		if err != nil {
			return fmt.Errorf("participant: elicitation content: %w", err)
		}
		resp.Content = raw
	}
	body, err := json.Marshal(resp)
	if err != nil {
		return fmt.Errorf("participant: %w", err)
	}
	id := e.ID()
	w := make(chan elicitOutcome, 1)
	b := &p.elicits
	b.mu.Lock()
	open := slices.ContainsFunc(b.open, func(o *Elicitation) bool { return o.ID() == id })
	if b.waiters == nil {
		b.waiters = map[string]chan elicitOutcome{}
	}
	if open {
		b.waiters[id] = w
	}
	b.mu.Unlock()
	if !open {
		return &ElicitationOverError{Done: protocol.ElicitationDone{Status: protocol.ElicitationCancelled, Reason: "it is not open (already closed, or never seen)"}}
	}
	defer func() {
		b.mu.Lock()
		if b.waiters[id] == w {
			delete(b.waiters, id)
		}
		b.mu.Unlock()
	}()
	to := []string{e.Envelope.From}
	if !p.CanSendTo(protocol.KindElicitationResponse, to, body) {
		return fmt.Errorf("answering elicitation %s (elicitation/response): %w", id, ErrNotAllowed)
	}
	env := &protocol.Envelope{Kind: protocol.KindElicitationResponse, To: to, CorrelationID: []string{id}, Payload: body}
	if err := p.Send(ctx, env); err != nil {
		return fmt.Errorf("participant: answering elicitation %s: %w", id, err)
	}
	select {
	case out := <-w:
		if out.refused != nil {
			return &ElicitationRefusedError{Reason: out.refused.Reason}
		}
		if out.done.Status == protocol.ElicitationAnswered && out.done.By == p.ID() {
			return nil
		}
		return &ElicitationOverError{Done: *out.done}
	case <-ctx.Done():
		return fmt.Errorf("participant: waiting for the bridge to use the answer to %s: %w", id, ctx.Err())
	}
}
