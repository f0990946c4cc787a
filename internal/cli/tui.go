package cli

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/mew-protocol/mew/client"
	"github.com/mew-protocol/mew/internal/lineclient"
	"github.com/mew-protocol/mew/internal/oauthclient"
	"github.com/mew-protocol/mew/participant"
	"github.com/mew-protocol/mew/tui"
)

// noUIFlag forces the line client where the full-screen UI would open.
const noUIFlag = "no-ui"

// addNoUIFlag registers --no-ui on a command that joins a space
// interactively.
func addNoUIFlag(fl *pflag.FlagSet) {
	fl.Bool(noUIFlag, false, "use the line client even on a terminal (no full-screen UI)")
}

// wantTUI reports whether an interactive join opens the full-screen UI:
// stdin and stdout are a terminal that TERM names (not dumb), no --no-ui,
// and not the script mode of --fifo-in / --output-file / --fifo-out.
func wantTUI(cmd *cobra.Command, o lineClientOptions) bool {
	getenv := o.Getenv
	if getenv == nil {
		getenv = os.Getenv
	}
	if term := getenv("TERM"); term == "" || term == "dumb" || o.JSONIn != "" || o.JSONOut != "" {
		return false
	}
	if f := cmd.Flags().Lookup(noUIFlag); f != nil && f.Value.String() == "true" {
		return false
	}
	_, outTTY := lineclient.IsTerminal(cmd.OutOrStdout())
	_, inTTY := lineclient.IsTerminal(cmd.InOrStdin())
	return outTTY && inTTY
}

// runTUI joins the space as the line client would and runs the full-screen
// UI until the user leaves.
func runTUI(ctx context.Context, cmd *cobra.Command, o lineClientOptions) error {
	p, err := participant.New(participant.Options{Client: client.Options{
		Gateways: client.SplitGateways(o.Gateway), Space: o.Space, Token: o.Token, ParticipantID: o.ID, Reconnect: true,
	}})
	if err != nil {
		return err
	}
	defer p.Close()
	cctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	err = p.Connect(cctx)
	cancel()
	if err != nil {
		return err
	}
	var targets []string
	if cfg := o.Config; cfg != nil {
		targets = cfg.Defaults.DefaultTo["chat"]
		if me := cfg.Participant(p.ID()); me != nil && len(me.DefaultTo["chat"]) > 0 {
			targets = me.DefaultTo["chat"]
		}
	}
	getenv := o.Getenv
	if getenv == nil {
		getenv = os.Getenv
	}
	var history string
	if home := getenv("HOME"); home != "" {
		history = filepath.Join(home, ".mew", "history")
	}
	err = tui.Run(ctx, p, tui.RunOptions{
		SpaceName: o.Space, Gateway: o.Gateway, Token: o.Token, DefaultTargets: targets, Input: cmd.InOrStdin(), Output: cmd.OutOrStdout(),
		HistoryFile: history, Intro: o.Intro, Open: linkOpener(getenv),
	})
	if err != nil && ctx.Err() == nil {
		return fmt.Errorf("disconnected: %w", err)
	}
	return nil
}

// linkOpener is how the UI opens a link for the user: the command in
// MEW_OAUTH_OPENER, as the bridges open an authorisation URL; nil when it
// is unset, so the UI writes the link out instead.
func linkOpener(getenv func(string) string) func(ctx context.Context, url string) error {
	return oauthclient.CommandOpener(getenv(oauthclient.OpenerEnv), nil)
}
