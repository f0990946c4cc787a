package bridge

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"sync"
	"sync/atomic"
	"time"

	"github.com/mew-protocol/mew/internal/mcpver"
	"github.com/mew-protocol/mew/internal/proc"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"golang.org/x/time/rate"
)

// stopGrace is how long a stopping server has to exit after its standard
// input closes, and again after SIGTERM, before it is killed.
const stopGrace = 3 * time.Second

// maxStderrLine bounds one line of the server's standard error as logged.
const maxStderrLine = 4096

// run is one start of the server: its session and, for a command, its
// process. ended is closed when the run is over (the process exited, or
// the session ended), after why is set.
type run struct {
	session *mcp.ClientSession
	proc    *process     // nil for a URL
	http    *http.Client // for a URL; its idle connections close with the run
	started time.Time
	lists   lists          // as listed when the run started
	wg      sync.WaitGroup // the watchers of the run

	endOnce sync.Once
	ended   chan struct{}
	why     error

	stopOnce sync.Once
	asked    atomic.Bool // ended by participant/restart, not by a failure
}

// end marks the run over for the reason err (the first reason wins).
func (r *run) end(err error) {
	r.endOnce.Do(func() {
		r.why = err
		close(r.ended)
	})
}

// isOver reports whether the run has ended.
func (r *run) isOver() bool {
	select {
	case <-r.ended:
		return true
	default:
		return false
	}
}

// reason says why the run ended; "" while it has not.
func (r *run) reason() string {
	if !r.isOver() || r.why == nil {
		return ""
	}
	return r.why.Error()
}

// stop ends the run: the process is asked to exit and killed if it does
// not, and the session is closed. It waits for the goroutines of the run
// and may be called more than once.
func (r *run) stop() {
	r.stopOnce.Do(func() {
		if r.proc != nil {
			r.proc.stop()
			// Whatever still holds the server's output (a descendant that
			// left its process group), the session's reader ends now, and
			// with it the calls still waiting for an answer.
			_ = r.proc.stdout.Close()
		}
		if r.session != nil {
			_ = r.session.Close()
		}
		if r.http != nil {
			r.http.CloseIdleConnections()
		}
		r.end(errors.New("stopped by the bridge"))
		if r.proc != nil {
			r.proc.wait()
		}
		r.wg.Wait()
	})
}

// start launches the server and initializes it: within
// Options.InitTimeout the process starts (or the URL answers), the MCP
// handshake completes and the lists are fetched.
func (b *Bridge) start(ctx context.Context) (*run, error) {
	ictx, cancel := context.WithTimeout(ctx, b.opts.InitTimeout)
	defer cancel()
	r := &run{ended: make(chan struct{}), started: time.Now()}
	hs := &handshake{}
	var transport mcp.Transport
	var watch *watchTransport // for a URL
	if u := b.opts.Server.URL; u != "" {
		r.http = newHTTPClient()
		if b.oauth != nil {
			r.http.Transport = b.oauth.Transport(r.http.Transport)
		}
		watch = &watchTransport{base: r.http.Transport, headers: b.opts.Server.Headers, hs: hs}
		r.http.Transport = watch
		transport = &mcp.StreamableClientTransport{Endpoint: u, HTTPClient: r.http}
	} else {
		proc, err := startProcess(b.opts.Server, b.log)
		if err != nil {
			return nil, err
		}
		r.proc = proc
		// A line over maxFrame is answered "result too large" by the guard
		// instead of ending the SDK's session (oversize.go).
		guard := newFrameGuard(proc.stdout, maxFrame, func(d dropped) {
			b.log.Warn("MCP server message too large, dropped", "bytes", d.size, "id", string(d.id), "answer", d.response)
		})
		transport = &rawTransport{Transport: &mcp.IOTransport{Reader: guard, Writer: proc.stdin, MaxLineLength: sdkMaxLine}, hs: hs}
	}
	// mew offers its newest revision: server/discover first, then
	// initialize; the handshake's verdict applies package mcpver to what the
	// server answered.
	cs, err := b.client.Connect(ictx, transport, &mcp.ClientSessionOptions{ProtocolVersion: mcpver.Latest})
	if watch != nil {
		watch.stopWatching()
	}
	agreed := ""
	if err == nil && cs.InitializeResult() != nil {
		agreed = cs.InitializeResult().ProtocolVersion
	}
	if verr := hs.verdict(err, agreed); verr != nil {
		if cs != nil {
			_ = cs.Close()
		}
		err = b.startError(ictx, r, "initializing", verr)
		r.stop()
		return nil, err
	}
	hs.mu.Lock()
	answered := hs.answered
	hs.mu.Unlock()
	if answered != "" && answered != agreed {
		b.log.Info("the MCP server answered an older protocol revision; speaking the oldest mew knows", "answered", answered, "speaking", agreed)
	}
	r.session = cs
	l := lists{protocol: agreed}
	if ir := cs.InitializeResult(); ir != nil && ir.ServerInfo != nil {
		info := *ir.ServerInfo
		l.info = &info
	}
	if err := fetch(ictx, cs, bitTools|bitResources|bitPrompts, &l); err != nil {
		err = b.startError(ictx, r, "listing", err)
		r.stop()
		return nil, err
	}
	r.lists = l
	// Watch the run: it is over when the process exits or the session ends
	// (the server closed its output, wrote something that is not JSON-RPC,
	// or an HTTP session broke).
	r.wg.Go(func() {
		err := cs.Wait()
		if r.proc != nil && r.proc.waitExit(exitWait) {
			r.end(r.proc.exitErr()) // the output closed because the process exited: say how
			return
		}
		if err == nil {
			err = errors.New("the server closed the session")
		} else {
			err = fmt.Errorf("the session broke: %w", err)
		}
		r.end(err)
	})
	if r.proc != nil {
		r.wg.Go(func() {
			<-r.proc.exited
			r.end(r.proc.exitErr())
		})
	}
	return r, nil
}

