package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"maps"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/mew-protocol/mew/internal/proc"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/mew-protocol/mew/space"
)

// Timeouts of `mew space up` and `down`.
const (
	healthWait   = 30 * time.Second // the gateway's first /health
	downWait     = 20 * time.Second // the supervisor's exit after SIGTERM
	stopDeadline = 30 * time.Second // stopping every process
)

// spaceLocation is where a space is: the flags -d/--space-dir and
// -c/--config that every space subcommand takes alike.
type spaceLocation struct {
	dir, config string
}

// register adds -d and -c to fl.
func (l *spaceLocation) register(fl *pflag.FlagSet) {
	fl.StringVarP(&l.dir, "space-dir", "d", ".", "the space directory")
	fl.StringVarP(&l.config, "config", "c", "", "the space configuration (default .mew/space.yaml, else ./space.yaml in the space directory)")
}

// load loads the space's configuration.
func (l spaceLocation) load() (*space.Config, error) {
	return loadSpaceConfig(l.dir, l.config)
}

// mewDir returns the space's state directory: the loaded configuration's,
// else (a stale state of a space whose configuration no longer loads)
// <dir>/.mew when it exists, else dir.
func (l spaceLocation) mewDir() (string, error) {
	if l.config != "" {
		cfg, err := l.load()
		if err != nil {
			return "", err
		}
		return cfg.MewDir, nil
	}
	return mewDirOf(l.dir)
}

// spaceFlags are the flags of `mew space up`.
type spaceFlags struct {
	spaceLocation
	port        int
	logLevel    string
	detach      bool
	interactive bool
	participant string
	nodes       int           // gateway nodes: more than 1 is a local cluster (space_nodes.go)
	wait        time.Duration // how long up waits for the participants it started to join
	supervise   bool          // internal: the detached supervisor itself
}

func newSpaceCmd(opts Options) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "space",
		Short: "Run a space: its gateway and participants (up, down, status, clean, connect)",
		Args:  cobra.NoArgs,
	}
	cmd.AddCommand(newSpaceUpCmd(opts, "up"), newSpaceDownCmd("down"), newSpaceStatusCmd(), newSpaceCleanCmd(), newSpaceConnectCmd(opts))
	return cmd
}

