package cli

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/mew-protocol/mew/bridge"
	"github.com/mew-protocol/mew/client"
	"github.com/mew-protocol/mew/participant"
	"github.com/mew-protocol/mew/space"
)

func newBridgeCmd(opts Options) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "bridge",
		Short: "Run an MCP server as a participant of a space",
	}
	cmd.AddCommand(newBridgeStartCmd(opts))
	return cmd
}

// bridgeFlags are the flags of `mew bridge start`.
type bridgeFlags struct {
	gateway, space, participantID, token string
	mcpCommand, mcpArgs, mcpEnv, mcpCwd  string
	mcpURL                               string
	initTimeout, requestTimeout          string
	reconnect                            string
	maxReconnects                        int
	capabilities                         string
	spaceConfig                          string
	logLevel                             string
	a2aURL, answerers                    string    // a remote A2A agent instead of an MCP server (a2abridge.go)
	auth                                 authFlags // credentials of a URL server (bridgeauth.go)
	authDesc                             string    // what describeAuth says of them, for the log
}

func newBridgeStartCmd(opts Options) *cobra.Command {
	var f bridgeFlags
	cmd := &cobra.Command{
		Use:   "start [flags] [-- MCP-ARGS...]",
		Short: "Bridge an MCP server into a space",
		Long: `Start an MCP server and join a space as a participant that forwards the
MCP requests addressed to it (tools, resources, prompts) to the server.

The server is a command speaking MCP over standard input and output
(--mcp-command, --mcp-args, --mcp-env, --mcp-cwd; arguments after "--" are
added to --mcp-args, so that they may hold commas; the command "mew" is this
mew), or a streamable HTTP
endpoint (--mcp-url). Without either, the server comes from the space
configuration: the mcp_server block of the participant --participant-id
(type: mcp-bridge) in --space-config, or in .mew/space.yaml or ./space.yaml;
its bridge_config gives the defaults of --init-timeout, --reconnect and
--max-reconnects, and its token, space and relative cwd are taken from there.

A server that dies is restarted with backoff (--reconnect), at most
--max-reconnects times in a row; the bridge then stays in the space and
answers every request with an error. The server's standard error goes to the
log on standard error. SIGINT or SIGTERM stops the server, leaves the space
and exits with status 0.

With --a2a-url (or a participant of type: a2a-bridge with an a2a_url), the
bridge joins a remote A2A agent instead: its skills are tools, chats to it
become its tasks, its questions are put to the asker. Credentials come from
MEW_A2A_BEARER, MEW_A2A_API_KEY, MEW_A2A_CLIENT_ID and MEW_A2A_CLIENT_SECRET
(see docs/a2a.md).`,
		Example: `  mew bridge start -g ws://localhost:8080 -s demo -p files -t "$TOKEN" \
    -m npx --mcp-args -y,@modelcontextprotocol/server-filesystem,./data
  mew bridge start -g ws://localhost:8080 -p files   # mcp_server from ./space.yaml
  MEW_A2A_BEARER=... mew bridge start -g ws://localhost:8080 -s demo -p helper -t "$TOKEN" \
    --a2a-url https://agent.example.com/`,
		RunE: func(cmd *cobra.Command, args []string) error {
			if dash := cmd.ArgsLenAtDash(); dash < 0 && len(args) > 0 {
				return fmt.Errorf("unexpected argument %q (put the server's arguments after \"--\" or in --mcp-args)", args[0])
			}
			if f.a2aMode(opts.getenv()) {
				if len(args) > 0 {
					return fmt.Errorf("unexpected argument %q: an A2A agent takes no server arguments", args[0])
				}
				return runA2ABridge(cmd.Context(), cmd, f, opts.getenv())
			}
			bo, err := f.options(cmd, args, opts.getenv())
			if err != nil {
				return err
			}
			return runBridge(cmd.Context(), cmd, f, bo)
		},
	}
	fl := cmd.Flags()
	fl.StringVarP(&f.gateway, "gateway", "g", "", "gateway WebSocket URL, e.g. ws://localhost:8080, or a comma-separated list of a cluster's nodes (required; or MEW_GATEWAY)")
	fl.StringVarP(&f.space, "space", "s", "", "space to join (default: the space configuration's id)")
	fl.StringVarP(&f.participantID, "participant-id", "p", "", "participant id of the bridge (required)")
	fl.StringVarP(&f.token, "token", "t", "", "the participant's token (or MEW_TOKEN; default: from the space configuration's token store)")
	fl.StringVarP(&f.mcpCommand, "mcp-command", "m", "", "command that runs the MCP server (stdio)")
	fl.StringVar(&f.mcpArgs, "mcp-args", "", "the server's arguments, comma-separated")
	fl.StringVar(&f.mcpEnv, "mcp-env", "", "environment for the server: NAME=VALUE entries, comma-separated")
	fl.StringVar(&f.mcpCwd, "mcp-cwd", "", "working directory of the server")
	fl.StringVar(&f.mcpURL, "mcp-url", "", "streamable HTTP endpoint of the MCP server, instead of a command")
	fl.StringVar(&f.initTimeout, "init-timeout", "30000", "time allowed to start and initialize the server: milliseconds, or a duration such as 30s")
	fl.StringVar(&f.requestTimeout, "request-timeout", "30000", "time allowed for one request to the server: milliseconds or a duration")
	fl.StringVar(&f.reconnect, "reconnect", "true", "restart the server when it dies: true or false")
	fl.IntVar(&f.maxReconnects, "max-reconnects", 3, "restarts in a row before giving up on the server")
	fl.StringVar(&f.capabilities, "capabilities", "", "accepted for compatibility: the gateway decides capabilities")
	fl.StringVar(&f.spaceConfig, "space-config", "", "space configuration to read the participant's mcp_server from")
	fl.StringVarP(&f.logLevel, "log-level", "l", "info", "log level: debug, info, warn or error")
	fl.StringVar(&f.a2aURL, "a2a-url", "", "join the remote A2A agent at this URL instead of an MCP server (see docs/a2a.md)")
	f.auth.register(fl)
	fl.StringVar(&f.answerers, "answerers", "", "with --a2a-url: participants besides the asker who may answer the agent's questions, comma-separated")
	return cmd
}

