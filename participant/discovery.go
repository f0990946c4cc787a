package participant

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"sync"
	"time"

	"github.com/mew-protocol/mew/capability"
	"github.com/mew-protocol/mew/client"
	"github.com/mew-protocol/mew/internal/jobs"
	"github.com/mew-protocol/mew/protocol"
)

// DiscoveryState is where the discovery of one participant's tools stands.
// Discovery (SDK spec, "Participant Join Flow and Tool Discovery") lists the
// tools of the other participants with MCP tools/list.
//
// The candidates are the other participants whose capabilities allow them
// to send mcp/response, as the welcome and presence announce them. The
// gateway gives every participant that capability (anyone asked something
// may answer), so with it every other participant is a candidate: one that
// answers with an empty list is "no tools", one that never answers is
// "failed" after its attempts, which costs three small requests. A
// participant whose own capabilities do not allow the tools/list request
// itself discovers nothing (its discoveries fail with ErrNotAllowed); it
// never proposes for discovery. Nor does a paused participant: its
// discoveries fail at once with ErrPaused.
//
// One discovery of a participant sends tools/list (following nextCursor
// pages) and waits Options.DiscoveryTimeout for the answer; it makes up to
// three attempts, waiting a little longer before each retry (a quarter of
// the timeout, then half, at least 50 ms and at most 5 s per step). Only
// an mcp/response from the participant asked, correlated to the request,
// counts. A list stays fresh for Options.DiscoveryTTL: DiscoverTools answers
// from it, and with Options.AutoDiscovery the participant lists the tools
// again when it expires. Concurrent discoveries of one participant share
// one set of requests.
//
// With Options.AutoDiscovery the participant discovers every candidate of
// its welcome (again after a reconnect), and each that joins later, after a
// random delay of up to a quarter of the timeout (at most 1 s) so that a
// space's participants do not all ask at once. A participant that leaves is
// forgotten, its tools with it; one that joins again is discovered afresh.
// One that announces notifications/tools/list_changed (an mcp/request,
// broadcast or addressed to this participant, as a bridge sends when its
// MCP server's tools change) has its tools listed again at once if they
// were discovered before or AutoDiscovery is set, and is not answered from
// the old list in any case.
type DiscoveryState string

// Discovery states, with the reference implementation's names.
const (
	// DiscoveryNotStarted: the participant is known, its tools were never
	// asked for.
	DiscoveryNotStarted DiscoveryState = "not_started"
	// DiscoveryInProgress: a discovery is scheduled or waiting for answers.
	DiscoveryInProgress DiscoveryState = "in_progress"
	// DiscoveryCompleted: the participant listed at least one tool.
	DiscoveryCompleted DiscoveryState = "completed"
	// DiscoveryFailed: every attempt failed (no answer, an error answer, a
	// refusal), or this participant may not send tools/list.
	DiscoveryFailed DiscoveryState = "failed"
	// DiscoveryNoTools: the participant answered with no tools.
	DiscoveryNoTools DiscoveryState = "no_tools"
)

// DiscoveryStatus is the discovery state of one participant.
type DiscoveryStatus struct {
	State DiscoveryState
	// Attempts is the number of tools/list attempts of the latest
	// discovery, and LastAttempt when the latest began.
	Attempts    int
	LastAttempt time.Time
	// Tools is the number of tools listed; Fetched is when the list
	// arrived (zero if never).
	Tools   int
	Fetched time.Time
	// Err says why the latest discovery failed; "" unless State is
	// DiscoveryFailed.
	Err string
}

// DiscoveredTool is a tool of another participant, as its tools/list
// described it.
type DiscoveredTool struct {
	Participant string // the participant that offers it
	Name        string
	Description string
	InputSchema json.RawMessage // the JSON Schema of its arguments; may be nil
}

// Limits of discovery.
const (
	discoveryAttempts = 3
	maxToolPages      = 32   // tools/list pages followed per attempt
	maxToolsPerPeer   = 4096 // tools kept per participant
)

// probeResponse is an mcp/response payload, to ask a participant's
// capabilities whether it may answer a tools/list.
var probeResponse = []byte(`{"jsonrpc":"2.0","id":1,"result":{"tools":[]}}`)

// discoveryState tracks the tools of the other participants. mu guards
// every field; it is never held while sending or waiting.
type discoveryState struct {
	mu      sync.Mutex
	peers   map[string]*peerDiscovery
	waits   map[string]*listWait // tools/list envelope id → its waiter
	busy    int                  // discoveries scheduled or running
	changed chan struct{}        // closed and replaced at every change
	rpcID   int64
}

