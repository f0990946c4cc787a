package a2abridge

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/url"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/mew-protocol/mew/a2a"
	"github.com/mew-protocol/mew/internal/jobs"
	"github.com/mew-protocol/mew/participant"
	"github.com/mew-protocol/mew/protocol"
)

// Options configures a Bridge. Zero values take the defaults.
type Options struct {
	// Participant configures the bridge's participant: Client holds the
	// gateway, space, token and participant id. RequestTimeout, which
	// bounds a tool call, defaults to TaskTimeout here.
	Participant participant.Options
	// URL is the remote agent's root URL (its card is at URL +
	// a2a.CardPath) or the card's own URL; required.
	URL string
	// Auth holds the credentials for the agent.
	Auth Auth
	// HTTPClient makes the requests to the agent (nil: one with connect,
	// TLS and header timeouts and none overall, as streams may last).
	HTTPClient *http.Client

	// InitTimeout bounds reading the card (default 30 s).
	InitTimeout time.Duration
	// TaskTimeout bounds one exchange with the agent: from a message to
	// the task's end or its next question (default 10 min). A task past
	// it is canceled at the agent and reported.
	TaskTimeout time.Duration
	// QuestionTimeout is how long a question of the agent waits for its
	// answer in the space; then the task is canceled (default 30 min).
	QuestionTimeout time.Duration
	// MaxEvents bounds the events (or polls) of one exchange: an agent
	// that streams forever is cut there, its task canceled (default
	// 10000).
	MaxEvents int
	// MaxAnswerBytes bounds the text of an answer taken into the space;
	// the rest is cut with a note (default 64 KiB).
	MaxAnswerBytes int
	// MaxTasks bounds the tasks under way at once, questions waiting for
	// an answer included; past it a chat is answered that the bridge is
	// busy and a tool call fails (default 16).
	MaxTasks int
	// MaxThoughts bounds the reasoning/thought envelopes of one chat's
	// task, so that a chatty agent cannot flood the space (default 32).
	MaxThoughts int
	// Answerers may answer the agent's questions and cancel its tasks,
	// besides the participant whose chat started the task.
	Answerers []string

	// Logger receives what the bridge does; nil means the participant's
	// logger, else none. Credentials never reach it.
	Logger *slog.Logger
}

// Defaults of Options.
const (
	DefaultInitTimeout     = 30 * time.Second
	DefaultTaskTimeout     = 10 * time.Minute
	DefaultQuestionTimeout = 30 * time.Minute
	DefaultMaxEvents       = 10000
	DefaultMaxAnswerBytes  = 64 << 10
	DefaultMaxTasks        = 16
	DefaultMaxThoughts     = 32
)

const (
	// cancelTimeout bounds telling the agent that a task is canceled.
	cancelTimeout = 10 * time.Second
	// sendTimeout bounds sending one envelope to the space.
	sendTimeout = 10 * time.Second
	// maxCardStatus bounds the card carried in participant/status; a
	// larger card is summarised.
	maxCardStatus = 32 << 10
	// StatusField is the member of the bridge's participant/status that
	// holds the agent's card and the URL the bridge calls.
	StatusField = "a2a"
)

// Errors callers branch on.
var (
	// ErrRunning: Run was called on a bridge that already ran.
	ErrRunning = errors.New("a2abridge: Run may be called once")
	// ErrBusy: Options.MaxTasks tasks are under way.
	ErrBusy = errors.New("a2abridge: too many tasks under way")
	// ErrStreamLimit: the agent sent more events than Options.MaxEvents
	// for one exchange; the task was canceled.
	ErrStreamLimit = errors.New("a2abridge: the agent sent more events than the bridge takes")
	// ErrStreamBroken: the agent's stream ended before its task did,
	// again after the bridge subscribed to the task once more.
	ErrStreamBroken = errors.New("a2abridge: the agent's stream broke and did not come back")
	// ErrNoCredential: the card asks for a credential the bridge was not
	// given (Options.Auth).
	ErrNoCredential = errors.New("a2abridge: the agent asks for a credential the bridge does not have")
)

// Bridge is a remote A2A agent joined to a space as a participant: its
// skills are the participant's tools, chats addressed to it become tasks
// of the agent, and the agent's questions become chats in the space.
type Bridge struct {
	opts  Options
	log   *slog.Logger
	p     *participant.Participant
	ran   atomic.Bool
	ready chan struct{}

	// Set by Run before the participant joins; read-only after.
	card *a2a.AgentCard
	rc   *a2a.Client

	// work runs what handlers start, which Run's shutdown refuses and
	// waits for; its context is the tasks' parent.
	work *jobs.Group

	// mu guards the tables below; it is never held while sending or
	// calling the agent.
	mu      sync.Mutex
	jobs    map[string]*job     // under way, by the id of the envelope that started them
	waiting map[string]*waiting // tool calls' tasks waiting for input, by task id
	asked   int                 // questions put so far
}

