package cli

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"strconv"
	"strings"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/spf13/cobra"
	"go.yaml.in/yaml/v3"

	"github.com/mew-protocol/mew/client"
	"github.com/mew-protocol/mew/llm"
	"github.com/mew-protocol/mew/participant"
	"github.com/mew-protocol/mew/toolsagent"
)

// toolsFlags are the flags shared by the tools-agent commands.
type toolsFlags struct {
	config         string
	model, baseURL string
	logLevel       string
}

func (f *toolsFlags) register(cmd *cobra.Command) {
	fl := cmd.Flags()
	fl.StringVarP(&f.config, "config", "c", "", "tools agent definition, YAML or JSON (required)")
	fl.StringVarP(&f.model, "model", "m", "", "model name (or OPENAI_MODEL)")
	fl.StringVar(&f.baseURL, "base-url", "", "OpenAI-compatible API root, such as http://localhost:11434/v1 (or OPENAI_BASE_URL)")
	fl.StringVarP(&f.logLevel, "log-level", "l", "info", "log level: debug, info, warn or error; logs go to stderr")
	_ = cmd.MarkFlagRequired("config")
}

// load reads the definition, merges MEW_AGENT_CONFIG into its model
// settings when envConfig is set, applies the flags and returns it with a
// logger on stderr (its warnings logged) and the model provider.
func (f *toolsFlags) load(cmd *cobra.Command, opts Options, envConfig bool) (*toolsagent.Definition, *slog.Logger, llm.Provider, error) {
	level, err := parseLevel(f.logLevel)
	if err != nil {
		return nil, nil, nil, err
	}
	logger := slog.New(slog.NewTextHandler(cmd.ErrOrStderr(), &slog.HandlerOptions{Level: level}))
	def, err := toolsagent.Load(f.config)
	if err != nil {
		return nil, nil, nil, err
	}
	for _, w := range def.Warnings {
		logger.Warn("definition: " + strings.TrimPrefix(w.String(), "warning: "))
	}
	if js := opts.getenv()(envAgentConfig); envConfig && strings.TrimSpace(js) != "" {
		if err := def.Model.MergeJSON([]byte(js)); err != nil {
			return nil, nil, nil, fmt.Errorf("%s: %w", envAgentConfig, err)
		}
	}
	if f.model != "" {
		def.Model.Model = f.model
	}
	if f.baseURL != "" {
		def.Model.BaseURL = f.baseURL
	}
	provider, err := def.Model.Provider(opts.getenv())
	if err != nil {
		return nil, nil, nil, err
	}
	if provider.Name() == "offline" {
		logger.Warn("no model configured (OPENAI_API_KEY, OPENAI_BASE_URL or --base-url): using the offline rule-based model",
			"label", llm.OfflineLabel)
	}
	return def, logger, provider, nil
}

// newAgent starts the agent: its MCP servers are started here.
func newToolsAgent(ctx context.Context, opts Options, def *toolsagent.Definition, logger *slog.Logger, provider llm.Provider) (*toolsagent.Agent, error) {
	return toolsagent.New(ctx, toolsagent.Options{Definition: def, Provider: provider, Getenv: opts.getenv(), Logger: logger})
}

