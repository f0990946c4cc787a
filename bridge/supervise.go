package bridge

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mew-protocol/mew/internal/jobs"
	"github.com/mew-protocol/mew/protocol"
)

// pingTimeout bounds the ping with which the supervisor checks a server
// that a request found unresponsive.
const pingTimeout = 5 * time.Second

// newClient returns the MCP client of the bridge. It declares elicitation
// (forms and URLs), which the space answers (elicit.go), and no roots or
// sampling, and follows the server's list changes.
func (b *Bridge) newClient() *mcp.Client {
	opts := &mcp.ClientOptions{
		Logger: b.log.With("component", "mcp-client"),
		Capabilities: &mcp.ClientCapabilities{Elicitation: &mcp.ElicitationCapabilities{
			Form: &mcp.FormElicitationCapabilities{}, URL: &mcp.URLElicitationCapabilities{},
		}},
		ElicitationHandler: b.elicit,
		ToolListChangedHandler: func(_ context.Context, req *mcp.ToolListChangedRequest) {
			b.listChanged(req.Session, bitTools)
		},
		ResourceListChangedHandler: func(_ context.Context, req *mcp.ResourceListChangedRequest) {
			b.listChanged(req.Session, bitResources)
		},
		PromptListChangedHandler: func(_ context.Context, req *mcp.PromptListChangedRequest) {
			b.listChanged(req.Session, bitPrompts)
		},
	}
	if b.opts.Server.URL != "" {
		// Over HTTP nothing else tells that the server went away.
		opts.KeepAlive = 30 * time.Second
		opts.KeepAliveFailureThreshold = 2
	}
	return mcp.NewClient(&mcp.Implementation{Name: "mew-bridge", Version: "0.4"}, opts)
}

// listChanged is called by the MCP client when the server says a list
// changed. It must not block: the supervisor does the listing.
func (b *Bridge) listChanged(cs *mcp.ClientSession, bit uint32) {
	b.mu.Lock()
	current := b.cur != nil && b.cur.session == cs
	b.mu.Unlock()
	if !current {
		return // a session being set up lists everything anyway
	}
	b.poke(bit)
}

// poke hands bits to the supervisor.
func (b *Bridge) poke(bits uint32) {
	b.pending.Or(bits)
	select {
	case b.wake <- struct{}{}:
	default:
	}
}

// suspectRun asks the supervisor to check that r's server still answers:
// a request to it failed in a way that may mean it is gone.
func (b *Bridge) suspectRun(r *run) {
	b.suspect.Store(r)
	b.poke(bitSuspect)
}

// install makes r the server that requests go to.
func (b *Bridge) install(r *run, restarted bool) {
	b.mu.Lock()
	old := b.lists
	b.cur = r
	b.lists = r.lists
	b.state = StateReady
	if restarted {
		b.restarts++
	}
	b.notifyLocked()
	b.mu.Unlock()
	name := ""
	if r.lists.info != nil {
		name = r.lists.info.Name + " " + r.lists.info.Version
	}
	b.log.Info("MCP server ready", "server", name, "protocol", r.lists.protocol, "tools", len(r.lists.tools), "resources", len(r.lists.resources),
		"resource_templates", len(r.lists.templates), "prompts", len(r.lists.prompts), "restarted", restarted)
	if restarted {
		b.announce(b.jobs.Context(), differs(&old, &r.lists))
	}
}

// supervise keeps the server running until ctx ends: it restarts a server
// that dies (with backoff, up to Options.MaxRestarts in a row), refreshes
// the lists the server says changed, and reports each change of state in
// the space. It returns with the server of the moment still running; Run
// stops it.
func (b *Bridge) supervise(ctx context.Context, r *run) {
	for {
		select {
		case <-ctx.Done():
			return
		case <-b.wake:
			bits := b.pending.Swap(0)
			if bits&bitSuspect != 0 {
				if s := b.suspect.Swap(nil); s == r {
					b.check(ctx, r)
				}
			}
			if bits &^= bitSuspect; bits != 0 && !r.isOver() {
				b.refresh(ctx, r, bits)
			}
			continue
		case <-r.ended:
		}
		var ok bool
		if r, ok = b.recover(ctx, r); !ok {
			<-ctx.Done()
			return
		}
	}
}

// check pings r's server and ends the run if it does not answer.
func (b *Bridge) check(ctx context.Context, r *run) {
	pctx, cancel := context.WithTimeout(ctx, pingTimeout)
	defer cancel()
	if err := r.session.Ping(pctx, nil); err != nil && ctx.Err() == nil {
		b.log.Warn("the MCP server does not answer a ping", "err", err)
		r.end(fmt.Errorf("no answer to a ping: %w", err))
	}
}