// peerDiscovery is what the participant knows of one other participant's
// tools.
type peerDiscovery struct {
	status     DiscoveryStatus
	tools      []DiscoveredTool
	candidate  bool // its capabilities let it answer MCP requests
	notAllowed bool // the latest discovery failed for lack of our capability
	stale      bool // RefreshDiscovery: do not answer from the list
	relist     bool // its tools changed while a discovery was under way
	ctx        context.Context
	cancel     context.CancelFunc // ends its discoveries when it is forgotten
	flight     *discoveryFlight   // the discovery under way, shared
	refresh    chan struct{}      // closes to cancel the scheduled refresh
}

// discoveryFlight is one discovery under way; tools and err are set before
// done is closed.
type discoveryFlight struct {
	done  chan struct{}
	tools []DiscoveredTool
	err   error
}

// listWait waits for the answer to one tools/list.
type listWait struct {
	target string
	ch     chan listReply // buffered: one answer
}

// listReply is an mcp/response to a tools/list, or the gateway's refusal.
type listReply struct {
	env *protocol.Envelope
	err error
}

func (p *Participant) wireDiscovery() {
	p.c.OnWelcome(p.onDiscoveryWelcome)
	p.c.OnKind(protocol.KindSystemPresence, p.onDiscoveryPresence)
	p.c.OnKind(protocol.KindMCPResponse, p.onToolsListAnswer)
	p.c.OnKind(protocol.KindSystemError, p.onToolsListAnswer)
	p.c.OnKind(protocol.KindMCPRequest, p.onToolsListChanged)
}

// toolsListChanged is the MCP notification a participant sends (as an
// mcp/request, broadcast or addressed) when its tools changed.
const toolsListChanged = "notifications/tools/list_changed"

// onToolsListChanged marks the sender's tool list stale when it announces
// notifications/tools/list_changed, broadcast or addressed to this
// participant, and lists its tools again when AutoDiscovery is set or they
// were discovered before. A discovery under way is followed by another,
// since its answer may predate the change.
func (p *Participant) onToolsListChanged(env *protocol.Envelope) {
	from := env.From
	if from == "" || from == p.ID() || (!env.IsBroadcast() && !env.AddressedTo(p.ID())) {
		return
	}
	var msg struct {
		Method string `json:"method"`
	}
	if json.Unmarshal(env.Payload, &msg) != nil || msg.Method != toolsListChanged {
		return
	}
	d := &p.discovery
	d.mu.Lock()
	defer d.mu.Unlock()
	pe, ok := d.peers[from]
	if !ok {
		return
	}
	pe.stale = true
	if pe.flight != nil {
		pe.relist = true
		return
	}
	st := pe.status.State
	if p.opts.AutoDiscovery || st == DiscoveryCompleted || st == DiscoveryNoTools {
		p.log.Debug("tools changed; listing them again", "participant", from)
		if pe.refresh != nil {
			close(pe.refresh)
			pe.refresh = nil
		}
		p.startLocked(pe, from, 0)
	}
}

// notifyLocked wakes WaitForPendingDiscoveries.
func (d *discoveryState) notifyLocked() {
	if d.changed != nil {
		close(d.changed)
	}
	d.changed = make(chan struct{})
}

// peerLocked returns the record of participant id, creating it.
func (p *Participant) peerLocked(id string) *peerDiscovery {
	d := &p.discovery
	if pe, ok := d.peers[id]; ok {
		return pe
	}
	if d.peers == nil {
		d.peers = make(map[string]*peerDiscovery)
	}
	ctx, cancel := context.WithCancel(p.ctx)
	pe := &peerDiscovery{status: DiscoveryStatus{State: DiscoveryNotStarted}, candidate: true, ctx: ctx, cancel: cancel}
	d.peers[id] = pe
	d.notifyLocked()
	return pe
}

// forgetLocked drops participant id and ends its discoveries.
func (p *Participant) forgetLocked(id string) {
	d := &p.discovery
	pe, ok := d.peers[id]
	if !ok {
		return
	}
	delete(d.peers, id)
	pe.cancel()
	if pe.refresh != nil {
		close(pe.refresh)
		pe.refresh = nil
	}
	d.notifyLocked()
}

