package participant

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"time"

	"github.com/mew-protocol/mew/protocol"
)

// The participant's telemetry: context usage, its status fields, and
// participant/status reports and requests.

// RecordContextUsage adds tokens and messages (either may be negative) to
// the context counters that status telemetry reports; they never go below
// zero. Chats the participant sends or that are addressed to it are counted
// already: one message and about a token per four bytes of text. When
// Options.ContextTokens is set and the tokens reach Options.SoftLimit of it,
// the participant broadcasts a participant/status "near_limit", once per
// crossing: again only after the tokens went back below the limit.
func (p *Participant) RecordContextUsage(tokens, messages int) {
	c := &p.controls
	c.mu.Lock()
	c.tokens = max(0, c.tokens+tokens)
	c.messages = max(0, c.messages+messages)
	fire := p.checkSoftLimitLocked()
	c.mu.Unlock()
	if fire {
		p.queueStatus(protocol.ParticipantStatusNearLimit, nil, nil)
	}
}

// SetContextUsage sets the context counters to tokens and messages, as an
// agent does after it rebuilt its context; the soft limit applies as in
// RecordContextUsage.
func (p *Participant) SetContextUsage(tokens, messages int) {
	c := &p.controls
	c.mu.Lock()
	c.tokens, c.messages = max(0, tokens), max(0, messages)
	fire := p.checkSoftLimitLocked()
	c.mu.Unlock()
	if fire {
		p.queueStatus(protocol.ParticipantStatusNearLimit, nil, nil)
	}
}

// ContextUsage returns the context counters: tokens and messages in
// context.
func (p *Participant) ContextUsage() (tokens, messages int) {
	p.controls.mu.Lock()
	defer p.controls.mu.Unlock()
	return p.controls.tokens, p.controls.messages
}

// checkSoftLimitLocked reports whether the tokens just crossed the soft
// limit, and re-arms it when they are below.
func (p *Participant) checkSoftLimitLocked() bool {
	c := &p.controls
	if p.opts.ContextTokens <= 0 {
		return false
	}
	limit := p.opts.SoftLimit * float64(p.opts.ContextTokens)
	if float64(c.tokens) < limit {
		c.nearLimit = false
		return false
	}
	if c.nearLimit {
		return false
	}
	c.nearLimit = true
	return true
}

// telemetry returns the status payload: the counters and status, or the
// participant's state (active, paused, shutting_down) when status is "".
func (p *Participant) telemetry(status string) protocol.Status {
	c := &p.controls
	c.mu.Lock()
	defer c.mu.Unlock()
	if status == "" {
		switch {
		case c.shutdown:
			status = statusShuttingDown
		case c.pausedLocked(time.Now()):
			status = protocol.ParticipantStatusPaused
		default:
			status = protocol.ParticipantStatusActive
		}
	}
	st := protocol.Status{
		Tokens:            c.tokens,
		MaxTokens:         p.opts.ContextTokens,
		MessagesInContext: c.messages,
		Status:            status,
	}
	if len(c.extra) > 0 {
		st.Extra = maps.Clone(c.extra)
	}
	return st
}

// isStatusMember reports whether name is a member of participant/status
// that the telemetry writes itself.
func isStatusMember(name string) bool {
	switch name {
	case "tokens", "max_tokens", "messages_in_context", "latency_ms", "status":
		return true
	}
	return false
}

