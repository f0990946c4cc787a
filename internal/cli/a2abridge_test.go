package cli

import (
	"bufio"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/mew-protocol/mew/gateway"
	"github.com/mew-protocol/mew/internal/testutil"
	"github.com/mew-protocol/mew/protocol"
)

// a2aBridgeSpace: helper is the bridge to the JavaScript agent, agent a
// MEW agent that may call its tools.
const a2aBridgeSpace = `
space: {id: a2a-bridge}
participants:
  human:
    tokens: [human-token]
    capabilities: [{kind: "*"}]
  helper:
    tokens: [helper-space-token]
    capabilities: [{kind: chat}, {kind: "chat/*"}, {kind: "reasoning/*"}, {kind: "participant/*"}, {kind: mcp/response}]
  agent:
    tokens: [agent-space-token]
    capabilities: [{kind: chat}, {kind: "chat/*"}, {kind: "reasoning/*"}, {kind: mcp/request}, {kind: "participant/*"}, {kind: "stream/*"}]
`

// jsAgentToken is the bearer token the JavaScript agent asks for.
const jsAgentToken = "js-agent-token-42"

// startJSAgent runs testdata/a2a/jsagent.cjs (the official SDK's server)
// with A2A_TOKEN=token and returns its URL; it is stopped when the test
// ends.
func startJSAgent(t *testing.T, token string) string {
	t.Helper()
	nodePath := a2aNodePath(t)
	cmd := exec.Command("node", filepath.Join("testdata", "a2a", "jsagent.cjs"))
	cmd.Env = append(os.Environ(), "NODE_PATH="+nodePath, "A2A_TOKEN="+token)
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	stderr := &testutil.Buffer{}
	cmd.Stderr = stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		done := make(chan struct{})
		go func() { _ = cmd.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			_ = cmd.Process.Kill()
			<-done
		}
	})
	line := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			if u, ok := strings.CutPrefix(sc.Text(), "listening "); ok {
				line <- u
			}
		}
	}()
	select {
	case u := <-line:
		return u
	case <-time.After(30 * time.Second):
		t.Fatalf("the JavaScript agent did not start\n%s", stderr)
	}
	return ""
}

// startBridgeProc runs `mew bridge start args...` with env as a process;
// when the test ends it is stopped with SIGINT and must exit 0, and its
// log must hold none of secrets. It returns the log.
func startBridgeProc(t *testing.T, env []string, secrets []string, args ...string) *testutil.Buffer {
	t.Helper()
	cmd := exec.Command(mewBinary(t), append([]string{"bridge", "start"}, args...)...)
	cmd.Env = append(os.Environ(), env...)
	logs := &testutil.Buffer{}
	cmd.Stdout, cmd.Stderr = logs, logs
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	t.Cleanup(func() {
		interrupt(t, cmd, done, logs, 20*time.Second)
		for _, s := range secrets {
			if strings.Contains(logs.String(), s) {
				t.Errorf("a secret is in the log:\n%s", logs)
			}
		}
	})
	return logs
}

