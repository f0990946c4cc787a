package participant

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/mew-protocol/mew/capability"
	"github.com/mew-protocol/mew/client"
	"github.com/mew-protocol/mew/protocol"
)

// Options configures a Participant.
type Options struct {
	// Client configures the connection (gateway, space, token, reconnect...).
	Client client.Options
	// RequestTimeout bounds a direct request when its context has no
	// deadline (default 30 s). A proposal waits ProposalTimeout instead:
	// people take longer than tools.
	RequestTimeout time.Duration
	// Logger receives diagnostics; nil means the client's logger, else none.
	Logger *slog.Logger

	// AutoDiscovery lists the tools of every participant that may answer
	// MCP requests, as they join (spec: participant join flow).
	AutoDiscovery bool
	// DiscoveryTTL is how long discovered tools stay fresh (default 5 min).
	DiscoveryTTL time.Duration
	// DiscoveryTimeout bounds one tools/list (default 10 s).
	DiscoveryTimeout time.Duration

	// ContextTokens is the model context size reported in status telemetry
	// (0: not reported); SoftLimit is the fraction of it at which the
	// participant reports its status unasked (default 0.9).
	ContextTokens int
	SoftLimit     float64

	// ProposalTimeout is how long a proposal stays open for a person to
	// decide (default 10 min): one of this participant's own, made by
	// Request when its context has no deadline, is then withdrawn with
	// reason "timeout" and fails with ErrProposalTimedOut; another
	// participant's, when nobody decides it and its proposer does not
	// withdraw it, has then timed out and is no longer offered.
	ProposalTimeout time.Duration

	// MaxReplyBytes bounds the payload of an mcp/response this participant
	// sends (default 1 MiB less 4 KiB, under the gateway's default message
	// size with room for the envelope): a larger result is answered with an
	// error that says so, since the gateway would refuse it and the caller
	// wait for nothing.
	MaxReplyBytes int

	// DelegatedMethods lists MCP methods that the participant would answer
	// itself (initialize, tools/list, tools/call, resources/list,
	// resources/read, resources/templates/list) but hands to the OnRequest
	// handlers instead, as it does the methods it does not serve: a bridge
	// that forwards them to an MCP server sets it. ping is always answered
	// by the participant.
	DelegatedMethods []string
}

const (
	defaultRequestTimeout   = 30 * time.Second
	defaultDiscoveryTTL     = 5 * time.Minute
	defaultDiscoveryTimeout = 10 * time.Second
	defaultSoftLimit        = 0.9
)

// Errors callers branch on.
var (
	// ErrNotAllowed: the participant may neither send the request nor
	// propose it.
	ErrNotAllowed = errors.New("participant: not allowed by this participant's capabilities")
	// ErrPaused: the participant is paused and the envelope is not one a
	// paused participant may send.
	ErrPaused = errors.New("participant: paused")
	// ErrClosed: the participant was closed.
	ErrClosed = errors.New("participant: closed")
)

// Participant is a MEW participant with MCP tools, smart requests,
// proposals, discovery, chat helpers, participant controls and streams.
type Participant struct {
	c    *client.Client
	opts Options
	log  *slog.Logger

	caps atomic.Pointer[capability.Set] // from the latest welcome

	ctx    context.Context // cancelled by Close; parent of all background work
	cancel context.CancelFunc
	bgMu   sync.Mutex // orders goBackground's Add against Close's Wait
	wg     sync.WaitGroup
	closed atomic.Bool

	delegated map[string]bool // Options.DelegatedMethods; read-only after New
	tools     toolRegistry
	pending   requestTable
	discovery discoveryState
	controls  controlState
	chats     chatBook
	streams   streamBook
	elicits   elicitBook
}

