package bridge

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mew-protocol/mew/internal/jobs"
	"github.com/mew-protocol/mew/internal/oauthclient"
	"github.com/mew-protocol/mew/participant"
	"github.com/mew-protocol/mew/protocol"
)

// Options configures a Bridge.
type Options struct {
	// Participant configures the bridge's participant: Client holds the
	// gateway, space, token and participant id. The bridge sets
	// DelegatedMethods itself.
	Participant participant.Options
	// Server is the MCP server to bridge.
	Server Server

	// InitTimeout bounds one start of the server: launching it, the MCP
	// initialize handshake and listing its tools, resources, resource
	// templates and prompts (default 30 s).
	InitTimeout time.Duration
	// RequestTimeout bounds one request forwarded to the server; when it
	// passes, the server is sent notifications/cancelled and the requester
	// an error with CodeRequestTimeout (default 30 s).
	RequestTimeout time.Duration

	// ElicitationTimeout bounds how long the space has to answer a
	// server's request for input (an elicitation) during a call; then the
	// server is told "cancel". The call's RequestTimeout waits meanwhile,
	// and starts afresh once the input is answered (default 10 min).
	ElicitationTimeout time.Duration

	// NoRestart leaves a server that died down: the bridge answers every
	// request with CodeConnectionClosed until it is stopped.
	NoRestart bool
	// MaxRestarts is how many times in a row the bridge restarts a server
	// that dies or fails to start again (default 3). A server that stayed
	// up for a minute starts the count afresh.
	MaxRestarts int
	// RestartDelay is the wait before the first restart in a row; it
	// doubles at each one, up to 30 s (default 1 s).
	RestartDelay time.Duration

	// Logger receives what the bridge does and the server's standard
	// error, one record per line; nil means the participant's logger, else
	// none. The token never reaches it.
	Logger *slog.Logger
}

// Server says how to reach the MCP server: a command to run with MCP over
// its standard input and output, or the URL of a streamable HTTP endpoint.
type Server struct {
	// Command is the program to run (looked up in PATH when it has no
	// slash); Args are its arguments.
	Command string
	Args    []string
	// Env holds NAME=VALUE entries added to the bridge's own environment
	// (an entry overrides a variable of the same name).
	Env []string
	// Dir is the working directory of the command ("" means the bridge's).
	Dir string
	// URL is a streamable HTTP MCP endpoint, used instead of Command.
	URL string
	// Headers are added to every HTTP request to URL, such as an
	// Authorization header with a bearer token. Their values are never
	// logged.
	Headers http.Header
	// OAuth, when set, signs the bridge in to URL as an OAuth client when
	// the server asks (auth.go); it excludes an Authorization header.
	OAuth *OAuth
}

// Defaults of Options.
const (
	defaultInitTimeout    = 30 * time.Second
	defaultRequestTimeout = 30 * time.Second
	defaultMaxRestarts    = 3
	defaultRestartDelay   = time.Second
	maxRestartDelay       = 30 * time.Second
	// stableAfter is how long a server must stay up for its next crash to
	// count as the first in a row.
	stableAfter = time.Minute
)

// JSON-RPC error codes the bridge answers with when the MCP server could
// not answer. Errors that the server itself returned keep their codes.
const (
	// CodeConnectionClosed: the server is not there to answer: it exited
	// (during the request or before), is being restarted, was given up on
	// after repeated crashes, or the bridge is stopping. The MCP TypeScript
	// SDK's code for a closed connection.
	CodeConnectionClosed = -32000
	// CodeRequestTimeout: the server did not answer within
	// Options.RequestTimeout; the request was cancelled. The MCP TypeScript
	// SDK's code for a timeout.
	CodeRequestTimeout = -32001
	// CodeBusy: too many requests are being forwarded at once.
	CodeBusy = -32010
	// CodeRequestCancelled: the requester withdrew the proposal that the
	// request fulfils, or cancelled the request with
	// notifications/cancelled; the server was told to stop (LSP's code for
	// a cancelled request).
	CodeRequestCancelled = -32800
)

// State is where the bridge's MCP server stands.
type State string

