package participant

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/mew-protocol/mew/client"
	"github.com/mew-protocol/mew/internal/clip"
	"github.com/mew-protocol/mew/protocol"
)

// Participant controls (spec §3.9) and status telemetry; ReportStatus
// documents what the participant answers to each control.

// ErrShutdown: the participant received participant/shutdown. It sends
// nothing but participant/status from then on, as the gateway enforces, and
// closes its connection once its OnShutdown hook has returned.
var ErrShutdown = errors.New("participant: shut down")

// whilePaused lists what a paused participant may still send: answers,
// status and cancellations, never new work. It is the gateway's list
// (docs/gateway.md, "Pause, resume and shutdown"); the two must agree, or the
// SDK would let through what the gateway refuses, or the reverse.
var whilePaused = []string{
	protocol.KindChatAcknowledge, protocol.KindChatCancel, protocol.KindReasoningCancel,
	protocol.KindCapabilityGrantAck, protocol.KindParticipantStatus, protocol.KindMCPWithdraw,
	protocol.KindParticipantCompactDone,
}

// kindStreamFrame stands for a stream data frame in allowOutbound: no kind
// is exempt from a pause, so neither are frames (the gateway refuses them
// too).
const kindStreamFrame = "#frame"

// Statuses the participant reports besides protocol's active, paused and
// near_limit.
const (
	statusCompacting   = "compacting"
	statusCompacted    = "compacted"
	statusCleared      = "cleared"
	statusRestarted    = "restarted"
	statusShuttingDown = "shutting_down"
)

// shutdownFlush bounds how long the participant waits for the gateway to
// relay its last status before it closes the connection.
const shutdownFlush = 2 * time.Second

// maxPauseSeconds is the longest pause timeout taken as one; a longer one
// (which would overflow a time.Duration) lasts until resumed.
const maxPauseSeconds = 100 * 365 * 24 * 60 * 60

// maxReasonLen bounds an error text put into a status or compact-done.
const maxReasonLen = 200

// controlState is the participant's pause state, hooks and telemetry. mu
// guards every field; it is never held while sending or calling a hook.
type controlState struct {
	mu sync.Mutex

	paused      bool
	pauseID     string    // the pause in force
	pauseReply  []string  // whom to tell when the pause ends: replyTo of the pause
	pauseReason string    // its reason
	pauseUntil  time.Time // zero: until resumed
	stopTimer   chan struct{}
	timedOut    string // the last pause that ended by its timeout here
	shutdown    bool

	tokens, messages int
	nearLimit        bool                       // a near_limit status went out for this crossing
	extra            map[string]json.RawMessage // SetStatusField's members

	hooks controlHooks

	replies serial // statuses and pause notifications, in order
	work    serial // forget, compact, clear, restart, shutdown, in order

	echoes map[string]chan struct{} // own envelope ids whose relay is awaited
}

// controlHooks are the functions the controls call.
type controlHooks struct {
	forget      func(ctx context.Context, direction string, entries int) error
	clear       func(ctx context.Context) error
	compact     func(ctx context.Context) (freedTokens, freedMessages int, err error)
	restart     func(ctx context.Context) error
	shutdown    func(ctx context.Context) error
	pauseChange func(paused bool, reason string)
}

// serial runs jobs one at a time, in the order they were queued, on a
// goroutine of the participant that exists only while there is work.
type serial struct {
	mu      sync.Mutex
	jobs    []serialJob
	running bool
}

// serialJob is one job of a serial, named for logs.
type serialJob struct {
	what string
	f    func(context.Context)
}

// run queues job on s.
func (p *Participant) run(s *serial, what string, job func(ctx context.Context)) {
	s.mu.Lock()
	s.jobs = append(s.jobs, serialJob{what, job})
	if s.running {
		s.mu.Unlock()
		return
	}
	s.running = true
	s.mu.Unlock()
	p.goBackground(func(ctx context.Context) {
		for {
			s.mu.Lock()
			if len(s.jobs) == 0 {
				s.running = false
				s.mu.Unlock()
				return
			}
			next := s.jobs[0]
			s.jobs[0] = serialJob{}
			s.jobs = s.jobs[1:]
			s.mu.Unlock()
			if err := protect(func() error { next.f(ctx); return nil }); err != nil {
				p.log.Error("participant control work panicked", "work", next.what, "err", err)
			}
		}
	})
}

