package cli

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/mew-protocol/mew/a2a"
	"github.com/mew-protocol/mew/internal/testutil"
)

// a2aSDKInstall installs the official A2A JavaScript SDK where .ci/run
// does.
const a2aSDKInstall = "npm install -g --prefix ~/.cache/mew/npm @a2a-js/sdk@1.3.0"

// a2aNodePath finds the global node_modules that holds @a2a-js/sdk (the
// prefix .ci/run installs into, or MEW_MCP_NPM_PREFIX), for NODE_PATH.
// With CI=true a missing SDK fails the test.
func a2aNodePath(t *testing.T) string {
	t.Helper()
	prefix := os.Getenv("MEW_MCP_NPM_PREFIX")
	if prefix == "" {
		home, _ := os.UserHomeDir()
		prefix = filepath.Join(home, ".cache", "mew", "npm")
	}
	dir := filepath.Join(prefix, "lib", "node_modules")
	_, statErr := os.Stat(filepath.Join(dir, "@a2a-js", "sdk", "package.json"))
	_, nodeErr := exec.LookPath("node")
	if statErr == nil && nodeErr == nil {
		return dir
	}
	if os.Getenv("CI") == "true" {
		t.Fatalf("node or @a2a-js/sdk is missing (%v, %v); .ci/run installs them (%s)", nodeErr, statErr, a2aSDKInstall)
	}
	t.Skipf("node or @a2a-js/sdk is missing; install with: %s", a2aSDKInstall)
	return ""
}

// a2aHaiku is a skill added to cliDefinition for the A2A tests.
const a2aHaiku = `
  - name: haiku
    description: Writes a haiku.
    tags: [poetry]
    examples: ["a haiku about rain"]
    parameters: {type: object, properties: {topic: {type: string}}, required: [topic]}
    prompt: "Write a haiku about {topic}."
`

// startAgentA2A runs `mew agent a2a` on the definition with env and
// returns the JSON-RPC URL it logged; it is stopped with SIGINT when the
// test ends, and must exit cleanly.
func startAgentA2A(t *testing.T, path string, env []string, args ...string) string {
	t.Helper()
	cmd := exec.Command(mewBinary(t), append([]string{"agent", "a2a", "-c", path}, args...)...)
	cmd.Env = append(os.Environ(), env...)
	url, exited, logs := startLogging(t, cmd, regexp.MustCompile(`url=(http://\S+)`))
	t.Cleanup(func() { // before startLogging's kill: the exit must be clean
		interrupt(t, cmd, exited, logs, 15*time.Second)
		if strings.Contains(logs.String(), "js-token-123") {
			t.Errorf("a token is in the logs:\n%s", logs)
		}
	})
	return url
}

// The official JavaScript SDK's client reads the card of `mew agent a2a`
// and sends, streams, gets and cancels tasks.
func TestAgentA2AJSClient(t *testing.T) {
	nodePath := a2aNodePath(t)
	desk := writeDesk(t, a2aHaiku)
	srv := testutil.NewLLMServer(t)
	srv.Script(testutil.LLMReply("Rain on the tin roof"), testutil.LLMReply("Snow hides the road"),
		testutil.LLMStep{Text: "too late", Delay: 20 * time.Second})
	url := startAgentA2A(t, desk.path, append(modelEnv(srv), envA2ATokens+"=js=js-token-123"))
	base := strings.TrimSuffix(url, "/")

	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, "node", filepath.Join("testdata", "a2a", "jsclient.cjs"), base, "js-token-123")
	cmd.Env = append(os.Environ(), "NODE_PATH="+nodePath)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("node: %v\n%s\n%s", err, out, stderr.String())
	}
	steps := map[string]json.RawMessage{}
	for line := range strings.SplitSeq(strings.TrimSpace(string(out)), "\n") {
		var s struct {
			Step  string          `json:"step"`
			Value json.RawMessage `json:"value"`
		}
		if err := json.Unmarshal([]byte(line), &s); err != nil {
			t.Fatalf("line %q: %v", line, err)
		}
		steps[s.Step] = s.Value
	}

	var card a2a.AgentCard
	if err := json.Unmarshal(steps["card"], &card); err != nil || card.Name != "cli-desk" {
		t.Fatalf("card %s: %v", steps["card"], err)
	}
	if s, ok := card.Skill("haiku"); !ok || s.Tags[0] != "poetry" || card.SecuritySchemes["bearer"].HTTPAuth == nil {
		t.Errorf("card as the SDK read it: %s", steps["card"])
	}
	var sent a2a.Task
	if err := json.Unmarshal(steps["send"], &sent); err != nil || sent.Status.State != a2a.TaskStateCompleted ||
		len(sent.Artifacts) != 1 || sent.Artifacts[0].Text() != "Rain on the tin roof" {
		t.Fatalf("send: %s (%v)", steps["send"], err)
	}
	var events []a2a.StreamResponse
	if err := json.Unmarshal(steps["stream"], &events); err != nil || len(events) < 3 {
		t.Fatalf("stream: %s (%v)", steps["stream"], err)
	}
	last := events[len(events)-1]
	if events[0].Task == nil || last.StatusUpdate == nil || last.StatusUpdate.Status.State != a2a.TaskStateCompleted {
		t.Errorf("stream: first %+v, last %+v", events[0], last)
	}
	var artifact string
	for _, ev := range events {
		if ev.ArtifactUpdate != nil {
			artifact = ev.ArtifactUpdate.Artifact.Text()
		}
	}
	if artifact != "Snow hides the road" {
		t.Errorf("streamed artifact %q", artifact)
	}
	var got a2a.Task
	if err := json.Unmarshal(steps["get"], &got); err != nil || got.ID != sent.ID || got.Status.State != a2a.TaskStateCompleted {
		t.Errorf("get: %s (%v)", steps["get"], err)
	}
	var canceled a2a.Task
	if err := json.Unmarshal(steps["cancel"], &canceled); err != nil || canceled.Status.State != a2a.TaskStateCanceled {
		t.Errorf("cancel: %s (%v)", steps["cancel"], err)
	}
	if !strings.Contains(string(steps["missing"]), "Task not found") {
		t.Errorf("unknown task: %s", steps["missing"])
	}
	if u := srv.Requests()[0].Messages[1].Content; u != "Write a haiku about rain." {
		t.Errorf("prompt %q", u)
	}
}

