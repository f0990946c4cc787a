package space

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"time"

	"github.com/mew-protocol/mew/internal/proc"
)

// Process is a program a Supervisor runs.
type Process struct {
	// Name identifies it: "gateway", or a participant id.
	Name string
	// Path and Args are the program and its arguments (Args without the
	// program's name).
	Path string
	Args []string
	// Env is its whole environment, as KEY=VALUE.
	Env []string
	// Dir is its working directory.
	Dir string
	// Log is the file its standard output and error are appended to.
	Log string
	// Restart says when to start it again after it exits on its own:
	// RestartAlways, RestartOnFailure (a non-zero exit) or RestartNever.
	Restart string
	// Stdout, when set, also receives the standard output (the
	// supervisor reads the gateway's address there).
	Stdout io.Writer
}

// Restart policies of a Process, as restart_policy spells them.
const (
	RestartAlways    = "always"
	RestartOnFailure = "on-failure"
	RestartNever     = "no"
)

// RestartPolicy returns the restart policy that restart_policy names:
// "no", "never" and "false" are RestartNever, "on-failure" is
// RestartOnFailure, anything else (empty included) is RestartAlways.
func RestartPolicy(s string) string {
	switch s {
	case "no", "never", "false":
		return RestartNever
	case "on-failure", "on_failure":
		return RestartOnFailure
	}
	return RestartAlways
}

// SupervisorOptions configures a Supervisor. The zero value of each field
// means its default.
type SupervisorOptions struct {
	// Logger receives what the supervisor does; nil means none.
	Logger *slog.Logger
	// MinBackoff and MaxBackoff bound the wait before a restart (default
	// 500 ms, doubling to 30 s).
	MinBackoff, MaxBackoff time.Duration
	// MaxRestarts is how many restarts within RestartWindow are allowed
	// before the supervisor gives up on a process (default 5 in 1 min).
	MaxRestarts   int
	RestartWindow time.Duration
	// StopTimeout is how long a process has to exit after SIGTERM before
	// it is killed (default 5 s).
	StopTimeout time.Duration
	// OnChange is called, on a goroutine of the supervisor, after a
	// process started, exited or was given up on: the time to write the
	// state file.
	OnChange func()
	// ReapAdopted makes Stop kill, last, every child of this process left:
	// with proc.Subreaper, the descendants that escaped their process
	// group (a server that daemonised itself with setsid). Only for a
	// process that does nothing but supervise (mew space up).
	ReapAdopted bool
}

// Supervisor runs processes, restarts those that crash with backoff, and
// stops them all, each with its children (its process group), on Stop.
//
// Each process has one goroutine, owned by the supervisor, that starts it,
// waits for it and restarts it; Stop ends them all and waits for them.
type Supervisor struct {
	opts SupervisorOptions
	log  *slog.Logger

	ctx    context.Context // ends at Stop
	cancel context.CancelFunc
	wg     sync.WaitGroup

	mu    sync.Mutex
	procs map[string]*managed
	order []string // start order; Stop goes in reverse
}

// managed is the state of one process.
type managed struct {
	spec     Process
	pid      int
	running  bool
	restarts []time.Time // recent restarts, for MaxRestarts
	log      *procLog    // its log, across restarts
	exits    int         // how often it exited on its own
	lastExit string      // how it last exited ("exit status 1")
	gaveUp   bool
	done     chan struct{} // closed when the goroutine ends
}

// ProcessState is what State reports of a process.
type ProcessState struct {
	Name     string
	PID      int  // 0 when not running
	Running  bool // started and not yet exited
	Restarts int  // restarts in the current window
	GaveUp   bool // crashed too often: not restarted any more
	// Exits counts the times it exited on its own since it was started,
	// and LastExit says how the last one went ("exit status 1").
	Exits    int
	LastExit string
	Log      string // its log file
}

// ErrStopped: the supervisor was stopped.
var ErrStopped = errors.New("space: supervisor stopped")

