package cli

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/spf13/cobra"

	"github.com/mew-protocol/mew/client"
	"github.com/mew-protocol/mew/space"
)

// spaceConnectFlags are the flags of `mew space connect`.
type spaceConnectFlags struct {
	spaceLocation
	participant, gateway string
	web                  bool // print (and open) a one-time link to the web console instead (web.go)
}

func newSpaceConnectCmd(opts Options) *cobra.Command {
	var f spaceConnectFlags
	cmd := &cobra.Command{
		Use:   "connect",
		Short: "Join the running space of this directory as its human participant",
		Long: `Join the space that mew space up started in the space directory, in this
terminal (the full-screen UI; the line client with --no-ui), as the reference's
mew space connect does: no flags are needed. The gateway's address comes from the space's state (.mew/pids.json),
the participant is --participant, else the space's default_participant, else
its only participant without a command, and its token comes from
.mew/tokens/<id>.token (created when missing). /quit, the end of the input,
Ctrl-C or closing the terminal leaves; the space keeps running.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return runSpaceConnect(cmd.Context(), cmd, opts, f)
		},
	}
	fl := cmd.Flags()
	f.register(fl)
	fl.StringVar(&f.participant, "participant", "", "the participant to join as (default: the space's default_participant)")
	addNoUIFlag(fl)
	fl.StringVar(&f.gateway, "gateway", "", "the gateway's URL, or a comma-separated list of a cluster's nodes (default: the running space's, every node's with --nodes)")
	fl.BoolVar(&f.web, "web", false, "print, and open when a browser can be, a one-time link to this space in the web console")
	return cmd
}

func runSpaceConnect(ctx context.Context, cmd *cobra.Command, opts Options, f spaceConnectFlags) error {
	cfg, err := f.load()
	if err != nil {
		return err
	}
	url := f.gateway
	if url == "" {
		st, err := space.ReadRunState(cfg.MewDir)
		switch {
		case errors.Is(err, fs.ErrNotExist):
			return fmt.Errorf("space connect: space %s is not running (no %s): start it with mew space up --detach, or mew space up -i", cfg.Space.ID, filepath.Join(cfg.MewDir, space.RunStateFile))
		case err != nil:
			return fmt.Errorf("space connect: %w", err)
		case !st.Running():
			return fmt.Errorf("space connect: space %s is not running (its supervisor, pid %d, is gone): mew space down cleans up, then mew space up", cfg.Space.ID, st.Supervisor)
		}
		url = "ws://127.0.0.1:" + strconv.Itoa(st.Port)
		if len(st.Nodes) > 1 {
			url = strings.Join(runNodeURLs(st.Nodes), ",")
		}
	} else if err := checkGatewayURLs(url); err != nil {
		return err
	}
	who, err := resolveParticipant(cfg, f.participant)
	if err != nil {
		return err
	}
	store := space.TokenStore{Dir: filepath.Join(cfg.MewDir, "tokens"), Getenv: opts.getenv()}
	tokens, err := store.Tokens(cfg.Participant(who))
	if err != nil {
		return fmt.Errorf("space connect: token of %s: %w", who, err)
	}
	if f.web {
		return openWebConsole(ctx, cmd, webOptions{Gateway: client.SplitGateways(url)[0], Space: cfg.Space.ID, Token: tokens[0], Getenv: opts.getenv()})
	}
	ctx, stop := withHangup(ctx)
	defer stop()
	err = runLineClient(ctx, cmd, lineClientOptions{Gateway: url, Space: cfg.Space.ID, Token: tokens[0], Config: cfg, Self: who, Getenv: opts.getenv()})
	if err != nil && ctx.Err() == nil {
		return err
	}
	return nil // the user left
}
