package cli

import (
	"os"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
	"unsafe"

	"github.com/mew-protocol/mew/gateway"
	"github.com/mew-protocol/mew/internal/testutil"
	"github.com/mew-protocol/mew/protocol"
	"go.uber.org/goleak"
)

// openPTY opens a pseudo-terminal: the side a test types into and reads
// from, and the side a program sees as its terminal.
func openPTY(t *testing.T) (master, slave *os.File) {
	t.Helper()
	master, err := os.OpenFile("/dev/ptmx", os.O_RDWR|syscall.O_NOCTTY, 0)
	if err != nil {
		t.Skipf("no pseudo-terminal: %v", err)
	}
	t.Cleanup(func() { master.Close() })
	var n uint32
	var unlock int32
	if err := ioctl(master, syscall.TIOCSPTLCK, unsafe.Pointer(&unlock)); err != nil {
		t.Skipf("unlockpt: %v", err)
	}
	if err := ioctl(master, syscall.TIOCGPTN, unsafe.Pointer(&n)); err != nil {
		t.Skipf("ptsname: %v", err)
	}
	slave, err = os.OpenFile("/dev/pts/"+strconv.Itoa(int(n)), os.O_RDWR|syscall.O_NOCTTY, 0)
	if err != nil {
		t.Skipf("opening the terminal: %v", err)
	}
	t.Cleanup(func() { slave.Close() })
	return master, slave
}

// ioctl leaves f in the mode it is in (f.Fd would make it blocking, and a
// blocked read would then outlive the test).
func ioctl(f *os.File, req uintptr, arg unsafe.Pointer) error {
	var errno syscall.Errno
	if err := withFd(f, func(fd int) {
		_, _, errno = syscall.Syscall(syscall.SYS_IOCTL, uintptr(fd), req, uintptr(arg))
	}); err != nil {
		return err
	}
	if errno != 0 {
		return errno
	}
	return nil
}

// withFd runs fn on f's descriptor, leaving the descriptor in the mode it
// is in (f.Fd would make it blocking for good).
func withFd(f *os.File, fn func(fd int)) error {
	rc, err := f.SyscallConn()
	if err != nil {
		return err
	}
	return rc.Control(func(fd uintptr) { fn(int(fd)) })
}

// ptyRun is a mew command running on a pseudo-terminal: what it draws is
// collected for the test to wait on, and end checks that it left the
// terminal in the mode it found it in.
type ptyRun struct {
	t             *testing.T
	master, slave *os.File
	mode          syscall.Termios // the terminal's mode before the command
	before        goleak.Option   // the goroutines before the command
	done          chan error

	mu     sync.Mutex
	screen strings.Builder
}

// runOnPTY starts mew with args on a new pseudo-terminal of the given size
// (rows, columns; zero leaves it unset), with env as its environment. Once
// the test and its cleanups are done, no goroutine the command started may
// be left, the one reading the terminal included.
func runOnPTY(t *testing.T, env map[string]string, rows, cols uint16, args ...string) *ptyRun {
	t.Helper()
	r := &ptyRun{t: t, done: make(chan error, 1)}
	unstarted := goleak.IgnoreCurrent()
	t.Cleanup(func() { goleak.VerifyNone(t, unstarted) }) // the reader below included
	r.master, r.slave = openPTY(t)
	if err := ioctl(r.slave, syscall.TCGETS, unsafe.Pointer(&r.mode)); err != nil {
		t.Fatal(err)
	}
	if rows > 0 {
		ws := struct{ row, col, x, y uint16 }{rows, cols, 0, 0}
		if err := ioctl(r.slave, syscall.TIOCSWINSZ, unsafe.Pointer(&ws)); err != nil {
			t.Fatal(err)
		}
	}
	go func() { // ends when the master is closed
		buf := make([]byte, 4096)
		for {
			n, err := r.master.Read(buf)
			r.mu.Lock()
			r.screen.Write(buf[:n])
			r.mu.Unlock()
			if err != nil {
				return
			}
		}
	}()
	r.before = goleak.IgnoreCurrent()
	root := NewRoot(Options{Stdout: r.slave, Stderr: r.slave, Getenv: func(k string) string { return env[k] }})
	root.SetIn(r.slave)
	root.SetArgs(args)
	go func() { r.done <- root.ExecuteContext(t.Context()) }()
	return r
}