// NewSupervisor returns a supervisor with nothing running.
func NewSupervisor(opts SupervisorOptions) *Supervisor {
	if opts.MinBackoff <= 0 {
		opts.MinBackoff = 500 * time.Millisecond
	}
	if opts.MaxBackoff <= 0 {
		opts.MaxBackoff = 30 * time.Second
	}
	if opts.MaxRestarts <= 0 {
		opts.MaxRestarts = 5
	}
	if opts.RestartWindow <= 0 {
		opts.RestartWindow = time.Minute
	}
	if opts.StopTimeout <= 0 {
		opts.StopTimeout = 5 * time.Second
	}
	logger := opts.Logger
	if logger == nil {
		logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	ctx, cancel := context.WithCancel(context.Background())
	return &Supervisor{opts: opts, log: logger, ctx: ctx, cancel: cancel, procs: make(map[string]*managed)}
}

// Start starts p and keeps it running by its restart policy. It returns
// once the first start succeeded or failed; a name already in use is an
// error.
func (s *Supervisor) Start(p Process) error {
	if s.ctx.Err() != nil {
		return ErrStopped
	}
	s.mu.Lock()
	if _, dup := s.procs[p.Name]; dup {
		s.mu.Unlock()
		return fmt.Errorf("space: process %q already started", p.Name)
	}
	pr := &managed{spec: p, done: make(chan struct{})}
	s.procs[p.Name] = pr
	s.order = append(s.order, p.Name)
	s.mu.Unlock()

	cmd, err := s.launch(pr)
	if err != nil {
		s.mu.Lock()
		delete(s.procs, p.Name)
		s.order = s.order[:len(s.order)-1]
		s.mu.Unlock()
		return err
	}
	s.wg.Add(1)
	go s.watch(pr, cmd)
	return nil
}

// launch starts the process once.
func (s *Supervisor) launch(pr *managed) (*exec.Cmd, error) {
	p := pr.spec
	if err := os.MkdirAll(filepath.Dir(p.Log), 0o755); err != nil {
		return nil, fmt.Errorf("space: %s: log directory: %w", p.Name, err)
	}
	if pr.log == nil {
		f, err := os.OpenFile(p.Log, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
		if err != nil {
			return nil, fmt.Errorf("space: %s: log: %w", p.Name, err)
		}
		_ = f.Close()
		pr.log = newProcLog(p.Log)
	}
	logFile := pr.log
	// A missing working directory would be reported as "fork/exec <path>:
	// no such file or directory", which blames the program.
	if p.Dir != "" {
		if fi, err := os.Stat(p.Dir); err != nil {
			return nil, fmt.Errorf("space: start %s: its working directory: %w", p.Name, err)
		} else if !fi.IsDir() {
			return nil, fmt.Errorf("space: start %s: its working directory %s is not a directory", p.Name, p.Dir)
		}
	}
	cmd := exec.Command(p.Path, p.Args...)
	cmd.Env = p.Env
	cmd.Dir = p.Dir
	cmd.Stdout = logFile
	if p.Stdout != nil {
		cmd.Stdout = io.MultiWriter(logFile, p.Stdout)
	}
	cmd.Stderr = logFile
	// Output goes through pipes to the bounded log: a descendant that keeps
	// them open (a daemonised server) must not hold Wait up for ever.
	cmd.WaitDelay = 2 * time.Second
	proc.Group(cmd)
	err := cmd.Start()
	if err != nil {
		return nil, fmt.Errorf("space: start %s: %w", p.Name, err)
	}
	s.mu.Lock()
	pr.pid, pr.running = cmd.Process.Pid, true
	s.mu.Unlock()
	s.log.Info("started", "process", p.Name, "pid", cmd.Process.Pid, "log", p.Log)
	s.changed()
	return cmd, nil
}

// watch waits for the process and restarts it until Stop or until it is
// given up on.
func (s *Supervisor) watch(pr *managed, cmd *exec.Cmd) {
	defer s.wg.Done()
	defer close(pr.done)
	defer pr.log.Close()
	backoff := s.opts.MinBackoff
	for {
		err := cmd.Wait()
		s.mu.Lock()
		pr.running = false
		if s.ctx.Err() == nil {
			pr.exits++
			pr.lastExit = "exited"
			if err != nil {
				pr.lastExit = err.Error()
			}
		}
		s.mu.Unlock()
		if s.ctx.Err() != nil {
			return
		}
		failed := err != nil
		s.log.Warn("exited", "process", pr.spec.Name, "pid", cmd.Process.Pid, "err", err)
		if pr.spec.Restart == RestartNever || (pr.spec.Restart == RestartOnFailure && !failed) || !s.allowRestart(pr) {
			s.mu.Lock()
			pr.pid = 0
			pr.gaveUp = pr.spec.Restart != RestartNever && (failed || pr.spec.Restart == RestartAlways)
			s.mu.Unlock()
			if pr.gaveUp {
				s.log.Error("not restarting: it exited too often", "process", pr.spec.Name, "restarts", s.opts.MaxRestarts, "window", s.opts.RestartWindow)
			}
			s.changed()
			return
		}
		s.changed()
		t := time.NewTimer(backoff)
		select {
		case <-s.ctx.Done():
			t.Stop()
			return
		case <-t.C:
		}
		backoff = min(2*backoff, s.opts.MaxBackoff)
		next, err := s.launch(pr)
		if err != nil {
			s.log.Error("restart failed", "process", pr.spec.Name, "err", err)
			s.mu.Lock()
			pr.pid, pr.gaveUp = 0, true
			s.mu.Unlock()
			s.changed()
			return
		}
		cmd = next
	}
}

// allowRestart records a restart and reports whether it is within the
// limit.
func (s *Supervisor) allowRestart(pr *managed) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	now := time.Now()
	kept := pr.restarts[:0]
	for _, t := range pr.restarts {
		if now.Sub(t) < s.opts.RestartWindow {
			kept = append(kept, t)
		}
	}
	pr.restarts = kept
	if len(pr.restarts) >= s.opts.MaxRestarts {
		return false
	}
	pr.restarts = append(pr.restarts, now)
	return true
}

// changed tells OnChange.
func (s *Supervisor) changed() {
	if s.opts.OnChange != nil {
		s.opts.OnChange()
	}
}

// State returns the processes in start order.
func (s *Supervisor) State() []ProcessState {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]ProcessState, 0, len(s.order))
	for _, name := range s.order {
		pr := s.procs[name]
		out = append(out, ProcessState{Name: name, PID: pr.pid, Running: pr.running, Restarts: len(pr.restarts), GaveUp: pr.gaveUp,
			Exits: pr.exits, LastExit: pr.lastExit, Log: pr.spec.Log})
	}
	return out
}

