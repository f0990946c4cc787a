package hostile

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"runtime/metrics"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/mew-protocol/mew/gateway"
	"github.com/mew-protocol/mew/internal/testutil"
	"github.com/mew-protocol/mew/participant"
	"github.com/mew-protocol/mew/protocol"
)

// hostileSpace is the space of the suite; every token is "<id>-token".
// files is the bridge, agent the agent under attack, alice and bob the
// bystanders, human and asker those who ask, chatter the hostile peer.
var hostileSpace = testutil.SpaceYAML("hostile",
	testutil.Member("files", "mcp/response", `{kind: mcp/request, payload: {method: "notifications/**"}}`, "participant/status", "chat"),
	testutil.Member("human", "*"),
	testutil.Member("agent", "chat", "chat/*", "reasoning/*", "mcp/request", "mcp/response", "participant/*"),
	testutil.Member("asker", "chat"),
	testutil.Member("chatter", "chat"),
	testutil.Member("alice", "chat"),
	testutil.Member("bob", "chat"),
)

// startSpace starts a gateway for hostileSpace on 127.0.0.1.
func startSpace(t *testing.T) *testutil.Gateway {
	t.Helper()
	return testutil.StartGateway(t, hostileSpace, gateway.Options{})
}

// join connects participant id of g's space.
func join(t *testing.T, g *testutil.Gateway, id string, tools ...participant.Tool) *participant.Participant {
	t.Helper()
	return testutil.JoinParticipant(t, g, id+"-token", participant.Options{}, tools...)
}

const mib = 1 << 20

// child is a process of the test binary in another role.
type child struct {
	cmd  *exec.Cmd
	out  *counted // its standard output and error
	done chan struct{}
	err  error // Wait's, once done is closed
}

// counted keeps what a process writes, counting every byte and keeping
// only the last keep bytes.
type counted struct {
	mu    sync.Mutex
	n     int64
	lines int64
	tail  []byte
	keep  int
}

func (c *counted) Write(p []byte) (int, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.n += int64(len(p))
	for _, b := range p {
		if b == '\n' {
			c.lines++
		}
	}
	c.tail = append(c.tail, p...)
	if over := len(c.tail) - c.keep; over > 0 {
		c.tail = append(c.tail[:0], c.tail[over:]...)
	}
	return len(p), nil
}

// size returns the bytes and lines written so far.
func (c *counted) size() (int64, int64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.n, c.lines
}

func (c *counted) String() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return string(c.tail)
}

// startMew runs `mew args...` (this test binary in the role "mew") with
// the extra environment env, and stops it (SIGTERM, then SIGKILL) when the
// test ends.
func startMew(t *testing.T, env []string, args ...string) *child {
	t.Helper()
	exe := testutil.Executable(t)
	cmd := exec.Command(exe, args...)
	// A race-enabled child sleeps a second at exit unless told not to.
	cmd.Env = append(os.Environ(), append([]string{envRole + "=mew", "GORACE=atexit_sleep_ms=0"}, env...)...)
	out := &counted{keep: 64 << 10}
	cmd.Stdout, cmd.Stderr = out, out
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	c := &child{cmd: cmd, out: out, done: make(chan struct{})}
	go func() {
		c.err = cmd.Wait()
		close(c.done)
	}()
	t.Cleanup(func() { c.stop(t) })
	return c
}

// pid is the child's process id.
func (c *child) pid() int { return c.cmd.Process.Pid }

// stop ends the child's process group and waits for it.
func (c *child) stop(t *testing.T) {
	select {
	case <-c.done:
		return
	default:
	}
	_ = syscall.Kill(-c.pid(), syscall.SIGTERM)
	select {
	case <-c.done:
	case <-time.After(10 * time.Second):
		_ = syscall.Kill(-c.pid(), syscall.SIGKILL)
		<-c.done
		t.Errorf("mew %s did not stop within 10 s of SIGTERM", strings.Join(c.cmd.Args[1:2], " "))
	}
}

// exited reports whether the child has exited.
func (c *child) exited() bool {
	select {
	case <-c.done:
		return true
	default:
		return false
	}
}

// procStatus reads a memory field of /proc/PID/status ("VmRSS", "VmHWM")
// in bytes. It skips the test where there is no /proc.
func procStatus(t *testing.T, pid int, field string) int64 {
	t.Helper()
	if runtime.GOOS != "linux" {
		t.Skipf("the memory of a child process is read from /proc/PID/status, which %s does not have", runtime.GOOS)
	}
	f, err := os.Open(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		t.Fatalf("reading the memory of process %d: %v", pid, err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		name, rest, ok := strings.Cut(sc.Text(), ":")
		if !ok || name != field {
			continue
		}
		kb, err := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(rest), " kB"), 10, 64)
		if err != nil {
			t.Fatalf("/proc/%d/status %s: %q: %v", pid, field, rest, err)
		}
		return kb << 10
	}
	t.Fatalf("/proc/%d/status has no %s", pid, field)
	return 0
}

// raceScale is how much more memory a process takes under the race
// detector than without it, for the bounds on a child's resident set.
func raceScale() int64 {
	if raceEnabled {
		return 4
	}
	return 1
}

// soon is how long "at once" may take: far below the 30-40 s a caller
// waited for its deadline, with room for the race detector, which makes
// the bridge's work on a large answer several times slower.
func soon() time.Duration {
	if raceEnabled {
		return 15 * time.Second
	}
	return 5 * time.Second
}

// heapLive is the heap in use by live objects of this process, after a
// collection.
func heapLive() uint64 {
	runtime.GC()
	s := []metrics.Sample{{Name: "/gc/heap/live:bytes"}}
	metrics.Read(s)
	return s[0].Value.Uint64()
}

