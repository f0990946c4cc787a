package cli

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/mew-protocol/mew/client"
	"github.com/mew-protocol/mew/gateway"
	"github.com/mew-protocol/mew/internal/testutil"
	"github.com/mew-protocol/mew/participant"
	"github.com/mew-protocol/mew/protocol"
)

var agentCLISpace = testutil.SpaceYAML("cli-agents",
	testutil.Member("human", "*"),
	testutil.Member("calc", "chat"),
	`  helper:
    tokens: [helper-secret-token]
    capabilities: [{kind: chat}, {kind: "chat/*"}, {kind: "reasoning/*"}, {kind: mcp/request}, {kind: "participant/*"}]
`)

// joinCLI connects the participant of token and closes it at the end.
func joinCLI(t *testing.T, g *testutil.Gateway, token string, tools ...participant.Tool) *participant.Participant {
	t.Helper()
	return testutil.JoinParticipant(t, g, token, participant.Options{}, tools...)
}

// agentCmd is a running `mew agent run`.
type agentCmd struct {
	done   chan struct{} // closed when the command returned
	err    error         // its result, once done is closed
	out    *lineWriter   // its stderr
	cancel context.CancelFunc
}

// startAgentCmd runs `mew agent run args...` with env until the test ends
// or it exits.
func startAgentCmd(t *testing.T, env map[string]string, args ...string) *agentCmd {
	t.Helper()
	c := &agentCmd{done: make(chan struct{}), out: &lineWriter{}}
	root := NewRoot(Options{Stdout: &lineWriter{}, Stderr: c.out, Getenv: func(k string) string { return env[k] }})
	root.SetArgs(append([]string{"agent", "run"}, args...))
	ctx, cancel := context.WithCancel(context.Background())
	c.cancel = cancel
	go func() {
		c.err = root.ExecuteContext(ctx)
		close(c.done)
	}()
	t.Cleanup(func() {
		cancel()
		select {
		case <-c.done:
		case <-time.After(10 * time.Second):
			t.Error("mew agent run did not stop")
		}
	})
	return c
}

// waitJoined waits until joined is closed, failing if the command ends.
func (c *agentCmd) waitJoined(t *testing.T, joined <-chan struct{}) {
	t.Helper()
	select {
	case <-joined:
	case <-c.done:
		t.Fatalf("agent exited: %v\n%s", c.err, c.out)
	case <-time.After(15 * time.Second):
		t.Fatalf("the agent never joined\n%s", c.out)
	}
}

// wait waits for the command to return and gives its error.
func (c *agentCmd) wait(t *testing.T) error {
	t.Helper()
	select {
	case <-c.done:
		return c.err
	case <-time.After(10 * time.Second):
		t.Fatalf("mew agent run did not return\n%s", c.out)
		return nil
	}
}

// received passes on copies of the envelopes c receives, dropping those
// that find its buffer of n full.
func received(c *client.Client, n int) <-chan *protocol.Envelope {
	ch := make(chan *protocol.Envelope, n)
	c.OnMessage(func(e *protocol.Envelope) {
		select {
		case ch <- e.Clone():
		default:
		}
	})
	return ch
}

// waitChat waits for a chat from `from` correlated to id, seen by p.
func waitChat(t *testing.T, seen <-chan *protocol.Envelope, from, id string) string {
	t.Helper()
	e := testutil.ReceiveWhere(t, seen, 15*time.Second, "a chat from "+from+" answering "+id, func(e *protocol.Envelope) bool {
		return e.Kind == protocol.KindChat && e.From == from && e.CorrelatesWith(id)
	})
	var c protocol.Chat
	_ = e.DecodePayload(&c)
	return c.Text
}

func TestAgentRunOffline(t *testing.T) {
	g := testutil.StartGateway(t, agentCLISpace, gateway.Options{})
	human := joinCLI(t, g, "human-token")
	joinCLI(t, g, "calc-token", testutil.ArithTool("add", "Add two numbers", func(a, b float64) float64 { return a + b }))
	seen := received(human.Client(), 256)
	joined := make(chan struct{})
	human.Client().OnKind(protocol.KindSystemPresence, func(e *protocol.Envelope) {
		if strings.Contains(string(e.Payload), `"helper"`) && strings.Contains(string(e.Payload), "join") {
			close(joined)
		}
	})
	env := map[string]string{
		"MEW_TOKEN":        "helper-secret-token",
		"MEW_AGENT_CONFIG": `{"mockLLM": true, "reasoningEnabled": true}`,
		"OPENAI_API_KEY":   "sk-never-used",
	}
	cmd := startAgentCmd(t, env, "-g", "ws://"+g.Addr, "-s", "cli-agents", "--id", "helper", "-l", "debug")
	cmd.waitJoined(t, joined)
	ctx, cancelChat := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancelChat()
	id, err := human.Chat(ctx, "@helper what is 2 plus 3")
	if err != nil {
		t.Fatal(err)
	}
	got := waitChat(t, seen, "helper", id)
	if !strings.Contains(got, "5") || !strings.Contains(got, "offline") {
		t.Errorf("answer %q", got)
	}
	cmd.cancel() // SIGTERM
	if err := cmd.wait(t); err != nil {
		t.Errorf("exit: %v", err)
	}
	logs := cmd.out.String()
	for _, want := range []string{"agent connected", "provider=offline", "offline rule-based model", "agent stopping"} {
		if !strings.Contains(logs, want) {
			t.Errorf("log lacks %q:\n%s", want, logs)
		}
	}
	if strings.Contains(logs, "helper-secret-token") || strings.Contains(logs, "sk-never-used") {
		t.Errorf("a secret reached the log:\n%s", logs)
	}
}