// protect calls f and turns a panic into an error.
func protect(f func() error) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("participant: panic: %v", r)
		}
	}()
	return f()
}

func (p *Participant) wireControls() {
	for _, kind := range []string{
		protocol.KindParticipantPause, protocol.KindParticipantResume,
		protocol.KindParticipantRequestStatus, protocol.KindParticipantForget,
		protocol.KindParticipantCompact, protocol.KindParticipantClear,
		protocol.KindParticipantRestart, protocol.KindParticipantShutdown,
	} {
		p.c.OnKind(kind, p.onControl)
	}
	p.c.OnKind(protocol.KindParticipantStatus, p.onOwnRelay)
	p.c.OnKind(protocol.KindSystemError, p.onOwnRelay)
}

// allowOutbound refuses what a paused participant may not send (an error
// wrapping ErrPaused), and everything but participant/status after a
// shutdown (ErrShutdown).
func (c *controlState) allowOutbound(kind string) error {
	c.mu.Lock()
	shut := c.shutdown
	paused := c.pausedLocked(time.Now())
	reason := c.pauseReason
	c.mu.Unlock()
	if shut && kind != protocol.KindParticipantStatus {
		return fmt.Errorf("%w: %s may not be sent after participant/shutdown", ErrShutdown, describeKind(kind))
	}
	if paused && !slices.Contains(whilePaused, kind) {
		if reason != "" {
			return fmt.Errorf("%w (%s): %s may not be sent while paused", ErrPaused, reason, describeKind(kind))
		}
		return fmt.Errorf("%w: %s may not be sent while paused", ErrPaused, describeKind(kind))
	}
	return nil
}

// describeKind names kind in an error.
func describeKind(kind string) string {
	if kind == kindStreamFrame {
		return "a stream data frame"
	}
	return kind
}

// pausedLocked reports whether a pause is in force at now. A timeout that
// has passed ends it even before the timer has run.
func (c *controlState) pausedLocked(now time.Time) bool {
	return c.paused && (c.pauseUntil.IsZero() || now.Before(c.pauseUntil))
}

// stopTimerLocked cancels the auto-resume timer, if any.
func (c *controlState) stopTimerLocked() {
	if c.stopTimer != nil {
		close(c.stopTimer)
		c.stopTimer = nil
	}
}

// Paused reports whether the participant is paused: a participant/pause
// addressed to it is in force, neither resumed nor timed out.
func (p *Participant) Paused() bool {
	p.controls.mu.Lock()
	defer p.controls.mu.Unlock()
	return p.controls.pausedLocked(time.Now())
}

// OnForget sets the hook that participant/forget calls, with the direction
// ("oldest" or "newest") and the number of entries to drop (0 when the
// control named none). The hook should drop that context and update the
// counters with SetContextUsage. It runs on a goroutine of the participant,
// after the earlier controls' hooks, and must return when ctx ends. nil
// removes the hook; the participant then only reports the statuses.
func (p *Participant) OnForget(f func(ctx context.Context, direction string, entries int) error) {
	setHook(&p.controls, &p.controls.hooks.forget, f)
}

// OnClear sets the hook that participant/clear calls to erase all retained
// context. When it returns nil the participant resets its context counters
// to zero. It runs as OnForget's hook does; nil removes it.
func (p *Participant) OnClear(f func(ctx context.Context) error) {
	setHook(&p.controls, &p.controls.hooks.clear, f)
}

// OnCompact sets the hook that participant/compact calls. It returns how
// many tokens and messages compaction freed, which the participant subtracts
// from its counters and reports in participant/compact-done. The
// participant sends compact-done whatever happens: "skipped" without a hook
// or when nothing was freed, "failed" with the error's text when the hook
// fails. It runs as OnForget's hook does; nil removes it.
func (p *Participant) OnCompact(f func(ctx context.Context) (freedTokens, freedMessages int, err error)) {
	setHook(&p.controls, &p.controls.hooks.compact, f)
}