// New checks opts and returns a bridge; Run starts it.
func New(opts Options) (*Bridge, error) {
	u, err := url.Parse(opts.URL)
	switch {
	case opts.URL == "":
		return nil, errors.New("a2abridge: the agent's URL is required")
	case err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "":
		return nil, fmt.Errorf("a2abridge: %q is not an http(s) URL of an agent", redact(opts.URL))
	case u.User != nil:
		return nil, errors.New("a2abridge: the agent's URL holds a user name or password; give credentials in Options.Auth")
	case opts.InitTimeout < 0 || opts.TaskTimeout < 0 || opts.QuestionTimeout < 0:
		return nil, errors.New("a2abridge: timeouts must not be negative")
	case opts.MaxEvents < 0 || opts.MaxAnswerBytes < 0 || opts.MaxTasks < 0 || opts.MaxThoughts < 0:
		return nil, errors.New("a2abridge: limits must not be negative")
	}
	if err := opts.Auth.check(); err != nil {
		return nil, err
	}
	opts.InitTimeout = cmp.Or(opts.InitTimeout, DefaultInitTimeout)
	opts.TaskTimeout = cmp.Or(opts.TaskTimeout, DefaultTaskTimeout)
	opts.QuestionTimeout = cmp.Or(opts.QuestionTimeout, DefaultQuestionTimeout)
	opts.MaxEvents = cmp.Or(opts.MaxEvents, DefaultMaxEvents)
	opts.MaxAnswerBytes = cmp.Or(opts.MaxAnswerBytes, DefaultMaxAnswerBytes)
	opts.MaxTasks = cmp.Or(opts.MaxTasks, DefaultMaxTasks)
	opts.MaxThoughts = cmp.Or(opts.MaxThoughts, DefaultMaxThoughts)
	if opts.HTTPClient == nil {
		opts.HTTPClient = defaultHTTPClient()
	}
	log := cmp.Or(opts.Logger, opts.Participant.Logger, opts.Participant.Client.Logger, slog.New(slog.DiscardHandler))
	opts.Logger = log
	popts := opts.Participant
	if popts.Logger == nil {
		popts.Logger = log
	}
	if popts.RequestTimeout == 0 {
		popts.RequestTimeout = opts.TaskTimeout
	}
	p, err := participant.New(popts)
	if err != nil {
		return nil, fmt.Errorf("a2abridge: %w", err)
	}
	b := &Bridge{opts: opts, log: log, p: p, ready: make(chan struct{}),
		jobs: map[string]*job{}, waiting: map[string]*waiting{}}
	b.work = jobs.New()
	return b, nil
}

// defaultHTTPClient bounds connecting and the wait for response headers,
// not the body: a stream may last as long as its task.
func defaultHTTPClient() *http.Client {
	t := http.DefaultTransport.(*http.Transport).Clone()
	t.ResponseHeaderTimeout = time.Minute
	return &http.Client{Transport: t}
}

// Participant returns the participant the bridge holds.
func (b *Bridge) Participant() *participant.Participant { return b.p }

// Ready returns a channel closed once the card is read and the
// participant joined the space.
func (b *Bridge) Ready() <-chan struct{} { return b.ready }

// Card returns the agent's card, nil before Run read it.
func (b *Bridge) Card() *a2a.AgentCard {
	select {
	case <-b.ready:
		return b.card
	default:
		return nil
	}
}

// Run reads the agent's card, registers a tool per skill, joins the space
// and serves chats and tool calls until ctx ends or a participant/shutdown
// addressed to the bridge arrives; then it cancels the tasks under way
// (at the agent too), leaves the space and returns nil. It returns an
// error when the card cannot be read or used, when the participant cannot
// join, and after the connection is lost for good. Run may be called
// once.
func (b *Bridge) Run(ctx context.Context) error {
	if !b.ran.CompareAndSwap(false, true) {
		return ErrRunning
	}
	defer b.work.Cancel(errShutdown)
	parent := ctx
	ctx, stop := context.WithCancel(ctx)
	defer stop()
	b.p.OnShutdown(func(context.Context) error { stop(); return nil })

	if err := b.start(ctx); err != nil {
		_ = b.p.Close()
		if parent.Err() != nil {
			return nil
		}
		return err
	}

	var lost atomic.Pointer[error]
	c := b.p.Client()
	removers := []func(){
		c.OnKind(protocol.KindChat, b.onChat),
		c.OnKind(protocol.KindChatCancel, b.onCancel),
		c.OnKind(protocol.KindReasoningCancel, b.onCancel),
		// A welcome after the first (a reconnection, a grant) is reported
		// again; the first is reported once Connect returned.
		c.OnWelcome(func(*protocol.Welcome) {
			select {
			case <-b.ready:
				b.goOwned(func(context.Context) { b.reportStatus() })
			default:
			}
		}),
		c.OnFinal(func(err error) {
			lost.CompareAndSwap(nil, &err)
			stop()
		}),
	}
	defer func() {
		for _, remove := range removers {
			remove()
		}
	}()

	b.log.Info("joining the space", "space", b.opts.Participant.Client.Space, "agent", b.card.Name)
	if err := b.p.Connect(ctx); err != nil {
		b.shutdown()
		if parent.Err() != nil {
			return nil
		}
		if why := lost.Load(); why != nil {
			err = *why
		}
		return fmt.Errorf("a2abridge: joining the space: %w", err)
	}
	b.log.Info("bridge ready", "participant", b.p.ID(), "agent", b.card.Name, "skills", len(b.card.Skills))
	close(b.ready)
	b.goOwned(func(context.Context) { b.reportStatus() })
	<-ctx.Done()
	b.log.Info("stopping the bridge")
	b.shutdown()
	if err := lost.Load(); err != nil {
		return fmt.Errorf("a2abridge: the connection to the gateway is lost for good: %w", *err)
	}
	return nil
}