// Done returns a channel closed when the named process will not run again
// (it exited and is not restarted, or Stop ended it); nil for an unknown
// name.
func (s *Supervisor) Done(name string) <-chan struct{} {
	s.mu.Lock()
	defer s.mu.Unlock()
	if pr, ok := s.procs[name]; ok {
		return pr.done
	}
	return nil
}

// Stop stops every process, the last started first: SIGTERM to its process
// group, SIGKILL after StopTimeout. It returns when all have exited and
// the supervisor's goroutines have ended, or when ctx ends first.
func (s *Supervisor) Stop(ctx context.Context) error {
	s.cancel()
	s.mu.Lock()
	order := append([]string(nil), s.order...)
	s.mu.Unlock()
	for i := len(order) - 1; i >= 0; i-- {
		s.mu.Lock()
		pr := s.procs[order[i]]
		pid, running := pr.pid, pr.running
		s.mu.Unlock()
		if !running || pid == 0 {
			continue
		}
		s.log.Info("stopping", "process", pr.spec.Name, "pid", pid)
		proc.SignalGroup(pid, false)
		t := time.NewTimer(s.opts.StopTimeout)
		select {
		case <-pr.done:
			t.Stop()
		case <-t.C:
			s.log.Warn("did not stop in time; killing", "process", pr.spec.Name, "pid", pid)
			proc.SignalGroup(pid, true)
		case <-ctx.Done():
			t.Stop()
			proc.SignalGroup(pid, true)
		}
		// Children that outlived the leader are killed with the group.
		proc.SignalGroup(pid, true)
	}
	waited := make(chan struct{})
	go func() { s.wg.Wait(); close(waited) }()
	select {
	case <-waited:
		if s.opts.ReapAdopted {
			for _, pid := range proc.KillAdopted(nil) {
				s.log.Info("killed a process that escaped its group", "pid", pid)
			}
		}
		s.changed()
		return nil
	case <-ctx.Done():
		return fmt.Errorf("space: stop: %w", ctx.Err())
	}
}
