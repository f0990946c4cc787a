package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/mew-protocol/mew/internal/templates"
	"github.com/mew-protocol/mew/llm"
	"github.com/mew-protocol/mew/space"
)

// demoWait bounds the wait for the demo's participants to join.
const demoWait = 60 * time.Second

// npmFilesystem is the reference filesystem MCP server's command, as
// `npm install -g @modelcontextprotocol/server-filesystem` installs it.
const npmFilesystem = "mcp-server-filesystem"

func newDemoCmd(opts Options) *cobra.Command {
	var dir, logLevel string
	var port int
	cmd := &cobra.Command{
		Use:   "demo",
		Short: "A space with an assistant, a helper, a calculator, files and you",
		Long: `Start a demo space in a temporary directory (or --dir) and join it here.

The assistant answers you and may use every tool; the helper may only read, and
proposes its file writes for your approval; a calculator and a folder of files are
MCP servers joined through the bridge. The agents use the model OPENAI_API_KEY,
OPENAI_BASE_URL and OPENAI_MODEL name, or the offline rule-based model without
them. Ctrl-C (or the end of the input) stops everything.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return runDemo(cmd.Context(), cmd, opts, dir, port, logLevel)
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&dir, "dir", "", "keep the demo space in this directory (default: a temporary one, removed at the end)")
	fl.IntVarP(&port, "port", "p", 0, "the gateway's port (0 = any free port)")
	addNoUIFlag(fl)
	fl.StringVarP(&logLevel, "log-level", "l", "warn", "log level of the demo's own messages (the processes log to <dir>/logs)")
	return cmd
}

func runDemo(ctx context.Context, cmd *cobra.Command, opts Options, dir string, port int, logLevel string) error {
	level, err := parseLevel(logLevel)
	if err != nil {
		return err
	}
	exe, err := os.Executable()
	if err != nil {
		return fmt.Errorf("demo: finding the mew binary: %w", err)
	}
	// A hang-up stops the demo as Ctrl-C does, so that the deferred stop
	// and removal below run.
	ctx, stopHangup := withHangup(ctx)
	defer stopHangup()
	if dir == "" {
		tmp, err := os.MkdirTemp("", "mew-demo-")
		if err != nil {
			return fmt.Errorf("demo: %w", err)
		}
		defer os.RemoveAll(tmp)
		dir = tmp
	}
	cfg, files, err := writeDemoSpace(dir, opts.getenv())
	if err != nil {
		return err
	}
	out := cmd.OutOrStdout()
	logger := slog.New(slog.NewTextHandler(cmd.ErrOrStderr(), &slog.HandlerOptions{Level: level}))
	fmt.Fprintf(out, "starting the demo space in %s …\n", dir)
	rs, err := startSpace(ctx, opts, exe, cfg, port, "info", logger)
	if err != nil {
		if ctx.Err() != nil {
			return nil // Ctrl-C while it started: the person left, nothing failed
		}
		return err
	}
	defer rs.stop()
	if err := waitJoined(ctx, rs); err != nil {
		if ctx.Err() != nil {
			return nil
		}
		return fmt.Errorf("demo: %w", err)
	}
	model := "the offline rule-based model; set OPENAI_API_KEY or OPENAI_BASE_URL for a real one"
	if p, err := llm.FromEnv(opts.getenv(), llm.Config{}); err == nil && p.Name() == "openai" {
		model = "an OpenAI-compatible model"
		if m, ok := p.(interface{ Model() string }); ok {
			model += ", " + m.Model()
		}
	}
	// What to try is shown inside the client, where a newcomer looks (the
	// full-screen UI takes the whole terminal), and again in /help.
	intro := []string{
		fmt.Sprintf("mew demo: you, an assistant and a helper (%s), a calculator, and files in %s", model, files),
		"Try:",
		"  what is 2 plus 3                  the assistant calls the calculator",
		"  @helper write hello to notes.txt  the helper proposes it; approve it (1 or /approve 1) and the file is written",
		"  @assistant read notes.txt         the assistant reads it back",
		"  /help for commands · Ctrl-C or /quit stops the space",
	}
	if err := rs.connect(ctx, cmd, "you", intro); err != nil && ctx.Err() == nil {
		return err
	}
	return nil // the user left: /quit, the end of the input, Ctrl-C or a hang-up
}

// writeDemoSpace renders the demo template into dir: .mew/space.yaml and a
// files/ folder. It returns the loaded space and the files' folder.
func writeDemoSpace(dir string, getenv func(string) string) (*space.Config, string, error) {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return nil, "", err
	}
	files := filepath.Join(abs, "files")
	if err := os.MkdirAll(files, 0o755); err != nil {
		return nil, "", fmt.Errorf("demo: %w", err)
	}
	t, err := templates.Find("demo", nil)
	if err != nil {
		return nil, "", err
	}
	filesCmd, filesArgs := "mew", []string{"mcp", "filesystem", files}
	if p, err := exec.LookPath(npmFilesystem); err == nil {
		filesCmd, filesArgs = p, []string{files}
	}
	argsJSON, _ := json.Marshal(filesArgs)
	yaml, _, err := t.Render(map[string]string{
		"SPACE_NAME":    "demo",
		"AGENT_MODEL":   getenv(llm.EnvModel),
		"FILES_COMMAND": filesCmd,
		"FILES_ARGS":    string(argsJSON),
	})
	if err != nil {
		return nil, "", err
	}
	if err := os.MkdirAll(filepath.Join(abs, ".mew"), 0o755); err != nil {
		return nil, "", fmt.Errorf("demo: %w", err)
	}
	path := filepath.Join(abs, ".mew", "space.yaml")
	if err := os.WriteFile(path, yaml, 0o644); err != nil {
		return nil, "", fmt.Errorf("demo: %w", err)
	}
	cfg, err := space.Load(path)
	if err != nil {
		return nil, "", err
	}
	return cfg, files, nil
}

// waitJoined waits until the participants the space started are connected
// to it (awaitJoins); one that failed fails the wait, with its cause.
func waitJoined(ctx context.Context, rs *runningSpace) error {
	rep := rs.awaitJoins(ctx, demoWait)
	if err := ctx.Err(); err != nil {
		return err
	}
	for _, id := range slices.Sorted(maps.Keys(rep.failed)) {
		log := filepath.Join(rs.launch.LogDir(), id+".log")
		return fmt.Errorf("%s failed (%s); %s ends:\n%s", id, rep.failed[id], log, tail(log, 10))
	}
	if len(rep.pending) > 0 {
		return fmt.Errorf("%s did not join within %v", strings.Join(rep.pending, ", "), demoWait)
	}
	return nil
}
