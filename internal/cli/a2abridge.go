package cli

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"

	"github.com/spf13/cobra"

	"github.com/mew-protocol/mew/a2abridge"
	"github.com/mew-protocol/mew/client"
	"github.com/mew-protocol/mew/internal/oauthclient"
	"github.com/mew-protocol/mew/participant"
	"github.com/mew-protocol/mew/space"
)

// The variables that hold the A2A bridge's credentials for the remote
// agent: never flags, which show in ps.
const (
	envA2ABearer       = "MEW_A2A_BEARER"
	envA2AAPIKey       = "MEW_A2A_API_KEY"
	envA2AClientID     = "MEW_A2A_CLIENT_ID"
	envA2AClientSecret = "MEW_A2A_CLIENT_SECRET"
)

// a2aMode reports whether `mew bridge start` joins an A2A agent: --a2a-url,
// or, without a server on the command line, a participant of type
// a2a-bridge in the space configuration.
func (f *bridgeFlags) a2aMode(getenv func(string) string) bool {
	if f.a2aURL != "" {
		return true
	}
	if f.mcpCommand != "" || f.mcpURL != "" {
		return false
	}
	id := f.participantID
	if id == "" {
		id = getenv(envParticipantID)
	}
	cfg, err := f.loadConfig()
	if err != nil || id == "" {
		return false // the MCP path says what is missing
	}
	p := cfg.Participant(id)
	return p != nil && p.Type == space.TypeA2ABridge
}

// a2aOptions turns the flags, the environment and the space configuration
// into the A2A bridge's options.
func (f *bridgeFlags) a2aOptions(cmd *cobra.Command, getenv func(string) string) (a2abridge.Options, error) {
	var o a2abridge.Options
	if f.mcpCommand != "" || f.mcpURL != "" || f.mcpArgs != "" || f.mcpEnv != "" || f.mcpCwd != "" {
		return o, errors.New("--a2a-url: the --mcp-* flags are for an MCP server; give one or the other")
	}
	if err := f.checkJoin(getenv); err != nil {
		return o, err
	}
	answerers := splitArgs(f.answerers)
	var cfg *space.Config
	if f.spaceConfig != "" || f.a2aURL == "" || f.space == "" || f.token == "" {
		var p *space.Participant
		var err error
		if cfg, p, err = f.configParticipant(); err != nil {
			return o, err
		}
		if f.a2aURL == "" {
			if p.Type != space.TypeA2ABridge || p.A2AURL == "" {
				return o, fmt.Errorf("%s: participant %q is not an A2A bridge (type: a2a-bridge with an a2a_url); or give --a2a-url", cfg.Path, f.participantID)
			}
			f.a2aURL = p.A2AURL
		}
		if answerers == nil {
			answerers = p.A2AAnswerers
		}
		if err := f.joinFromConfig(cfg, p, getenv); err != nil {
			return o, err
		}
	}
	if err := f.checkSpaceToken(); err != nil {
		return o, err
	}
	for _, id := range answerers {
		if err := space.ValidParticipantID(id); err != nil {
			return o, fmt.Errorf("--answerers: %q: %w", id, err)
		}
	}
	var err error
	if o.InitTimeout, err = parseMillis("init-timeout", f.initTimeout); err != nil {
		return o, err
	}
	// An agent's task may take minutes: the MCP bridge's default of 30 s
	// applies only when asked for.
	if cmd.Flags().Changed("request-timeout") {
		if o.TaskTimeout, err = parseMillis("request-timeout", f.requestTimeout); err != nil {
			return o, err
		}
	}
	o.URL = f.a2aURL
	o.Answerers = answerers
	o.Auth = a2abridge.Auth{Bearer: getenv(envA2ABearer), APIKey: getenv(envA2AAPIKey),
		ClientID: getenv(envA2AClientID), ClientSecret: getenv(envA2AClientSecret),
		Opener: oauthclient.EnvOpener(getenv, cmd.ErrOrStderr())}
	if o.Auth.ClientID != "" {
		// An authorization code sign-in is kept with the space, if any.
		if cfg == nil {
			if path, err := space.FindConfig("."); err == nil {
				cfg, _ = space.Load(path)
			}
		}
		o.Auth.TokenFile = oauthTokenFile(cfg, f.participantID)
	}
	o.Participant = participant.Options{Client: client.Options{
		Gateways:      client.SplitGateways(f.gateway),
		Space:         f.space,
		Token:         f.token,
		ParticipantID: f.participantID,
		Reconnect:     true,
	}}
	return o, nil
}

// credentialNames names the credentials set, for the log: never their
// values.
func credentialNames(a a2abridge.Auth) []string {
	var names []string
	for name, v := range map[string]string{envA2ABearer: a.Bearer, envA2AAPIKey: a.APIKey, envA2AClientID: a.ClientID} {
		if v != "" {
			names = append(names, name)
		}
	}
	slices.Sort(names)
	return names
}

func runA2ABridge(ctx context.Context, cmd *cobra.Command, f bridgeFlags, getenv func(string) string) error {
	level, err := parseLevel(f.logLevel)
	if err != nil {
		return err
	}
	o, err := f.a2aOptions(cmd, getenv)
	if err != nil {
		return err
	}
	logger := slog.New(slog.NewTextHandler(cmd.ErrOrStderr(), &slog.HandlerOptions{Level: level})).With("participant", f.participantID)
	o.Logger = logger
	o.Participant.Client.Logger = logger
	logger.Info("A2A bridge starting", "gateway", redactedURLs(o.Participant.Client.Gateways), "space", o.Participant.Client.Space,
		"agent", redactedURL(o.URL), "credentials", credentialNames(o.Auth), "answerers", o.Answerers)
	b, err := a2abridge.New(o)
	if err != nil {
		return err
	}
	if err := b.Run(ctx); err != nil {
		if errors.Is(err, a2abridge.ErrNoCredential) {
			return fmt.Errorf("%w; set %s, %s, or %s and %s", err, envA2ABearer, envA2AAPIKey, envA2AClientID, envA2AClientSecret)
		}
		return err
	}
	logger.Info("bridge stopped")
	return nil
}