// OnRestart sets the hook that participant/restart calls, after the
// participant closed the streams it owns, to return to a baseline
// configuration. When it returns nil the context counters are reset. It runs
// as OnForget's hook does; nil removes it.
func (p *Participant) OnRestart(f func(ctx context.Context) error) {
	setHook(&p.controls, &p.controls.hooks.restart, f)
}

// OnShutdown sets the hook that participant/shutdown calls, after the
// participant reported "shutting_down" and before it closes its connection.
// From the shutdown on, the participant sends nothing but participant/status
// (ErrShutdown). The hook must not call Close, which waits for it; the
// program should call Close after it (OnDisconnected on the client says when
// the connection has closed). It runs as OnForget's hook does; nil removes
// it.
func (p *Participant) OnShutdown(f func(ctx context.Context) error) {
	setHook(&p.controls, &p.controls.hooks.shutdown, f)
}

// OnPauseChange sets a function called when the participant is paused
// (paused true, with the pause's reason) and when the pause ends (by a
// resume or its timeout). Calls come in order, on a goroutine of the
// participant; f must not block for long. nil removes it.
func (p *Participant) OnPauseChange(f func(paused bool, reason string)) {
	setHook(&p.controls, &p.controls.hooks.pauseChange, f)
}

// setHook sets one of c's hooks under c.mu, which guards them as it does
// every field of c.
func setHook[F any](c *controlState, hook *F, f F) {
	c.mu.Lock()
	*hook = f
	c.mu.Unlock()
}

// controlAddressed reports whether the participant should act on a
// control: it is listed in to, or the control is broadcast by someone else.
func (p *Participant) controlAddressed(env *protocol.Envelope) bool {
	self := p.ID()
	if self == "" {
		return false
	}
	if len(env.To) == 0 {
		return env.From != self
	}
	return slices.Contains(env.To, self)
}

// onControl handles the controls addressed to the participant, on the
// dispatch goroutine: it updates state at once and queues the rest.
func (p *Participant) onControl(env *protocol.Envelope) {
	if !p.controlAddressed(env) {
		return
	}
	switch env.Kind {
	case protocol.KindParticipantPause:
		p.onPause(env)
	case protocol.KindParticipantResume:
		p.onResume(env)
	case protocol.KindParticipantRequestStatus:
		var rs protocol.RequestStatus
		if err := env.DecodePayload(&rs); err != nil {
			p.log.Warn("participant/request-status with a malformed payload; answering in full", "id", env.ID, "err", err)
			rs.Fields = nil
		}
		id, to := env.ID, replyTo(env)
		p.run(&p.controls.replies, env.Kind, func(ctx context.Context) {
			payload := filterStatus(p.telemetry(""), rs.Fields)
			p.sendStatusPayload(ctx, payload, to, []string{id})
		})
	case protocol.KindParticipantForget:
		p.run(&p.controls.work, env.Kind, func(ctx context.Context) { p.doForget(ctx, env) })
	case protocol.KindParticipantCompact:
		p.run(&p.controls.work, env.Kind, func(ctx context.Context) { p.doCompact(ctx, env) })
	case protocol.KindParticipantClear:
		p.run(&p.controls.work, env.Kind, func(ctx context.Context) { p.doClear(ctx, env) })
	case protocol.KindParticipantRestart:
		p.run(&p.controls.work, env.Kind, func(ctx context.Context) { p.doRestart(ctx, env) })
	case protocol.KindParticipantShutdown:
		p.onShutdownControl(env)
	}
}

// replyTo addresses an answer to the sender of a control, unless that is the
// gateway (then the answer is broadcast).
func replyTo(env *protocol.Envelope) []string {
	if env.From == "" || client.FromGateway(env) {
		return nil
	}
	return []string{env.From}
}

// withReason is "status" or "status:reason".
func withReason(status, reason string) string {
	if reason == "" {
		return status
	}
	return status + ":" + clip.Bytes(reason, maxReasonLen)
}