// envName is a portable environment variable name.
var envName = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)

// parseMCPEnv reads --mcp-env: NAME=VALUE entries separated by commas. A
// piece without "=" continues the previous value, so that "PATH=/a,/b"
// keeps its comma; the first piece must name a variable.
func parseMCPEnv(s string) ([]string, error) {
	if strings.TrimSpace(s) == "" {
		return nil, nil
	}
	var out []string
	for piece := range strings.SplitSeq(s, ",") {
		name, _, ok := strings.Cut(piece, "=")
		if !ok {
			if len(out) == 0 {
				return nil, fmt.Errorf("--mcp-env: %q is not NAME=VALUE", piece)
			}
			out[len(out)-1] += "," + piece
			continue
		}
		name = strings.TrimSpace(name)
		if !envName.MatchString(name) {
			return nil, fmt.Errorf("--mcp-env: %q is not a variable name (letters, digits and _, not starting with a digit)", name)
		}
		if strings.ContainsRune(piece, 0) {
			return nil, errors.New("--mcp-env: a value holds a NUL byte")
		}
		out = append(out, name+"="+piece[strings.IndexByte(piece, '=')+1:])
	}
	return out, nil
}

// splitArgs reads --mcp-args: arguments separated by commas.
func splitArgs(s string) []string {
	if s == "" {
		return nil
	}
	return strings.Split(s, ",")
}

// parseMillis reads a time: a number of milliseconds (the reference's
// form) or a Go duration.
func parseMillis(flag, s string) (time.Duration, error) {
	s = strings.TrimSpace(s)
	if ms, err := strconv.ParseInt(s, 10, 64); err == nil {
		if ms <= 0 || ms > 86_400_000 {
			return 0, fmt.Errorf("--%s: %d is not a number of milliseconds from 1 to 86400000", flag, ms)
		}
		return time.Duration(ms) * time.Millisecond, nil
	}
	d, err := time.ParseDuration(s)
	if err != nil || d <= 0 || d > 24*time.Hour {
		return 0, fmt.Errorf("--%s: %q is neither milliseconds nor a duration such as 30s (at most 24h)", flag, s)
	}
	return d, nil
}

