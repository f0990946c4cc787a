package cli

import (
	"context"
	"crypto/subtle"
	"errors"
	"fmt"
	"net"
	"net/http"
	"strings"

	"github.com/spf13/cobra"

	"github.com/mew-protocol/mew/a2a"
	"github.com/mew-protocol/mew/client"
	"github.com/mew-protocol/mew/participant"
	"github.com/mew-protocol/mew/toolsagent"
)

// envA2ATokens holds the callers of `mew agent a2a` and their tokens:
// "alice=TOKEN,bob=TOKEN". A token is a flag's value no more: flags show
// in ps.
const envA2ATokens = "MEW_A2A_TOKENS"

// a2aAPIKeyHeader is the header an API key comes in, the card's apiKey
// scheme.
const a2aAPIKeyHeader = "X-API-Key"

// a2aFlags are the flags of `mew agent a2a`.
type a2aFlags struct {
	toolsFlags
	httpAddr, publicURL       string
	noAuth                    bool
	gateway, space, id, token string
}

func newAgentA2ACmd(opts Options) *cobra.Command {
	var f a2aFlags
	cmd := &cobra.Command{
		Use:   "a2a --config FILE --http ADDR",
		Short: "Serve a tools agent as an A2A 1.0 agent (autonomous mode)",
		Long: `Serve a tools agent definition as an A2A agent (protocol 1.0, JSON-RPC binding):
its Agent Card at http://ADDR/.well-known/agent-card.json lists each tool as a
skill, and POST http://ADDR/ serves SendMessage, SendStreamingMessage (SSE),
GetTask, ListTasks, CancelTask and SubscribeToTask. Each task runs its skill's
prompt template headless, exactly as a tools/call of 'mew agent mcp' does.

Callers authenticate with a bearer token or an X-API-Key header, from
MEW_A2A_TOKENS ("alice=TOKEN,bob=TOKEN"); each sees only its own tasks.
Without tokens every caller is "anonymous", which is allowed only on a
loopback address unless --no-auth says so.

With a space (-g, -s and -t, or MEW_GATEWAY, MEW_SPACE and MEW_TOKEN, as
'mew space up' sets them) the agent also joins it as 'mew agent run' does, and
every A2A task's run is visible there as reasoning and MCP envelopes.
See docs/a2a.md.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return runAgentA2A(cmd.Context(), cmd, opts, f)
		},
	}
	f.register(cmd)
	fl := cmd.Flags()
	fl.StringVar(&f.httpAddr, "http", "127.0.0.1:0", "serve A2A on this address")
	fl.StringVar(&f.publicURL, "public-url", "", "the JSON-RPC URL callers reach, published in the card (default http://ADDR/)")
	fl.BoolVar(&f.noAuth, "no-auth", false, "serve callers without tokens on a non-loopback address")
	fl.StringVarP(&f.gateway, "gateway", "g", "", "also join this gateway's space (or MEW_GATEWAY)")
	fl.StringVarP(&f.space, "space", "s", "", "the space to join (or MEW_SPACE)")
	fl.StringVar(&f.id, "id", "", "participant id in the space (or MEW_PARTICIPANT_ID)")
	fl.StringVarP(&f.token, "token", "t", "", "the participant's token (or MEW_TOKEN); prefer the variable")
	return cmd
}

// a2aCallers parses MEW_A2A_TOKENS.
func a2aCallers(spec string) (map[string]string, error) {
	byToken := map[string]string{}
	for entry := range strings.SplitSeq(spec, ",") {
		entry = strings.TrimSpace(entry)
		if entry == "" {
			continue
		}
		name, token, ok := strings.Cut(entry, "=")
		if !ok || name == "" || len(token) < 8 {
			// The entry is not shown: it may hold a token.
			return nil, fmt.Errorf("%s: want caller=TOKEN pairs, tokens of at least 8 characters", envA2ATokens)
		}
		byToken[token] = name
	}
	return byToken, nil
}

// a2aAuthenticator names the caller of a request by its bearer token or
// API key, comparing in constant time.
func a2aAuthenticator(byToken map[string]string) func(*http.Request) (string, error) {
	return func(r *http.Request) (string, error) {
		got, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
		if !ok {
			got = r.Header.Get(a2aAPIKeyHeader)
		}
		caller := ""
		for token, name := range byToken {
			if subtle.ConstantTimeCompare([]byte(got), []byte(token)) == 1 {
				caller = name
			}
		}
		if got == "" || caller == "" {
			return "", errors.New("no known token")
		}
		return caller, nil
	}
}

// isLoopback reports whether addr listens on loopback only.
func isLoopback(addr net.Addr) bool {
	tcp, ok := addr.(*net.TCPAddr)
	return ok && tcp.IP.IsLoopback()
}

func runAgentA2A(ctx context.Context, cmd *cobra.Command, opts Options, f a2aFlags) error {
	getenv := opts.getenv()
	byToken, err := a2aCallers(getenv(envA2ATokens))
	if err != nil {
		return err
	}
	def, logger, provider, err := f.load(cmd, opts, true)
	if err != nil {
		return err
	}
	l, err := net.Listen("tcp", f.httpAddr)
	if err != nil {
		return fmt.Errorf("agent a2a: %w", err)
	}
	defer l.Close()
	if len(byToken) == 0 && !isLoopback(l.Addr()) && !f.noAuth {
		return fmt.Errorf("agent a2a: %s is not a loopback address and %s has no tokens: set them, or pass --no-auth", l.Addr(), envA2ATokens)
	}
	url := f.publicURL
	if url == "" {
		url = "http://" + l.Addr().String() + "/"
	}
	ag, err := newToolsAgent(ctx, opts, def, logger, provider)
	if err != nil {
		return err
	}
	defer func() { _ = ag.Close() }()
	ao := toolsagentA2AOptions(url, byToken)
	srv, err := ag.NewA2AServer(ao)
	if err != nil {
		return err
	}

	ctx, stop := context.WithCancelCause(ctx)
	defer stop(nil)
	gateway, space, token, id := f.gateway, f.space, f.token, f.id
	for _, v := range []struct {
		dst *string
		env string
	}{{&gateway, envGateway}, {&space, envSpace}, {&token, envToken}, {&id, envParticipantID}} {
		if *v.dst == "" {
			*v.dst = getenv(v.env)
		}
	}
	spaceDone := make(chan error, 1)
	if gateway != "" && space != "" && token != "" {
		logger.Info("joining the space too", "space", space, "gateway", gateway)
		go func() {
			err := ag.ServeSpace(ctx, participant.Options{
				Client:         client.Options{Gateways: client.SplitGateways(gateway), Space: space, Token: token, ParticipantID: id, Reconnect: true},
				RequestTimeout: def.Timeout,
				Logger:         logger,
			})
			// The space ending (shutdown, kick) ends the agent.
			stop(err)
			spaceDone <- err
		}()
	} else {
		spaceDone <- nil
	}
	logger.Info("serving A2A", "name", def.Name, "skills", len(def.Tools), "url", url,
		"card", strings.TrimSuffix(url, "/")+a2a.CardPath, "callers", len(byToken), "provider", provider.Name())
	err = srv.Serve(ctx, l)
	stop(nil)
	if serr := <-spaceDone; err == nil {
		err = serr
	}
	return err
}

// toolsagentA2AOptions publishes url in the card and, with callers, asks
// for a bearer token or an API key (either will do).
func toolsagentA2AOptions(url string, byToken map[string]string) toolsagent.A2AOptions {
	ao := toolsagent.A2AOptions{URL: url}
	if len(byToken) == 0 {
		return ao
	}
	ao.Authenticate = a2aAuthenticator(byToken)
	ao.SecuritySchemes = map[string]a2a.SecurityScheme{
		"bearer": {HTTPAuth: &a2a.HTTPAuthSecurityScheme{Scheme: "Bearer", Description: "a token of " + envA2ATokens}},
		"apiKey": {APIKey: &a2a.APIKeySecurityScheme{Location: "header", Name: a2aAPIKeyHeader, Description: "the same token as an API key"}},
	}
	ao.SecurityRequirements = []a2a.SecurityRequirement{
		{Schemes: map[string]a2a.StringList{"bearer": {List: []string{}}}},
		{Schemes: map[string]a2a.StringList{"apiKey": {List: []string{}}}},
	}
	return ao
}

// skillSummary says how `mew agent a2a` lists tool in its card, for
// `mew agent tool-test`; "" for a tool without the A2A keys.
func skillSummary(tool *toolsagent.Tool) string {
	var lines []string
	for _, k := range []struct {
		name string
		list []string
	}{{"tags", tool.Tags}, {"examples", tool.Examples}, {"input modes", tool.InputModes}, {"output modes", tool.OutputModes}} {
		if len(k.list) > 0 {
			lines = append(lines, k.name+": "+strings.Join(k.list, "; "))
		}
	}
	return strings.Join(lines, "\n")
}