func newAgentMCPCmd(opts Options) *cobra.Command {
	var f toolsFlags
	var httpAddr string
	cmd := &cobra.Command{
		Use:   "mcp --config FILE [--http ADDR]",
		Short: "Serve a tools agent as an MCP server (stdio, or streamable HTTP)",
		Long: `Serve the tools of a tools agent definition (mode: tools) as an MCP server:
over standard input and output, as MCP hosts such as Claude Desktop start
their servers, or with --http over streamable HTTP at http://ADDR/mcp.

Each tools/call checks its arguments, fills the tool's prompt and runs a fresh
agent session with the tools of the definition's MCP servers flagged
permission: never; its final answer is the tool result. Logs go to stderr:
standard output carries MCP only. See docs/tools-agent.md.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return runAgentMCP(cmd.Context(), cmd, opts, f, httpAddr)
		},
	}
	f.register(cmd)
	cmd.Flags().StringVar(&httpAddr, "http", "", "serve streamable HTTP on this address (such as 127.0.0.1:8931) instead of stdio")
	return cmd
}

func runAgentMCP(ctx context.Context, cmd *cobra.Command, opts Options, f toolsFlags, httpAddr string) error {
	def, logger, provider, err := f.load(cmd, opts, false)
	if err != nil {
		return err
	}
	a, err := newToolsAgent(ctx, opts, def, logger, provider)
	if err != nil {
		return err
	}
	defer func() { _ = a.Close() }()
	if httpAddr != "" {
		l, err := net.Listen("tcp", httpAddr)
		if err != nil {
			return fmt.Errorf("agent mcp: %w", err)
		}
		logger.Info("serving MCP over streamable HTTP", "name", def.Name, "tools", len(def.Tools),
			"url", "http://"+l.Addr().String()+toolsagent.HTTPPath, "provider", provider.Name())
		return a.ServeStreamableHTTP(ctx, l)
	}
	logger.Info("serving MCP over stdio", "name", def.Name, "tools", len(def.Tools), "provider", provider.Name())
	in := cmd.InOrStdin()
	rc, ok := in.(io.ReadCloser)
	if !ok {
		rc = io.NopCloser(in)
	}
	return a.ServeMCP(ctx, &mcp.IOTransport{Reader: rc, Writer: nopWriteCloser{cmd.OutOrStdout()}})
}

// nopWriteCloser is a writer whose Close does nothing (the process's
// standard output stays open).
type nopWriteCloser struct{ io.Writer }

func (nopWriteCloser) Close() error { return nil }

// toolTestFlags are the flags of `mew agent tool-test`.
type toolTestFlags struct {
	toolsFlags
	args     []string
	argsJSON string
	preview  bool
}

func newAgentToolTestCmd(opts Options) *cobra.Command {
	var f toolTestFlags
	cmd := &cobra.Command{
		Use:   "tool-test --config FILE TOOL [--arg NAME=VALUE]... [--preview]",
		Short: "Fill a tool's prompt from arguments and run it, showing each step",
		Long: `Test one tool of a tools agent definition: check the arguments against its
parameters, print the filled prompt, then run it as a call would and print each
step (the model's tool calls and the tools' results) and the result.

--arg NAME=VALUE gives one argument; VALUE is read as the parameter's type
(a number, true/false, or JSON for arrays and objects). --args takes a JSON
object of arguments (--arg wins). --preview stops after the prompt, showing
{param} for a parameter not given and listing what is wrong with the arguments.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return runToolTest(cmd.Context(), cmd, opts, f, args[0])
		},
	}
	f.register(cmd)
	fl := cmd.Flags()
	fl.StringArrayVarP(&f.args, "arg", "a", nil, "an argument NAME=VALUE (repeatable)")
	fl.StringVar(&f.argsJSON, "args", "", "the arguments as a JSON object")
	fl.BoolVar(&f.preview, "preview", false, "print the filled prompt and stop")
	return cmd
}

// toolArguments builds the arguments object from --args and --arg.
func toolArguments(tool *toolsagent.Tool, argsJSON string, pairs []string) (json.RawMessage, error) {
	args := map[string]json.RawMessage{}
	if strings.TrimSpace(argsJSON) != "" {
		if err := json.Unmarshal([]byte(argsJSON), &args); err != nil {
			return nil, fmt.Errorf("--args: want a JSON object: %w", err)
		}
	}
	for _, p := range pairs {
		name, value, ok := strings.Cut(p, "=")
		if !ok || name == "" {
			return nil, fmt.Errorf("--arg %q: want NAME=VALUE", p)
		}
		args[name] = argumentValue(tool, name, value)
	}
	return json.Marshal(args)
}

// argumentValue reads value as the parameter's type; what does not parse
// stays a string, for the schema check to report.
func argumentValue(tool *toolsagent.Tool, name, value string) json.RawMessage {
	asString, _ := json.Marshal(value)
	var schema toolsagent.Schema
	if tool.Parameters != nil {
		schema, _ = tool.Parameters.Property(name)
	}
	if schema == nil {
		return asString
	}
	switch schema.Type() {
	case toolsagent.TypeNumber, toolsagent.TypeInteger:
		if _, err := strconv.ParseFloat(value, 64); err == nil && json.Valid([]byte(value)) {
			return json.RawMessage(value)
		}
	case toolsagent.TypeBoolean:
		if b, err := strconv.ParseBool(value); err == nil {
			return json.RawMessage(strconv.FormatBool(b))
		}
	case toolsagent.TypeArray, toolsagent.TypeObject:
		if json.Valid([]byte(value)) {
			return json.RawMessage(value)
		}
	}
	return asString
}