// freshLocked reports whether pe's tool list may be used as it is.
func (p *Participant) freshLocked(pe *peerDiscovery) bool {
	st := pe.status
	return !pe.stale && !st.Fetched.IsZero() && time.Since(st.Fetched) < p.opts.DiscoveryTTL &&
		(st.State == DiscoveryCompleted || st.State == DiscoveryNoTools)
}

// canAnswerMCP reports whether capabilities let a participant answer a
// tools/list.
func canAnswerMCP(caps []json.RawMessage) bool {
	set, err := capability.Compile(caps)
	if err != nil {
		return false
	}
	return set.Allows(protocol.KindMCPResponse, probeResponse)
}

// onDiscoveryWelcome learns the participants of the space from a welcome,
// forgets those no longer there (they left while the connection was down)
// and, with AutoDiscovery, discovers the new candidates.
func (p *Participant) onDiscoveryWelcome(w *protocol.Welcome) {
	self := w.You.ID
	d := &p.discovery
	d.mu.Lock()
	defer d.mu.Unlock()
	present := make(map[string]bool, len(w.Participants))
	for _, info := range w.Participants {
		if info.ID == "" || info.ID == self {
			continue
		}
		present[info.ID] = true
		_, known := d.peers[info.ID]
		pe := p.peerLocked(info.ID)
		if !known {
			pe.candidate = canAnswerMCP(info.Capabilities)
		}
		again := pe.status.State == DiscoveryNotStarted || (pe.status.State == DiscoveryFailed && pe.notAllowed)
		if p.opts.AutoDiscovery && pe.candidate && again && pe.flight == nil {
			p.startLocked(pe, info.ID, p.discoveryStagger())
		}
	}
	for id := range d.peers {
		if !present[id] {
			p.forgetLocked(id)
		}
	}
}

// onDiscoveryPresence follows joins and leaves.
func (p *Participant) onDiscoveryPresence(env *protocol.Envelope) {
	if !client.FromGateway(env) {
		return
	}
	var pr protocol.Presence
	if err := env.DecodePayload(&pr); err != nil {
		return
	}
	id := pr.Participant.ID
	if id == "" || id == p.ID() {
		return
	}
	d := &p.discovery
	d.mu.Lock()
	defer d.mu.Unlock()
	switch pr.Event {
	case protocol.PresenceJoin:
		p.forgetLocked(id) // a new connection may bring other tools
		pe := p.peerLocked(id)
		pe.candidate = canAnswerMCP(pr.Participant.Capabilities)
		if p.opts.AutoDiscovery && pe.candidate {
			p.startLocked(pe, id, p.discoveryStagger())
		}
	case protocol.PresenceLeave:
		p.forgetLocked(id)
	}
}

// onToolsListAnswer hands an mcp/response (from the participant asked) or
// a system/error to the tools/list it correlates to.
func (p *Participant) onToolsListAnswer(env *protocol.Envelope) {
	d := &p.discovery
	d.mu.Lock()
	defer d.mu.Unlock()
	if len(d.waits) == 0 {
		return
	}
	for _, id := range env.CorrelationID {
		w, ok := d.waits[id]
		if !ok {
			continue
		}
		switch {
		case env.Kind == protocol.KindSystemError:
			if !client.FromGateway(env) {
				continue
			}
			w.ch <- listReply{err: refusal(env)}
		case env.From == w.target:
			w.ch <- listReply{env: env}
		default:
			continue
		}
		delete(d.waits, id)
	}
}

// discoveryStagger is the random delay before an automatic discovery.
func (p *Participant) discoveryStagger() time.Duration {
	limit := min(max(p.opts.DiscoveryTimeout/4, 10*time.Millisecond), time.Second)
	return rand.N(limit)
}

// discoveryBackoff is the wait before retry n (from 1).
func (p *Participant) discoveryBackoff(n int) time.Duration {
	step := min(max(p.opts.DiscoveryTimeout/4, 50*time.Millisecond), 5*time.Second)
	return time.Duration(n) * step
}

// startLocked starts a discovery of pe (participant id) after delay, or
// returns the one under way.
func (p *Participant) startLocked(pe *peerDiscovery, id string, delay time.Duration) *discoveryFlight {
	if pe.flight != nil {
		return pe.flight
	}
	d := &p.discovery
	f := &discoveryFlight{done: make(chan struct{})}
	pe.flight = f
	pe.status.State, pe.status.Attempts, pe.status.Err = DiscoveryInProgress, 0, ""
	d.busy++
	d.notifyLocked()
	p.goBackground(func(context.Context) { p.runDiscovery(pe, id, f, delay) })
	return f
}