// after waits until the screen holds want after its first from bytes and
// returns the screen's length then.
func (r *ptyRun) after(from int, want string) int {
	r.t.Helper()
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		r.mu.Lock()
		s := r.screen.String()
		r.mu.Unlock()
		if i := strings.Index(s[from:], want); i >= 0 {
			return from + i + len(want)
		}
		if time.Now().After(deadline) {
			r.t.Fatalf("the screen lacks %q after byte %d:\n%q", want, from, s[from:])
		}
	}
}

// typeIn types s on the terminal.
func (r *ptyRun) typeIn(s string) {
	r.t.Helper()
	if _, err := r.master.WriteString(s); err != nil {
		r.t.Fatal(err)
	}
}

// end types the command that leaves, waits for the program to end without
// an error, and checks that the terminal's mode is what it was and that the
// program left no goroutine behind, while the terminal is still open.
func (r *ptyRun) end(leave string) {
	r.t.Helper()
	r.typeIn(leave + "\r")
	select {
	case err := <-r.done:
		if err != nil {
			r.t.Errorf("exit: %v", err)
		}
	case <-time.After(10 * time.Second):
		r.t.Fatalf("the program did not end at %s", leave)
	}
	var end syscall.Termios
	if err := ioctl(r.slave, syscall.TCGETS, unsafe.Pointer(&end)); err != nil {
		r.t.Fatal(err)
	}
	if end.Lflag != r.mode.Lflag || end.Iflag != r.mode.Iflag || end.Oflag != r.mode.Oflag {
		r.t.Errorf("the terminal's mode is not restored: %+v, was %+v", end, r.mode)
	}
	goleak.VerifyNone(r.t, r.before)
}

// TestClientConnectTerminal runs the client on a pseudo-terminal: a chat
// arriving while a line is typed is printed above the prompt, which is
// drawn again with the partial line; Up recalls the previous line; the
// terminal is back in its own mode at the end, and the goroutines reading
// it are gone.
func TestClientConnectTerminal(t *testing.T) {
	g := testutil.StartGateway(t, strings.Replace(clientSpace, "friend: {tokens: [friend-token], capabilities: [{kind: chat}]}",
		`friend: {tokens: [friend-token], capabilities: [{kind: chat}, {kind: "reasoning/*"}]}`, 1), gateway.Options{})
	friend := joinCLI(t, g, "friend-token")
	heard := hearChats(friend, "human")
	r := runOnPTY(t, nil, 0, 0, "client", "connect", "-g", "ws://"+g.Addr, "-s", "cli-client", "-t", "human-token")

	at := r.after(0, "connected to cli-client as human")
	at = r.after(at, "\n> ") // the prompt: the terminal is in raw mode now
	r.typeIn("hel")
	at = r.after(at, "hel")
	if _, err := friend.Chat(t.Context(), "hi human"); err != nil {
		t.Fatal(err)
	}
	// Printed above the prompt, which is drawn again with the partial line.
	at = r.after(at, "friend: hi human\r\n> hel")
	// A reasoning is a status row above the prompt, the partial line kept.
	rid := protocol.NewID()
	sendAs(t, friend, &protocol.Envelope{ID: rid}, protocol.KindReasoningStart, protocol.Reasoning{})
	at = r.after(at, "friend is thinking")
	at = r.after(at, "> hel")
	sendAs(t, friend, &protocol.Envelope{Context: rid}, protocol.KindReasoningConclusion, protocol.Reasoning{})
	at = r.after(at, "(friend reasoned: 0 thoughts)\r\n> hel")
	r.typeIn("lo\r")
	if got := <-heard; got != "hello" {
		t.Errorf("friend heard %q", got)
	}
	at = r.after(at, "lo\r\n")
	r.typeIn("\x1b[A")
	r.after(at, "hello")
	r.typeIn(" again\r")
	if got := <-heard; got != "hello again" {
		t.Errorf("friend heard %q after Up", got)
	}
	r.end("/quit")
}
