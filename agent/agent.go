package agent

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"sync"
	"time"

	"github.com/mew-protocol/mew/llm"
	"github.com/mew-protocol/mew/participant"
	"github.com/mew-protocol/mew/protocol"
)

// ackTimeout bounds the chat/acknowledge sent from the dispatch goroutine.
const ackTimeout = 2 * time.Second

// sendTimeout bounds each envelope the agent sends while answering.
const sendTimeout = 10 * time.Second

// Errors callers branch on.
var (
	// ErrNoProvider: Options.Provider is nil.
	ErrNoProvider = errors.New("agent: no model provider")
	// ErrMaxIterations: the model kept calling tools for
	// Config.MaxIterations rounds without giving an answer.
	ErrMaxIterations = errors.New("agent: no answer within the maximum number of iterations")
	// ErrAmbiguousToolName: a participant id or tool name that cannot be
	// mapped to a model tool name and back (see ToolName).
	ErrAmbiguousToolName = errors.New("agent: ambiguous tool name")
)

// Options configures an Agent.
type Options struct {
	// Participant configures the participant the agent is. AutoDiscovery
	// is always switched on: the agent offers the discovered tools to its
	// model.
	Participant participant.Options
	// Provider is the language model; required.
	Provider llm.Provider
	// Config is the agent's behaviour.
	Config Config
	// Logger receives diagnostics; nil means none. It is also the
	// participant's logger when Participant.Logger is nil.
	Logger *slog.Logger
	// Now is the clock of the floor claims' started_at; nil means
	// time.Now. Tests set it.
	Now func() time.Time
}

// Agent is a MEW participant that answers chats with a language model and
// the tools of the space.
type Agent struct {
	p        *participant.Participant
	provider llm.Provider
	cfg      Config
	log      *slog.Logger

	ctx    context.Context // ends at Close
	cancel context.CancelFunc
	wg     sync.WaitGroup
	start  sync.Once
	wake   chan struct{} // a chat was queued
	resume chan struct{} // the pause ended

	mu          sync.Mutex
	queue       []*item
	lastServed  string // the sender of the chat answered last (queue.go)
	active      *run
	recent      []line      // the latest chats of the space, for the classifier
	unaddressed []time.Time // when unaddressed chats were taken up, over the last minute

	now             func() time.Time
	claims          map[string]claim // others' floor claims by message id
	floorYields     int
	floorSuppressed int
	history         []llm.Message
	answers         []string // ids of the latest answers sent, oldest first
}

// maxAnswers is how many of its answers' ids the agent remembers.
const maxAnswers = 64

// run is the chat being answered.
type run struct {
	question  string // the chat's envelope id
	reasoning string // the reasoning/start id, "" without reasoning
	trace     *trace // the reasoning's stream, nil without one
	startedAt int64  // the floor claim's started_at (guarded by Agent.mu), 0 without one
	cancel    context.CancelCauseFunc
}

// cancelledError is the cause of a run stopped by a cancel envelope.
type cancelledError struct{ reason string }

func (e *cancelledError) Error() string { return "agent: cancelled: " + e.reason }