// runDiscovery is one discovery: up to discoveryAttempts tools/list
// attempts with backoff.
func (p *Participant) runDiscovery(pe *peerDiscovery, id string, f *discoveryFlight, delay time.Duration) {
	ctx := pe.ctx
	var tools []DiscoveredTool
	var err error
	if !jobs.Sleep(ctx, delay) {
		err = ctx.Err()
	}
	for attempt := 1; err == nil; attempt++ {
		d := &p.discovery
		d.mu.Lock()
		pe.status.Attempts, pe.status.LastAttempt = attempt, time.Now()
		d.mu.Unlock()
		tools, err = p.listTools(ctx, id)
		if err == nil || ctx.Err() != nil || attempt == discoveryAttempts || !retryable(err) {
			break
		}
		p.log.Debug("tool discovery attempt failed", "participant", id, "attempt", attempt, "err", err)
		if !jobs.Sleep(ctx, p.discoveryBackoff(attempt)) {
			err = fmt.Errorf("%w (after: %w)", ctx.Err(), err)
			break
		}
		err = nil
	}
	p.finishDiscovery(pe, id, f, tools, err)
}

// retryable reports whether another attempt could succeed where err
// failed: not when this participant may not ask (by its own capabilities or
// the gateway's refusal), is paused or was shut down.
func retryable(err error) bool {
	return !errors.Is(err, ErrNotAllowed) && !errors.Is(err, ErrPaused) && !errors.Is(err, ErrShutdown)
}

// finishDiscovery records the outcome of a discovery and releases its
// waiters.
func (p *Participant) finishDiscovery(pe *peerDiscovery, id string, f *discoveryFlight, tools []DiscoveredTool, err error) {
	d := &p.discovery
	d.mu.Lock()
	d.busy--
	if d.peers[id] != pe {
		// Forgotten meanwhile: it left, or the participant is closing.
		tools, err = nil, fmt.Errorf("participant: discovery of %s: the participant left the space", id)
	} else {
		pe.flight = nil
		if err == nil {
			pe.tools, pe.stale, pe.notAllowed = tools, false, false
			pe.status.Tools, pe.status.Fetched, pe.status.Err = len(tools), time.Now(), ""
			pe.status.State = DiscoveryCompleted
			if len(tools) == 0 {
				pe.status.State = DiscoveryNoTools
			}
			p.log.Debug("tools discovered", "participant", id, "tools", len(tools))
			if p.opts.AutoDiscovery {
				p.scheduleRefreshLocked(pe, id)
			}
		} else {
			err = fmt.Errorf("participant: discovery of %s: %w", id, err)
			pe.tools, pe.notAllowed = nil, errors.Is(err, ErrNotAllowed)
			pe.status.State, pe.status.Tools, pe.status.Err = DiscoveryFailed, 0, err.Error()
			if pe.notAllowed || p.ctx.Err() != nil {
				p.log.Debug("tool discovery failed", "participant", id, "err", err)
			} else {
				p.log.Warn("tool discovery failed", "participant", id, "attempts", pe.status.Attempts, "err", err)
			}
		}
		if pe.relist && p.ctx.Err() == nil {
			// Its tools changed while this discovery ran: list them again.
			pe.relist, pe.stale = false, true
			p.startLocked(pe, id, 0)
		}
	}
	d.notifyLocked()
	d.mu.Unlock()
	f.tools, f.err = tools, err
	close(f.done)
}

// scheduleRefreshLocked lists pe's tools again when its list expires.
func (p *Participant) scheduleRefreshLocked(pe *peerDiscovery, id string) {
	if pe.refresh != nil {
		close(pe.refresh)
	}
	stop := make(chan struct{})
	pe.refresh = stop
	ctx, ttl := pe.ctx, p.opts.DiscoveryTTL
	p.after(ctx, ttl, stop, func() {
		d := &p.discovery
		d.mu.Lock()
		defer d.mu.Unlock()
		if d.peers[id] == pe && pe.refresh == stop {
			pe.refresh = nil
			pe.stale = true
			p.startLocked(pe, id, 0)
		}
	})
}