// recover replaces the run r, which ended: it stops what is left of it and
// starts the server again, with backoff, until a start succeeds (the new
// run and true), the restarts run out, or ctx ends (nil and false).
func (b *Bridge) recover(ctx context.Context, r *run) (*run, bool) {
	why := r.reason()
	b.mu.Lock()
	if b.cur == r {
		b.cur = nil
	}
	if time.Since(r.started) >= stableAfter {
		b.failures = 0
	}
	b.mu.Unlock()
	r.stop()
	if ctx.Err() != nil {
		return nil, false
	}
	asked := r.asked.Load() // participant/restart: no failure, no delay
	if asked {
		b.log.Info("restarting the MCP server", "reason", why)
	} else {
		b.log.Warn("the MCP server stopped", "reason", why, "up_for", time.Since(r.started).Round(time.Millisecond))
	}
	for {
		b.mu.Lock()
		if !asked {
			b.failures++
		}
		failures := b.failures
		b.mu.Unlock()
		if !asked && (b.opts.NoRestart || failures > b.opts.MaxRestarts) {
			b.giveUp(ctx, why, failures)
			return nil, false
		}
		delay := maxRestartDelay
		if failures <= 16 {
			delay = min(b.opts.RestartDelay<<max(failures-1, 0), maxRestartDelay)
		}
		if asked {
			delay, asked = 0, false
		}
		b.setState(StateRestarting, why)
		b.log.Info("restarting the MCP server", "attempt", failures, "of", b.opts.MaxRestarts, "in", delay)
		b.reportState(ctx)
		if !jobs.Sleep(ctx, delay) {
			return nil, false
		}
		next, err := b.start(ctx)
		if err == nil {
			b.install(next, true)
			b.reportState(ctx)
			return next, true
		}
		if ctx.Err() != nil {
			return nil, false
		}
		why = err.Error()
		b.log.Warn("restarting the MCP server failed", "err", err)
	}
}

// giveUp leaves the server down for good and says so in the space.
func (b *Bridge) giveUp(ctx context.Context, why string, failures int) {
	var msg string
	if b.opts.NoRestart {
		msg = fmt.Sprintf("MCP server %s stopped (%s) and restarts are off: requests to %s fail until the bridge is restarted.",
			b.describeServer(), why, b.p.ID())
	} else {
		msg = fmt.Sprintf("MCP server %s failed %d times in a row (last: %s); not restarting it: requests to %s fail until the bridge is restarted.",
			b.describeServer(), failures, why, b.p.ID())
	}
	b.setState(StateFailed, why)
	b.log.Error("giving up on the MCP server", "failures", failures, "reason", why)
	b.reportState(ctx)
	if b.p.CanSend(protocol.KindChat, nil) {
		if _, err := b.p.Chat(ctx, msg); err != nil {
			b.log.Warn("telling the space", "err", err)
		}
	}
}

// reportState broadcasts a participant/status with the bridge's state,
// when the participant may send it. Besides the telemetry every status
// carries, it holds mcp_server (the server's name), tools, resources,
// prompts, restarts, mcp_protocol (the revision agreed on) and, after a
// failure, error.
func (b *Bridge) reportState(ctx context.Context) {
	st := b.Status()
	payload := protocol.Status{Status: string(st.State), Extra: map[string]json.RawMessage{}}
	put := func(k string, v any) {
		if raw, err := json.Marshal(v); err == nil {
			payload.Extra[k] = raw
		}
	}
	if st.Server != nil {
		put("mcp_server", st.Server.Name)
	}
	if st.Protocol != "" {
		put("mcp_protocol", st.Protocol)
	}
	put("tools", st.Tools)
	put("resources", st.Resources)
	put("prompts", st.Prompts)
	put("restarts", st.Restarts)
	if st.State == StateRestarting || st.State == StateFailed {
		put("error", st.Err)
		put("failures", st.Failures)
	}
	env, err := protocol.New(protocol.KindParticipantStatus, payload)
	if err != nil || b.p.ID() == "" {
		return
	}
	if !b.p.CanSend(env.Kind, env.Payload) {
		b.log.Debug("participant/status not sent: not allowed by the capabilities", "state", st.State)
		return
	}
	sctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	if err := b.p.Send(sctx, env); err != nil {
		b.log.Debug("participant/status not sent", "state", st.State, "err", err)
	}
}

// restartServer restarts the server at once, for participant/restart, and
// waits until the new one is ready. It does not count as a failure.
func (b *Bridge) restartServer(ctx context.Context) error {
	b.mu.Lock()
	r := b.cur
	b.mu.Unlock()
	if r == nil {
		return errors.New("bridge: the MCP server is not running")
	}
	r.asked.Store(true)
	r.end(errors.New("restart asked with participant/restart"))
	for {
		b.mu.Lock()
		cur, state, why, ch := b.cur, b.state, b.lastErr, b.changed
		b.mu.Unlock()
		switch {
		case cur != nil && cur != r:
			return nil
		case state == StateFailed || state == StateStopped:
			return fmt.Errorf("bridge: restarting the MCP server: %s", why)
		}
		select {
		case <-ch:
		case <-ctx.Done():
			return fmt.Errorf("bridge: restarting the MCP server: %w", ctx.Err())
		}
	}
}
