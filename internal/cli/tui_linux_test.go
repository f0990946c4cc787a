package cli

import (
	"context"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
	"unsafe"

	"github.com/mew-protocol/mew/gateway"
	"github.com/mew-protocol/mew/internal/testutil"
)

// TestClientConnectTUI runs mew client connect on a pseudo-terminal with
// TERM set: the full-screen UI opens, a typed line is a chat, another's chat
// is drawn, /exit leaves with the terminal's mode restored.
func TestClientConnectTUI(t *testing.T) {
	g := testutil.StartGateway(t, clientSpace, gateway.Options{})
	friend := joinCLI(t, g, "friend-token")
	heard := hearChats(friend, "human")
	master, slave := openPTY(t)
	var before syscall.Termios
	if err := ioctl(slave, syscall.TCGETS, unsafe.Pointer(&before)); err != nil {
		t.Fatal(err)
	}
	// The terminal's size: the UI asks for it.
	ws := struct{ row, col, x, y uint16 }{24, 80, 0, 0}
	if err := ioctl(slave, syscall.TIOCSWINSZ, unsafe.Pointer(&ws)); err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var screen strings.Builder
	go func() {
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
	shows := func(want string) {
		t.Helper()
		for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(20 * time.Millisecond) {
			mu.Lock()
			s := screen.String()
			mu.Unlock()
			if strings.Contains(s, want) {
				return
			}
			if time.Now().After(deadline) {
				t.Fatalf("the screen never showed %q:\n%q", want, s)
			}
		}
	}
	env := map[string]string{"TERM": "xterm-256color"}
	root := NewRoot(Options{Stdout: slave, Stderr: slave, Getenv: func(k string) string { return env[k] }})
	root.SetIn(slave)
	root.SetArgs([]string{"client", "connect", "-g", "ws://" + g.Addr, "-s", "cli-client", "-t", "human-token"})
	done := make(chan error, 1)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() { done <- root.ExecuteContext(ctx) }()

	shows("joined")
	shows("connected")
	master.WriteString("hello\r")
	select {
	case got := <-heard:
		if got != "hello" {
			t.Errorf("friend heard %q", got)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the typed line was not sent")
	}
	if _, err := friend.Chat(ctx, "hi human"); err != nil {
		t.Fatal(err)
	}
	shows("hi human")
	master.WriteString("/exit\r")
	select {
	case err := <-done:
		if err != nil {
			t.Errorf("exit: %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the UI did not end at /exit")
	}
	var end syscall.Termios
	if err := ioctl(slave, syscall.TCGETS, unsafe.Pointer(&end)); err != nil {
		t.Fatal(err)
	}
	if end.Lflag != before.Lflag || end.Iflag != before.Iflag || end.Oflag != before.Oflag {
		t.Errorf("the terminal's mode is not restored: %+v, was %+v", end, before)
	}
}

// TestWantTUI: the line client stays for --no-ui, TERM unset or dumb, the
// script mode, and anything that is not a terminal.
func TestWantTUI(t *testing.T) {
	_, slave := openPTY(t)
	cases := []struct {
		name string
		term string
		args []string
		o    lineClientOptions
		tty  bool
		want bool
	}{
		{name: "terminal", term: "xterm", tty: true, want: true},
		{name: "--no-ui", term: "xterm", tty: true, args: []string{"--no-ui"}},
		{name: "TERM=dumb", term: "dumb", tty: true},
		{name: "TERM unset", tty: true},
		{name: "--fifo-in", term: "xterm", tty: true, o: lineClientOptions{JSONIn: "in"}},
		{name: "--output-file", term: "xterm", tty: true, o: lineClientOptions{JSONOut: "out"}},
		{name: "pipe", term: "xterm"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			root := NewRoot(Options{})
			cmd, _, err := root.Find([]string{"client", "connect"})
			if err != nil {
				t.Fatal(err)
			}
			if err := cmd.ParseFlags(c.args); err != nil {
				t.Fatal(err)
			}
			if c.tty {
				cmd.SetIn(slave)
				cmd.SetOut(slave)
			} else {
				cmd.SetIn(strings.NewReader(""))
				cmd.SetOut(&strings.Builder{})
			}
			o := c.o
			o.Getenv = func(k string) string {
				if k == "TERM" {
					return c.term
				}
				return ""
			}
			if got := wantTUI(cmd, o); got != c.want {
				t.Errorf("wantTUI = %v, want %v", got, c.want)
			}
		})
	}
}