// listTools asks participant id for its tools once: tools/list and the
// pages that follow, each within Options.DiscoveryTimeout.
func (p *Participant) listTools(ctx context.Context, id string) ([]DiscoveredTool, error) {
	var tools []DiscoveredTool
	cursor := ""
	seen := map[string]bool{}
	for range maxToolPages {
		page, next, err := p.listToolsPage(ctx, id, cursor)
		if err != nil {
			return nil, err
		}
		for _, t := range page {
			if len(tools) >= maxToolsPerPeer {
				p.log.Warn("too many tools; keeping the first", "participant", id, "kept", maxToolsPerPeer)
				return tools, nil
			}
			tools = append(tools, t)
		}
		if next == "" || seen[next] {
			break
		}
		seen[next] = true
		cursor = next
	}
	return tools, nil
}

// toolsListRequest is the payload of a tools/list mcp/request.
type toolsListRequest struct {
	JSONRPC string          `json:"jsonrpc"`
	ID      int64           `json:"id"`
	Method  string          `json:"method"`
	Params  *toolsListParam `json:"params,omitempty"`
}

// toolsListParam is the params of a tools/list for the next page.
type toolsListParam struct {
	Cursor string `json:"cursor"`
}

// listToolsPage sends one tools/list to id and waits for its answer.
func (p *Participant) listToolsPage(ctx context.Context, id, cursor string) ([]DiscoveredTool, string, error) {
	d := &p.discovery
	d.mu.Lock()
	d.rpcID++
	req := toolsListRequest{JSONRPC: "2.0", ID: d.rpcID, Method: "tools/list"}
	d.mu.Unlock()
	if cursor != "" {
		req.Params = &toolsListParam{Cursor: cursor}
	}
	env, err := protocol.New(protocol.KindMCPRequest, req)
	if err != nil {
		return nil, "", err
	}
	if !p.CanSendTo(env.Kind, []string{id}, env.Payload) {
		return nil, "", fmt.Errorf("%w: this participant may not send tools/list to %s", ErrNotAllowed, id)
	}
	env.To, env.ID = []string{id}, protocol.NewID()
	w := &listWait{target: id, ch: make(chan listReply, 1)}
	defer await(&d.mu, &d.waits, env.ID, w)()
	tctx, cancel := context.WithTimeout(ctx, p.opts.DiscoveryTimeout)
	defer cancel()
	if err := p.Send(tctx, env); err != nil {
		return nil, "", err
	}
	var r listReply
	select {
	case r = <-w.ch:
	case <-tctx.Done():
		if ctx.Err() != nil {
			return nil, "", ctx.Err()
		}
		return nil, "", fmt.Errorf("no answer to tools/list within %v: %w", p.opts.DiscoveryTimeout, tctx.Err())
	}
	if r.err != nil {
		return nil, "", r.err
	}
	return parseToolsList(id, r.env)
}

// toolsListResult is the result of tools/list; tools stay raw so that one
// malformed tool does not spoil the others.
type toolsListResult struct {
	Tools      []json.RawMessage `json:"tools"`
	NextCursor string            `json:"nextCursor"`
}

// toolEntry is one tool of a tools/list result.
type toolEntry struct {
	Name        string          `json:"name"`
	Description string          `json:"description"`
	InputSchema json.RawMessage `json:"inputSchema"`
}

// parseToolsList reads an mcp/response to tools/list from participant id.
func parseToolsList(id string, env *protocol.Envelope) ([]DiscoveredTool, string, error) {
	var msg protocol.MCPMessage
	if err := env.DecodePayload(&msg); err != nil {
		return nil, "", fmt.Errorf("malformed tools/list answer: %w", err)
	}
	if msg.Error != nil {
		return nil, "", fmt.Errorf("tools/list answered with error %d: %s", msg.Error.Code, msg.Error.Message)
	}
	var res toolsListResult
	if len(msg.Result) > 0 && string(msg.Result) != "null" {
		if err := json.Unmarshal(msg.Result, &res); err != nil {
			return nil, "", fmt.Errorf("malformed tools/list result: %w", err)
		}
	}
	tools := make([]DiscoveredTool, 0, len(res.Tools))
	for _, raw := range res.Tools {
		var t toolEntry
		if err := json.Unmarshal(raw, &t); err != nil || t.Name == "" {
			continue
		}
		var schema json.RawMessage
		if len(t.InputSchema) > 0 && string(t.InputSchema) != "null" {
			schema = slices.Clone(t.InputSchema)
		}
		tools = append(tools, DiscoveredTool{Participant: id, Name: t.Name, Description: t.Description, InputSchema: schema})
	}
	return tools, res.NextCursor, nil
}

