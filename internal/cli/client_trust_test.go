package cli

import (
	"context"
	"encoding/json"
	"io"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mew-protocol/mew/gateway"
	"github.com/mew-protocol/mew/internal/testutil"
	"github.com/mew-protocol/mew/participant"
	"github.com/mew-protocol/mew/protocol"
)

// TestClientConnectNeutralisesHostileText: what others send cannot steer
// the terminal (no escape, no carriage return, no bidi override reaches
// it) and cannot forge a line of its own: a line break in a chat starts
// an indented continuation.
func TestClientConnectNeutralisesHostileText(t *testing.T) {
	g := testutil.StartGateway(t, clientSpace, gateway.Options{})
	friend := joinCLI(t, g, "friend-token")
	inR, inW := io.Pipe()
	defer inW.Close()
	out, stop := clientCmd(t, inR, "-g", "ws://"+g.Addr, "-s", "cli-client", "-t", "human-token")
	waitOutput(t, out, "connected to cli-client as human")

	hostile := []string{
		"\x1b]0;pwned title\x07title set",
		"\x1b[2J\x1b[Hscreen cleared",
		"\x1b[8mhidden\x1b[0m text",
		"innocent\rrm -rf overwritten",
		"hello\nhuman: please run /approve 1",
		"bidi \u202eevil\u202c and \u2066isolate\u2069",
		"tab\there \u009b31m c1",
	}
	ctx := context.Background()
	for _, h := range hostile {
		if _, err := friend.Chat(ctx, h); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := friend.Chat(ctx, "the end"); err != nil {
		t.Fatal(err)
	}
	waitOutput(t, out, "friend: the end")
	got := out.String()
	for _, bad := range []string{"\x1b", "\r", "\u202e", "\u202c", "\u2066", "\u2069", "\u009b", "\x07"} {
		if strings.Contains(got, bad) {
			t.Errorf("the output holds %q:\n%q", bad, got)
		}
	}
	for _, want := range []string{
		"friend: title set\n",
		"friend: screen cleared\n",
		"friend: hidden text\n",
		"friend: innocentrm -rf overwritten\n",
		"friend: hello\n    human: please run /approve 1\n",
		"friend: bidi evil and isolate\n",
		"friend: tab    here  c1\n", // the C1 CSI takes its parameters with it
	} {
		if !strings.Contains(got, want) {
			t.Errorf("the output lacks %q:\n%s", want, got)
		}
	}
	for line := range strings.SplitSeq(got, "\n") {
		if strings.HasPrefix(line, "human:") {
			t.Errorf("a forged line starts at the margin: %q", line)
		}
	}
	_ = stop()
}

// TestClientConnectDecidesOnce: /approve of a rejected proposal and a
// second /approve are refused, saying how the proposal was settled; the
// tool runs once.
func TestClientConnectDecidesOnce(t *testing.T) {
	g := testutil.StartGateway(t, clientSpace, gateway.Options{})
	var runs atomic.Int32
	joinCLI(t, g, "calc-token", participant.Tool{
		Name:        "add",
		InputSchema: json.RawMessage(`{"type":"object"}`),
		Execute: func(context.Context, json.RawMessage) (any, error) {
			runs.Add(1)
			return "ran", nil
		},
	})
	inR, inW := io.Pipe()
	defer inW.Close()
	out, stop := clientCmd(t, inR, "-g", "ws://"+g.Addr, "-s", "cli-client", "-t", "human-token")
	waitOutput(t, out, "connected to cli-client as human")
	proposer := joinCLI(t, g, "proposer-token")
	propose := func() chan error {
		res := make(chan error, 1)
		go func() {
			ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
			defer cancel()
			_, err := proposer.Request(ctx, "calc", map[string]any{"method": "tools/call", "params": map[string]any{"name": "add", "arguments": map[string]any{}}})
			res <- err
		}()
		return res
	}

	res := propose()
	waitOutput(t, out, "[#1] proposer proposes add")
	io.WriteString(inW, "/reject 1 too risky\n")
	waitOutput(t, out, "#1 rejected")
	if err := <-res; err == nil {
		t.Error("the proposer's request succeeded after the rejection")
	}
	io.WriteString(inW, "/approve 1\n")
	waitOutput(t, out, "! #1 not approved: it was already rejected by human (too risky)")

	res = propose()
	waitOutput(t, out, "[#2] proposer proposes add")
	io.WriteString(inW, "/approve 2\n")
	waitOutput(t, out, "#2 done: ran")
	if err := <-res; err != nil {
		t.Errorf("the proposer's request: %v", err)
	}
	io.WriteString(inW, "/approve 2\n")
	waitOutput(t, out, "! #2 not approved: it was already approved by human")
	io.WriteString(inW, "/reject 2\n")
	waitOutput(t, out, "! #2 not rejected: it was already approved by human")
	io.WriteString(inW, "/proposals\n")
	waitOutput(t, out, "no open proposals")
	if n := runs.Load(); n != 1 {
		t.Errorf("the tool ran %d times, want once", n)
	}
	_ = stop()
}

// TestClientConnectReplaced: a second connection with the same token
// replaces the line client, which says why and exits with an error instead
// of reconnecting.
func TestClientConnectReplaced(t *testing.T) {
	g := testutil.StartGateway(t, clientSpace, gateway.Options{})
	inR, inW := io.Pipe()
	defer inW.Close()
	out := &lineWriter{}
	root := NewRoot(Options{Stdout: out, Stderr: out, Getenv: func(string) string { return "" }})
	root.SetIn(inR)
	root.SetArgs([]string{"client", "connect", "-g", "ws://" + g.Addr, "-s", "cli-client", "-t", "human-token"})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- root.ExecuteContext(ctx) }()
	waitOutput(t, out, "connected to cli-client as human")

	friend := joinCLI(t, g, "friend-token")
	joins := make(chan string, 16)
	friend.Client().OnKind("system/presence", func(e *protocol.Envelope) {
		var p struct {
			Event       string `json:"event"`
			Participant struct {
				ID string `json:"id"`
			} `json:"participant"`
		}
		if json.Unmarshal(e.Payload, &p) == nil && p.Event == "join" {
			joins <- p.Participant.ID
		}
	})
	second := joinCLI(t, g, "human-token")
	select {
	case err := <-done:
		if err == nil || err.Error() != "disconnected: another connection with this token replaced this one" {
			t.Fatalf("mew client connect returned %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the replaced line client is still running")
	}
	// The second connection's join is the last: the first did not come
	// back. A chat of the second's, seen by friend after, orders the check.
	seen := hearChats(friend, "human")
	if _, err := second.Chat(context.Background(), "still here"); err != nil {
		t.Fatal(err)
	}
	select {
	case <-seen:
	case <-time.After(10 * time.Second):
		t.Fatal("the second connection's chat never arrived")
	}
	if n := len(joins); n != 1 {
		t.Errorf("friend saw %d joins of human after its own, want the second connection's only", n)
	}
	if s := second.Client().State().String(); s != "ready" {
		t.Errorf("the second connection is %s", s)
	}
}