func TestAgentRunShutdown(t *testing.T) {
	g := testutil.StartGateway(t, agentCLISpace, gateway.Options{})
	human := joinCLI(t, g, "human-token")
	dir := t.TempDir()
	cfgPath := filepath.Join(dir, "agent.yaml")
	yaml := "gateway: ws://" + g.Addr + "\nspace: cli-agents\ntoken: ${HELPER_TOKEN}\nmockLLM: true\n"
	if err := os.WriteFile(cfgPath, []byte(yaml), 0o600); err != nil {
		t.Fatal(err)
	}
	joined := make(chan struct{})
	human.Client().OnKind(protocol.KindSystemPresence, func(e *protocol.Envelope) {
		if strings.Contains(string(e.Payload), `"helper"`) && strings.Contains(string(e.Payload), "join") {
			close(joined)
		}
	})
	cmd := startAgentCmd(t, map[string]string{"HELPER_TOKEN": "helper-secret-token"}, "--config", cfgPath)
	cmd.waitJoined(t, joined)
	env, err := protocol.New(protocol.KindParticipantShutdown, map[string]string{"reason": "test"})
	if err != nil {
		t.Fatal(err)
	}
	env.To = []string{"helper"}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := human.Send(ctx, env); err != nil {
		t.Fatal(err)
	}
	if err := cmd.wait(t); err != nil {
		t.Errorf("exit after shutdown: %v", err)
	}
}

func TestAgentRunBadInput(t *testing.T) {
	g := testutil.StartGateway(t, agentCLISpace, gateway.Options{})
	dir := t.TempDir()
	badFile := filepath.Join(dir, "bad.yaml")
	if err := os.WriteFile(badFile, []byte("maxIteration: 3\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		env  map[string]string
		args []string
		want string
	}{
		{"nothing", nil, nil, "missing -g/--gateway (or MEW_GATEWAY), -s/--space (or MEW_SPACE), -t/--token (or MEW_TOKEN)"},
		{"no token", nil, []string{"-g", "ws://" + g.Addr, "-s", "cli-agents"}, "missing -t/--token"},
		{"bad level", nil, []string{"-l", "loud"}, `--log-level: "loud"`},
		{"bad config env", map[string]string{"MEW_AGENT_CONFIG": `{"maxIterations": "many"}`}, []string{"-g", "ws://" + g.Addr, "-s", "x", "-t", "y"}, "MEW_AGENT_CONFIG: agent: config: maxIterations"},
		{"bad config file", nil, []string{"-c", badFile}, `unknown field "maxIteration"`},
		{"missing config file", nil, []string{"-c", filepath.Join(dir, "none.yaml")}, "no such file"},
		{"wrong token", map[string]string{"MEW_AGENT_CONFIG": `{"mockLLM":true}`}, []string{"-g", "ws://" + g.Addr, "-s", "cli-agents", "-t", "not-a-token"}, "unauthorized"},
		{"wrong space", map[string]string{"MEW_AGENT_CONFIG": `{"mockLLM":true}`}, []string{"-g", "ws://" + g.Addr, "-s", "elsewhere", "-t", "helper-secret-token"}, "space"},
		{"extra argument", nil, []string{"extra"}, "unknown command"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			root := NewRoot(Options{Stdout: &lineWriter{}, Stderr: &lineWriter{}, Getenv: func(k string) string { return tc.env[k] }})
			root.SetArgs(append([]string{"agent", "run"}, tc.args...))
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			err := root.ExecuteContext(ctx)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("err %v, want one with %q", err, tc.want)
			}
			if err != nil && strings.Contains(err.Error(), "helper-secret-token") {
				t.Errorf("the error shows the token: %v", err)
			}
		})
	}
}
