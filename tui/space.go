package tui

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"sort"
	"sync"
	"time"

	tea "charm.land/bubbletea/v2"

	"github.com/mew-protocol/mew/client"
	"github.com/mew-protocol/mew/participant"
	"github.com/mew-protocol/mew/protocol"
)

// Space is what the model does in the space. participant.Participant
// provides it through FromParticipant; tests provide fakes that record what
// the model sent.
//
// Send, Fulfill, Reject and ToolsOf may block; the model calls them from
// tea.Cmd goroutines, never from Update.
type Space interface {
	// Me is the user's participant id.
	Me() string
	// Send sends an envelope (the client fills protocol, ts and from, and
	// id when empty).
	Send(ctx context.Context, env *protocol.Envelope) error
	// Fulfill carries out another participant's proposal, by its envelope
	// id, and returns once the target answered. A proposal settled already
	// is refused with a *participant.ProposalSettledError.
	Fulfill(ctx context.Context, proposalID string) error
	// FulfillWith carries out a proposal with params in place of its own
	// (the user edited the call), as Fulfill does.
	FulfillWith(ctx context.Context, proposalID string, params json.RawMessage) error
	// Reject declines a proposal with a reason code and, when message is
	// not empty, the user's words.
	Reject(ctx context.Context, proposalID, reason, message string) error
	// Approve gives the user's approval to a proposal the space's approval
	// policy governs (approval/approve): the gateway counts it; it does not
	// carry the proposal out.
	Approve(ctx context.Context, proposalID string) error
	// CanSend reports whether the user's capabilities allow an envelope of
	// kind addressed to to (none: a broadcast) with payload.
	CanSend(kind string, to []string, payload []byte) bool
	// Call sends an mcp/request of the user's own to target and returns its
	// result (the dialog reads the file a proposed write would replace).
	Call(ctx context.Context, target string, payload json.RawMessage) (json.RawMessage, error)
	// ToolsOf returns the names of the tools participant id offers.
	ToolsOf(ctx context.Context, id string) ([]string, error)
	// Grants returns the runtime grants in force in the space that the
	// user may see (all of them when the user may grant or revoke).
	Grants(ctx context.Context) ([]LedgerGrant, error)
}

// Envelope is the message that brings one envelope seen in the space to the
// model.
type Envelope struct{ Env *protocol.Envelope }

// ConnState is where the connection stands, as the status bar shows it.
type ConnState int

// Connection states.
const (
	Connecting ConnState = iota
	Connected
	Reconnecting
	Disconnected // for good: replaced, kicked, refused, out of attempts
)

// String returns the state as the status bar writes it.
func (s ConnState) String() string {
	switch s {
	case Connected:
		return "connected"
	case Reconnecting:
		return "reconnecting…"
	case Disconnected:
		return "disconnected"
	}
	return "connecting…"
}

// Connection is the message that tells the model the connection's state;
// Err says why it ended, for Disconnected.
type Connection struct {
	State ConnState
	Err   error
}

// SDKOptions says where the gateway's HTTP API is, for what the WebSocket
// does not carry (the grants' ledger).
type SDKOptions struct {
	// Gateway is the gateway's URL as the participant connected to it
	// (ws:// or wss://; http:// and https:// too).
	Gateway string
	// Space is the space's id ("": the one Gateway's query names, if any).
	Space string
	// Token is the participant's token, the bearer of HTTP requests.
	Token string
	// HTTPClient asks the gateway (default: one with a 10 s timeout).
	HTTPClient *http.Client
}

// sdkSpace is the Space of a participant.
type sdkSpace struct {
	p  *participant.Participant
	o  SDKOptions
	hc *http.Client
}

// FromParticipant returns the Space of p, which cannot read the grants'
// ledger (NewSDKSpace can).
func FromParticipant(p *participant.Participant) Space { return NewSDKSpace(p, SDKOptions{}) }

// NewSDKSpace returns the Space of p; o says where the gateway's HTTP API
// is.
func NewSDKSpace(p *participant.Participant, o SDKOptions) Space {
	hc := o.HTTPClient
	if hc == nil {
		hc = &http.Client{Timeout: 10 * time.Second}
	}
	return sdkSpace{p: p, o: o, hc: hc}
}