// SetStatusField sets a member that every participant/status of the
// participant carries besides its telemetry, such as an agent's counters;
// a nil value removes it. The telemetry's own members cannot be set.
func (p *Participant) SetStatusField(name string, value any) error {
	if name == "" || isStatusMember(name) {
		return fmt.Errorf("participant: status field %q: empty or written by the telemetry", name)
	}
	c := &p.controls
	if value == nil {
		c.mu.Lock()
		delete(c.extra, name)
		c.mu.Unlock()
		return nil
	}
	raw, err := json.Marshal(value)
	if err != nil {
		return fmt.Errorf("participant: status field %q: %w", name, err)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.extra == nil {
		c.extra = make(map[string]json.RawMessage)
	}
	c.extra[name] = raw
	return nil
}

// ReportStatus broadcasts a participant/status with the participant's
// telemetry and status ("" means its state: "active", "paused" or
// "shutting_down"). It returns an error wrapping ErrNotAllowed when the
// participant may not send participant/status.
//
// The participant also reports by itself, answering the participant
// controls (spec §3.9) addressed to it (listed in to, or broadcast by
// someone else) as the table below says. Every
// participant/status carries the telemetry (tokens, max_tokens,
// messages_in_context) and is sent only when the participant's capabilities
// allow it; "X[:reason]" means "X", or "X:" and the control's reason when it
// gave one, as the reference implementation writes them.
//
//	participant/pause           paused until resumed or until timeout_seconds;
//	                            status "paused[:reason]" to the sender,
//	                            correlated to the pause
//	participant/resume          status "active", correlated to the resume
//	(pause timeout, locally)    status "active", correlated to the pause; no
//	                            participant/resume: the gateway announces the
//	                            timeout itself (docs/gateway.md)
//	participant/request-status  status to the requester, correlated, holding
//	                            the fields asked for (messages_in_context and
//	                            status always)
//	participant/forget          status "compacting", the OnForget hook, then
//	                            "compacted" (or "forget_failed:<error>")
//	participant/compact         status "compacting", the OnCompact hook, then
//	                            participant/compact-done to the requester,
//	                            always, and status "compacted" (or
//	                            "compact_failed:<error>")
//	participant/clear           the OnClear hook, counters reset, status
//	                            "cleared[:reason]" (or "clear_failed:<error>")
//	participant/restart         stream/close (reason "restart") of the
//	                            participant's own streams, the OnRestart hook,
//	                            counters reset, status "restarted" (or
//	                            "restart_failed:<error>")
//	participant/shutdown        status "shutting_down[:reason]", the OnShutdown
//	                            hook, then the connection is closed
//
// Pause, resume and request-status are answered at once; forget, compact,
// clear, restart and shutdown run their hooks one at a time, in the order the
// controls arrived, each on a goroutine the participant owns (never on the
// client's dispatch goroutine), with a context that Close cancels.
func (p *Participant) ReportStatus(ctx context.Context, status string) error {
	payload := p.telemetry(status)
	env, err := protocol.New(protocol.KindParticipantStatus, payload)
	if err != nil {
		return fmt.Errorf("participant: status: %w", err)
	}
	if !p.CanSendTo(env.Kind, env.To, env.Payload) {
		return fmt.Errorf("%w: participant/status", ErrNotAllowed)
	}
	if err := p.Send(ctx, env); err != nil {
		return fmt.Errorf("participant: status: %w", err)
	}
	return nil
}

// RequestStatus asks target for its telemetry with
// participant/request-status, limited to fields when any are given (such as
// "tokens", "max_tokens", "latency_ms"). The answer is a participant/status
// correlated to the request, which the caller may watch for with the
// client's OnKind. It returns an error wrapping ErrNotAllowed when the
// participant may not send the request.
func (p *Participant) RequestStatus(ctx context.Context, target string, fields ...string) error {
	if target == "" {
		return errors.New("participant: request status: no target")
	}
	env, err := protocol.New(protocol.KindParticipantRequestStatus, protocol.RequestStatus{Fields: fields})
	if err != nil {
		return fmt.Errorf("participant: request status: %w", err)
	}
	env.To = []string{target}
	if !p.CanSendTo(env.Kind, env.To, env.Payload) {
		return fmt.Errorf("%w: participant/request-status", ErrNotAllowed)
	}
	if err := p.Send(ctx, env); err != nil {
		return fmt.Errorf("participant: request status: %w", err)
	}
	return nil
}
