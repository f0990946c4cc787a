package cli

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"go.yaml.in/yaml/v3"

	"github.com/mew-protocol/mew/agent"
	"github.com/mew-protocol/mew/client"
	"github.com/mew-protocol/mew/llm"
	"github.com/mew-protocol/mew/participant"
)

// The environment `mew agent run` reads, besides llm's OPENAI_* variables.
const (
	envGateway         = "MEW_GATEWAY"
	envSpace           = "MEW_SPACE"
	envToken           = "MEW_TOKEN"
	envParticipantID   = "MEW_PARTICIPANT_ID"
	envAgentConfig     = "MEW_AGENT_CONFIG"
	envProposalTimeout = "MEW_PROPOSAL_TIMEOUT"
)

func newAgentCmd(opts Options) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "agent",
		Short: "Run an AI agent in a space",
		Args:  cobra.NoArgs,
	}
	cmd.AddCommand(newAgentRunCmd(opts))
	cmd.AddCommand(newAgentMCPCmd(opts), newAgentToolTestCmd(opts))
	cmd.AddCommand(newAgentA2ACmd(opts))
	cmd.AddCommand(newAgentStudioCmd(opts))
	return cmd
}

// agentFlags are the flags of `mew agent run`.
type agentFlags struct {
	gateway, space, id, token string
	config                    string
	model, baseURL            string
	logLevel                  string
	proposalTimeout           time.Duration
}

