package cli

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/mew-protocol/mew/space"
)

func newTokenCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "token",
		Short: "Create, list and revoke participants' tokens in a space's token store",
		Long: `token manages the files <space>/.mew/tokens/<participant>.token that the gateway
reads a participant's token from (when space.yaml lists no literal tokens and no
MEW_TOKEN_<ID> variable is set). Tokens are printed only by create; list shows
where each participant's token comes from, never the token.

A running gateway loads tokens when it starts: restart it for a change to take
effect, or use space/kick to cut a participant off at once.`,
	}
	cmd.AddCommand(newTokenCreateCmd(), newTokenListCmd(), newTokenRevokeCmd())
	return cmd
}

// tokenDir returns the token directory of the space in dir: <mew dir>/tokens
// of its config, or <dir>/.mew/tokens when it has none yet. The config is nil
// when there is none.
func tokenDir(dir string) (string, *space.Config, error) {
	path, err := space.FindConfig(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return filepath.Join(dir, ".mew", "tokens"), nil, nil
	}
	if err != nil {
		return "", nil, err
	}
	cfg, err := space.Load(path)
	if err != nil {
		return "", nil, err
	}
	return filepath.Join(cfg.MewDir, "tokens"), cfg, nil
}

func newTokenCreateCmd() *cobra.Command {
	var dir, id, caps string
	var rotate bool
	cmd := &cobra.Command{
		Use:   "create",
		Short: "Create a participant's token file and print the token",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := space.ValidParticipantID(id); err != nil {
				return fmt.Errorf("--participant-id: %w", err)
			}
			if caps != "" {
				fmt.Fprintln(cmd.ErrOrStderr(), "mew: --capabilities is ignored: capabilities are set in space.yaml, a token only says who a participant is")
			}
			tokens, _, err := tokenDir(dir)
			if err != nil {
				return err
			}
			file := filepath.Join(tokens, id+".token")
			if rotate {
				if err := os.Remove(file); err != nil && !errors.Is(err, fs.ErrNotExist) {
					return fmt.Errorf("rotate %s: %w", file, err)
				}
			}
			tok, err := space.TokenStore{Dir: tokens}.Generate(id)
			if errors.Is(err, fs.ErrExist) {
				return fmt.Errorf("%s already has a token in %s (use --rotate to replace it)", id, tokens)
			}
			if err != nil {
				return err
			}
			_, err = fmt.Fprintln(cmd.OutOrStdout(), tok)
			return err
		},
	}
	fl := cmd.Flags()
	fl.StringVarP(&dir, "space-dir", "d", ".", "the space's directory")
	fl.StringVarP(&id, "participant-id", "p", "", "the participant (required)")
	fl.StringVarP(&caps, "capabilities", "c", "", "accepted for compatibility with the reference CLI; ignored")
	fl.BoolVar(&rotate, "rotate", false, "replace an existing token")
	_ = cmd.MarkFlagRequired("participant-id")
	return cmd
}

func newTokenListCmd() *cobra.Command {
	var dir string
	cmd := &cobra.Command{
		Use:   "list",
		Short: "List the space's participants and where each one's token comes from",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			tokens, cfg, err := tokenDir(dir)
			if err != nil {
				return err
			}
			source := map[string]string{}
			entries, err := os.ReadDir(tokens)
			if err != nil && !errors.Is(err, fs.ErrNotExist) {
				return err
			}
			for _, e := range entries {
				if id, ok := strings.CutSuffix(e.Name(), ".token"); ok && e.Type().IsRegular() {
					source[id] = "file (not in space.yaml: invited, or stale)"
				}
			}
			if cfg != nil {
				for _, p := range cfg.Participants {
					switch {
					case len(p.Tokens) > 0:
						source[p.ID] = "space.yaml tokens"
					case os.Getenv(space.EnvName(p.ID)) != "":
						source[p.ID] = space.EnvName(p.ID)
					case source[p.ID] != "":
						source[p.ID] = "file"
					default:
						source[p.ID] = "none yet (generated when the gateway starts)"
					}
				}
			}
			ids := make([]string, 0, len(source))
			for id := range source {
				ids = append(ids, id)
			}
			sort.Strings(ids)
			tw := tabwriter.NewWriter(cmd.OutOrStdout(), 0, 4, 2, ' ', 0)
			fmt.Fprintln(tw, "PARTICIPANT\tTOKEN FROM")
			for _, id := range ids {
				fmt.Fprintf(tw, "%s\t%s\n", id, source[id])
			}
			return tw.Flush()
		},
	}
	cmd.Flags().StringVarP(&dir, "space-dir", "d", ".", "the space's directory")
	return cmd
}

func newTokenRevokeCmd() *cobra.Command {
	var dir, id string
	cmd := &cobra.Command{
		Use:   "revoke",
		Short: "Delete a participant's token file",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := space.ValidParticipantID(id); err != nil {
				return fmt.Errorf("--participant-id: %w", err)
			}
			tokens, cfg, err := tokenDir(dir)
			if err != nil {
				return err
			}
			file := filepath.Join(tokens, id+".token")
			if err := os.Remove(file); errors.Is(err, fs.ErrNotExist) {
				return fmt.Errorf("%s has no token file in %s", id, tokens)
			} else if err != nil {
				return err
			}
			msg := "revoked " + id + "'s token file; a running gateway notices within seconds, ends its connection and console sessions, and refuses the token"
			if cfg != nil {
				if p := cfg.Participant(id); p != nil && len(p.Tokens) > 0 {
					msg += " (space.yaml also lists literal tokens for " + id + ", which stay valid)"
				}
			}
			_, err = fmt.Fprintln(cmd.ErrOrStderr(), msg)
			return err
		},
	}
	cmd.Flags().StringVarP(&dir, "space-dir", "d", ".", "the space's directory")
	cmd.Flags().StringVarP(&id, "participant-id", "p", "", "the participant (required)")
	_ = cmd.MarkFlagRequired("participant-id")
	return cmd
}
