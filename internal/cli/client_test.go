package cli

import (
	"context"
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/mew-protocol/mew/gateway"
	"github.com/mew-protocol/mew/internal/testutil"
	"github.com/mew-protocol/mew/participant"
	"github.com/mew-protocol/mew/protocol"
)

const clientSpace = `
space: {id: cli-client}
participants:
  human: {tokens: [human-token], capabilities: [{kind: "*"}]}
  calc: {tokens: [calc-token], capabilities: [{kind: chat}]}
  proposer: {tokens: [proposer-token], capabilities: [{kind: chat}, {kind: mcp/proposal}, {kind: mcp/withdraw}]}
  friend: {tokens: [friend-token], capabilities: [{kind: chat}]}
`

// clientCmd runs `mew client connect args...` with stdin in; it returns
// its output and a function that ends it and returns its error.
func clientCmd(t *testing.T, in io.Reader, args ...string) (*lineWriter, func() error) {
	t.Helper()
	out := &lineWriter{}
	root := NewRoot(Options{Stdout: out, Stderr: out, Getenv: func(string) string { return "" }})
	root.SetIn(in)
	root.SetArgs(append([]string{"client", "connect"}, args...))
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- root.ExecuteContext(ctx) }()
	var result error
	stopped := false
	stop := func() error {
		if !stopped {
			stopped = true
			cancel()
			select {
			case result = <-done:
			case <-time.After(10 * time.Second):
				t.Error("mew client connect did not stop")
			}
		}
		return result
	}
	t.Cleanup(func() { _ = stop() })
	return out, stop
}

// hearChats delivers the texts of the chats p sees from `from`.
func hearChats(p *participant.Participant, from string) <-chan string {
	heard := make(chan string, 10)
	p.Client().OnKind(protocol.KindChat, func(e *protocol.Envelope) {
		if e.From == from {
			var c protocol.Chat
			_ = e.DecodePayload(&c)
			heard <- c.Text
		}
	})
	return heard
}

