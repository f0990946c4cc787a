package tui

import (
	"context"
	"errors"
	"io"
	"time"

	tea "charm.land/bubbletea/v2"

	"github.com/mew-protocol/mew/client"
	"github.com/mew-protocol/mew/participant"
)

// RunOptions configures Run.
type RunOptions struct {
	// SpaceName is the space's id, for the status bar and the gateway's
	// HTTP API.
	SpaceName string
	// Gateway and Token are those p connected with; /grants reads the
	// space's grants with them from the gateway's HTTP API.
	Gateway, Token string
	// DefaultTargets are the recipients of chats typed without @id.
	DefaultTargets []string
	// Input and Output are the terminal (default: the process's).
	Input  io.Reader
	Output io.Writer
	// HistoryFile keeps the input's history across sessions ("": none):
	// read when Run starts, written when it ends.
	HistoryFile string
	// Intro are lines for a newcomer, shown first and in /help.
	Intro []string
	// Open opens the link of a URL elicitation addressed to the user (nil:
	// the link is written in the transcript).
	Open func(ctx context.Context, url string) error
}

// Run shows the space of p, a connected participant, full-screen until the
// user leaves (Ctrl+C, /exit) or ctx ends; it does not handle signals
// itself, so the caller cancels ctx on those that should end it. Grants the user made for this
// session are revoked before it returns. It returns the reason the
// connection ended for good, if it did, and nil when the user left.
func Run(ctx context.Context, p *participant.Participant, o RunOptions) error {
	var history []string
	if o.HistoryFile != "" {
		history, _ = LoadHistory(o.HistoryFile) // a history that cannot be read starts afresh
	}
	m := New(Options{Space: NewSDKSpace(p, SDKOptions{Gateway: o.Gateway, Space: o.SpaceName, Token: o.Token}), SpaceName: o.SpaceName, DefaultTargets: o.DefaultTargets, Context: ctx, History: history, Intro: o.Intro, Open: o.Open})
	if w := p.Client().Welcome(); w != nil {
		m.welcome(w)
	}
	if p.Client().State() != client.Ready {
		m.conn = Reconnecting
	}
	// Signals are the caller's: mew cancels ctx on SIGINT, SIGTERM and
	// SIGHUP. Bubble Tea's own handler would race that cancellation and,
	// when the program ends first, block for ever sending its quit message
	// (seen as `mew space up -i` hanging after `mew space down`).
	opts := []tea.ProgramOption{tea.WithContext(ctx), tea.WithoutSignalHandler()}
	if o.Input != nil {
		opts = append(opts, tea.WithInput(o.Input))
	}
	if o.Output != nil {
		opts = append(opts, tea.WithOutput(o.Output))
	}
	prog := tea.NewProgram(m, opts...)
	detach := Attach(p, prog.Send)
	_, err := prog.Run()
	detach()
	if o.HistoryFile != "" {
		_ = SaveHistory(o.HistoryFile, m.History())
	}
	// The session's grants end with it.
	rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 3*time.Second)
	defer cancel()
	for _, env := range m.RevokeOnExit() {
		_ = p.Send(rctx, env)
	}
	switch {
	case m.connErr != nil:
		return m.connErr
	case err == nil, errors.Is(err, tea.ErrProgramKilled) && ctx.Err() != nil, errors.Is(err, tea.ErrInterrupted):
		return nil
	}
	return err
}