// onPause handles participant/pause.
func (p *Participant) onPause(env *protocol.Envelope) {
	var pause protocol.Pause
	if err := env.DecodePayload(&pause); err != nil {
		p.log.Warn("participant/pause with a malformed payload; pausing until resumed", "id", env.ID, "err", err)
		pause = protocol.Pause{}
	}
	c := &p.controls
	c.mu.Lock()
	c.stopTimerLocked()
	c.paused = true
	c.pauseID, c.pauseReply, c.pauseReason = env.ID, replyTo(env), pause.Reason
	c.pauseUntil = time.Time{}
	var stop chan struct{}
	if pause.TimeoutSeconds > 0 && pause.TimeoutSeconds <= maxPauseSeconds {
		d := time.Duration(pause.TimeoutSeconds) * time.Second
		c.pauseUntil = time.Now().Add(d)
		stop = make(chan struct{})
		c.stopTimer = stop
	}
	c.mu.Unlock()

	if stop != nil {
		id, d := env.ID, time.Duration(pause.TimeoutSeconds)*time.Second
		p.after(p.ctx, d, stop, func() { p.pauseTimedOut(id) })
	}
	status := withReason(protocol.ParticipantStatusPaused, pause.Reason)
	p.queueStatus(status, replyTo(env), []string{env.ID})
	p.notifyPause(true, pause.Reason)
}

// pauseTimedOut ends pause id when its timeout passes.
func (p *Participant) pauseTimedOut(id string) {
	c := &p.controls
	c.mu.Lock()
	if !c.paused || c.pauseID != id {
		c.mu.Unlock()
		return
	}
	to := c.pauseReply
	c.paused, c.stopTimer, c.timedOut = false, nil, id
	c.pauseID, c.pauseReply, c.pauseReason, c.pauseUntil = "", nil, "", time.Time{}
	c.mu.Unlock()
	p.log.Info("pause timed out; resuming", "pause", id)
	p.queueStatus(protocol.ParticipantStatusActive, to, []string{id})
	p.notifyPause(false, protocol.ReasonTimeout)
}

// onResume handles participant/resume. A resume that the gateway sends for
// a pause that already timed out here is not answered twice.
func (p *Participant) onResume(env *protocol.Envelope) {
	c := &p.controls
	c.mu.Lock()
	wasPaused := c.paused
	already := !c.paused && c.timedOut != "" && client.FromGateway(env) && env.CorrelatesWith(c.timedOut)
	c.stopTimerLocked()
	c.paused = false
	c.pauseID, c.pauseReply, c.pauseReason, c.pauseUntil = "", nil, "", time.Time{}
	c.mu.Unlock()
	if already {
		return
	}
	p.queueStatus(protocol.ParticipantStatusActive, replyTo(env), []string{env.ID})
	if wasPaused {
		var r protocol.Resume
		_ = env.DecodePayload(&r)
		p.notifyPause(false, r.Reason)
	}
}

// notifyPause calls the OnPauseChange function, in order with the statuses.
func (p *Participant) notifyPause(paused bool, reason string) {
	p.controls.mu.Lock()
	f := p.controls.hooks.pauseChange
	p.controls.mu.Unlock()
	if f == nil {
		return
	}
	p.run(&p.controls.replies, "pause notification", func(context.Context) { f(paused, reason) })
}

// queueStatus sends a participant/status with the telemetry, in order with
// the other answers.
func (p *Participant) queueStatus(status string, to, correlation []string) {
	p.run(&p.controls.replies, protocol.KindParticipantStatus, func(ctx context.Context) {
		p.sendStatus(ctx, status, to, correlation)
	})
}

// sendStatus sends a participant/status with the telemetry and status, if
// the participant may send it; failures are logged.
func (p *Participant) sendStatus(ctx context.Context, status string, to, correlation []string) *protocol.Envelope {
	return p.sendStatusPayload(ctx, p.telemetry(status), to, correlation)
}

// sendStatusPayload sends a participant/status, if the participant may send
// it; failures are logged. It returns the envelope sent, or nil.
func (p *Participant) sendStatusPayload(ctx context.Context, payload protocol.Status, to, correlation []string) *protocol.Envelope {
	env, err := protocol.New(protocol.KindParticipantStatus, payload)
	if err != nil {
		p.log.Warn("participant/status not encoded", "err", err)
		return nil
	}
	if !p.CanSendTo(env.Kind, to, env.Payload) {
		p.log.Debug("participant/status not sent: not allowed by the capabilities", "status", payload.Status)
		return nil
	}
	env.To, env.CorrelationID = to, correlation
	env.ID = protocol.NewID()
	if err := p.Send(ctx, env); err != nil {
		p.log.Warn("participant/status not sent", "status", payload.Status, "err", err)
		return nil
	}
	return env
}