func newAgentRunCmd(opts Options) *cobra.Command {
	var f agentFlags
	cmd := &cobra.Command{
		Use:   "run",
		Short: "Connect an agent that answers chats with a language model and the space's tools",
		Long: `Connect an agent to a space. It answers chats addressed to it or mentioning it
(and, with autoRespond, other chats its classifier finds relevant), reasoning in
the open and calling the tools of the other participants, or proposing the call
when it may not make it.

The model is any OpenAI-compatible endpoint: OPENAI_API_KEY, OPENAI_BASE_URL
(or --base-url, for Ollama, vLLM, llama.cpp) and OPENAI_MODEL (or --model).
With neither a key nor a base URL, or with "mockLLM": true, the agent uses the
offline rule-based model and says so in its answers.

Settings come from, in increasing precedence: --config FILE (YAML or JSON),
MEW_GATEWAY, MEW_SPACE, MEW_TOKEN and MEW_PARTICIPANT_ID, MEW_AGENT_CONFIG
(a JSON object such as {"mockLLM":true,"autoRespond":true}), and the flags.
See docs/agent.md for every key.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return runAgent(cmd.Context(), cmd, opts, f)
		},
	}
	fl := cmd.Flags()
	fl.StringVarP(&f.gateway, "gateway", "g", "", "gateway URL, or a comma-separated list of a cluster's nodes, such as ws://localhost:8080 (or MEW_GATEWAY)")
	fl.StringVarP(&f.space, "space", "s", "", "space id (or MEW_SPACE)")
	fl.StringVar(&f.id, "id", "", "participant id (or MEW_PARTICIPANT_ID); another id than the token's participant is a runtime alias")
	fl.StringVarP(&f.token, "token", "t", "", "the participant's token (or MEW_TOKEN); prefer the variable: flags show in ps")
	fl.StringVarP(&f.config, "config", "c", "", "agent configuration file, YAML or JSON")
	fl.StringVarP(&f.model, "model", "m", "", "model name (or OPENAI_MODEL)")
	fl.StringVar(&f.baseURL, "base-url", "", "OpenAI-compatible API root, such as http://localhost:11434/v1 (or OPENAI_BASE_URL)")
	fl.StringVar(&f.baseURL, "openai-url", "", "the same as --base-url")
	fl.StringVarP(&f.logLevel, "log-level", "l", "info", "log level: debug, info, warn or error")
	fl.DurationVar(&f.proposalTimeout, "proposal-timeout", 0, "how long a proposal of the agent waits for a person to decide it, up to 168h (default: the config's requestTimeout, else MEW_PROPOSAL_TIMEOUT, which mew space up sets from defaults.proposal_timeout_ms, else 10m)")
	return cmd
}

// agentSettings is what runAgent resolved from the file, the environment
// and the flags.
type agentSettings struct {
	gateway, space, id, token string
	cfg                       agent.Config
}

// resolveAgent merges the settings in increasing precedence: file,
// MEW_* variables, MEW_AGENT_CONFIG, flags.
func resolveAgent(f agentFlags, getenv func(string) string) (agentSettings, error) {
	// As a command the agent starts from the reference's defaults
	// (reasoning and auto-respond on), not the zero Config.
	s := agentSettings{cfg: agent.Config{ReasoningEnabled: true, AutoRespond: true}}
	if f.config != "" {
		file, err := agent.LoadFile(f.config)
		if err != nil {
			return s, err
		}
		if err := fileDefaults(f.config, &file.Config); err != nil {
			return s, err
		}
		s = agentSettings{gateway: file.Gateway, space: file.Space, id: file.ParticipantID, token: expandEnv(file.Token, getenv), cfg: file.Config}
		s.gateway, s.space, s.id = expandEnv(s.gateway, getenv), expandEnv(s.space, getenv), expandEnv(s.id, getenv)
	}
	for _, v := range []struct {
		dst  *string
		flag string
		env  string
	}{
		{&s.gateway, f.gateway, envGateway},
		{&s.space, f.space, envSpace},
		{&s.id, f.id, envParticipantID},
		{&s.token, f.token, envToken},
	} {
		if e := getenv(v.env); e != "" {
			*v.dst = e
		}
		if v.flag != "" {
			*v.dst = v.flag
		}
	}
	// The space's default (MEW_PROPOSAL_TIMEOUT, from space up) yields to
	// the agent's own configuration, and that to the flag.
	if v := strings.TrimSpace(getenv(envProposalTimeout)); v != "" && s.cfg.ProposalTimeout == 0 {
		d, err := time.ParseDuration(v)
		if err != nil || d <= 0 {
			return s, fmt.Errorf("%s: %q is not a positive duration such as 30m", envProposalTimeout, v)
		}
		s.cfg.ProposalTimeout = d
	}
	if js := getenv(envAgentConfig); strings.TrimSpace(js) != "" {
		if err := s.cfg.MergeJSON([]byte(js)); err != nil {
			return s, fmt.Errorf("%s: %w", envAgentConfig, err)
		}
	}
	if f.proposalTimeout != 0 {
		if f.proposalTimeout < 0 {
			return s, fmt.Errorf("--proposal-timeout %v: want a positive duration", f.proposalTimeout)
		}
		s.cfg.ProposalTimeout = f.proposalTimeout
	}
	if f.model != "" {
		s.cfg.Model = f.model
	}
	if f.baseURL != "" {
		s.cfg.BaseURL = f.baseURL
	}
	var missing []string
	for _, m := range []struct{ v, what string }{
		{s.gateway, "-g/--gateway (or " + envGateway + ")"},
		{s.space, "-s/--space (or " + envSpace + ")"},
		{s.token, "-t/--token (or " + envToken + ")"},
	} {
		if m.v == "" {
			missing = append(missing, m.what)
		}
	}
	if len(missing) > 0 {
		return s, fmt.Errorf("agent run: missing %s", strings.Join(missing, ", "))
	}
	return s, nil
}

// fileDefaults turns reasoning and auto-respond on in cfg, loaded from
// the file at path, unless the file sets them: agent.LoadFile starts from
// the zero Config, whose booleans are off, and the command's defaults are
// the reference agent's.
func fileDefaults(path string, cfg *agent.Config) error {
	data, err := os.ReadFile(path)
	if err != nil {
		return fmt.Errorf("agent: config: %w", err)
	}
	var doc map[string]any
	if err := yaml.Unmarshal(data, &doc); err != nil {
		return fmt.Errorf("agent: config: %s: %w", path, err)
	}
	_, reasoning := doc["reasoningEnabled"]
	_, thinking := doc["thinkingEnabled"]
	if !reasoning && !thinking {
		cfg.ReasoningEnabled = true
	}
	if _, ok := doc["autoRespond"]; !ok {
		cfg.AutoRespond = true
	}
	return nil
}

// expandEnv replaces ${VAR} and $VAR in a configuration value.
func expandEnv(s string, getenv func(string) string) string {
	return os.Expand(s, getenv)
}

func runAgent(ctx context.Context, cmd *cobra.Command, opts Options, f agentFlags) error {
	if f.config != "" && isToolsDefinition(f.config) { // mode: tools
		return runToolsAgentInSpace(ctx, cmd, opts, f)
	}
	level, err := parseLevel(f.logLevel)
	if err != nil {
		return err
	}
	getenv := opts.getenv()
	s, err := resolveAgent(f, getenv)
	if err != nil {
		return err
	}
	logger := slog.New(slog.NewTextHandler(cmd.ErrOrStderr(), &slog.HandlerOptions{Level: level}))
	provider, err := s.cfg.Provider(getenv)
	if err != nil {
		return err
	}
	model := s.cfg.Model
	if m, ok := provider.(interface{ Model() string }); ok && model == "" {
		model = m.Model()
	}
	if base := cmp.Or(s.cfg.BaseURL, getenv(llm.EnvBaseURL)); provider.Name() == "offline" && !s.cfg.MockLLM && llm.NeedsAPIKey(base) {
		// A template that names OpenAI's URL without a key: say why the
		// URL is not used, rather than fail on every question.
		logger.Warn("the model's server needs an API key and OPENAI_API_KEY is not set: using the offline rule-based model",
			"base_url", base, "label", llm.OfflineLabel)
	} else if provider.Name() == "offline" {
		logger.Warn("no model configured (OPENAI_API_KEY, OPENAI_BASE_URL or --base-url): using the offline rule-based model",
			"label", llm.OfflineLabel)
	}

	ctx, stop := context.WithCancelCause(ctx)
	defer stop(nil)
	a, err := agent.New(agent.Options{
		Participant: participant.Options{Client: client.Options{
			Gateways: client.SplitGateways(s.gateway), Space: s.space, Token: s.token, ParticipantID: s.id, Reconnect: true,
		}},
		Provider: provider,
		Config:   s.cfg,
		Logger:   logger,
	})
	if err != nil {
		return err
	}
	defer func() { _ = a.Close() }()
	p := a.Participant()
	p.OnShutdown(func(context.Context) error {
		stop(errShutdown)
		return nil
	})
	p.Client().OnFinal(stop)
	cctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	err = a.Connect(cctx)
	cancel()
	if err != nil {
		return err
	}
	cfg := a.Config()
	logger.Info("agent connected", "id", p.ID(), "space", s.space, "gateway", s.gateway,
		"provider", provider.Name(), "model", model, "reasoning", cfg.ReasoningEnabled, "auto_respond", cfg.AutoRespond)
	<-ctx.Done()
	cause := context.Cause(ctx)
	logger.Info("agent stopping", "reason", cause)
	if errors.Is(cause, errShutdown) || errors.Is(cause, context.Canceled) {
		return nil
	}
	return cause
}

// errShutdown ends `mew agent run` after a participant/shutdown.
var errShutdown = errors.New("participant/shutdown received")