// The JavaScript SDK's agent is joined into a space through `mew bridge
// start --a2a-url`: a person's chat gets its answer, its question is put
// to the person and answered, a cancel reaches it, and a MEW agent
// delegates a task to it through the skill's tool.
func TestBridgeA2AJSAgent(t *testing.T) {
	url := startJSAgent(t, jsAgentToken)
	g := testutil.StartGateway(t, a2aBridgeSpace, gateway.Options{})
	human := joinCLI(t, g, "human-token")
	seen := received(human.Client(), 1024)
	ready := make(chan struct{})
	human.Client().OnKind(protocol.KindParticipantStatus, func(e *protocol.Envelope) {
		if e.From == "helper" && strings.Contains(string(e.Payload), "JS Sample Agent") {
			select {
			case <-ready:
			default:
				close(ready)
			}
		}
	})
	logs := startBridgeProc(t, []string{"MEW_A2A_BEARER=" + jsAgentToken, "MEW_TOKEN=helper-space-token"},
		[]string{jsAgentToken, "helper-space-token"},
		"-g", "ws://"+g.Addr, "-s", "a2a-bridge", "-p", "helper", "--a2a-url", url)
	select {
	case <-ready:
	case <-time.After(60 * time.Second):
		t.Fatalf("the bridge never reported the card\n%s", logs)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()

	// A person's chat gets its answer.
	id, err := human.Chat(ctx, "hi there", "helper")
	if err != nil {
		t.Fatal(err)
	}
	if got := waitChat(t, seen, "helper", id); got != "Hello World! You said: 'hi there'." {
		t.Errorf("answer %q\n%s", got, logs)
	}

	// Its question, answered.
	id, _ = human.Chat(ctx, "book a table", "helper")
	if got := waitChat(t, seen, "helper", id); !strings.HasPrefix(got, "JS Sample Agent asks: Which date?") {
		t.Fatalf("question %q\n%s", got, logs)
	}
	if _, err := human.Chat(ctx, "Friday", "helper"); err != nil {
		t.Fatal(err)
	}
	if got := waitChat(t, seen, "helper", id); got != "Booked for Friday." {
		t.Errorf("booking %q\n%s", got, logs)
	}

	// A cancel in the space reaches the agent, which says so.
	id, _ = human.Chat(ctx, "countdown", "helper")
	var start *protocol.Envelope
	for start == nil {
		select {
		case e := <-seen:
			if e.Kind == protocol.KindReasoningThought && e.From == "helper" && strings.Contains(string(e.Payload), "Step 2") {
				start = e
			}
		case <-ctx.Done():
			t.Fatalf("no progress of the countdown\n%s", logs)
		}
	}
	if err := human.CancelChat(ctx, id, "enough"); err != nil {
		t.Fatal(err)
	}
	for done := false; !done; {
		select {
		case e := <-seen:
			done = e.Kind == protocol.KindReasoningConclusion && e.Context == start.Context &&
				strings.Contains(string(e.Payload), `"cancelled":true`)
		case <-ctx.Done():
			t.Fatalf("the cancel did not conclude the task\n%s", logs)
		}
	}
	if !strings.Contains(logs.String(), "canceled the task at the agent") {
		t.Errorf("the agent's task was not canceled:\n%s", logs)
	}

	// A MEW agent delegates a task to it: the skill is a tool.
	srv := testutil.NewLLMServer(t)
	srv.Script(
		testutil.LLMCall(testutil.LLMToolCall{Name: "helper_hello", Arguments: `{"message":"greetings from the agent"}`}),
		testutil.LLMReply("The helper answered."),
	)
	joined := make(chan struct{})
	human.Client().OnKind(protocol.KindSystemPresence, func(e *protocol.Envelope) {
		if strings.Contains(string(e.Payload), `"agent"`) && strings.Contains(string(e.Payload), "join") {
			close(joined)
		}
	})
	env := map[string]string{"MEW_TOKEN": "agent-space-token"}
	for _, kv := range modelEnv(srv) {
		k, v, _ := strings.Cut(kv, "=")
		env[k] = v
	}
	agent := startAgentCmd(t, env, "-g", "ws://"+g.Addr, "-s", "a2a-bridge", "--id", "agent")
	agent.waitJoined(t, joined)
	id, _ = human.Chat(ctx, "ask the helper to greet", "agent")
	if got := waitChat(t, seen, "agent", id); got != "The helper answered." {
		t.Errorf("the agent's answer %q\n%s", got, agent.out)
	}
	reqs := srv.Requests()
	if len(reqs) != 2 {
		t.Fatalf("%d model requests", len(reqs))
	}
	var observed string
	for _, m := range reqs[1].Messages {
		observed += m.Content + "\n"
	}
	if !strings.Contains(observed, "Hello World! You said: 'greetings from the agent'.") {
		t.Errorf("the tool result the model saw:\n%s", observed)
	}
}

// A card that asks for a credential the bridge was not given stops it
// with a message naming the variables; the token of the space is not
// shown.
func TestBridgeA2ANoCredential(t *testing.T) {
	url := startJSAgent(t, jsAgentToken)
	g := testutil.StartGateway(t, a2aBridgeSpace, gateway.Options{})
	cmd := exec.Command(mewBinary(t), "bridge", "start", "-g", "ws://"+g.Addr, "-s", "a2a-bridge", "-p", "helper", "--a2a-url", url)
	cmd.Env = append(os.Environ(), "MEW_TOKEN=helper-space-token", "MEW_A2A_BEARER=")
	out, err := cmd.CombinedOutput()
	if err == nil || !strings.Contains(string(out), "asks for bearer (HTTP Bearer authentication)") || !strings.Contains(string(out), "MEW_A2A_BEARER") ||
		strings.Contains(string(out), "helper-space-token") {
		t.Errorf("%v\n%s", err, out)
	}
	cmd = exec.Command(mewBinary(t), "bridge", "start", "-g", "ws://"+g.Addr, "-s", "a2a-bridge", "-p", "helper", "--a2a-url", "ftp://x/")
	cmd.Env = append(os.Environ(), "MEW_TOKEN=helper-space-token")
	if out, err := cmd.CombinedOutput(); err == nil || !strings.Contains(string(out), "is not an http(s) URL of an agent") {
		t.Errorf("ftp: %v\n%s", err, out)
	}
}