// States of the server, as Status and the participant/status envelopes
// report them.
const (
	// StateStarting: the server is being launched and initialized.
	StateStarting State = "starting"
	// StateReady: the server is initialized and requests are forwarded.
	StateReady State = "ready"
	// StateRestarting: the server died and will be started again.
	StateRestarting State = "restarting"
	// StateFailed: the server died too often (or NoRestart is set) and is
	// left down; requests are answered with CodeConnectionClosed.
	StateFailed State = "error"
	// StateStopped: the bridge stopped.
	StateStopped State = "stopped"
)

// Status is a snapshot of the bridge.
type Status struct {
	State State
	// Restarts counts the restarts since the bridge began. Failures counts
	// the server's failures (deaths and failed starts) in a row; a server
	// that stays up for a minute starts the count afresh.
	Restarts, Failures int
	// Server is the serverInfo of the running server, nil before the first
	// start.
	Server *mcp.Implementation
	// Protocol is the MCP revision agreed on with the running server, ""
	// before the first start.
	Protocol string
	// Tools, Resources, ResourceTemplates and Prompts count what the server
	// listed.
	Tools, Resources, ResourceTemplates, Prompts int
	// Err says why the server last stopped or failed to start, "" if it
	// never did.
	Err string
}

// Errors callers branch on.
var (
	// ErrRunning: Run was called on a bridge that already ran.
	ErrRunning = errors.New("bridge: Run may be called once")
)

// Bridge is an MCP server exposed as a participant of a space: it holds a
// *participant.Participant and an MCP client session with the server, and
// forwards the MCP requests addressed to the participant to the server.
type Bridge struct {
	opts   Options
	oauth  *oauthclient.Handler // nil without Server.OAuth
	log    *slog.Logger
	p      *participant.Participant
	client *mcp.Client
	ran    atomic.Bool

	// mu guards the fields below; it is never held while calling the
	// server, sending, or waiting.
	mu       sync.Mutex
	cur      *run // the server serving requests; nil while there is none
	state    State
	restarts int
	failures int
	lastErr  string
	lists    lists
	changed  chan struct{} // closed and replaced at every change of the above
	ready    chan struct{} // closed when the bridge is first ready

	// jobs runs the work handlers start, which Run's shutdown refuses and
	// waits for; its context is the requests' parent.
	jobs     *jobs.Group
	inflight inflightTable
	elicits  elicitTable

	// wake carries list changes and suspicions from the MCP client's
	// handlers and the request goroutines to the supervisor.
	wake    chan struct{}
	pending atomic.Uint32 // bits of changeTools, changeResources, changePrompts, suspect
	suspect atomic.Pointer[run]
}