// heapPeak samples this process's heap (live and not yet collected
// objects) until stopped, keeping the largest reading.
type heapPeak struct {
	peak   atomic.Uint64
	cancel context.CancelFunc
	done   chan struct{}
}

func startHeapPeak() *heapPeak {
	ctx, cancel := context.WithCancel(context.Background())
	h := &heapPeak{cancel: cancel, done: make(chan struct{})}
	go func() {
		defer close(h.done)
		s := []metrics.Sample{{Name: "/memory/classes/heap/objects:bytes"}}
		tick := time.NewTicker(10 * time.Millisecond)
		defer tick.Stop()
		for {
			metrics.Read(s)
			if v := s[0].Value.Uint64(); v > h.peak.Load() {
				h.peak.Store(v)
			}
			select {
			case <-ctx.Done():
				return
			case <-tick.C:
			}
		}
	}()
	return h
}

// stop ends the sampling and returns the peak.
func (h *heapPeak) stop() uint64 {
	h.cancel()
	<-h.done
	return h.peak.Load()
}

// bystander is two participants, alice and bob, who chat through the
// gateway while an attack goes on: alice sends bob a chat, bob answers it,
// and the round trip is timed.
type bystander struct {
	cancel context.CancelFunc
	done   chan struct{}

	mu     sync.Mutex
	rounds int
	worst  time.Duration
	failed []string
}

// startBystander joins alice and bob and starts their round trips, one
// every 50 ms.
func startBystander(t *testing.T, g *testutil.Gateway) *bystander {
	t.Helper()
	alice, bob := join(t, g, "alice"), join(t, g, "bob")
	atBob, atAlice := make(chan string, 16), make(chan string, 16)
	bob.Client().OnKind(protocol.KindChat, func(env *protocol.Envelope) {
		if env.From == "alice" {
			select {
			case atBob <- env.ID:
			default:
			}
		}
	})
	alice.Client().OnKind(protocol.KindChat, func(env *protocol.Envelope) {
		if env.From == "bob" && len(env.CorrelationID) > 0 {
			select {
			case atAlice <- env.CorrelationID[0]:
			default:
			}
		}
	})
	ctx, cancel := context.WithCancel(context.Background())
	b := &bystander{cancel: cancel, done: make(chan struct{})}
	go func() {
		defer close(b.done)
		tick := time.NewTicker(50 * time.Millisecond)
		defer tick.Stop()
		for n := 0; ; n++ {
			took, err := roundTrip(ctx, alice, bob, atBob, atAlice, n)
			if ctx.Err() != nil {
				return
			}
			b.mu.Lock()
			b.rounds++
			b.worst = max(b.worst, took)
			if err != nil && len(b.failed) < 8 {
				b.failed = append(b.failed, err.Error())
			}
			b.mu.Unlock()
			select {
			case <-ctx.Done():
				return
			case <-tick.C:
			}
		}
	}()
	t.Cleanup(b.halt)
	return b
}

// roundTrip sends alice's n-th chat to bob and bob's answer back.
func roundTrip(ctx context.Context, alice, bob *participant.Participant, atBob, atAlice chan string, n int) (time.Duration, error) {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	start := time.Now()
	id, err := alice.Chat(ctx, fmt.Sprintf("ping %d", n), "bob")
	if err != nil {
		return time.Since(start), fmt.Errorf("alice's chat: %w", err)
	}
	if err := await(ctx, atBob, id); err != nil {
		return time.Since(start), fmt.Errorf("bob waiting for ping %d: %w", n, err)
	}
	env, err := protocol.New(protocol.KindChat, protocol.Chat{Text: fmt.Sprintf("pong %d", n)})
	if err != nil {
		return 0, err
	}
	env.To, env.CorrelationID = []string{"alice"}, []string{id}
	if err := bob.Send(ctx, env); err != nil {
		return time.Since(start), fmt.Errorf("bob's answer: %w", err)
	}
	if err := await(ctx, atAlice, id); err != nil {
		return time.Since(start), fmt.Errorf("alice waiting for pong %d: %w", n, err)
	}
	return time.Since(start), nil
}

// await waits for id on ch.
func await(ctx context.Context, ch chan string, id string) error {
	for {
		select {
		case got := <-ch:
			if got == id {
				return nil
			}
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

// halt stops the round trips.
func (b *bystander) halt() {
	b.cancel()
	<-b.done
}

// check stops the round trips and fails the test unless there were some,
// all completed, and none took longer than limit (three times that under
// the race detector). It returns the worst.
func (b *bystander) check(t *testing.T, limit time.Duration) time.Duration {
	t.Helper()
	if raceEnabled {
		limit *= 3
	}
	b.halt()
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.rounds == 0 {
		t.Error("the bystanders made no round trip")
	}
	if len(b.failed) > 0 {
		t.Errorf("bystanders' round trips failed: %s", strings.Join(b.failed, "; "))
	}
	if b.worst > limit {
		t.Errorf("a bystander's round trip took %v (limit %v)", b.worst, limit)
	}
	t.Logf("bystanders: %d round trips, the slowest %v", b.rounds, b.worst)
	return b.worst
}

// errorText is err's message, or "" for nil.
func errorText(err error) string {
	if err == nil {
		return ""
	}
	var re *participant.RPCError
	if errors.As(err, &re) {
		return re.Message
	}
	return err.Error()
}

// asGatewayError is errors.As for the gateway's refusals.
func asGatewayError(err error, target **participant.GatewayError) bool {
	return errors.As(err, target)
}