func (s sdkSpace) Grants(ctx context.Context) ([]LedgerGrant, error) {
	if s.o.Gateway == "" || s.o.Token == "" {
		return nil, errNoLedger
	}
	addr, err := ledgerURL(s.o.Gateway, s.o.Space, s.p.ID())
	if err != nil {
		return nil, err
	}
	return fetchLedger(ctx, s.hc, addr, s.o.Token)
}

func (s sdkSpace) Me() string { return s.p.ID() }

func (s sdkSpace) Send(ctx context.Context, env *protocol.Envelope) error { return s.p.Send(ctx, env) }

func (s sdkSpace) proposal(id string) (*participant.Proposal, error) {
	pr, ok := s.p.Proposal(id)
	if !ok {
		return nil, fmt.Errorf("proposal %s is not known here", id)
	}
	return pr, nil
}

func (s sdkSpace) Fulfill(ctx context.Context, id string) error {
	pr, err := s.proposal(id)
	if err != nil {
		return err
	}
	_, err = s.p.Fulfill(ctx, pr)
	return err
}

func (s sdkSpace) FulfillWith(ctx context.Context, id string, params json.RawMessage) error {
	pr, err := s.proposal(id)
	if err != nil {
		return err
	}
	_, err = s.p.FulfillWith(ctx, pr, params)
	return err
}

func (s sdkSpace) Reject(ctx context.Context, id, reason, message string) error {
	pr, err := s.proposal(id)
	if err != nil {
		return err
	}
	return s.p.RejectWith(ctx, pr, reason, message)
}

func (s sdkSpace) Approve(ctx context.Context, id string) error { return s.p.Approve(ctx, id) }

func (s sdkSpace) Call(ctx context.Context, target string, payload json.RawMessage) (json.RawMessage, error) {
	return s.p.Request(ctx, target, payload)
}

func (s sdkSpace) CanSend(kind string, to []string, payload []byte) bool {
	return s.p.CanSendTo(kind, to, payload)
}

func (s sdkSpace) ToolsOf(ctx context.Context, id string) ([]string, error) {
	tools, err := s.p.DiscoverTools(ctx, id)
	if err != nil {
		return nil, err
	}
	names := make([]string, 0, len(tools))
	for _, t := range tools {
		names = append(names, t.Name)
	}
	sort.Strings(names)
	return names, nil
}

// Attach forwards what happens to p's connection to send (a tea.Program's
// Send) as Envelope and Connection messages, through a buffer so that the
// client's dispatch goroutine never waits for the screen. It returns a
// function that detaches and stops the forwarding.
func Attach(p *participant.Participant, send func(tea.Msg)) (detach func()) {
	events := make(chan tea.Msg, 4096)
	done := make(chan struct{})
	push := func(m tea.Msg) {
		select {
		case events <- m:
		case <-done:
		}
	}
	c := p.Client()
	// The state a handler sees and the state read once handlers are in
	// place are pushed under one lock, so the screen ends with the latest:
	// a client that became Ready between the caller's look and Attach
	// would otherwise stay "reconnecting" until its next change.
	var stateMu sync.Mutex
	pushState := func(st client.State) {
		switch st {
		case client.Ready:
			push(Connection{State: Connected})
		case client.Connecting:
			push(Connection{State: Reconnecting})
		}
	}
	removers := []func(){
		c.OnMessage(func(env *protocol.Envelope) { push(Envelope{Env: env}) }),
		c.OnStateChange(func(st client.State) {
			stateMu.Lock()
			defer stateMu.Unlock()
			pushState(st)
		}),
		c.OnFinal(func(err error) { push(Connection{State: Disconnected, Err: err}) }),
	}
	stateMu.Lock()
	if st := c.State(); st == client.Ready || st == client.Connecting {
		pushState(st)
	}
	stateMu.Unlock()
	go func() {
		for {
			select {
			case m := <-events:
				send(m)
			case <-done:
				return
			}
		}
	}()
	return func() {
		for _, r := range removers {
			r()
		}
		close(done)
	}
}

// settledText says how a decision was refused because the proposal was
// settled already, or returns "" for other errors.
func settledText(err error) string {
	var se *participant.ProposalSettledError
	if !errors.As(err, &se) {
		return ""
	}
	s := se.Status.Settlement.String()
	if se.Status.By != "" {
		s += " by " + se.Status.By
	}
	return s
}