// filterStatus keeps the fields asked for; messages_in_context (which the
// spec requires) and status are always kept.
func filterStatus(s protocol.Status, fields []string) protocol.Status {
	if len(fields) == 0 {
		return s
	}
	out := protocol.Status{MessagesInContext: s.MessagesInContext, Status: s.Status}
	for _, f := range fields {
		switch f {
		case "tokens":
			out.Tokens = s.Tokens
		case "max_tokens":
			out.MaxTokens = s.MaxTokens
		case "latency_ms":
			out.LatencyMS = s.LatencyMS
		}
	}
	return out
}

// hook returns the current hooks.
func (c *controlState) hook() controlHooks {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.hooks
}

// doForget runs participant/forget.
func (p *Participant) doForget(ctx context.Context, env *protocol.Envelope) {
	var f protocol.Forget
	if err := env.DecodePayload(&f); err != nil {
		p.log.Warn("participant/forget with a malformed payload", "id", env.ID, "err", err)
	}
	to, corr := replyTo(env), []string{env.ID}
	p.sendStatus(ctx, statusCompacting, to, corr)
	var err error
	if h := p.controls.hook().forget; h != nil {
		err = protect(func() error { return h(ctx, f.Direction, f.Entries) })
	}
	if err != nil {
		p.log.Warn("forget hook failed", "err", err)
		p.sendStatus(ctx, withReason("forget_failed", err.Error()), to, corr)
		return
	}
	p.sendStatus(ctx, statusCompacted, to, corr)
}

// doCompact runs participant/compact. compact-done goes out whatever the
// hook does (spec §3.9.7: MUST).
func (p *Participant) doCompact(ctx context.Context, env *protocol.Envelope) {
	to, corr := replyTo(env), []string{env.ID}
	p.sendStatus(ctx, statusCompacting, to, corr)
	var done protocol.CompactDone
	var err error
	h := p.controls.hook().compact
	switch {
	case h == nil:
		done = protocol.CompactDone{Skipped: true, Status: protocol.CompactStatusSkipped, Reason: "nothing to compact"}
	default:
		var tokens, messages int
		err = protect(func() error {
			var e error
			tokens, messages, e = h(ctx)
			return e
		})
		switch {
		case err != nil:
			p.log.Warn("compact hook failed", "err", err)
			done = protocol.CompactDone{Skipped: true, Status: "failed", Reason: clip.Bytes(err.Error(), maxReasonLen)}
		case tokens <= 0 && messages <= 0:
			done = protocol.CompactDone{Skipped: true, Status: protocol.CompactStatusSkipped}
		default:
			tokens, messages = max(0, tokens), max(0, messages)
			p.RecordContextUsage(-tokens, -messages)
			done = protocol.CompactDone{FreedTokens: tokens, FreedMessages: messages, Status: protocol.CompactStatusCompacted}
		}
	}
	p.sendCompactDone(ctx, done, to, corr)
	if err != nil {
		p.sendStatus(ctx, withReason("compact_failed", err.Error()), to, corr)
		return
	}
	p.sendStatus(ctx, statusCompacted, to, corr)
}

// sendCompactDone sends participant/compact-done, if the participant may.
func (p *Participant) sendCompactDone(ctx context.Context, done protocol.CompactDone, to, correlation []string) {
	env, err := protocol.New(protocol.KindParticipantCompactDone, done)
	if err != nil {
		p.log.Warn("participant/compact-done not encoded", "err", err)
		return
	}
	if !p.CanSendTo(env.Kind, to, env.Payload) {
		p.log.Warn("participant/compact-done not sent: not allowed by the capabilities")
		return
	}
	env.To, env.CorrelationID = to, correlation
	if err := p.Send(ctx, env); err != nil {
		p.log.Warn("participant/compact-done not sent", "err", err)
	}
}

// doClear runs participant/clear.
func (p *Participant) doClear(ctx context.Context, env *protocol.Envelope) {
	var c protocol.Clear
	_ = env.DecodePayload(&c)
	p.resetContext(ctx, env, "clear", p.controls.hook().clear, withReason(statusCleared, c.Reason))
}