// newHTTPClient returns a client with a transport of its own, so that its
// idle connections can be closed with the run.
func newHTTPClient() *http.Client {
	if t, ok := http.DefaultTransport.(*http.Transport); ok {
		return &http.Client{Transport: t.Clone()}
	}
	return &http.Client{Transport: &http.Transport{Proxy: http.ProxyFromEnvironment}}
}

// startError explains a failed start: a timeout, the process's exit, or
// err as it is.
func (b *Bridge) startError(ctx context.Context, r *run, step string, err error) error {
	if r.proc != nil {
		wait := exitWait
		if ctx.Err() != nil {
			wait = 0 // it did not answer in time: it need not have exited
		}
		if r.proc.waitExit(wait) {
			return fmt.Errorf("%s: the server exited (%v): %w", step, r.proc.exitErr(), err)
		}
	}
	if ctx.Err() != nil {
		return fmt.Errorf("%s: no answer within the init timeout of %v: %w", step, b.opts.InitTimeout, err)
	}
	return fmt.Errorf("%s: %w", step, err)
}

// process is a running server command. The bridge owns both ends of its
// pipes: stdin and stdout carry MCP, stderr goes to the log.
type process struct {
	cmd    *exec.Cmd
	stdin  *os.File // write end
	stdout *os.File // read end
	stderr *os.File // read end

	exited  chan struct{} // closed when the process has exited and been reaped
	waitErr error         // valid once exited is closed
	logged  chan struct{} // closed when stderr is drained
}

// startProcess starts the command in a process group of its own, so that
// what it starts in turn (npx starts node, uvx starts python) is stopped
// with it.
func startProcess(s Server, log *slog.Logger) (*process, error) {
	// A missing working directory fails the start as "fork/exec <command>:
	// no such file or directory", which blames the command: say what is
	// missing.
	if s.Dir != "" {
		if fi, err := os.Stat(s.Dir); err != nil {
			return nil, fmt.Errorf("the MCP server's working directory (--mcp-cwd, or mcp_server.cwd) %s: %w", s.Dir, err)
		} else if !fi.IsDir() {
			return nil, fmt.Errorf("the MCP server's working directory (--mcp-cwd, or mcp_server.cwd) %s is not a directory", s.Dir)
		}
	}
	cmd := exec.Command(s.Command, s.Args...)
	cmd.Env = append(os.Environ(), s.Env...)
	cmd.Dir = s.Dir
	proc.Group(cmd)
	var files []*os.File // every end, closed on failure
	closeAll := func() {
		for _, f := range files {
			_ = f.Close()
		}
	}
	pipe := func() (r, w *os.File, err error) {
		r, w, err = os.Pipe()
		if err == nil {
			files = append(files, r, w)
		}
		return r, w, err
	}
	inR, inW, err := pipe()
	if err != nil {
		return nil, fmt.Errorf("pipe: %w", err)
	}
	outR, outW, err := pipe()
	if err != nil {
		closeAll()
		return nil, fmt.Errorf("pipe: %w", err)
	}
	errR, errW, err := pipe()
	if err != nil {
		closeAll()
		return nil, fmt.Errorf("pipe: %w", err)
	}
	cmd.Stdin, cmd.Stdout, cmd.Stderr = inR, outW, errW
	if err := cmd.Start(); err != nil {
		closeAll()
		return nil, fmt.Errorf("starting %s: %w", s.Command, err)
	}
	// The child holds its ends now.
	_ = inR.Close()
	_ = outW.Close()
	_ = errW.Close()
	p := &process{cmd: cmd, stdin: inW, stdout: outR, stderr: errR, exited: make(chan struct{}), logged: make(chan struct{})}
	log.Info("MCP server process started", "pid", cmd.Process.Pid)
	go func() {
		p.waitErr = cmd.Wait()
		close(p.exited)
	}()
	go func() {
		defer close(p.logged)
		logLines(p.stderr, log.With("pid", cmd.Process.Pid))
	}()
	return p, nil
}