// waitOutput waits until out holds want.
func waitOutput(t *testing.T, out *lineWriter, want string) {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); !strings.Contains(out.String(), want); {
		if time.Now().After(deadline) {
			t.Fatalf("output lacks %q:\n%s", want, out.String())
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func TestClientConnectReadable(t *testing.T) {
	g := testutil.StartGateway(t, clientSpace, gateway.Options{})
	var added = make(chan string, 1)
	joinCLI(t, g, "calc-token", participant.Tool{
		Name:        "add",
		InputSchema: json.RawMessage(`{"type":"object","properties":{"a":{"type":"number"},"b":{"type":"number"}}}`),
		Execute: func(_ context.Context, args json.RawMessage) (any, error) {
			added <- string(args)
			var in struct{ A, B float64 }
			err := json.Unmarshal(args, &in)
			return in.A + in.B, err
		},
	})
	friend := joinCLI(t, g, "friend-token")
	heard := hearChats(friend, "human")
	inR, inW := io.Pipe()
	defer inW.Close()
	out, stop := clientCmd(t, inR, "-g", "ws://"+g.Addr, "-s", "cli-client", "-t", "human-token")
	waitOutput(t, out, "connected to cli-client as human")

	// Others' chats are shown; typed text is a chat.
	if _, err := friend.Chat(context.Background(), "hi human"); err != nil {
		t.Fatal(err)
	}
	waitOutput(t, out, "friend: hi human")
	io.WriteString(inW, "hello friend\n")
	select {
	case got := <-heard:
		if got != "hello friend" {
			t.Errorf("friend heard %q", got)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the typed chat never arrived")
	}
	// A JSON object is an envelope; a bad one is refused, the connection kept.
	io.WriteString(inW, `{"kind":"chat","payload":{"text":"as json"}}`+"\n")
	io.WriteString(inW, `{"no kind": true}`+"\n")
	io.WriteString(inW, "/frobnicate\n")
	waitOutput(t, out, "not an envelope")
	waitOutput(t, out, "unknown command /frobnicate")
	if got := <-heard; got != "as json" {
		t.Errorf("friend heard %q", got)
	}

	// A proposal is numbered; /approve runs it.
	proposer := joinCLI(t, g, "proposer-token")
	res := make(chan error, 1)
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
		defer cancel()
		_, err := proposer.Request(ctx, "calc", map[string]any{"method": "tools/call", "params": map[string]any{"name": "add", "arguments": map[string]any{"a": 2, "b": 3}}})
		res <- err
	}()
	waitOutput(t, out, `[#1] proposer proposes add {"a":2,"b":3} to calc — /approve 1 or /reject 1`)
	io.WriteString(inW, "/approve 7\n")
	waitOutput(t, out, "no proposal #7")
	io.WriteString(inW, "/approve 1\n")
	waitOutput(t, out, "#1 done: 5")
	if err := <-res; err != nil {
		t.Errorf("the proposer's request: %v", err)
	}
	if got := <-added; got != `{"a":2,"b":3}` {
		t.Errorf("calc got %s", got)
	}
	io.WriteString(inW, "/quit\n")
	if err := stop(); err != nil {
		t.Errorf("exit: %v", err)
	}
}

func TestClientConnectJSONLines(t *testing.T) {
	g := testutil.StartGateway(t, clientSpace, gateway.Options{})
	friend := joinCLI(t, g, "friend-token")
	heard := hearChats(friend, "human")
	dir := t.TempDir()
	in, outFile := filepath.Join(dir, "in.jsonl"), filepath.Join(dir, "out.jsonl")
	if err := os.WriteFile(in, []byte(`{"kind":"chat","payload":{"text":"first"}}`+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	_, stop := clientCmd(t, strings.NewReader(""), "-g", "ws://"+g.Addr, "-s", "cli-client", "-t", "human-token", "--fifo-in", in, "--output-file", outFile)
	if got := <-heard; got != "first" {
		t.Errorf("heard %q", got)
	}
	// Lines appended later are sent too (the file is followed).
	f, err := os.OpenFile(in, os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	f.WriteString(`not json` + "\n" + `{"kind":"chat","payload":{"text":"second"}}` + "\n")
	f.Close()
	select {
	case got := <-heard:
		if got != "second" {
			t.Errorf("heard %q", got)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the appended line was not sent")
	}
	if _, err := friend.Chat(context.Background(), "to the script"); err != nil {
		t.Fatal(err)
	}
	waitFile(t, outFile, `"text":"to the script"`, 1)
	data, _ := os.ReadFile(outFile)
	for _, line := range strings.Split(strings.TrimSpace(string(data)), "\n") {
		if !json.Valid([]byte(line)) {
			t.Errorf("output line is not JSON: %s", line)
		}
	}
	if err := stop(); err != nil {
		t.Errorf("exit: %v", err)
	}
}

func TestClientConnectBadInput(t *testing.T) {
	g := testutil.StartGateway(t, clientSpace, gateway.Options{})
	for _, tc := range []struct {
		args []string
		want string
	}{
		{nil, "are required"},
		{[]string{"-g", "ws://" + g.Addr, "-s", "cli-client", "-t", "wrong"}, "unauthorized"},
		{[]string{"-g", "ws://" + g.Addr, "-s", "cli-client", "-t", "human-token", "--output-file", "a", "--fifo-out", "b"}, "cannot be combined"},
		{[]string{"-g", "ws://" + g.Addr, "-s", "cli-client", "-t", "human-token", "--fifo-in", "/nonexistent/in"}, "no such file"},
	} {
		_, _, err := run(t, Options{Getenv: func(string) string { return "" }}, append([]string{"client", "connect"}, tc.args...)...)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%v: %v, want %q", tc.args, err, tc.want)
		}
	}
}