// New returns a bridge for the server that opts describe; Run starts it.
func New(opts Options) (*Bridge, error) {
	s := opts.Server
	switch {
	case s.Command == "" && s.URL == "":
		return nil, errors.New("bridge: the server needs a Command or a URL")
	case s.Command != "" && s.URL != "":
		return nil, errors.New("bridge: the server has both a Command and a URL; give one")
	case opts.InitTimeout < 0 || opts.RequestTimeout < 0 || opts.RestartDelay < 0 || opts.ElicitationTimeout < 0:
		return nil, errors.New("bridge: timeouts and delays must not be negative")
	case opts.MaxRestarts < 0:
		return nil, errors.New("bridge: MaxRestarts must not be negative")
	}
	for _, kv := range s.Env {
		if name, _, ok := strings.Cut(kv, "="); !ok || name == "" || strings.ContainsRune(kv, 0) {
			return nil, fmt.Errorf("bridge: environment entry %q is not NAME=VALUE", kv)
		}
	}
	if strings.ContainsRune(s.Command, 0) || slices.ContainsFunc(s.Args, func(a string) bool { return strings.ContainsRune(a, 0) }) {
		return nil, errors.New("bridge: the command or an argument holds a NUL byte")
	}
	if s.URL != "" {
		if err := checkURL(s.URL); err != nil {
			return nil, err
		}
	}
	if err := checkHeaders(s.Headers, s.OAuth != nil); err != nil {
		return nil, err
	}
	if s.URL == "" && (len(s.Headers) > 0 || s.OAuth != nil) {
		return nil, errors.New("bridge: headers and OAuth apply to a URL server only")
	}
	opts.InitTimeout = cmp.Or(opts.InitTimeout, defaultInitTimeout)
	opts.RequestTimeout = cmp.Or(opts.RequestTimeout, defaultRequestTimeout)
	opts.ElicitationTimeout = cmp.Or(opts.ElicitationTimeout, defaultElicitationTimeout)
	opts.MaxRestarts = cmp.Or(opts.MaxRestarts, defaultMaxRestarts)
	opts.RestartDelay = cmp.Or(opts.RestartDelay, defaultRestartDelay)
	log := cmp.Or(opts.Logger, opts.Participant.Logger, opts.Participant.Client.Logger, slog.New(slog.DiscardHandler))
	opts.Logger = log
	var oauth *oauthclient.Handler
	if s.OAuth != nil {
		var err error
		if oauth, err = newOAuth(s, s.OAuth, opts); err != nil {
			return nil, err
		}
		if !s.OAuth.ClientCredentials {
			// A start may wait for a person to sign in.
			flow := s.OAuth.FlowTimeout
			if flow <= 0 {
				flow = oauthclient.DefaultFlowTimeout
			}
			opts.InitTimeout += flow
		}
	}
	popts := opts.Participant
	popts.DelegatedMethods = delegated
	if popts.Logger == nil {
		popts.Logger = log
	}
	p, err := participant.New(popts)
	if err != nil {
		return nil, fmt.Errorf("bridge: %w", err)
	}
	b := &Bridge{
		oauth:   oauth,
		opts:    opts,
		log:     log,
		p:       p,
		state:   StateStarting,
		changed: make(chan struct{}),
		ready:   make(chan struct{}),
		wake:    make(chan struct{}, 1),
	}
	b.jobs = jobs.New()
	b.inflight.calls = make(map[string]*call)
	b.client = b.newClient()
	return b, nil
}

// Participant returns the participant the bridge holds.
func (b *Bridge) Participant() *participant.Participant { return b.p }

// Ready returns a channel that is closed when the bridge is first ready:
// the server initialized and the participant joined the space.
func (b *Bridge) Ready() <-chan struct{} { return b.ready }

// Status returns a snapshot of the bridge's state.
func (b *Bridge) Status() Status {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.statusLocked()
}

func (b *Bridge) statusLocked() Status {
	st := Status{
		State:             b.state,
		Restarts:          b.restarts,
		Failures:          b.failures,
		Tools:             len(b.lists.tools),
		Resources:         len(b.lists.resources),
		ResourceTemplates: len(b.lists.templates),
		Prompts:           len(b.lists.prompts),
		Err:               b.lastErr,
		Protocol:          b.lists.protocol,
	}
	if b.lists.info != nil {
		info := *b.lists.info
		st.Server = &info
	}
	return st
}

// Tools returns the server's tools as it last listed them.
func (b *Bridge) Tools() []*mcp.Tool {
	b.mu.Lock()
	defer b.mu.Unlock()
	return slices.Clone(b.lists.tools)
}

// Resources returns the server's resources as it last listed them.
func (b *Bridge) Resources() []*mcp.Resource {
	b.mu.Lock()
	defer b.mu.Unlock()
	return slices.Clone(b.lists.resources)
}

// ResourceTemplates returns the server's resource templates as it last
// listed them.
func (b *Bridge) ResourceTemplates() []*mcp.ResourceTemplate {
	b.mu.Lock()
	defer b.mu.Unlock()
	return slices.Clone(b.lists.templates)
}

// Prompts returns the server's prompts as it last listed them.
func (b *Bridge) Prompts() []*mcp.Prompt {
	b.mu.Lock()
	defer b.mu.Unlock()
	return slices.Clone(b.lists.prompts)
}

// notifyLocked wakes the waiters of a change.
func (b *Bridge) notifyLocked() {
	close(b.changed)
	b.changed = make(chan struct{})
}

// setState records a new state and reason.
func (b *Bridge) setState(s State, reason string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.state = s
	if reason != "" {
		b.lastErr = reason
	}
	b.notifyLocked()
}