// exitErr describes how the process ended.
func (p *process) exitErr() error {
	<-p.exited
	if p.waitErr == nil {
		return errors.New("exit status 0")
	}
	return p.waitErr
}

// stop closes the server's input, as MCP's stdio transport asks, then
// sends SIGTERM and SIGKILL to its process group if it does not exit.
func (p *process) stop() {
	_ = p.stdin.Close()
	if p.waitExit(stopGrace) {
		proc.SignalGroup(p.cmd.Process.Pid, false) // children it left behind
		return
	}
	proc.SignalGroup(p.cmd.Process.Pid, false)
	if p.waitExit(stopGrace) {
		return
	}
	proc.SignalGroup(p.cmd.Process.Pid, true)
	<-p.exited
}

// waitExit waits up to d for the process to exit.
func (p *process) waitExit(d time.Duration) bool {
	if d <= 0 {
		select {
		case <-p.exited:
			return true
		default:
			return false
		}
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-p.exited:
		return true
	case <-t.C:
		return false
	}
}

// wait waits for the process and its log reader after stop, closing the
// bridge's ends of the pipes. A descendant that escaped the process group
// and still holds stderr does not hold the bridge up: its end is closed
// after a moment.
func (p *process) wait() {
	<-p.exited
	_ = p.stdout.Close()
	t := time.NewTimer(time.Second)
	defer t.Stop()
	select {
	case <-p.logged:
	case <-t.C:
	}
	_ = p.stderr.Close()
	<-p.logged
}

// stderrRate and stderrBurst bound the server's standard error lines the
// bridge logs: each becomes a log record several times its size, so a
// server that writes tiny lines without pause would otherwise grow the log
// many times faster than it writes. Past the bound lines are counted, and
// the count logged once a second.
const (
	stderrRate  = 50
	stderrBurst = 200
)

// logLines logs each line read from r, cut to maxStderrLine bytes and
// bounded in rate, until r fails.
func logLines(r io.Reader, log *slog.Logger) {
	lim := rate.NewLimiter(stderrRate, stderrBurst)
	var suppressed int
	var told time.Time
	tell := func(now time.Time) {
		if suppressed > 0 {
			log.Warn("MCP server stderr lines not logged: more than the bridge logs a second", "lines", suppressed, "rate", stderrRate)
			suppressed, told = 0, now
		}
	}
	defer func() { tell(time.Now()) }()
	br := bufio.NewReaderSize(r, maxStderrLine)
	for {
		line, err := br.ReadSlice('\n')
		if len(line) > 0 {
			text := string(trimEOL(line))
			if errors.Is(err, bufio.ErrBufferFull) {
				text += " …"
				for errors.Is(err, bufio.ErrBufferFull) { // skip the rest of the line
					_, err = br.ReadSlice('\n')
				}
			}
			switch now := time.Now(); {
			case text == "":
			case lim.AllowN(now, 1):
				if now.Sub(told) >= time.Second {
					tell(now)
				}
				log.Info("MCP server stderr", "line", text)
			default:
				suppressed++
				if now.Sub(told) >= time.Second {
					tell(now)
				}
			}
		}
		if err != nil && !errors.Is(err, bufio.ErrBufferFull) {
			return
		}
	}
}

func trimEOL(b []byte) []byte {
	for len(b) > 0 && (b[len(b)-1] == '\n' || b[len(b)-1] == '\r') {
		b = b[:len(b)-1]
	}
	return b
}

// checkURL accepts an http or https URL with a host.
func checkURL(s string) error {
	u, err := url.Parse(s)
	if err != nil {
		return fmt.Errorf("bridge: server URL: %w", err)
	}
	if (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return fmt.Errorf("bridge: server URL %q: want http:// or https:// and a host", redactURL(s))
	}
	return nil
}

// redactURL returns s without its user information and query, which may
// hold credentials.
func redactURL(s string) string {
	u, err := url.Parse(s)
	if err != nil {
		return "(unparsable URL)"
	}
	u.User = nil
	if u.RawQuery != "" {
		u.RawQuery = "…"
	}
	return u.String()
}
