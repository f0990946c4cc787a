package cli

import (
	"context"
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

func ioctl(f *os.File, req uintptr, arg unsafe.Pointer) error {
	if _, _, e := syscall.Syscall(syscall.SYS_IOCTL, f.Fd(), req, uintptr(arg)); e != 0 {
		return e
	}
	return nil
}

// TestClientConnectTerminal runs the client on a pseudo-terminal: a chat
// arriving while a line is typed is printed above the prompt, which is
// drawn again with the partial line; Up recalls the previous line; the
// terminal is back in its own mode at the end.
func TestClientConnectTerminal(t *testing.T) {
	g := testutil.StartGateway(t, clientSpace, gateway.Options{})
	friend := joinCLI(t, g, "friend-token")
	heard := hearChats(friend, "human")
	master, slave := openPTY(t)
	var before syscall.Termios
	if err := ioctl(slave, syscall.TCGETS, unsafe.Pointer(&before)); err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var screen strings.Builder
	go func() { // ends when the master is closed
		buf := make([]byte, 4096)
		for {
			n, err := master.Read(buf)
			mu.Lock()
			screen.Write(buf[:n])
			mu.Unlock()
			if err != nil {
				return
			}
		}
	}()
	// after waits until the screen holds want after its first len(from)
	// bytes and returns the screen's length then.
	after := func(from int, want string) int {
		t.Helper()
		for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(10 * time.Millisecond) {
			mu.Lock()
			s := screen.String()
			mu.Unlock()
			if i := strings.Index(s[from:], want); i >= 0 {
				return from + i + len(want)
			}
			if time.Now().After(deadline) {
				t.Fatalf("the screen lacks %q after byte %d:\n%q", want, from, s[from:])
			}
		}
	}
	root := NewRoot(Options{Stdout: slave, Stderr: slave, Getenv: func(string) string { return "" }})
	root.SetIn(slave)
	root.SetArgs([]string{"client", "connect", "-g", "ws://" + g.Addr, "-s", "cli-client", "-t", "human-token"})
	done := make(chan error, 1)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() { done <- root.ExecuteContext(ctx) }()

	at := after(0, "connected to cli-client as human")
	at = after(at, "> \x1b[K") // the prompt: the terminal is in raw mode now
	master.WriteString("hel")
	at = after(at, "> hel\x1b[K")
	if _, err := friend.Chat(ctx, "hi human"); err != nil {
		t.Fatal(err)
	}
	// Erased, printed, drawn again with the partial line.
	at = after(at, "\r\x1b[Jfriend: hi human\r\n> hel\x1b[K")
	master.WriteString("lo\r")
	if got := <-heard; got != "hello" {
		t.Errorf("friend heard %q", got)
	}
	at = after(at, "> hello\r\n")
	master.WriteString("\x1b[A")
	after(at, "> hello\x1b[K")
	master.WriteString(" again\r")
	if got := <-heard; got != "hello again" {
		t.Errorf("friend heard %q after Up", got)
	}
	master.WriteString("/quit\r")
	select {
	case err := <-done:
		if err != nil {
			t.Errorf("exit: %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the client did not end at /quit")
	}
	var end syscall.Termios
	if err := ioctl(slave, syscall.TCGETS, unsafe.Pointer(&end)); err != nil {
		t.Fatal(err)
	}
	if end.Lflag != before.Lflag || end.Iflag != before.Iflag || end.Oflag != before.Oflag {
		t.Errorf("the terminal's mode is not restored: %+v, was %+v", end, before)
	}
}
