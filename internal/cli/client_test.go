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
	return out, testutil.Background(t, root.ExecuteContext).Stop
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

// expectHeard fails the test unless the next chat heard is want, within
// 10 s; what names the chat for the failure.
func expectHeard(t *testing.T, heard <-chan string, want, what string) {
	t.Helper()
	select {
	case got := <-heard:
		if got != want {
			t.Errorf("heard %q, want %q", got, want)
		}
	case <-time.After(10 * time.Second):
		t.Fatal(what)
	}
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
	expectHeard(t, heard, "hello friend", "the typed chat never arrived")
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
	expectHeard(t, heard, "second", "the appended line was not sent")
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

const reasoningSpace = `
space: {id: cli-reasoning}
participants:
  human: {tokens: [human-token], capabilities: [{kind: "*"}]}
  agent: {tokens: [agent-token], capabilities: [{kind: chat}, {kind: chat/acknowledge}, {kind: "reasoning/*"}, {kind: mcp/request}, {kind: mcp/response}]}
  helper: {tokens: [helper-token], capabilities: [{kind: chat}, {kind: mcp/response}]}
  calc: {tokens: [calc-token], capabilities: [{kind: mcp/response}]}
`

// sendAs sends an envelope of kind with payload from p, failing the test
// on an error.
func sendAs(t *testing.T, p *participant.Participant, env *protocol.Envelope, kind string, payload any) {
	t.Helper()
	env.Protocol, env.Kind = protocol.Version, kind
	if err := env.SetPayload(payload); err != nil {
		t.Error(err)
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := p.Send(ctx, env); err != nil {
		t.Error(err)
	}
}

// count counts the lines of out that are line.
func count(out, line string) int {
	n := 0
	for l := range strings.SplitSeq(out, "\n") {
		if l == line {
			n++
		}
	}
	return n
}

// TestClientConnectReasoning: piped, an agent's reasoning is one line at
// its end, with no echo of the question and no conclusion text; the
// answer is shown once; a tool's response names whom it was for, once,
// and its request is not shown apart. Both orders of the end are covered:
// conclusion then chat (this repository's agents), chat then conclusion
// (the reference's). A cancellation says why; a request typed as JSON
// gets its response.
func TestClientConnectReasoning(t *testing.T) {
	g := testutil.StartGateway(t, reasoningSpace, gateway.Options{})
	joinCLI(t, g, "calc-token", participant.Tool{
		Name:        "add",
		InputSchema: json.RawMessage(`{"type":"object"}`),
		Execute: func(_ context.Context, args json.RawMessage) (any, error) {
			var in struct{ A, B float64 }
			err := json.Unmarshal(args, &in)
			return in.A + in.B, err
		},
	})
	agent := joinCLI(t, g, "agent-token")
	questions := make(chan *protocol.Envelope, 4)
	agent.Client().OnKind(protocol.KindChat, func(e *protocol.Envelope) {
		if e.From == "human" {
			questions <- e
		}
	})
	inR, inW := io.Pipe()
	defer inW.Close()
	out, stop := clientCmd(t, inR, "-g", "ws://"+g.Addr, "-s", "cli-reasoning", "-t", "human-token", "--no-answer-hint", "0")
	waitOutput(t, out, "connected to cli-reasoning as human")

	answer := func(q *protocol.Envelope, text string, chatFirst bool) {
		rid := protocol.NewID()
		sendAs(t, agent, &protocol.Envelope{ID: rid, CorrelationID: []string{q.ID}}, protocol.KindReasoningStart,
			protocol.Reasoning{Message: "Thinking about: " + text, Input: text})
		if !chatFirst {
			sendAs(t, agent, &protocol.Envelope{Context: rid}, protocol.KindReasoningThought, protocol.Reasoning{
				Message: "Calling calc/add.", Action: "tool_call", ActionInput: json.RawMessage(`[{"name":"calc/add","arguments":{"a":2,"b":3}}]`),
			})
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			res, err := agent.Request(ctx, "calc", map[string]any{"method": "tools/call", "params": map[string]any{"name": "add", "arguments": map[string]any{"a": 2, "b": 3}}})
			cancel()
			if err != nil || !strings.Contains(string(res), "5") {
				t.Errorf("the agent's tool call: %s, %v", res, err)
			}
			sendAs(t, agent, &protocol.Envelope{Context: rid}, protocol.KindReasoningThought, protocol.Reasoning{Message: "Checking.", Action: "check"})
		}
		sendAs(t, agent, &protocol.Envelope{Context: rid}, protocol.KindReasoningThought, protocol.Reasoning{Message: "Answering.", Action: "respond"})
		chat := func() {
			sendAs(t, agent, &protocol.Envelope{ID: protocol.NewID(), To: []string{"human"}, CorrelationID: []string{q.ID}}, protocol.KindChat, protocol.Chat{Text: text})
		}
		if chatFirst {
			chat()
		}
		sendAs(t, agent, &protocol.Envelope{Context: rid}, protocol.KindReasoningConclusion, protocol.Reasoning{Message: "Answer: " + text})
		if !chatFirst {
			chat()
		}
	}
	io.WriteString(inW, "what is 2 plus 3?\n")
	answer(<-questions, "The sum is 5.", false)
	io.WriteString(inW, "and again?\n")
	answer(<-questions, "Still 5.", true)
	// A cancelled reasoning says so, in its one line.
	io.WriteString(inW, "never mind\n")
	q := <-questions
	rid := protocol.NewID()
	sendAs(t, agent, &protocol.Envelope{ID: rid, CorrelationID: []string{q.ID}}, protocol.KindReasoningStart, protocol.Reasoning{Input: "never mind"})
	sendAs(t, agent, &protocol.Envelope{Context: rid}, protocol.KindReasoningConclusion,
		map[string]any{"message": "Cancelled: asked to stop", "cancelled": true, "reason": "asked to stop"})
	// A request typed as JSON gets its response, naming me.
	io.WriteString(inW, `{"kind":"mcp/request","to":["calc"],"payload":{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"add","arguments":{"a":3,"b":4}}}}`+"\n")
	waitOutput(t, out, `  calc → human: 7  (add {"a":3,"b":4})`)
	sendAs(t, agent, &protocol.Envelope{To: []string{"human"}}, protocol.KindChat, protocol.Chat{Text: "the end"})
	waitOutput(t, out, "agent: the end")
	got := out.String()
	for _, tc := range []struct {
		line string
		n    int
	}{
		{`  calc → agent: 5  (add {"a":2,"b":3})`, 1},
		{"  (agent reasoned: 3 thoughts, used calc/add)", 1},
		{"agent: The sum is 5.", 1},
		{"  (agent reasoned: 1 thought)", 1},
		{"agent: Still 5.", 1},
		{"  (agent stopped thinking: cancelled: asked to stop)", 1},
	} {
		if n := count(got, tc.line); n != tc.n {
			t.Errorf("%q: %d times, want %d:\n%s", tc.line, n, tc.n, got)
		}
	}
	for _, bad := range []string{"Thinking about", "Answer:", "reasoning/", "agent → calc", "↩"} {
		if strings.Contains(got, bad) {
			t.Errorf("the output holds %q:\n%s", bad, got)
		}
	}
	if strings.Index(got, "(agent reasoned: 3") > strings.Index(got, "agent: The sum is 5.") ||
		strings.Index(got, "(agent reasoned: 1") > strings.Index(got, "agent: Still 5.") {
		t.Errorf("a reasoning's line comes after its answer:\n%s", got)
	}
	_ = stop()
}

// TestClientConnectNoAnswerHint: a chat to everyone that nobody takes up
// gets one hint naming the agents present (those that may chat); a chat
// an agent acknowledges and answers gets none; "@id" addresses a present
// participant without a space configuration.
func TestClientConnectNoAnswerHint(t *testing.T) {
	g := testutil.StartGateway(t, reasoningSpace, gateway.Options{})
	joinCLI(t, g, "calc-token")
	joinCLI(t, g, "helper-token")
	agent := joinCLI(t, g, "agent-token")
	heard := make(chan *protocol.Envelope, 4)
	agent.Client().OnKind(protocol.KindChat, func(e *protocol.Envelope) {
		if e.From != "human" {
			return
		}
		heard <- e
		var c protocol.Chat
		_ = e.DecodePayload(&c)
		if strings.HasSuffix(c.Text, "?") { // it answers questions only
			go func() {
				ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
				defer cancel()
				if err := agent.Acknowledge(ctx, e, "processing"); err != nil {
					t.Error(err)
				}
				sendAs(t, agent, &protocol.Envelope{To: []string{"human"}, CorrelationID: []string{e.ID}}, protocol.KindChat, protocol.Chat{Text: "yes"})
			}()
		}
	})
	inR, inW := io.Pipe()
	defer inW.Close()
	out, stop := clientCmd(t, inR, "-g", "ws://"+g.Addr, "-s", "cli-reasoning", "-t", "human-token", "--no-answer-hint", "300ms")
	waitOutput(t, out, "connected to cli-reasoning as human")

	io.WriteString(inW, "anyone there?\n")
	if e := <-heard; !e.IsBroadcast() {
		t.Errorf("the chat went to %v, want everyone", e.To)
	}
	waitOutput(t, out, "agent: yes")
	time.Sleep(600 * time.Millisecond) // twice the hint's wait
	const hint = "no one answered within 300ms: address an agent with @name (agents here: agent, helper)"
	if strings.Contains(out.String(), "no one answered") {
		t.Errorf("a hint after an answered chat:\n%s", out.String())
	}
	io.WriteString(inW, "hello all\n")
	<-heard
	waitOutput(t, out, hint)
	io.WriteString(inW, "@agent hello\n")
	if e := <-heard; len(e.To) != 1 || e.To[0] != "agent" {
		t.Errorf("@agent went to %v", e.To)
	}
	time.Sleep(600 * time.Millisecond)
	if n := strings.Count(out.String(), "no one answered"); n != 1 {
		t.Errorf("%d hints, want 1:\n%s", n, out.String())
	}
	_ = stop()
}