// Run starts the server, joins the space and forwards requests until ctx
// ends; then it answers the requests still running with an error, stops
// the server and leaves the space, and returns nil; a participant/shutdown
// addressed to the bridge does the same, and a participant/restart
// restarts the server at once. It returns an error
// when the first start of the server fails (within Options.InitTimeout) or
// the participant cannot join, and after the participant's connection is
// lost for good (kicked, replaced, refused or out of reconnect attempts).
// A server that dies later is restarted as
// Options say; one given up on leaves the bridge in the space, answering
// every request with an error, until ctx ends. Run may be called once.
func (b *Bridge) Run(ctx context.Context) error {
	if !b.ran.CompareAndSwap(false, true) {
		return ErrRunning
	}
	defer b.jobs.Cancel(nil)
	// parent is the caller's context: only its end is a stop that Run
	// answers with nil. ctx also ends when the connection is lost for good
	// (a refused join: a wrong token), which is an error.
	parent := ctx
	ctx, stop := context.WithCancel(ctx)
	defer stop()
	// participant/shutdown stops the bridge; participant/restart restarts
	// the server.
	b.p.OnShutdown(func(context.Context) error { stop(); return nil })
	b.p.OnRestart(b.restartServer)
	b.log.Info("starting the MCP server", "server", b.describeServer())
	r, err := b.start(ctx)
	if err != nil {
		b.setState(StateStopped, err.Error())
		_ = b.p.Close()
		if parent.Err() != nil {
			return nil // stopped while starting
		}
		return fmt.Errorf("bridge: starting the MCP server: %w", err)
	}
	b.install(r, false)

	// A connection that will not come back (kicked, replaced by another
	// connection of the participant, refused, out of reconnect attempts)
	// ends the bridge.
	var lost atomic.Pointer[error]
	removeReq := b.p.OnRequest(b.onRequest)
	removeWithdraw := b.p.Client().OnKind(protocol.KindMCPWithdraw, b.onWithdraw)
	removeElicit := b.p.Client().OnKind(protocol.KindElicitationResponse, b.onElicitationResponse)
	removeWelcome := b.p.Client().OnWelcome(func(*protocol.Welcome) { b.goOwned(b.reportState) })
	removeDisc := b.p.Client().OnFinal(func(err error) {
		lost.CompareAndSwap(nil, &err)
		stop()
	})
	defer func() { removeReq(); removeWithdraw(); removeElicit(); removeWelcome(); removeDisc() }()

	b.log.Info("joining the space", "gateway", redactURL(b.opts.Participant.Client.Gateway), "space", b.opts.Participant.Client.Space)
	if err := b.p.Connect(ctx); err != nil {
		b.shutdown(r)
		if parent.Err() != nil {
			return nil
		}
		if why := lost.Load(); why != nil {
			err = *why // the refusal itself, not the context it cancelled
		}
		return fmt.Errorf("bridge: joining the space: %w", err)
	}
	b.log.Info("bridge ready", "participant", b.p.ID(), "tools", len(b.Tools()))
	close(b.ready) // the welcome's handler reports the state

	b.supervise(ctx, r)
	b.log.Info("stopping the bridge")
	b.shutdown(nil)
	if err := lost.Load(); err != nil {
		return fmt.Errorf("bridge: the connection to the gateway is lost for good: %w", *err)
	}
	return nil
}

// shutdown refuses new work, answers the requests in flight, stops the
// server still running (r, or the current one) and leaves the space.
func (b *Bridge) shutdown(r *run) {
	b.jobs.Refuse()
	b.inflight.cancelAll(errShutdown)
	b.jobs.Wait()
	b.mu.Lock()
	if r == nil {
		r = b.cur
	}
	b.cur = nil
	b.mu.Unlock()
	if r != nil {
		r.stop()
	}
	b.setState(StateStopped, "")
	if err := b.p.Close(); err != nil {
		b.log.Warn("leaving the space", "err", err)
	}
}

// goOwned runs f on a goroutine that Run waits for before it returns; it
// does nothing once Run is stopping.
func (b *Bridge) goOwned(f func(ctx context.Context)) bool { return b.jobs.Go(f) }

// describeServer names the server for logs: its command and arguments or
// URL, never its environment (which may hold secrets).
func (b *Bridge) describeServer() string {
	s := b.opts.Server
	if s.URL != "" {
		return redactURL(s.URL)
	}
	return strings.Join(append([]string{s.Command}, s.Args...), " ")
}
