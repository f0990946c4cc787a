package bench

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os/exec"
	"sync"
	"time"
)

// ChildTarget runs a server as a child process, so that the CPU time and memory measured are the
// server's own, read from /proc/PID, apart from the clients'. The child speaks a line protocol on
// its stdin and stdout, which ServeChild implements:
//
//   - it reads one line, the participant ids as a JSON array;
//   - it starts its server and writes one line, {"url":...,"tokens":{...}};
//   - for each line "measure" it reads, it collects garbage and writes
//     {"bytes":...,"stacks":...,"goroutines":...} (live heap objects plus stacks, and stacks
//     alone, as Idle measures in-process);
//   - when its stdin closes it stops its server and exits.
type ChildTarget struct {
	// Label names the target in results: "gateway", "relay".
	Label string
	// Command is the child's program and arguments, e.g. mew bench serve gateway.
	Command []string
}

// childStartTimeout bounds how long a child may take to say where it serves, and
// childStopTimeout how long it may take to exit once told to.
const (
	childStartTimeout = 30 * time.Second
	childStopTimeout  = 20 * time.Second
)

// Name returns the label.
func (t ChildTarget) Name() string { return t.Label }

// childEndpoint is the child's answer to the ids.
type childEndpoint struct {
	URL    string            `json:"url"`
	URLs   []string          `json:"urls,omitempty"` // Endpoint.URLs: a cluster's nodes
	Tokens map[string]string `json:"tokens"`
	Audit  string            `json:"audit,omitempty"` // Endpoint.AuditDir
}

// childUse is the child's answer to "measure".
type childUse struct {
	Bytes      uint64 `json:"bytes"`
	Stacks     uint64 `json:"stacks"`
	Goroutines uint64 `json:"goroutines"`
}

// Start starts the child and waits until it says where it serves.
func (t ChildTarget) Start(ctx context.Context, ids []string) (*Endpoint, error) {
	if len(t.Command) == 0 {
		return nil, errors.New("child target: no command")
	}
	cmd := exec.Command(t.Command[0], t.Command[1:]...) // not CommandContext: Close ends it
	stderr := &tailBuffer{max: 4 << 10}
	cmd.Stderr = stderr
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return nil, fmt.Errorf("child target: %w", err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return nil, fmt.Errorf("child target: %w", err)
	}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("child target: %w", err)
	}
	c := &child{cmd: cmd, stdin: stdin, stdout: bufio.NewReader(stdout), stderr: stderr}
	var ep childEndpoint
	err = c.exchange(ctx, childStartTimeout, func() error {
		return json.NewEncoder(stdin).Encode(ids)
	}, &ep)
	if err != nil {
		return nil, errors.Join(fmt.Errorf("child target: start: %w", err), c.stop())
	}
	return &Endpoint{
		URL:      ep.URL,
		URLs:     ep.URLs,
		Tokens:   ep.Tokens,
		AuditDir: ep.Audit,
		Close:    c.stop,
		PID:      cmd.Process.Pid,
		measure:  func(ctx context.Context) (processUse, error) { return c.measure(ctx) },
	}, nil
}

// child is a started ChildTarget. Its methods are called from one goroutine at a time.
type child struct {
	cmd      *exec.Cmd
	stdin    io.WriteCloser
	stdout   *bufio.Reader
	stderr   *tailBuffer
	stopOnce sync.Once
	stopErr  error
}

// exchange sends a request with send and decodes the child's one-line answer into v, killing the
// child if no answer comes within limit or before ctx ends.
func (c *child) exchange(ctx context.Context, limit time.Duration, send func() error, v any) error {
	if err := send(); err != nil {
		return fmt.Errorf("write: %w%s", err, c.stderr.note())
	}
	type answer struct {
		line []byte
		err  error
	}
	got := make(chan answer, 1)
	go func() { // ends when a line comes or the child is killed
		line, err := c.stdout.ReadBytes('\n')
		got <- answer{line, err}
	}()
	timer := time.NewTimer(limit)
	defer timer.Stop()
	var a answer
	select {
	case a = <-got:
	case <-ctx.Done():
		_ = c.cmd.Process.Kill()
		<-got
		return fmt.Errorf("no answer: %w", context.Cause(ctx))
	case <-timer.C:
		_ = c.cmd.Process.Kill()
		<-got
		return fmt.Errorf("no answer within %v%s", limit, c.stderr.note())
	}
	if a.err != nil {
		return fmt.Errorf("read: %w%s", a.err, c.stderr.note())
	}
	if err := json.Unmarshal(a.line, v); err != nil {
		return fmt.Errorf("answer %q: %w", bytes.TrimSpace(a.line), err)
	}
	return nil
}