// doRestart runs participant/restart.
func (p *Participant) doRestart(ctx context.Context, env *protocol.Envelope) {
	p.closeOwnStreams(ctx, "restart")
	p.resetContext(ctx, env, "restart", p.controls.hook().restart, statusRestarted)
}

// resetContext runs the hook h (if any) of the control env, named what:
// when it succeeds the context is empty and the status done is reported,
// else what_failed with the hook's error.
func (p *Participant) resetContext(ctx context.Context, env *protocol.Envelope, what string, h func(context.Context) error, done string) {
	to, corr := replyTo(env), []string{env.ID}
	var err error
	if h != nil {
		err = protect(func() error { return h(ctx) })
	}
	if err != nil {
		p.log.Warn(what+" hook failed", "err", err)
		p.sendStatus(ctx, withReason(what+"_failed", err.Error()), to, corr)
		return
	}
	p.SetContextUsage(0, 0)
	p.sendStatus(ctx, done, to, corr)
}

// onShutdownControl handles participant/shutdown: from now on only
// participant/status goes out (as the gateway enforces); the status is
// reported, then the hook runs after the earlier hooks, then the connection
// closes.
func (p *Participant) onShutdownControl(env *protocol.Envelope) {
	var s protocol.Shutdown
	_ = env.DecodePayload(&s)
	c := &p.controls
	c.mu.Lock()
	if c.shutdown {
		c.mu.Unlock()
		return
	}
	c.shutdown = true
	c.stopTimerLocked()
	c.mu.Unlock()
	to, corr := replyTo(env), []string{env.ID}
	status := withReason(statusShuttingDown, s.Reason)
	relayed := make(chan struct{})
	p.run(&c.replies, env.Kind, func(ctx context.Context) {
		defer close(relayed)
		p.sendStatusAndWait(ctx, status, to, corr)
	})
	p.run(&c.work, env.Kind, func(ctx context.Context) {
		select {
		case <-relayed:
		case <-ctx.Done():
		}
		if h := c.hook().shutdown; h != nil {
			if err := protect(func() error { return h(ctx) }); err != nil {
				p.log.Warn("shutdown hook failed", "err", err)
			}
		}
		p.log.Info("shut down by participant/shutdown; closing the connection", "from", env.From)
		if err := p.c.Close(); err != nil {
			p.log.Warn("closing after shutdown", "err", err)
		}
	})
}

// sendStatusAndWait sends a status and waits (up to shutdownFlush) until the
// gateway relayed it back or refused it, so that closing the connection
// next does not drop it from the send queue.
func (p *Participant) sendStatusAndWait(ctx context.Context, status string, to, correlation []string) {
	payload := p.telemetry(status)
	env, err := protocol.New(protocol.KindParticipantStatus, payload)
	if err != nil || !p.CanSendTo(env.Kind, to, env.Payload) {
		return
	}
	env.To, env.CorrelationID, env.ID = to, correlation, protocol.NewID()
	c := &p.controls
	ch := make(chan struct{})
	defer await(&c.mu, &c.echoes, env.ID, ch)()
	if err := p.Send(ctx, env); err != nil {
		p.log.Warn("participant/status not sent", "status", status, "err", err)
		return
	}
	t := time.NewTimer(shutdownFlush)
	defer t.Stop()
	select {
	case <-ch:
	case <-t.C:
	case <-ctx.Done():
	}
}

// onOwnRelay notices the relay of the participant's own status (or the
// gateway's refusal of it) that sendStatusAndWait waits for.
func (p *Participant) onOwnRelay(env *protocol.Envelope) {
	c := &p.controls
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.echoes) == 0 {
		return
	}
	ids := env.CorrelationID
	if env.Kind == protocol.KindSystemError && !client.FromGateway(env) {
		return
	}
	if env.Kind == protocol.KindParticipantStatus {
		if env.From != p.ID() {
			return
		}
		ids = []string{env.ID}
	}
	for _, id := range ids {
		if ch, ok := c.echoes[id]; ok {
			close(ch)
			delete(c.echoes, id)
		}
	}
}
