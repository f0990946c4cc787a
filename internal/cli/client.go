package cli

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/mew-protocol/mew/internal/lineclient"
	"github.com/mew-protocol/mew/space"
)

func newClientCmd(opts Options) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "client",
		Short: "Join a space from the terminal or a script",
		Args:  cobra.NoArgs,
	}
	var o lineClientOptions
	var fifoIn, fifoOut, outputFile string
	o.HintAfter = lineclient.DefaultHintAfter
	connect := &cobra.Command{
		Use:   "connect",
		Short: "Connect to a space: type to chat, or pipe JSON envelopes in and out",
		Long: `Connect to a space as the participant the token names.

On a terminal, the full-screen UI opens (docs/tui.md). With --no-ui, a pipe,
or TERM unset or dumb, the line client runs: what others send is shown
readably; plain text you type is sent as a chat ("@id text" to one participant), a JSON object as an
envelope; /approve N and /reject N answer the numbered proposals; /help lists
the commands. An agent's reasoning is one status line under the conversation,
a tool's answer names whom it was for, and a chat to everyone that nobody
takes up says whom to address.

For scripts, --fifo-in FILE reads one JSON envelope a line (a FIFO or a file that
grows, as tail -F would), and --output-file or --fifo-out FILE receives every
envelope seen as one compact JSON line.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			getenv := opts.getenv()
			if o.Token == "" {
				o.Token = getenv(envToken)
			}
			if o.Gateway == "" {
				o.Gateway = getenv(envGateway)
			}
			if o.Space == "" {
				o.Space = getenv(envSpace)
			}
			if o.Gateway == "" || o.Space == "" || o.Token == "" {
				return errors.New("client connect: -g/--gateway, -s/--space and -t/--token (or MEW_GATEWAY, MEW_SPACE, MEW_TOKEN) are required; in the directory of a running space, mew space connect needs none")
			}
			if outputFile != "" && fifoOut != "" {
				return errors.New("client connect: --output-file and --fifo-out cannot be combined")
			}
			o.JSONIn, o.JSONOut = fifoIn, cmp.Or(outputFile, fifoOut)
			o.Getenv = getenv
			return runLineClient(cmd.Context(), cmd, o)
		},
	}
	fl := connect.Flags()
	fl.StringVarP(&o.Gateway, "gateway", "g", "", "gateway URL, or a comma-separated list of a cluster's nodes, such as ws://localhost:8080 (or MEW_GATEWAY)")
	fl.StringVarP(&o.Space, "space", "s", "", "space id (or MEW_SPACE)")
	fl.StringVarP(&o.Token, "token", "t", "", "the participant's token (or MEW_TOKEN)")
	fl.StringVarP(&o.ID, "participant-id", "p", "", "the id to join as; another id than the token's participant is a runtime alias")
	fl.StringVar(&fifoIn, "fifo-in", "", "read JSON envelopes, one a line, from this FIFO or file instead of the terminal")
	fl.StringVar(&fifoOut, "fifo-out", "", "write every envelope seen, one compact JSON line each, to this FIFO")
	fl.StringVar(&outputFile, "output-file", "", "append every envelope seen, one compact JSON line each, to this file")
	addNoUIFlag(fl)
	fl.DurationVar(&o.HintAfter, "no-answer-hint", lineclient.DefaultHintAfter, "after a chat to everyone that nobody acknowledges or answers for this long, say whom to address (0: never)")
	cmd.AddCommand(connect)
	return cmd
}

// lineClientOptions configures the line client.
type lineClientOptions struct {
	Gateway, Space, Token, ID string
	// JSONIn and JSONOut switch to script mode: envelopes as JSON lines.
	JSONIn, JSONOut string
	// Config, when known, gives the default recipients of chats; Self is
	// the participant's id in it.
	Config *space.Config
	Self   string
	// Getenv reads the environment (TERM decides the full-screen UI); nil
	// means os.Getenv.
	Getenv func(string) string
	// HintAfter is how long a chat to everyone may go without a reaction
	// before the client says whom to address. 0 means never, except with
	// a Config (`mew space connect`, `mew demo`): lineclient's default then.
	HintAfter time.Duration
	// Intro are lines for a newcomer (mew demo's "what to try"): printed
	// first by the line client, shown first and in /help by the
	// full-screen UI.
	Intro []string
}

// runLineClient joins a space interactively: the full-screen UI on a
// terminal, else the line client (internal/lineclient).
func runLineClient(ctx context.Context, cmd *cobra.Command, o lineClientOptions) error {
	if wantTUI(cmd, o) {
		return runTUI(ctx, cmd, o)
	}
	return lineclient.Run(ctx, lineclient.Options{
		Gateway: o.Gateway, Space: o.Space, Token: o.Token, ID: o.ID, JSONIn: o.JSONIn, JSONOut: o.JSONOut,
		Config: o.Config, HintAfter: o.HintAfter, Intro: o.Intro,
		In: cmd.InOrStdin(), Out: cmd.OutOrStdout(), Err: cmd.ErrOrStderr(),
	})
}

// resolveParticipant picks who joins a space interactively: the flag; the
// space's default_participant; the only participant without a command; an
// error listing the candidates.
func resolveParticipant(cfg *space.Config, flag string) (string, error) {
	if flag != "" {
		if cfg.Participant(flag) == nil {
			return "", fmt.Errorf("--participant %s: no such participant in %s", flag, cfg.Path)
		}
		return flag, nil
	}
	if d := cfg.Space.DefaultParticipant; d != "" && cfg.Participant(d) != nil {
		return d, nil
	}
	var humans []string
	for _, p := range cfg.Participants {
		if p.Command == "" && p.MCPServer == nil && !p.AutoConnect {
			humans = append(humans, p.ID)
		}
	}
	if len(humans) == 1 {
		return humans[0], nil
	}
	return "", fmt.Errorf("which participant are you? choose with --participant (candidates: %s)", strings.Join(humans, ", "))
}