// configValue returns bridge_config[key] as a string, "" when absent.
func configValue(m map[string]any, key string) string {
	v, ok := m[key]
	if !ok || v == nil {
		return ""
	}
	switch x := v.(type) {
	case float64:
		return strconv.FormatFloat(x, 'f', -1, 64)
	case bool:
		return strconv.FormatBool(x)
	case string:
		return x
	}
	return fmt.Sprint(v)
}

// expandSpaceEnv expands ${VAR} and $VAR from getenv, leaving a variable that is
// not set as written (as the space configuration's env does).
func expandSpaceEnv(s string, getenv func(string) string) string {
	return os.Expand(s, func(name string) string {
		if v := getenv(name); v != "" {
			return v
		}
		return "${" + name + "}"
	})
}

// options turns the flags (and the space configuration, when it is used)
// into the bridge's options. args are the arguments after "--".
func (f *bridgeFlags) options(cmd *cobra.Command, args []string, getenv func(string) string) (bridge.Options, error) {
	var bo bridge.Options
	changed := cmd.Flags().Changed
	if err := f.checkJoin(getenv); err != nil {
		return bo, err
	}
	if f.mcpCommand != "" && f.mcpURL != "" {
		return bo, errors.New("--mcp-command and --mcp-url: give one")
	}
	server := bridge.Server{Command: f.mcpCommand, Args: append(splitArgs(f.mcpArgs), args...), Dir: f.mcpCwd, URL: f.mcpURL}
	env, err := parseMCPEnv(f.mcpEnv)
	if err != nil {
		return bo, err
	}
	server.Env = env
	if f.mcpURL != "" && (f.mcpArgs != "" || f.mcpEnv != "" || f.mcpCwd != "" || len(args) > 0) {
		return bo, errors.New("--mcp-url: --mcp-args, --mcp-env, --mcp-cwd and arguments apply to a command only")
	}
	var auth *space.MCPAuth
	authGiven := f.auth.given(changed)
	if authGiven {
		if f.mcpCommand != "" {
			return bo, errors.New("--mcp-bearer-env, --mcp-header-env and --oauth* apply to a URL server (--mcp-url) only")
		}
		if auth, err = f.auth.spec(); err != nil {
			return bo, err
		}
	}
	var cfg *space.Config

	initTimeout, reconnect, maxReconnects := f.initTimeout, f.reconnect, strconv.Itoa(f.maxReconnects)
	if f.spaceConfig != "" || (f.mcpCommand == "" && f.mcpURL == "") {
		var p *space.Participant
		if cfg, p, err = f.configParticipant(); err != nil {
			return bo, err
		}
		if f.mcpCommand == "" && f.mcpURL == "" && p.Type == "mcp-bridge" && p.MCPServer != nil && p.MCPServer.URL != "" {
			server.URL = p.MCPServer.URL
			if !authGiven {
				auth = p.MCPServer.Auth
			}
		} else if f.mcpCommand == "" && f.mcpURL == "" {
			if p.Type != "mcp-bridge" || p.MCPServer == nil || p.MCPServer.Command == "" {
				return bo, fmt.Errorf("%s: participant %q is not an MCP bridge (type: mcp-bridge with an mcp_server command or url); or give --mcp-command or --mcp-url", cfg.Path, f.participantID)
			}
			if authGiven {
				return bo, errors.New("--mcp-bearer-env, --mcp-header-env and --oauth* apply to a URL server only; the configuration's mcp_server is a command")
			}
			ms := p.MCPServer
			server.Command = ms.Command
			server.Args = append(append([]string(nil), ms.Args...), args...)
			server.Dir = cfg.Resolve(ms.Cwd)
			server.Env = nil
			for _, e := range ms.Env {
				server.Env = append(server.Env, e.Name+"="+expandSpaceEnv(e.Value, getenv))
			}
			server.Env = append(server.Env, env...) // --mcp-env adds to or overrides the file's
			if f.mcpCwd != "" {
				server.Dir = f.mcpCwd
			}
		}
		for key, val := range map[string]*string{"init_timeout": &initTimeout, "reconnect": &reconnect, "max_reconnects": &maxReconnects} {
			flag := strings.ReplaceAll(key, "_", "-")
			if v := configValue(p.BridgeConfig, key); v != "" && !changed(flag) {
				*val = v
			}
		}
		if err := f.joinFromConfig(cfg, p, getenv); err != nil {
			return bo, err
		}
	}
	if err := f.checkSpaceToken(); err != nil {
		return bo, err
	}
	if server.Command == "" && server.URL == "" {
		return bo, errors.New("--mcp-command or --mcp-url is required (or a space configuration with the participant's mcp_server)")
	}

	if bo.InitTimeout, err = parseMillis("init-timeout", initTimeout); err != nil {
		return bo, err
	}
	if bo.RequestTimeout, err = parseMillis("request-timeout", f.requestTimeout); err != nil {
		return bo, err
	}
	on, err := strconv.ParseBool(strings.TrimSpace(reconnect))
	if err != nil {
		return bo, fmt.Errorf("--reconnect: %q is not true or false", reconnect)
	}
	n, err := strconv.Atoi(strings.TrimSpace(maxReconnects))
	if err != nil || n < 0 || n > 1000 {
		return bo, fmt.Errorf("--max-reconnects: %q is not a number from 0 to 1000", maxReconnects)
	}
	bo.NoRestart = !on || n == 0
	bo.MaxRestarts = n
	if n == 0 {
		bo.MaxRestarts = 1 // unused with NoRestart; 0 would mean the default
	}
	// A server command "mew" is this mew, as it is in a space's mcp_server:
	// the reference's templates run `mew bridge start --mcp-command mew`,
	// and the mew on PATH, if any, may be another one.
	if server.Command == "mew" {
		if exe, err := os.Executable(); err == nil {
			server.Command = exe
		}
	}
	if auth != nil {
		tokenFile := f.auth.tokenFile
		if tokenFile == "" && auth.OAuth != nil {
			if cfg == nil {
				// A space of the working directory, if any, keeps the tokens.
				if path, err := space.FindConfig("."); err == nil {
					cfg, _ = space.Load(path)
				}
			}
			tokenFile = oauthTokenFile(cfg, f.participantID)
		}
		if err := applyAuth(&server, auth, getenv, cmd.ErrOrStderr(), tokenFile); err != nil {
			return bo, err
		}
		f.authDesc = describeAuth(auth)
		if auth.OAuth != nil {
			if tokenFile == "" {
				f.authDesc += ", tokens in memory only"
			} else {
				f.authDesc += ", tokens in " + tokenFile
			}
		}
	}
	bo.Server = server
	bo.Participant = participant.Options{Client: client.Options{
		Gateways:      client.SplitGateways(f.gateway),
		Space:         f.space,
		Token:         f.token,
		ParticipantID: f.participantID,
		Reconnect:     true, // the gateway connection always comes back, as in the reference
	}}
	return bo, nil
}