// New returns a participant; Connect connects it.
func New(opts Options) (*Participant, error) {
	if opts.RequestTimeout <= 0 {
		opts.RequestTimeout = defaultRequestTimeout
	}
	if opts.DiscoveryTTL <= 0 {
		opts.DiscoveryTTL = defaultDiscoveryTTL
	}
	if opts.DiscoveryTimeout <= 0 {
		opts.DiscoveryTimeout = defaultDiscoveryTimeout
	}
	if opts.ProposalTimeout <= 0 {
		opts.ProposalTimeout = defaultProposalTimeout
	}
	if opts.MaxReplyBytes <= 0 {
		opts.MaxReplyBytes = 1<<20 - 4<<10
	}
	if opts.SoftLimit <= 0 || opts.SoftLimit > 1 {
		opts.SoftLimit = defaultSoftLimit
	}
	log := cmp.Or(opts.Logger, opts.Client.Logger, slog.New(slog.DiscardHandler))
	c, err := client.New(opts.Client)
	if err != nil {
		return nil, fmt.Errorf("participant: %w", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	p := &Participant{c: c, opts: opts, log: log, ctx: ctx, cancel: cancel, delegated: map[string]bool{}}
	for _, m := range opts.DelegatedMethods {
		if m != "ping" {
			p.delegated[m] = true
		}
	}
	p.caps.Store(capability.MustCompile())
	c.OnWelcome(p.onWelcome)
	p.wireTools()
	p.wireRequests()
	p.wireDiscovery()
	p.wireControls()
	p.wireChat()
	p.wireStreams()
	p.wireElicitation()
	return p, nil
}

// Client returns the connection the participant holds.
func (p *Participant) Client() *client.Client { return p.c }

// ID returns the participant's runtime id, from the gateway's welcome.
func (p *Participant) ID() string { return p.c.ID() }

// Connect connects to the gateway and returns once the welcome arrived.
func (p *Participant) Connect(ctx context.Context) error {
	if p.closed.Load() {
		return ErrClosed
	}
	if err := p.c.Connect(ctx); err != nil {
		return fmt.Errorf("participant: %w", err)
	}
	// The client runs OnWelcome handlers on its dispatch goroutine, maybe
	// after Connect returns: take the capabilities now so that CanSend is
	// right from the start.
	if w := p.c.Welcome(); w != nil {
		p.onWelcome(w)
	}
	return nil
}

// Close cancels the participant's background work, waits for it and closes
// the connection. It must not be called from a handler.
func (p *Participant) Close() error {
	p.bgMu.Lock()
	if !p.closed.CompareAndSwap(false, true) {
		p.bgMu.Unlock()
		return nil
	}
	p.bgMu.Unlock()
	p.cancel()
	err := p.c.Close()
	p.wg.Wait()
	if err != nil && !errors.Is(err, client.ErrClosed) {
		return fmt.Errorf("participant: %w", err)
	}
	return nil
}

// onWelcome keeps the capabilities current: the first welcome, each
// re-join and each update after a grant or revocation.
func (p *Participant) onWelcome(w *protocol.Welcome) {
	set, err := capability.Compile(w.You.Capabilities)
	if err != nil {
		p.log.Warn("welcome capabilities do not compile; keeping none", "err", err)
		set = capability.MustCompile()
	}
	p.caps.Store(set)
}

// Capabilities returns the participant's capabilities as the latest
// welcome gave them.
func (p *Participant) Capabilities() []json.RawMessage { return p.caps.Load().Patterns() }

// ProposalTimeout is how long a proposal stays open for a person to decide
// (Options.ProposalTimeout).
func (p *Participant) ProposalTimeout() time.Duration { return p.opts.ProposalTimeout }

// CanSend reports whether the participant's capabilities allow a broadcast
// envelope (no to) of kind with payload (raw JSON, nil for none), as the
// gateway would judge. A capability that names its recipients (a to
// member) never allows a broadcast: use CanSendTo for an addressed one.
func (p *Participant) CanSend(kind string, payload []byte) bool {
	return p.caps.Load().Allows(kind, payload)
}

// CanSendTo reports whether the participant's capabilities allow an
// envelope of kind addressed to the recipients to with payload, as the
// gateway would judge.
func (p *Participant) CanSendTo(kind string, to []string, payload []byte) bool {
	return p.caps.Load().AllowsTo(kind, to, payload)
}

// Send sends an envelope through the client, after the participant's own
// checks: a paused participant sends only what a paused participant may.
func (p *Participant) Send(ctx context.Context, env *protocol.Envelope) error {
	if p.closed.Load() {
		return ErrClosed
	}
	if err := p.controls.allowOutbound(env.Kind); err != nil {
		return err
	}
	return p.c.Send(ctx, env)
}

// send is Send for a kind and payload.
func (p *Participant) send(ctx context.Context, kind string, to []string, correlation []string, payload any) (*protocol.Envelope, error) {
	env, err := protocol.New(kind, payload)
	if err != nil {
		return nil, fmt.Errorf("participant: %w", err)
	}
	env.To, env.CorrelationID = to, correlation
	if err := p.Send(ctx, env); err != nil {
		return nil, err
	}
	return env, nil
}

// goBackground runs f on a goroutine the participant owns; Close cancels its
// context and waits for it.
func (p *Participant) goBackground(f func(ctx context.Context)) {
	p.bgMu.Lock()
	defer p.bgMu.Unlock()
	if p.closed.Load() {
		return
	}
	p.wg.Go(func() { f(p.ctx) })
}

// after runs f on a participant goroutine once d has passed, unless ctx
// ends, stop is closed or the participant closes first.
func (p *Participant) after(ctx context.Context, d time.Duration, stop <-chan struct{}, f func()) {
	p.goBackground(func(pctx context.Context) {
		t := time.NewTimer(d)
		defer t.Stop()
		select {
		case <-pctx.Done():
			return
		case <-ctx.Done():
			return
		case <-stop:
			return
		case <-t.C:
		}
		f()
	})
}

// await puts the waiter w for the answer to the envelope id into *waiters
// (making the map first if need be) under mu, and returns the function that
// takes it out again.
func await[W any](mu *sync.Mutex, waiters *map[string]W, id string, w W) (done func()) {
	mu.Lock()
	defer mu.Unlock()
	if *waiters == nil {
		*waiters = make(map[string]W)
	}
	(*waiters)[id] = w
	return func() {
		mu.Lock()
		delete(*waiters, id)
		mu.Unlock()
	}
}