func runToolTest(ctx context.Context, cmd *cobra.Command, opts Options, f toolTestFlags, name string) error {
	def, logger, provider, err := f.load(cmd, opts, false)
	if err != nil {
		return err
	}
	tool, ok := def.Tool(name)
	if !ok {
		names := make([]string, len(def.Tools))
		for i, t := range def.Tools {
			names[i] = t.Name
		}
		return fmt.Errorf("tool-test: %s has no tool %q (tools: %s)", f.config, name, strings.Join(names, ", "))
	}
	args, err := toolArguments(tool, f.argsJSON, f.args)
	if err != nil {
		return fmt.Errorf("tool-test: %w", err)
	}
	out := cmd.OutOrStdout()
	if skill := skillSummary(tool); skill != "" {
		fmt.Fprintf(out, "== As an A2A skill\n%s\n", skill)
	}
	if f.preview {
		prompt, err := tool.Preview(args)
		var argErr *toolsagent.ArgumentError
		if err != nil && !errors.As(err, &argErr) {
			return err
		}
		fmt.Fprintf(out, "== Prompt of %s (preview)\n%s\n", name, prompt)
		if argErr != nil {
			fmt.Fprintln(out, "== What is wrong with the arguments")
			for _, v := range argErr.Violations {
				fmt.Fprintf(out, "- %s\n", v)
			}
			if argErr.More > 0 {
				fmt.Fprintf(out, "- and %d more\n", argErr.More)
			}
		}
		return nil
	}
	if _, err := tool.Fill(args); err != nil {
		return err
	}
	watched := &watchedProvider{Provider: provider}
	a, err := newToolsAgent(ctx, opts, def, logger, watched)
	if err != nil {
		return err
	}
	defer func() { _ = a.Close() }()
	var lastTool toolsagent.Step // the last tool result of the run
	res, err := a.Call(ctx, name, args, toolsagent.CallOptions{
		OnStart: func(prompt string, tools []string) {
			fmt.Fprintf(out, "== Prompt of %s\n%s\n", name, prompt)
			if len(tools) == 0 {
				tools = []string{"none"}
			}
			fmt.Fprintf(out, "== Tools offered to the model (%s): %s\n", provider.Name(), strings.Join(tools, ", "))
		},
		OnStep: func(s toolsagent.Step) {
			if s.Kind == toolsagent.StepTool {
				lastTool = s
			}
			printStep(out, s)
		},
	})
	if err != nil {
		fmt.Fprintf(out, "== Failed\n%s\n", err)
		return fmt.Errorf("tool-test: %w", err)
	}
	fmt.Fprintf(out, "== Result (context %s, %d model calls)\n%s\n", res.ContextID, res.Steps, res.Text)
	// An answer is not yet a success: a test run that ends on a tool's
	// error, or whose model says it could not do the task, failed, and
	// scripts and CI must see that in the exit status.
	var failure string
	switch {
	case lastTool.Kind != "" && toolFailed(lastTool.Text):
		failure = fmt.Sprintf("the run ended after %s failed: %s", lastTool.Tool, llm.PlainToolError(lastTool.Text))
	case watched.finish() == llm.FinishIncomplete:
		failure = "the model could not complete the task (see its answer)"
	}
	if failure != "" {
		fmt.Fprintf(out, "== Failed\n%s\n", failure)
		return fmt.Errorf("tool-test: %s", failure)
	}
	return nil
}

// toolFailed tells a tool result that is an error: the agent reports a
// failed call to the model as "Error: ...".
func toolFailed(text string) bool { return strings.HasPrefix(text, "Error: ") }

// watchedProvider is the model with a record of how its last answer
// finished, for tool-test to tell a complete run from one the model gave
// up on (llm.FinishIncomplete).
type watchedProvider struct {
	llm.Provider
	mu   sync.Mutex
	last llm.FinishReason
}

func (p *watchedProvider) Complete(ctx context.Context, req llm.Request) (*llm.Response, error) {
	r, err := p.Provider.Complete(ctx, req)
	p.note(r, err)
	return r, err
}