// fromEnv fills the gateway, space, participant id and token not given
// as flags from what `mew space up` gives its processes, so that no token
// is on a command line.
func (f *bridgeFlags) fromEnv(getenv func(string) string) {
	for _, v := range []struct {
		dst *string
		env string
	}{{&f.gateway, envGateway}, {&f.space, envSpace}, {&f.participantID, envParticipantID}, {&f.token, envToken}} {
		if *v.dst == "" {
			*v.dst = getenv(v.env)
		}
	}
}

// checkJoin takes what the flags leave out from the environment (fromEnv)
// and checks that the gateway and the participant id are given.
func (f *bridgeFlags) checkJoin(getenv func(string) string) error {
	f.fromEnv(getenv)
	if f.gateway == "" {
		return errors.New("--gateway is required")
	}
	if err := checkGatewayURLs(f.gateway); err != nil {
		return err
	}
	if f.participantID == "" {
		return errors.New("--participant-id is required")
	}
	return nil
}

// configParticipant loads the space configuration (loadConfig) and finds
// the bridge's participant in it.
func (f *bridgeFlags) configParticipant() (*space.Config, *space.Participant, error) {
	cfg, err := f.loadConfig()
	if err != nil {
		return nil, nil, err
	}
	p := cfg.Participant(f.participantID)
	if p == nil {
		return nil, nil, fmt.Errorf("%s: no participant %q", cfg.Path, f.participantID)
	}
	return cfg, p, nil
}