// `mew agent a2a` refuses callers without a known token, and anonymous
// callers off loopback.
func TestAgentA2AAuth(t *testing.T) {
	desk := writeDesk(t, a2aHaiku)
	srv := testutil.NewLLMServer(t)
	url := startAgentA2A(t, desk.path, append(modelEnv(srv), envA2ATokens+"=js=js-token-123"))
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	msg := &a2a.Message{MessageID: "m", Role: a2a.RoleUser, Parts: []a2a.Part{a2a.TextPart("x")}}
	for _, h := range []http.Header{nil, {"Authorization": {"Bearer wrong-token"}}, {"X-Api-Key": {"js-token-12"}}} {
		_, err := a2a.NewClient(url, a2a.ClientOptions{Header: h}).SendMessage(ctx, a2a.SendMessageRequest{Message: msg})
		if !errors.Is(err, a2a.ErrUnauthenticated) {
			t.Errorf("header %v: %v", h, err)
		}
	}
	srv.Script(testutil.LLMReply("ok"))
	res, err := a2a.NewClient(url, a2a.ClientOptions{Header: http.Header{"X-Api-Key": {"js-token-123"}}}).SendMessage(ctx,
		a2a.SendMessageRequest{Message: &a2a.Message{MessageID: "m", Role: a2a.RoleUser, Parts: []a2a.Part{a2a.TextPart("x")},
			Metadata: json.RawMessage(`{"skillId":"echo"}`)}})
	if err != nil || res.Task.Status.State != a2a.TaskStateCompleted {
		t.Fatalf("with the API key: %+v, %v", res, err)
	}

	out, err := exec.Command(mewBinary(t), "agent", "a2a", "-c", desk.path, "--http", "0.0.0.0:0").CombinedOutput()
	if err == nil || !strings.Contains(string(out), "not a loopback address") {
		t.Errorf("anonymous on 0.0.0.0: %v\n%s", err, out)
	}
}

// `mew agent tool-test` tests a skill as the tool it is, and shows how the
// card lists it.
func TestToolTestSkill(t *testing.T) {
	desk := writeDesk(t, a2aHaiku)
	srv := testutil.NewLLMServer(t)
	srv.Script(testutil.LLMReply("Rain on the tin roof"))
	env := map[string]string{"OPENAI_BASE_URL": srv.URL(), "OPENAI_API_KEY": "k"}
	out, stderr, err := run(t, Options{Getenv: func(k string) string { return env[k] }}, "agent", "tool-test", "-c", desk.path, "haiku", "--arg", "topic=rain")
	if err != nil {
		t.Fatalf("%v\n%s", err, stderr)
	}
	for _, want := range []string{"== As an A2A skill\ntags: poetry\nexamples: a haiku about rain\n", "== Prompt of haiku\nWrite a haiku about rain.\n", "Rain on the tin roof\n"} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
}