// New returns an agent; Connect connects it. Close must be called to release
// it.
func New(opts Options) (*Agent, error) {
	if opts.Provider == nil {
		return nil, ErrNoProvider
	}
	logger := opts.Logger
	if logger == nil {
		logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	if err := opts.Config.Validate(); err != nil {
		return nil, err
	}
	cfg := opts.Config.withDefaults()
	popts := opts.Participant
	popts.AutoDiscovery = true
	if cfg.ProposalTimeout > 0 && popts.ProposalTimeout == 0 {
		popts.ProposalTimeout = cfg.ProposalTimeout
	}
	if popts.ContextTokens == 0 {
		popts.ContextTokens = cfg.ContextTokenLimit
	}
	if popts.Logger == nil {
		popts.Logger = opts.Logger
	}
	p, err := participant.New(popts)
	if err != nil {
		return nil, fmt.Errorf("agent: %w", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	a := &Agent{
		p:        p,
		provider: opts.Provider,
		cfg:      cfg,
		log:      logger,
		ctx:      ctx,
		cancel:   cancel,
		wake:     make(chan struct{}, 1),
		resume:   make(chan struct{}, 1),
		now:      opts.Now,
		claims:   make(map[string]claim),
	}
	if a.now == nil {
		a.now = time.Now
	}
	c := p.Client()
	c.OnKind(protocol.KindChat, a.onChat)
	c.OnKind(protocol.KindChatCancel, a.onChatCancel)
	c.OnKind(protocol.KindReasoningCancel, a.onReasoningCancel)
	c.OnKind(protocol.KindFloorRespondingTo, a.onRespondingTo)
	c.OnKind(protocol.KindFloorYield, a.onYield)
	p.OnPauseChange(func(paused bool, _ string) {
		if !paused {
			signal(a.resume)
		}
	})
	p.OnForget(a.forget)
	p.OnClear(a.clear)
	p.OnCompact(a.compact)
	return a, nil
}

// Participant returns the participant the agent is, to register tools and
// resources, handle proposals or send envelopes of its own.
func (a *Agent) Participant() *participant.Participant { return a.p }

// Config returns the agent's configuration, defaults filled in.
func (a *Agent) Config() Config { return a.cfg }

// Connect connects to the gateway, returns once the welcome arrived, and
// starts answering chats.
func (a *Agent) Connect(ctx context.Context) error {
	if err := a.ctx.Err(); err != nil {
		return fmt.Errorf("agent: connect: %w", participant.ErrClosed)
	}
	a.start.Do(func() {
		a.wg.Add(1)
		go a.work()
	})
	if err := a.p.Connect(ctx); err != nil {
		return fmt.Errorf("agent: connect: %w", err)
	}
	return nil
}

// Close stops the chat being answered (sending nothing more for it), waits
// for the agent's goroutines and closes the participant. It must not be
// called from a handler.
func (a *Agent) Close() error {
	a.cancel()
	a.wg.Wait()
	if err := a.p.Close(); err != nil {
		return fmt.Errorf("agent: close: %w", err)
	}
	return nil
}

// signal wakes whoever waits on ch without blocking.
func signal(ch chan struct{}) {
	select {
	case ch <- struct{}{}:
	default:
	}
}

// isReplyToAnswer reports whether env is correlated to one of the agent's
// answers: the answer of another agent to it, which answering again would
// turn into an endless exchange.
func (a *Agent) isReplyToAnswer(env *protocol.Envelope) bool {
	a.mu.Lock()
	defer a.mu.Unlock()
	for _, id := range a.answers {
		if env.CorrelatesWith(id) {
			return true
		}
	}
	return false
}

// sentAnswer remembers the id of an answer sent.
func (a *Agent) sentAnswer(id string) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.answers = append(a.answers, id)
	if over := len(a.answers) - maxAnswers; over > 0 {
		a.answers = append([]string(nil), a.answers[over:]...)
	}
}

// mentions reports whether text mentions participant name
// (protocol.Mentions).
func mentions(text, name string) bool { return protocol.Mentions(text, name) }

// onChat runs on the dispatch goroutine for every chat.
func (a *Agent) onChat(env *protocol.Envelope) {
	if a.ctx.Err() != nil {
		return
	}
	var chat protocol.Chat
	if err := env.DecodePayload(&chat); err != nil || strings.TrimSpace(chat.Text) == "" {
		return
	}
	if env.From != a.p.ID() {
		a.heard(env.From, chat.Text)
	}
	v := a.judge(env, chat.Text)
	if v == ignore {
		return
	}
	it := &item{env: env.Clone(), text: chat.Text, classify: v == classify, floor: a.needsFloor(env, v)}
	if it.floor {
		it.notBefore = time.Now().Add(a.floorDelay())
	}
	a.mu.Lock()
	lost := a.admitLocked(it)
	a.mu.Unlock()
	if lost != nil {
		a.log.Warn("agent: too many chats waiting; one loses its place", "chat", lost.env.ID, "from", lost.env.From)
		// A chat the agent meant to answer is owed words; an unaddressed
		// one it would only have classified is let go quietly.
		if !lost.classify {
			a.tellDropped(lost)
		}
	}
	if lost != it {
		if !it.classify {
			a.acknowledge(it.env) // it has its place: an answer will come
		}
		signal(a.wake)
	}
}

// acknowledge sends chat/acknowledge for a chat the agent will answer.
func (a *Agent) acknowledge(env *protocol.Envelope) {
	ctx, cancel := context.WithTimeout(a.ctx, ackTimeout)
	defer cancel()
	if err := a.p.Acknowledge(ctx, env, "processing"); err != nil {
		a.log.Warn("agent: acknowledge failed", "chat", env.ID, "err", err)
	}
}

// onChatCancel stops the answer to the cancelled chat, or drops it from the
// queue.
func (a *Agent) onChatCancel(env *protocol.Envelope) {
	if env.From == a.p.ID() || !env.AddressedTo(a.p.ID()) {
		return
	}
	var cc protocol.ChatCancel
	_ = env.DecodePayload(&cc)
	a.mu.Lock()
	defer a.mu.Unlock()
	kept := a.queue[:0]
	for _, q := range a.queue {
		if env.CorrelatesWith(q.env.ID) {
			a.log.Info("agent: queued chat cancelled", "chat", q.env.ID)
			continue
		}
		kept = append(kept, q)
	}
	a.queue = kept
	if r := a.active; r != nil && env.CorrelatesWith(r.question) {
		r.cancel(&cancelledError{reason: reasonOr(cc.Reason)})
	}
}

// onReasoningCancel stops the reasoning in progress when the cancel names it.
func (a *Agent) onReasoningCancel(env *protocol.Envelope) {
	if env.From == a.p.ID() || !env.AddressedTo(a.p.ID()) {
		return
	}
	var rc protocol.ReasoningCancel
	_ = env.DecodePayload(&rc)
	a.mu.Lock()
	defer a.mu.Unlock()
	if r := a.active; r != nil && r.reasoning != "" && env.Context == r.reasoning {
		r.cancel(&cancelledError{reason: reasonOr(rc.Reason)})
	}
}

// reasonOr returns reason, or "cancelled" when it is empty.
func reasonOr(reason string) string {
	if reason == "" {
		return "cancelled"
	}
	return reason
}

// work answers the queued chats one at a time until Close.
func (a *Agent) work() {
	defer a.wg.Done()
	for {
		select {
		case <-a.ctx.Done():
			return
		case <-a.wake:
		}
		for {
			if !a.waitUnpaused(a.ctx) {
				return
			}
			it := a.dequeue()
			if it == nil {
				break
			}
			if it.floor && !a.awaitFloor(a.ctx, it) {
				continue
			}
			if it.classify {
				if !a.shouldAnswer(a.ctx, it) {
					continue
				}
				if who := a.claimedBy(it.env.ID); it.floor && who != "" {
					a.suppressed(it, who)
					continue
				}
				a.acknowledge(it.env)
			}
			a.answer(it)
			if a.ctx.Err() != nil {
				return
			}
		}
	}
}

// waitUnpaused waits while the participant is paused; false means that ctx
// ended.
func (a *Agent) waitUnpaused(ctx context.Context) bool {
	for a.p.Paused() {
		select {
		case <-ctx.Done():
			return false
		case <-a.resume:
		case <-time.After(time.Second): // the pause may end without a signal we saw
		}
	}
	return ctx.Err() == nil
}