// joinFromConfig fills the space and the token, where neither flags nor
// environment gave them, from the space configuration cfg and its
// participant p.
func (f *bridgeFlags) joinFromConfig(cfg *space.Config, p *space.Participant, getenv func(string) string) error {
	if f.space == "" {
		f.space = cfg.Space.ID
	}
	if f.token == "" {
		toks, err := space.TokenStore{Dir: filepath.Join(cfg.MewDir, "tokens"), Getenv: getenv}.Tokens(p)
		if err != nil {
			return fmt.Errorf("token of %s: %w", f.participantID, err)
		}
		f.token = toks[0]
	}
	return nil
}

// checkSpaceToken checks that the space and the token are known.
func (f *bridgeFlags) checkSpaceToken() error {
	switch {
	case f.space == "":
		return errors.New("--space is required (or a space configuration to take it from)")
	case f.token == "":
		return errors.New("--token is required (or a space configuration to take it from)")
	}
	return nil
}

// loadConfig reads --space-config, or the space configuration of the
// working directory.
func (f *bridgeFlags) loadConfig() (*space.Config, error) {
	path := f.spaceConfig
	if path == "" {
		var err error
		if path, err = space.FindConfig("."); err != nil {
			return nil, fmt.Errorf("no --mcp-command or --mcp-url, and %w", err)
		}
	}
	return space.Load(path)
}

// checkGatewayURL accepts a ws, wss, http or https URL with a host.
func checkGatewayURL(s string) error {
	u, err := url.Parse(s)
	if err != nil || u.Host == "" {
		return fmt.Errorf("--gateway: %q is not a URL such as ws://localhost:8080", s)
	}
	switch u.Scheme {
	case "ws", "wss", "http", "https":
		return nil
	}
	return fmt.Errorf("--gateway: %q: want ws://, wss://, http:// or https://", s)
}

// checkGatewayURLs checks each URL of a comma-separated list with
// checkGatewayURL; an empty list is an error.
func checkGatewayURLs(s string) error {
	list := client.SplitGateways(s)
	if len(list) == 0 {
		return fmt.Errorf("--gateway: %q names no URL", s)
	}
	for _, u := range list {
		if err := checkGatewayURL(u); err != nil {
			return err
		}
	}
	return nil
}

// redactedURLs is redactedURL of each URL, joined with commas.
func redactedURLs(list []string) string {
	out := make([]string, len(list))
	for i, u := range list {
		out[i] = redactedURL(u)
	}
	return strings.Join(out, ",")
}

// redactedURL is u without user information or query, for logs.
func redactedURL(s string) string {
	u, err := url.Parse(s)
	if err != nil {
		return "(unparsable URL)"
	}
	u.User = nil
	u.RawQuery = ""
	return u.String()
}

func runBridge(ctx context.Context, cmd *cobra.Command, f bridgeFlags, bo bridge.Options) error {
	level, err := parseLevel(f.logLevel)
	if err != nil {
		return err
	}
	logger := slog.New(slog.NewTextHandler(cmd.ErrOrStderr(), &slog.HandlerOptions{Level: level})).With("participant", f.participantID)
	bo.Logger = logger
	bo.Participant.Client.Logger = logger
	if f.capabilities != "" {
		logger.Info("--capabilities ignored: the gateway gives the bridge its capabilities from the space configuration")
	}
	server := bo.Server.URL
	if server == "" {
		server = strings.Join(append([]string{bo.Server.Command}, bo.Server.Args...), " ")
	} else {
		server = redactedURL(server)
	}
	envNames := make([]string, 0, len(bo.Server.Env))
	for _, e := range bo.Server.Env {
		name, _, _ := strings.Cut(e, "=")
		envNames = append(envNames, name)
	}
	logger.Info("bridge starting", "gateway", redactedURLs(bo.Participant.Client.Gateways), "space", bo.Participant.Client.Space,
		"server", server, "auth", cmp.Or(f.authDesc, "none"), "env", envNames, "cwd", bo.Server.Dir, "init_timeout", bo.InitTimeout, "restart", !bo.NoRestart, "max_restarts", bo.MaxRestarts)
	b, err := bridge.New(bo)
	if err != nil {
		return err
	}
	if err := b.Run(ctx); err != nil {
		return err
	}
	logger.Info("bridge stopped")
	return nil
}