func (p *watchedProvider) Stream(ctx context.Context, req llm.Request, onDelta func(llm.Delta)) (*llm.Response, error) {
	r, err := p.Provider.Stream(ctx, req, onDelta)
	p.note(r, err)
	return r, err
}

func (p *watchedProvider) note(r *llm.Response, err error) {
	if err != nil || r == nil {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	p.last = r.FinishReason
}

func (p *watchedProvider) finish() llm.FinishReason {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.last
}

// printStep prints one step of a run.
func printStep(w io.Writer, s toolsagent.Step) {
	switch {
	case s.Kind == toolsagent.StepTool && toolFailed(s.Text):
		// Plainly: "no such file: x", not the server's "statat x: ...".
		fmt.Fprintf(w, "== Step %d: %s failed\n%s\n", s.N, s.Tool, llm.PlainToolError(s.Text))
	case s.Kind == toolsagent.StepTool:
		fmt.Fprintf(w, "== Step %d: %s returned\n%s\n", s.N, s.Tool, strings.TrimRight(s.Text, "\n"))
	case len(s.Calls) > 0:
		fmt.Fprintf(w, "== Step %d: the model calls\n", s.N)
		if strings.TrimSpace(s.Text) != "" {
			fmt.Fprintf(w, "(%s)\n", strings.TrimSpace(s.Text))
		}
		for _, c := range s.Calls {
			fmt.Fprintf(w, "%s %s\n", c.Name, c.Arguments)
		}
	default:
		fmt.Fprintf(w, "== Step %d: the model answers\n", s.N)
	}
}

// isToolsDefinition reports whether an agent configuration file is a
// tools agent definition (mode: tools), which `mew agent run` serves in
// the space.
func isToolsDefinition(path string) bool {
	file, err := os.Open(path)
	if err != nil {
		return false
	}
	defer file.Close()
	data, err := io.ReadAll(io.LimitReader(file, toolsagent.MaxFileBytes+1))
	if err != nil {
		return false
	}
	var doc struct {
		Mode string `yaml:"mode"`
	}
	return yaml.Unmarshal(data, &doc) == nil && doc.Mode == toolsagent.ModeTools
}

// runToolsAgentInSpace is `mew agent run --config FILE` for a definition
// with mode: tools: the connection comes from the file, the MEW_*
// variables and the flags (in increasing precedence), MEW_AGENT_CONFIG
// merges into the model settings, and the agent serves its tools in the
// space until SIGINT/SIGTERM or participant/shutdown.
func runToolsAgentInSpace(ctx context.Context, cmd *cobra.Command, opts Options, f agentFlags) error {
	tf := toolsFlags{config: f.config, model: f.model, baseURL: f.baseURL, logLevel: f.logLevel}
	def, logger, provider, err := tf.load(cmd, opts, true)
	if err != nil {
		return err
	}
	getenv := opts.getenv()
	gateway, space := expandEnv(def.Gateway, getenv), expandEnv(def.Space, getenv)
	id, token := expandEnv(def.ParticipantID, getenv), expandEnv(def.Token, getenv)
	var missing []string
	for _, v := range []struct {
		dst             *string
		flag, env, what string
	}{
		{&gateway, f.gateway, envGateway, "-g/--gateway (or " + envGateway + ")"},
		{&space, f.space, envSpace, "-s/--space (or " + envSpace + ")"},
		{&id, f.id, envParticipantID, ""},
		{&token, f.token, envToken, "-t/--token (or " + envToken + ")"},
	} {
		if e := getenv(v.env); e != "" {
			*v.dst = e
		}
		if v.flag != "" {
			*v.dst = v.flag
		}
		if v.what != "" && *v.dst == "" {
			missing = append(missing, v.what)
		}
	}
	if len(missing) > 0 {
		return fmt.Errorf("agent run: missing %s", strings.Join(missing, ", "))
	}
	a, err := newToolsAgent(ctx, opts, def, logger, provider)
	if err != nil {
		return err
	}
	defer func() { _ = a.Close() }()
	logger.Info("tools agent joining the space", "name", def.Name, "space", space, "gateway", gateway,
		"tools", len(def.Tools), "provider", provider.Name())
	return a.ServeSpace(ctx, participant.Options{
		Client:         client.Options{Gateways: client.SplitGateways(gateway), Space: space, Token: token, ParticipantID: id, Reconnect: true},
		RequestTimeout: def.Timeout,
		Logger:         logger,
	})
}