// measure asks the child for its live heap, stacks and goroutines.
func (c *child) measure(ctx context.Context) (processUse, error) {
	var u childUse
	err := c.exchange(ctx, childStartTimeout, func() error {
		_, err := io.WriteString(c.stdin, "measure\n")
		return err
	}, &u)
	if err != nil {
		return processUse{}, fmt.Errorf("measure child: %w", err)
	}
	return processUse{bytes: u.Bytes, stacks: u.Stacks, goroutines: u.Goroutines}, nil
}

// stop closes the child's stdin, which tells it to stop, and waits for it to exit, killing it
// if it takes longer than childStopTimeout.
func (c *child) stop() error {
	c.stopOnce.Do(func() {
		cerr := c.stdin.Close()
		exited := make(chan error, 1)
		go func() { exited <- c.cmd.Wait() }() // ends when the child exits
		timer := time.NewTimer(childStopTimeout)
		defer timer.Stop()
		select {
		case err := <-exited:
			if err != nil {
				cerr = errors.Join(cerr, fmt.Errorf("child exited: %w%s", err, c.stderr.note()))
			}
		case <-timer.C:
			_ = c.cmd.Process.Kill()
			<-exited
			cerr = errors.Join(cerr, fmt.Errorf("child did not exit within %v; killed%s", childStopTimeout, c.stderr.note()))
		}
		c.stopErr = cerr
	})
	return c.stopErr
}

// ServeChild is the child's side of ChildTarget: it reads the ids from in, starts t, writes the
// endpoint to out, answers "measure" lines, and stops t when in ends or ctx is done.
func ServeChild(ctx context.Context, t Target, in io.Reader, out io.Writer) (err error) {
	sc := bufio.NewScanner(in)
	sc.Buffer(nil, 64<<20)
	if !sc.Scan() {
		return fmt.Errorf("serve child: no participant ids: %w", errors.Join(sc.Err(), io.ErrUnexpectedEOF))
	}
	var ids []string
	if err := json.Unmarshal(sc.Bytes(), &ids); err != nil {
		return fmt.Errorf("serve child: participant ids: %w", err)
	}
	ep, err := startTarget(ctx, t, ids)
	if err != nil {
		return fmt.Errorf("serve child: %w", err)
	}
	defer func() {
		if serr := ep.stop(); serr != nil && err == nil {
			err = fmt.Errorf("serve child: stop: %w", serr)
		}
	}()
	enc := json.NewEncoder(out)
	if err := enc.Encode(childEndpoint{URL: ep.URL, URLs: ep.URLs, Tokens: ep.Tokens, Audit: ep.AuditDir}); err != nil {
		return fmt.Errorf("serve child: %w", err)
	}
	// The scanner's goroutine ends when in does; ctx may end the loop
	// before that, and the goroutine then ends with in.
	lines := make(chan string)
	scanned := make(chan error, 1)
	stop := make(chan struct{})
	defer close(stop)
	go func() {
		defer close(lines)
		for sc.Scan() {
			select {
			case lines <- sc.Text():
			case <-stop:
				return
			}
		}
		scanned <- sc.Err()
	}()
	for {
		select {
		case <-ctx.Done():
			return nil
		case line, ok := <-lines:
			if !ok {
				return <-scanned
			}
			if line != "measure" {
				return fmt.Errorf("serve child: unknown request %q", line)
			}
			u := measureProcess()
			if err := enc.Encode(childUse{Bytes: u.bytes, Stacks: u.stacks, Goroutines: u.goroutines}); err != nil {
				return fmt.Errorf("serve child: %w", err)
			}
		}
	}
}

// tailBuffer keeps the last max bytes written to it, for error messages.
type tailBuffer struct {
	mu  sync.Mutex
	max int
	b   []byte
}

func (t *tailBuffer) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.b = append(t.b, p...)
	if over := len(t.b) - t.max; over > 0 {
		t.b = append(t.b[:0], t.b[over:]...)
	}
	return len(p), nil
}

// note returns what the child last wrote to stderr, as a suffix for an error.
func (t *tailBuffer) note() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	if s := bytes.TrimSpace(t.b); len(s) > 0 {
		return "; its stderr ends: " + string(s)
	}
	return ""
}