func newSpaceUpCmd(opts Options, use string) *cobra.Command {
	var f spaceFlags
	cmd := &cobra.Command{
		Use:   use,
		Short: "Start the space's gateway and its auto_start participants",
		Long: `Start the gateway of the space in the space directory (config .mew/space.yaml, else
./space.yaml) and every participant with auto_start: true. Output goes to logs/<id>.log
and logs/gateway.log; the state to .mew/pids.json. A participant that crashes is
restarted with backoff (restart_policy: no turns that off).

In the foreground (the default), Ctrl-C stops everything. With --detach the space
runs in the background once the gateway answers; stop it with mew space down.
With -i you join the space in this terminal as a participant (the full-screen UI;
the line client with --no-ui).

With --nodes N (2 to 16) the space runs on N gateway nodes of one cluster, for
trying a cluster on one machine. With N of 3 or more every node embeds a NATS
server (client ports from 4222, cluster ports from 6222, or the next free),
the servers form one NATS cluster whose JetStream keeps min(3, N) replicas, so
any one node may die and the space goes on; with 2 the first node embeds the
only NATS server and the second joins it (a majority of two replicas is both,
so replicating would not survive a death). The nodes listen on --port and the
next free ports, and each is printed with its node id, WebSocket URL and
health URL. The participants started with the space are spread over the
nodes round robin, each given every node's URL (its own first) in MEW_GATEWAY,
so that it reconnects to another node when its node stops. See docs/cluster.md.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if f.detach && f.interactive {
				return errors.New("space up: --detach and --interactive cannot be combined")
			}
			if f.nodes < 1 || f.nodes > maxSpaceNodes {
				return fmt.Errorf("space up: --nodes %d: want 1 to %d", f.nodes, maxSpaceNodes)
			}
			return runSpaceUp(cmd.Context(), cmd, opts, f)
		},
	}
	fl := cmd.Flags()
	f.register(fl)
	fl.IntVarP(&f.port, "port", "p", 8080, "the gateway's port; when taken, the next 9 are tried; 0 = any free port")
	fl.StringVarP(&f.logLevel, "log-level", "l", "info", "log level: debug, info, warn or error")
	fl.BoolVar(&f.detach, "detach", false, "run in the background and return once the gateway answers")
	fl.BoolVarP(&f.interactive, "interactive", "i", false, "join the space in this terminal")
	fl.StringVar(&f.participant, "participant", "", "the participant to join as with -i")
	fl.IntVar(&f.nodes, "nodes", 1, "run the space on this many gateway nodes of a local cluster (from 3, each embeds a NATS server of one replicated NATS cluster; with 2, the first embeds the only one)")
	fl.DurationVar(&f.wait, "wait", defaultJoinWait, "how long to wait for the participants it starts to join or fail before reporting each (0: do not wait)")
	addNoUIFlag(fl)
	fl.BoolVar(&f.supervise, "supervise", false, "internal: run as the detached supervisor")
	_ = fl.MarkHidden("supervise")
	return cmd
}

// loadSpaceConfig finds and loads the space of dir (or the explicit file).
// Where there is none, the error says how to make one.
func loadSpaceConfig(dir, file string) (*space.Config, error) {
	path := file
	if path == "" {
		var err error
		if path, err = space.FindConfig(dir); errors.Is(err, fs.ErrNotExist) {
			return nil, noSpaceError{dir: dir}
		} else if err != nil {
			return nil, err
		}
	}
	return space.Load(path)
}

// noSpaceError: a directory holds no space configuration. It is an
// fs.ErrNotExist.
type noSpaceError struct{ dir string }

func (e noSpaceError) Error() string {
	return fmt.Sprintf("no space in %s: neither %s nor %s exists; create one with mew init (mew init --list-templates lists the templates), or name the file with -c",
		e.dir, filepath.Join(e.dir, ".mew", "space.yaml"), filepath.Join(e.dir, "space.yaml"))
}

func (e noSpaceError) Unwrap() error { return fs.ErrNotExist }

// pickPort returns port when it is free, else the first free of the next
// nine (as the reference does); 0 asks the system for any free port.
func pickPort(port int) (int, error) {
	if port < 0 || port > 65535 {
		return 0, fmt.Errorf("--port %d: want 0 to 65535", port)
	}
	last := port + 9
	if port == 0 {
		last = 0
	}
	for p := port; p <= min(last, 65535); p++ {
		ln, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(p)))
		if err != nil {
			continue
		}
		got := ln.Addr().(*net.TCPAddr).Port
		ln.Close()
		return got, nil
	}
	return 0, fmt.Errorf("ports %d to %d are all taken: choose one with --port", port, last)
}

// waitHealthy polls the gateway's /health until it answers 200.
func waitHealthy(ctx context.Context, port int, exited <-chan struct{}) error {
	return waitHealthyFor(ctx, port, exited, healthWait)
}

// waitHealthyFor is waitHealthy for up to wait.
func waitHealthyFor(ctx context.Context, port int, exited <-chan struct{}, wait time.Duration) error {
	ctx, cancel := context.WithTimeout(ctx, wait)
	defer cancel()
	url := "http://127.0.0.1:" + strconv.Itoa(port) + "/health"
	client := &http.Client{Timeout: time.Second}
	for {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
		if err != nil {
			return err
		}
		if resp, err := client.Do(req); err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("the gateway did not answer %s within %v", url, wait)
		case <-exited:
			return errors.New("the gateway exited")
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// tail returns the last lines of a log file, for error messages.
func tail(path string, lines int) string {
	return tailFrom(path, 0, lines)
}

// tailFrom is tail of what the file holds past offset: what this run wrote
// to a log that earlier runs appended to.
func tailFrom(path string, offset int64, lines int) string {
	data, err := os.ReadFile(path)
	if err != nil {
		return ""
	}
	data = data[min(offset, int64(len(data))):]
	all := strings.Split(strings.TrimRight(string(data), "\n"), "\n")
	if len(all) > lines {
		all = all[len(all)-lines:]
	}
	return strings.Join(all, "\n")
}

func runSpaceUp(ctx context.Context, cmd *cobra.Command, opts Options, f spaceFlags) error {
	level, err := parseLevel(f.logLevel)
	if err != nil {
		return err
	}
	cfg, err := loadSpaceConfig(f.dir, f.config)
	if err != nil {
		return err
	}
	for _, w := range cfg.Warnings() {
		fmt.Fprintf(cmd.ErrOrStderr(), "mew: warning: %s\n", w)
	}
	if st, err := space.ReadRunState(cfg.MewDir); err == nil && st.Running() && st.Supervisor != os.Getpid() {
		return fmt.Errorf("space %s is already running (supervisor pid %d, ws://127.0.0.1:%d): mew space down first", st.SpaceID, st.Supervisor, st.Port)
	}
	exe, err := os.Executable()
	if err != nil {
		return fmt.Errorf("space up: finding the mew binary: %w", err)
	}
	if f.detach {
		return detachSpace(ctx, cmd, exe, cfg, f)
	}
	ctx, stopHangup := withHangup(ctx)
	defer stopHangup()
	logger := slog.New(slog.NewTextHandler(cmd.ErrOrStderr(), &slog.HandlerOptions{Level: level}))
	rs, err := startSpaceNodes(ctx, opts, exe, cfg, f.port, f.nodes, f.logLevel, logger)
	if err != nil {
		return err
	}
	defer rs.stop()
	out := cmd.OutOrStdout()
	wait := f.wait
	if f.interactive && !cmd.Flags().Changed("wait") {
		wait = 0 // the person is about to see who joins
	}
	rep := rs.awaitJoins(ctx, wait)
	fmt.Fprintf(out, "space %s is up: %s (gateway pid %d)\n", cfg.Space.ID, rs.launch.GatewayURL(), rs.gatewayPID())
	rep.print(out, wait)
	rs.printNodes(out)
	if len(rs.started) > 0 {
		fmt.Fprintf(out, "started: %s\n", strings.Join(rs.started, ", "))
	}
	fmt.Fprintf(out, "logs: %s\n", rs.launch.LogDir())
	if f.interactive {
		who, err := resolveParticipant(cfg, f.participant)
		if err != nil {
			return err
		}
		if err := rs.connect(ctx, cmd, who, nil); err != nil && ctx.Err() == nil {
			return err
		}
		return nil // the user left: /quit, the end of the input, Ctrl-C or a hang-up
	}
	if !f.supervise {
		fmt.Fprintln(out, "Ctrl-C stops the space")
	}
	<-ctx.Done()
	return nil
}

// runningSpace is a space this process started: its gateway and
// participants under a supervisor, and its state file.
type runningSpace struct {
	cfg     *space.Config
	launch  space.Launch
	sup     *space.Supervisor
	store   space.TokenStore
	log     *slog.Logger
	started []string // participants started, in order; appended under mu

	joined map[string]bool // participants seen joined (awaitJoins); guarded by mu

	mu    sync.Mutex
	state *space.RunState
}

// startSpace starts the gateway, waits for its /health, then starts the
// auto_start participants, and keeps .mew/pids.json current. On an error,
// what was started is stopped.
func startSpace(ctx context.Context, opts Options, exe string, cfg *space.Config, port int, logLevel string, logger *slog.Logger) (_ *runningSpace, err error) {
	return startSpaceNodes(ctx, opts, exe, cfg, port, 1, logLevel, logger)
}

// startSpaceNodes is startSpace on nodes gateway nodes (see startNodes).
func startSpaceNodes(ctx context.Context, opts Options, exe string, cfg *space.Config, port, nodes int, logLevel string, logger *slog.Logger) (_ *runningSpace, err error) {
	if port, err = pickPort(port); err != nil {
		return nil, err
	}
	rs := &runningSpace{
		cfg:    cfg,
		launch: space.Launch{Config: cfg, Executable: exe, Port: port, LogLevel: logLevel, Environ: environ(opts)},
		store:  space.TokenStore{Dir: filepath.Join(cfg.MewDir, "tokens"), Getenv: opts.getenv()},
		log:    logger,
		state: &space.RunState{
			SpaceID: cfg.Space.ID, SpaceName: cfg.Space.Name, SpaceDir: cfg.SpaceDir(), Port: port,
			Agents: map[string]int{}, Clients: map[string]int{}, Supervisor: os.Getpid(), Config: cfg.Path,
			StartedAt: time.Now().UTC().Truncate(time.Second),
		},
	}
	// This process only supervises: it adopts what its participants'
	// processes leave behind (a daemonised MCP server), so that stopping
	// the space stops that too.
	reap := proc.Subreaper() == nil
	rs.mu.Lock()
	rs.sup = space.NewSupervisor(space.SupervisorOptions{Logger: logger, OnChange: rs.writeState, ReapAdopted: reap})
	rs.mu.Unlock()
	defer func() {
		if err != nil {
			rs.stop()
		}
	}()
	if nodes > 1 {
		if err := rs.startNodes(ctx, nodes); err != nil {
			return nil, err
		}
	} else {
		gw := rs.launch.Gateway()
		if err := rs.sup.Start(gw); err != nil {
			return nil, err
		}
		if err := waitHealthy(ctx, port, rs.sup.Done("gateway")); err != nil {
			return nil, fmt.Errorf("space up: %w; the gateway's log (%s) ends:\n%s", err, gw.Log, tail(gw.Log, 20))
		}
	}
	for _, p := range cfg.Participants {
		if !p.AutoStart {
			continue
		}
		tokens, err := rs.store.Tokens(p)
		if err != nil {
			return nil, fmt.Errorf("space up: %s: %w", p.ID, err)
		}
		proc, ok, err := rs.participant(p, tokens[0], len(rs.started))
		if err != nil {
			return nil, err
		}
		if !ok {
			continue
		}
		if err := rs.sup.Start(proc); err != nil {
			return nil, err
		}
		rs.mu.Lock() // writeState, on the supervisor's goroutines, reads it
		rs.started = append(rs.started, p.ID)
		rs.mu.Unlock()
	}
	rs.writeState()
	return rs, nil
}

// writeState writes the state file with the supervisor's pids.
func (rs *runningSpace) writeState() {
	rs.mu.Lock()
	defer rs.mu.Unlock()
	if rs.sup == nil {
		return
	}
	for _, p := range rs.sup.State() {
		if i := slices.IndexFunc(rs.state.Nodes, func(n space.RunNode) bool { return nodeProcName(n.ID) == p.Name }); i >= 0 {
			rs.state.Nodes[i].PID = p.PID
		}
		if p.Name == "gateway" {
			rs.state.Gateway = p.PID
		} else if !strings.HasPrefix(p.Name, nodeProcPrefix) {
			rs.state.Agents[p.Name] = p.PID
		}
	}
	procs := rs.processes(rs.started)
	if len(procs) > 0 {
		rs.state.Processes = map[string]space.RunProcess{}
		for id, p := range procs {
			p.Joined = rs.joined[id]
			rs.state.Processes[id] = p.RunProcess
		}
	}
	if err := rs.state.Write(rs.cfg.MewDir); err != nil {
		rs.log.Error("state not written", "err", err)
	}
}

// gatewayPID returns the gateway's pid.
func (rs *runningSpace) gatewayPID() int {
	rs.mu.Lock()
	defer rs.mu.Unlock()
	return rs.state.Gateway
}

// connect runs the line client as participant who until it ends.
func (rs *runningSpace) connect(ctx context.Context, cmd *cobra.Command, who string, intro []string) error {
	tokens, err := rs.store.Tokens(rs.cfg.Participant(who))
	if err != nil {
		return err
	}
	return runLineClient(ctx, cmd, lineClientOptions{Gateway: strings.Join(rs.nodeURLs(0), ","), Space: rs.cfg.Space.ID, Token: tokens[0], Config: rs.cfg, Self: who, Getenv: rs.store.Getenv, Intro: intro})
}

// stop stops everything and removes the state file.
func (rs *runningSpace) stop() {
	sctx, cancel := context.WithTimeout(context.Background(), stopDeadline)
	defer cancel()
	if err := rs.sup.Stop(sctx); err != nil {
		rs.log.Error("stopping the space", "err", err)
	}
	if err := space.RemoveRunState(rs.cfg.MewDir); err != nil {
		rs.log.Error("state not removed", "err", err)
	}
	rs.log.Info("space stopped", "space", rs.cfg.Space.ID)
}

// environ returns the environment for the space's processes.
func environ(opts Options) []string {
	if opts.Environ != nil {
		return opts.Environ
	}
	return os.Environ()
}

// detachSpace starts the supervisor in the background and returns once the
// space is up.
func detachSpace(ctx context.Context, cmd *cobra.Command, exe string, cfg *space.Config, f spaceFlags) error {
	args := []string{"space", "up", "--supervise", "-c", cfg.Path, "-d", cfg.SpaceDir(), "-p", strconv.Itoa(f.port), "-l", f.logLevel,
		"--nodes", strconv.Itoa(f.nodes), "--wait", f.wait.String()}
	logDir := filepath.Join(cfg.SpaceDir(), "logs")
	if err := os.MkdirAll(logDir, 0o755); err != nil {
		return fmt.Errorf("space up: %w", err)
	}
	logPath := filepath.Join(logDir, "space.log")
	logFile, err := os.OpenFile(logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return fmt.Errorf("space up: %w", err)
	}
	defer logFile.Close()
	// Earlier runs appended to the same log: only what this one writes
	// counts, or their "is up" would be taken for this run's.
	var from int64
	if fi, err := logFile.Stat(); err == nil {
		from = fi.Size()
	}
	c := exec.Command(exe, args...)
	c.Dir = cfg.SpaceDir()
	c.Stdout, c.Stderr = logFile, logFile
	proc.Detach(c)
	if err := c.Start(); err != nil {
		return fmt.Errorf("space up: %w", err)
	}
	exited := make(chan struct{})
	go func() { _ = c.Wait(); close(exited) }()
	deadline := time.After(healthWait + max(f.wait, 0) + 5*time.Second)
	for {
		select {
		case <-exited:
			return fmt.Errorf("space up: the space stopped at once; %s ends:\n%s", logPath, tailFrom(logPath, from, 20))
		case <-deadline:
			proc.Terminate(c.Process.Pid, false)
			return fmt.Errorf("space up: the space did not come up in time; %s ends:\n%s", logPath, tailFrom(logPath, from, 20))
		case <-ctx.Done():
			proc.Terminate(c.Process.Pid, false)
			return ctx.Err()
		case <-time.After(100 * time.Millisecond):
		}
		st, err := space.ReadRunState(cfg.MewDir)
		if err != nil || st.Supervisor != c.Process.Pid || st.Gateway == 0 || !strings.Contains(tailFrom(logPath, from, 50), "space "+cfg.Space.ID+" is up") {
			continue
		}
		// Read again: the supervisor wrote the joins before it said "up".
		if again, err := space.ReadRunState(cfg.MewDir); err == nil {
			st = again
		}
		fmt.Fprintf(cmd.OutOrStdout(), "space %s is up in the background: ws://127.0.0.1:%d (supervisor pid %d)\n", st.SpaceID, st.Port, st.Supervisor)
		printRunNodes(cmd.OutOrStdout(), st.Nodes)
		failed := reportFromState(cmd.OutOrStdout(), st, f.wait)
		fmt.Fprintf(cmd.OutOrStdout(), "logs: %s\nstop it with: mew space down -d %s\n", logDir, cfg.SpaceDir())
		if len(failed) > 0 {
			// Up, but not as configured: a script must not take it for
			// a healthy space.
			return fmt.Errorf("space up: %d of its participants failed (%s); the space keeps running: mew space status shows them, mew space down stops it", len(failed), strings.Join(failed, ", "))
		}
		return nil
	}
}

func newSpaceDownCmd(use string) *cobra.Command {
	var loc spaceLocation
	cmd := &cobra.Command{
		Use:   use,
		Short: "Stop a running space and everything it started",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return runSpaceDown(cmd, loc)
		},
	}
	loc.register(cmd.Flags())
	return cmd
}

// mewDirOf returns the state directory of the space in dir, without
// requiring its configuration to load.
func mewDirOf(dir string) (string, error) {
	if cfg, err := loadSpaceConfig(dir, ""); err == nil {
		return cfg.MewDir, nil
	}
	abs, err := filepath.Abs(dir)
	if err != nil {
		return "", err
	}
	if fi, err := os.Stat(filepath.Join(abs, ".mew")); err == nil && fi.IsDir() {
		return filepath.Join(abs, ".mew"), nil
	}
	return abs, nil
}

// runState reads the run state of the space l names, and returns the
// .mew directory it looked in; st is nil, with no error, when no space
// was started there.
func (l spaceLocation) runState() (st *space.RunState, mewDir string, err error) {
	if mewDir, err = l.mewDir(); err != nil {
		return nil, "", err
	}
	st, err = space.ReadRunState(mewDir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, mewDir, nil
	}
	if err != nil {
		return nil, mewDir, err
	}
	return st, mewDir, nil
}

func runSpaceDown(cmd *cobra.Command, loc spaceLocation) error {
	st, mewDir, err := loc.runState()
	if err != nil {
		return err
	}
	out := cmd.OutOrStdout()
	if st == nil {
		fmt.Fprintf(out, "no space is running in %s\n", loc.dir)
		return nil
	}
	if st.Running() {
		proc.Terminate(st.Supervisor, false)
		for deadline := time.Now().Add(downWait); st.Running() && time.Now().Before(deadline); {
			time.Sleep(50 * time.Millisecond)
		}
	}
	// Whatever is left — the supervisor did not stop in time, or it had
	// died and left its processes — is killed, but only processes that
	// still lead their own group, as the ones it started do: a pid of a
	// long-dead space may have been reused by an unrelated program.
	var left []int
	for _, pid := range st.PIDs() {
		if proc.Alive(pid) && proc.GroupLeader(pid) {
			proc.Terminate(pid, true)
			left = append(left, pid)
		}
	}
	for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline) && proc.CountAlive(left) > 0; {
		time.Sleep(20 * time.Millisecond)
	}
	if err := space.RemoveRunState(mewDir); err != nil {
		return err
	}
	fmt.Fprintf(out, "space %s stopped\n", st.SpaceID)
	return nil
}

func newSpaceStatusCmd() *cobra.Command {
	var loc spaceLocation
	cmd := &cobra.Command{
		Use:   "status",
		Short: "Show whether the space runs, and its processes",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			st, mewDir, err := loc.runState()
			if err != nil {
				return err
			}
			out := cmd.OutOrStdout()
			if st == nil {
				fmt.Fprintf(out, "not running (no %s in %s)\n", space.RunStateFile, mewDir)
				return nil
			}
			state := "running"
			if !st.Running() {
				state = "not running (stale state: the supervisor is gone; mew space down cleans up)"
			}
			fmt.Fprintf(out, "space:     %s\ndirectory: %s\ngateway:   ws://127.0.0.1:%d\nstate:     %s\nsince:     %s\n",
				st.SpaceID, st.SpaceDir, st.Port, state, st.StartedAt.Local().Format(time.DateTime))
			health := "no answer"
			hc := &http.Client{Timeout: 2 * time.Second}
			if resp, err := hc.Get("http://127.0.0.1:" + strconv.Itoa(st.Port) + "/health"); err == nil {
				b, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
				resp.Body.Close()
				health = resp.Status + " " + strings.TrimSpace(string(b))
			}
			fmt.Fprintf(out, "health:    %s\n\n%-24s %8s  %s\n", health, "PROCESS", "PID", "STATE")
			row := func(name string, pid int) {
				s := "stopped"
				if proc.Alive(pid) {
					s = "running"
				}
				fmt.Fprintf(out, "%-24s %8d  %s\n", name, pid, s)
			}
			row("supervisor", st.Supervisor)
			row("gateway", st.Gateway)
			for _, n := range st.Nodes[min(1, len(st.Nodes)):] {
				row(nodeProcName(n.ID)+" :"+strconv.Itoa(n.Port), n.PID)
			}
			for _, id := range slices.Sorted(maps.Keys(st.Agents)) {
				row(id, st.Agents[id])
				statusProcess(out, st.Processes[id])
			}
			return nil
		},
	}
	loc.register(cmd.Flags())
	return cmd
}

func newSpaceCleanCmd() *cobra.Command {
	var loc spaceLocation
	var all, dryRun, force bool
	cmd := &cobra.Command{
		Use:   "clean",
		Short: "Delete what running the space produced: logs, and with --all its tokens and state",
		Long: `Delete the logs of the space (logs/ and .mew/logs/). With --all also the generated
tokens (.mew/tokens/) and a stale state file; never the configuration or templates.
Refused while the space runs, unless --force. --dry-run lists what would go.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			cfg, err := loc.load()
			if err != nil {
				return err
			}
			if st, err := space.ReadRunState(cfg.MewDir); err == nil && st.Running() && !force {
				return fmt.Errorf("space %s is running (supervisor pid %d): mew space down first, or --force", st.SpaceID, st.Supervisor)
			}
			targets := []string{filepath.Join(cfg.SpaceDir(), "logs"), filepath.Join(cfg.MewDir, "logs")}
			if all {
				targets = append(targets, filepath.Join(cfg.MewDir, "tokens"), filepath.Join(cfg.MewDir, space.RunStateFile))
			}
			return clean(cmd.OutOrStdout(), targets, dryRun)
		},
	}
	fl := cmd.Flags()
	loc.register(fl)
	fl.Bool("logs", false, "delete the logs (what clean always does; accepted for the reference's scripts)")
	fl.BoolVar(&all, "all", false, "also delete generated tokens and the state file")
	fl.BoolVar(&dryRun, "dry-run", false, "list what would be deleted")
	fl.BoolVar(&force, "force", false, "clean even while the space runs")
	return cmd
}

// clean deletes targets (files or directories), printing each and the
// bytes freed.
func clean(out io.Writer, targets []string, dryRun bool) error {
	var freed int64
	verb := "deleted"
	if dryRun {
		verb = "would delete"
	}
	for _, t := range targets {
		var size int64
		n := 0
		err := filepath.WalkDir(t, func(path string, d fs.DirEntry, err error) error {
			if err != nil {
				return err
			}
			if !d.IsDir() {
				if fi, err := d.Info(); err == nil {
					size += fi.Size()
				}
				n++
			}
			return nil
		})
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err != nil {
			return err
		}
		fmt.Fprintf(out, "%s %s (%d files, %d bytes)\n", verb, t, n, size)
		freed += size
		if !dryRun {
			if err := os.RemoveAll(t); err != nil {
				return err
			}
		}
	}
	fmt.Fprintf(out, "%s %d bytes in all\n", verb, freed)
	return nil
}