// start reads the card, makes the client and registers the skills.
func (b *Bridge) start(ctx context.Context) error {
	cctx, cancel := context.WithTimeout(ctx, b.opts.InitTimeout)
	defer cancel()
	b.log.Info("reading the agent card", "url", redact(b.opts.URL))
	card, err := a2a.FetchCard(cctx, b.opts.URL, a2a.ClientOptions{HTTPClient: b.opts.HTTPClient})
	if err != nil {
		return fmt.Errorf("a2abridge: reading the agent card at %s: %w", redact(b.opts.URL), err)
	}
	iface, ok := card.Interface()
	if !ok {
		return fmt.Errorf("a2abridge: agent %q offers no %s interface for A2A %s", card.Name, a2a.BindingJSONRPC, a2a.ProtocolVersion)
	}
	hc, err := b.opts.Auth.client(b.opts.HTTPClient, card, b.opts.URL, iface.URL)
	if err != nil {
		return fmt.Errorf("a2abridge: agent %q: %w", card.Name, err)
	}
	b.card = card
	b.rc = a2a.NewClient(iface.URL, a2a.ClientOptions{HTTPClient: hc})
	if err := b.p.SetStatusField(StatusField, cardStatus(card, iface.URL)); err != nil {
		return fmt.Errorf("a2abridge: %w", err)
	}
	taken := map[string]bool{}
	for _, s := range card.Skills {
		name := ToolName(s.ID)
		for i := 2; taken[name]; i++ {
			name = fmt.Sprintf("%s-%d", ToolName(s.ID), i)
		}
		taken[name] = true
		if err := b.p.RegisterTool(b.skillTool(s, name)); err != nil {
			return fmt.Errorf("a2abridge: skill %q: %w", s.ID, err)
		}
	}
	return nil
}

// shutdown refuses new work, cancels the tasks under way (each tells the
// agent) and waits for them, then leaves the space.
func (b *Bridge) shutdown() {
	b.work.Refuse()
	b.work.Cancel(errShutdown)
	b.work.Wait()
	b.cancelWaiting()
	if err := b.p.Close(); err != nil {
		b.log.Warn("leaving the space", "err", err)
	}
}

// goOwned runs f on a goroutine that Run waits for; it does nothing once
// Run is stopping.
func (b *Bridge) goOwned(f func(ctx context.Context)) bool { return b.work.Go(f) }

// reportStatus reports the participant's status, the card in it.
func (b *Bridge) reportStatus() {
	ctx, cancel := context.WithTimeout(b.work.Context(), sendTimeout)
	defer cancel()
	if err := b.p.ReportStatus(ctx, ""); err != nil && !errors.Is(err, participant.ErrNotAllowed) {
		b.log.Info("participant/status not sent", "err", err)
	}
}

// cardStatus is the status member: the endpoint and the card, or, for a
// card too large to carry, its name, description, version and skills.
func cardStatus(card *a2a.AgentCard, endpoint string) json.RawMessage {
	type summary struct {
		Name        string           `json:"name"`
		Description string           `json:"description"`
		Version     string           `json:"version"`
		Skills      []a2a.AgentSkill `json:"skills"`
	}
	for _, c := range []any{card, summary{card.Name, clipText(card.Description, 512), card.Version, summarise(card.Skills)}} {
		b, err := json.Marshal(map[string]any{"url": endpoint, "card": c})
		if err == nil && len(b) <= maxCardStatus {
			return b
		}
	}
	b, _ := json.Marshal(map[string]any{"url": endpoint, "card": map[string]string{"name": clipText(card.Name, 128)}})
	return b
}

// summarise keeps what a reader needs of skills: ids, names, short
// descriptions.
func summarise(skills []a2a.AgentSkill) []a2a.AgentSkill {
	out := make([]a2a.AgentSkill, 0, min(len(skills), 64))
	for _, s := range skills[:min(len(skills), 64)] {
		out = append(out, a2a.AgentSkill{ID: clipText(s.ID, 128), Name: clipText(s.Name, 128),
			Description: clipText(s.Description, 200), Tags: slices.Clone(s.Tags[:min(len(s.Tags), 8)])})
	}
	return out
}

// redact is u without user information, query or fragment, for logs and
// errors.
func redact(s string) string {
	u, err := url.Parse(s)
	if err != nil {
		return "(an unparsable URL)"
	}
	u.User, u.RawQuery, u.Fragment = nil, "", ""
	return u.String()
}