// cloneTools copies a tool list.
func cloneTools(tools []DiscoveredTool) []DiscoveredTool {
	out := make([]DiscoveredTool, len(tools))
	for i, t := range tools {
		t.InputSchema = slices.Clone(t.InputSchema)
		out[i] = t
	}
	return out
}

// DiscoverTools returns the tools of participant id: from the list
// discovered earlier while it is fresh (Options.DiscoveryTTL), otherwise by
// asking it (see the discovery rules above), sharing a discovery already
// under way. A participant without tools gives an empty list and a nil
// error. The error wraps ErrNotAllowed when this participant may not send
// tools/list, context.DeadlineExceeded when id never answered, and ctx's
// error when ctx ends first (the discovery itself goes on).
func (p *Participant) DiscoverTools(ctx context.Context, id string) ([]DiscoveredTool, error) {
	if id == "" {
		return nil, errors.New("participant: discover tools: no participant id")
	}
	if id == p.ID() {
		return nil, errors.New("participant: discover tools: that is this participant")
	}
	if p.closed.Load() {
		return nil, ErrClosed
	}
	d := &p.discovery
	d.mu.Lock()
	pe := p.peerLocked(id)
	if p.freshLocked(pe) {
		tools := cloneTools(pe.tools)
		d.mu.Unlock()
		return tools, nil
	}
	f := p.startLocked(pe, id, 0)
	d.mu.Unlock()
	select {
	case <-f.done:
		if f.err != nil {
			return nil, f.err
		}
		return cloneTools(f.tools), nil
	case <-ctx.Done():
		return nil, fmt.Errorf("participant: discover tools of %s: %w", id, ctx.Err())
	case <-p.ctx.Done():
		return nil, ErrClosed
	}
}

// AvailableTools returns the tools discovered so far, of every participant
// still in the space, ordered by participant and name. A list past its TTL
// is kept until a new discovery replaces it; a failed discovery drops it.
func (p *Participant) AvailableTools() []DiscoveredTool {
	d := &p.discovery
	d.mu.Lock()
	var out []DiscoveredTool
	for _, pe := range d.peers {
		out = append(out, cloneTools(pe.tools)...)
	}
	d.mu.Unlock()
	slices.SortFunc(out, func(a, b DiscoveredTool) int {
		return cmp.Or(cmp.Compare(a.Participant, b.Participant), cmp.Compare(a.Name, b.Name))
	})
	return out
}

// DiscoveryStatus returns the discovery state of every other participant
// the participant knows, by id.
func (p *Participant) DiscoveryStatus() map[string]DiscoveryStatus {
	d := &p.discovery
	d.mu.Lock()
	defer d.mu.Unlock()
	out := make(map[string]DiscoveryStatus, len(d.peers))
	for id, pe := range d.peers {
		out[id] = pe.status
	}
	return out
}

// WaitForPendingDiscoveries waits until no discovery is scheduled or under
// way, for instance before an agent lists its tools to a model. It returns
// ctx's error, wrapped, if ctx ends first.
func (p *Participant) WaitForPendingDiscoveries(ctx context.Context) error {
	d := &p.discovery
	for {
		d.mu.Lock()
		if d.busy == 0 {
			d.mu.Unlock()
			return nil
		}
		if d.changed == nil {
			d.changed = make(chan struct{})
		}
		ch := d.changed
		d.mu.Unlock()
		select {
		case <-ch:
		case <-ctx.Done():
			return fmt.Errorf("participant: waiting for tool discoveries: %w", ctx.Err())
		case <-p.ctx.Done():
			return ErrClosed
		}
	}
}

// RefreshDiscovery lists the tools of participant id again in the
// background, whatever the age of its list and whether or not
// AutoDiscovery is set; DiscoveryStatus and WaitForPendingDiscoveries
// follow it.
func (p *Participant) RefreshDiscovery(id string) {
	if id == "" || id == p.ID() || p.closed.Load() {
		return
	}
	d := &p.discovery
	d.mu.Lock()
	defer d.mu.Unlock()
	pe := p.peerLocked(id)
	pe.stale = true
	if pe.refresh != nil {
		close(pe.refresh)
		pe.refresh = nil
	}
	p.startLocked(pe, id, 0)
}
