package cli

import (
	"strings"
	"testing"

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
	// The UI asks for the terminal's size.
	r := runOnPTY(t, map[string]string{"TERM": "xterm-256color"}, 24, 80,
		"client", "connect", "-g", "ws://"+g.Addr, "-s", "cli-client", "-t", "human-token")

	r.after(0, "joined")
	r.after(0, "connected")
	r.typeIn("hello\r")
	expectHeard(t, heard, "hello", "the typed line was not sent")
	if _, err := friend.Chat(t.Context(), "hi human"); err != nil {
		t.Fatal(err)
	}
	r.after(0, "hi human")
	r.end("/exit")
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
