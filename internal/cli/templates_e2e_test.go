package cli

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/mew-protocol/mew/internal/proc"
	"github.com/mew-protocol/mew/space"
)

// The templates and examples mew ships, each run end to end through the
// built binary on the offline model: mew init (or a copy of the example),
// mew space up --detach, the space's human joining with mew space connect
// and asking what a new user of it would ask first, then mew space down,
// which must leave no process behind.

// tmplWait bounds each wait of these tests: generous on a loaded machine,
// but a space that never answers fails the test instead of hanging it.
const tmplWait = 45 * time.Second

// tmplRun runs mew with args in dir and fails the test when it fails.
func tmplRun(t *testing.T, dir string, args ...string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), tmplWait)
	defer cancel()
	c := exec.CommandContext(ctx, mewBinary(t), args...)
	c.Dir, c.Env = dir, cleanEnv()
	out, err := c.CombinedOutput()
	if err != nil {
		t.Fatalf("mew %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return string(out)
}

// tmplSpace is a space brought up by mew space up --detach, with the
// space's human connected to it.
type tmplSpace struct {
	t      *testing.T
	dir    string
	state  string // the directory of the run state, once known
	pids   []int
	stdin  io.WriteCloser
	out    *lineWriter
	exited chan error
	down   bool
}

// tmplUp starts the space in dir, waits until every participant it started
// has joined, and connects as the default participant.
func tmplUp(t *testing.T, dir string) *tmplSpace {
	t.Helper()
	s := &tmplSpace{t: t, dir: dir, out: &lineWriter{}, exited: make(chan error, 1)}
	s.mewDir()
	t.Cleanup(s.cleanup)
	tmplRun(t, dir, "space", "up", "--detach", "-p", "0")
	st, err := space.ReadRunState(s.mewDir())
	if err != nil {
		t.Fatal(err)
	}
	s.waitJoined(st)
	if st, err = space.ReadRunState(s.mewDir()); err != nil {
		t.Fatal(err)
	}
	s.pids = st.PIDs()

	c := exec.Command(mewBinary(t), "space", "connect")
	c.Dir, c.Env = dir, cleanEnv()
	if s.stdin, err = c.StdinPipe(); err != nil {
		t.Fatal(err)
	}
	c.Stdout, c.Stderr = s.out, s.out
	if err := c.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { s.exited <- c.Wait() }()
	t.Cleanup(func() { _ = c.Process.Kill() })
	s.expect("type a message")
	return s
}

// waitJoined waits until every participant of the run state is connected
// to the gateway, as GET /participants says, and has a pid.
func (s *tmplSpace) waitJoined(st *space.RunState) {
	s.t.Helper()
	url := "http://127.0.0.1:" + strconv.Itoa(st.Port) + "/participants?space=" + st.SpaceID
	hc := &http.Client{Timeout: 2 * time.Second}
	var body struct {
		Participants []struct {
			ID        string `json:"id"`
			Connected bool   `json:"connected"`
		} `json:"participants"`
	}
	for deadline := time.Now().Add(tmplWait); ; {
		missing := []string{}
		if cur, err := space.ReadRunState(s.mewDir()); err == nil {
			st = cur
		}
		connected := map[string]bool{}
		body.Participants = nil
		if resp, err := hc.Get(url); err == nil {
			_ = json.NewDecoder(io.LimitReader(resp.Body, 1<<20)).Decode(&body)
			resp.Body.Close()
		}
		for _, p := range body.Participants {
			connected[p.ID] = p.Connected
		}
		for id, pid := range st.Agents {
			if pid == 0 || !connected[id] {
				missing = append(missing, id)
			}
		}
		if len(st.Agents) > 0 && len(missing) == 0 {
			return
		}
		if time.Now().After(deadline) {
			s.t.Fatalf("participants %v (of %v) never joined; logs:\n%s", missing, st.Agents, s.logs())
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// mewDir is where the space keeps its state: .mew when it was there when
// the space came up (mew init makes it), else the space's directory (a bare
// space.yaml).
func (s *tmplSpace) mewDir() string {
	if s.state == "" {
		s.state = s.dir
		if fi, err := os.Stat(filepath.Join(s.dir, ".mew")); err == nil && fi.IsDir() {
			s.state = filepath.Join(s.dir, ".mew")
		}
	}
	return s.state
}

// logs are the space's logs, for a failure's message.
func (s *tmplSpace) logs() string {
	var b strings.Builder
	paths, _ := filepath.Glob(filepath.Join(s.dir, "logs", "*.log"))
	for _, p := range paths {
		data, _ := os.ReadFile(p)
		if len(data) > 4000 {
			data = data[len(data)-4000:]
		}
		b.WriteString("== " + filepath.Base(p) + "\n" + string(data) + "\n")
	}
	return b.String()
}

// say types a line into the client.
func (s *tmplSpace) say(line string) {
	s.t.Helper()
	if _, err := io.WriteString(s.stdin, line+"\n"); err != nil {
		s.t.Fatalf("typing %q: %v", line, err)
	}
}

// expect waits until the client has printed want.
func (s *tmplSpace) expect(want string) {
	s.t.Helper()
	for deadline := time.Now().Add(tmplWait); !strings.Contains(s.out.String(), want); {
		if time.Now().After(deadline) {
			s.t.Fatalf("the client never printed %q:\n%s\nlogs:\n%s", want, s.out.String(), s.logs())
		}
		select {
		case err := <-s.exited:
			s.t.Fatalf("the client exited (%v):\n%s", err, s.out.String())
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// file checks the content of a file of the space.
func (s *tmplSpace) file(rel, want string) {
	s.t.Helper()
	data, err := os.ReadFile(filepath.Join(s.dir, rel))
	if err != nil || string(data) != want {
		s.t.Errorf("%s: %q, %v; want %q", rel, data, err, want)
	}
}

// stop leaves with /quit, runs mew space down, and checks that every
// process of the space is gone.
func (s *tmplSpace) stop() {
	s.t.Helper()
	s.say("/quit")
	select {
	case err := <-s.exited:
		if err != nil {
			s.t.Errorf("client exit: %v\n%s", err, s.out.String())
		}
	case <-time.After(tmplWait):
		s.t.Fatalf("the client did not leave on /quit:\n%s", s.out.String())
	}
	if out := tmplRun(s.t, s.dir, "space", "down"); !strings.Contains(out, "stopped") {
		s.t.Errorf("mew space down: %s", out)
	}
	s.down = true
	if len(s.pids) < 3 {
		s.t.Fatalf("the space's state named %d processes: %v", len(s.pids), s.pids)
	}
	for deadline := time.Now().Add(10 * time.Second); ; {
		var alive []int
		for _, pid := range s.pids {
			if proc.Alive(pid) {
				alive = append(alive, pid)
			}
		}
		if len(alive) == 0 {
			break
		}
		if time.Now().After(deadline) {
			s.t.Fatalf("processes %v of the space survived mew space down", alive)
		}
		time.Sleep(50 * time.Millisecond)
	}
	if _, err := os.Stat(filepath.Join(s.mewDir(), space.RunStateFile)); err == nil {
		s.t.Errorf("mew space down left %s", space.RunStateFile)
	}
}

// cleanup stops what a failed test left running.
func (s *tmplSpace) cleanup() {
	st, err := space.ReadRunState(s.mewDir())
	if s.down || err != nil {
		return // stopped, or never started
	}
	s.pids = append(s.pids, st.PIDs()...)
	ctx, cancel := context.WithTimeout(context.Background(), tmplWait)
	defer cancel()
	c := exec.CommandContext(ctx, mewBinary(s.t), "space", "down")
	c.Dir, c.Env = s.dir, cleanEnv()
	_ = c.Run()
	for _, pid := range s.pids {
		proc.Terminate(pid, true)
	}
}

// tmplInit makes a space directory from a built-in template.
func tmplInit(t *testing.T, template string) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), template+"-space")
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	out := tmplRun(t, dir, "init", template)
	if !strings.Contains(out, "from template "+template+" (built-in)") {
		t.Fatalf("mew init %s: %s", template, out)
	}
	return dir
}

// The coder agent reads the workspace and proposes every change: asked what
// a file holds it reads it, asked for the files it lists them, and a write
// is proposed, then done once approved.
func TestTemplateOfflineCoderAgent(t *testing.T) {
	dir := tmplInit(t, "coder-agent")
	if err := os.WriteFile(filepath.Join(dir, "README.md"), []byte("# greeter: prints hello"), 0o644); err != nil {
		t.Fatal(err)
	}
	s := tmplUp(t, dir)

	s.say("what is in README.md?")
	s.expect("mew: You asked: what is in README.md? mcp-fs-bridge/read_file returned: # greeter: prints hello. (offline model)")

	s.say("what files are there?")
	s.expect("mew: You asked: what files are there? mcp-fs-bridge/list_directory returned:")
	s.expect("[FILE] README.md")

	s.say("what is 2+3*4")
	s.expect("mew: 2 + 3 × 4 = 14. No tool here does × or +, so the offline model worked it out itself. (offline model)")

	s.say("fix the bug in README.md")
	s.expect("mew: You asked: fix the bug in README.md. That is beyond me: I am the offline rule-based model, not a language model.")

	s.say("write hello world to hello.txt")
	s.expect(`[#1] mew proposes write_file {"content":"hello world","path":"hello.txt"} to mcp-fs-bridge`)
	if _, err := os.Stat(filepath.Join(dir, "hello.txt")); err == nil {
		t.Error("hello.txt was written before the proposal was approved")
	}
	s.say("/approve 1")
	s.expect("#1 done: wrote 11 bytes to hello.txt")
	s.file("hello.txt", "hello world")
	s.stop()
}

// The note-taker keeps notes in ./notes: what to remember with no file
// named goes to notes.md, after the notes before it; a note with a file
// named is written there; asked what was said about something, it reads
// the notes and answers with the lines about it.
func TestTemplateOfflineNoteTaker(t *testing.T) {
	dir := tmplInit(t, "note-taker")
	s := tmplUp(t, dir)

	s.say("remember that the dentist is on Friday")
	s.expect("notes: Noted in notes.md: the dentist is on Friday. (offline model)")
	s.say("Remember to buy stamps.")
	s.expect("notes: Noted in notes.md: buy stamps. (offline model)")
	s.file(filepath.Join("notes", "notes.md"), "- the dentist is on Friday\n- buy stamps\n")

	s.say("note in groceries.md: buy milk and eggs")
	s.expect("notes: You asked: note in groceries.md: buy milk and eggs. notebook/write_file returned: wrote 17 bytes to groceries.md. (offline model)")
	s.file(filepath.Join("notes", "groceries.md"), "buy milk and eggs")

	s.say("what did I say about the dentist?")
	s.expect("notes: You asked: what did I say about the dentist? In notes.md: the dentist is on Friday. (offline model)")

	s.say("what is in groceries.md?")
	s.expect("notes: You asked: what is in groceries.md? notebook/read_file returned: buy milk and eggs. (offline model)")

	s.say("what notes do I have?")
	s.expect("[FILE] groceries.md")
	s.expect("[FILE] notes.md")
	s.stop()
}

// The demo template, as mew init makes it: the assistant calculates, the
// helper proposes a write into ./files that you approve, and the assistant
// reads it back.
func TestTemplateOfflineDemo(t *testing.T) {
	dir := tmplInit(t, "demo")
	s := tmplUp(t, dir)

	s.say("what is 2 plus 3")
	s.expect("assistant: 2 + 3 = 5. (offline model)")
	s.say("what is 2+3*4")
	s.expect("assistant: 2 + 3 × 4 = 14 (3 × 4 = 12, then 2 + 12 = 14). (offline model)")
	s.say("what is 12 times 7 minus 4")
	s.expect("assistant: 12 × 7 - 4 = 80 (12 × 7 = 84, then 84 - 4 = 80). (offline model)")
	s.say("what is 1/0")
	s.expect("assistant: 1 ÷ 0 has no value: it divides 1 by zero, and division by zero is undefined. (offline model)")

	s.say("@helper write hello to notes.txt")
	s.expect(`[#1] helper proposes write_file {"content":"hello","path":"notes.txt"} to files`)
	s.say("/approve 1")
	s.expect("#1 done: ")
	s.file(filepath.Join("files", "notes.txt"), "hello")

	s.say("what is in notes.txt?")
	s.expect("assistant: You asked: what is in notes.txt? files/read_file returned: hello. (offline model)")

	// No: the helper says so, with what was asked and the person's words.
	s.say("@helper write bye to notes.txt")
	s.expect(`[#2] helper proposes write_file {"content":"bye","path":"notes.txt"} to files`)
	s.say("/reject 2 once is enough")
	s.expect(`helper: You asked: write bye to notes.txt. I proposed files/write_file (content: bye, path: notes.txt), and you rejected it (once is enough). So it was not done. (offline model)`)
	s.file(filepath.Join("files", "notes.txt"), "hello")
	s.stop()
}

// examples/demo, copied: the helper may read the files and only propose a
// write; the observer's log, written by the gateway, holds the helper's
// answer.
func TestTemplateOfflineExampleDemo(t *testing.T) {
	src, err := os.ReadFile(filepath.Join("..", "..", "examples", "demo", "space.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(t.TempDir(), "demo")
	if err := os.MkdirAll(filepath.Join(dir, "files"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "space.yaml"), src, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "files", "hello.txt"), []byte("the seed text"), 0o644); err != nil {
		t.Fatal(err)
	}
	s := tmplUp(t, dir)

	s.say("@helper what is in hello.txt?")
	s.expect("helper: You asked: what is in hello.txt? files/read_file returned: the seed text. (offline model)")

	s.say("@helper write hi to notes.txt")
	s.expect(`[#1] helper proposes write_file {"content":"hi","path":"notes.txt"} to files`)
	s.say("/approve 1")
	s.expect("#1 done: wrote 2 bytes to notes.txt")
	s.file(filepath.Join("files", "notes.txt"), "hi")
	s.stop()

	data, err := os.ReadFile(filepath.Join(dir, "logs", "observer.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	found := false
	for line := range strings.SplitSeq(strings.TrimSpace(string(data)), "\n") {
		var env struct {
			From    string `json:"from"`
			Kind    string `json:"kind"`
			Payload struct {
				Text string `json:"text"`
			} `json:"payload"`
		}
		if err := json.Unmarshal([]byte(line), &env); err != nil {
			t.Fatalf("observer.jsonl: %v: %s", err, line)
		}
		if env.From == "helper" && env.Kind == "chat" && strings.Contains(env.Payload.Text, "the seed text") {
			found = true
		}
	}
	if !found {
		t.Errorf("observer.jsonl lacks the helper's answer:\n%s", data)
	}
}

// The cat-maze game: the agent shows the board and moves the cat on the
// offline model, a wall stops it, restart starts over, and solving the
// maze on its own is said to be beyond it.
func TestTemplateOfflineCatMaze(t *testing.T) {
	dir := tmplInit(t, "cat-maze")
	s := tmplUp(t, dir)

	s.say("show the maze")
	s.expect("mew: You asked: show the maze. cat-maze/view returned:")
	s.expect("Level 1/10: First Pounce")
	s.say("move right")
	s.expect("The cat moves right (east).")
	s.say("go up")
	s.expect("Bump! A wall is up of the cat (north); it stays where it is.")
	s.say("restart the game")
	s.expect("Back to the start, moves at zero.")
	s.say("solve the maze for me")
	s.expect("mew: You asked: solve the maze for me. That is beyond me: I am the offline rule-based model")
	s.stop()
}

// refTemplate is a template written the way the reference's are: the agent
// and the bridge started with their flags, the API key from the
// environment, and OpenAI's URL and a model as defaults whether or not
// there is a key.
var refTemplate = map[string]string{
	"template.json": `{
  "name": "ref-coder",
  "description": "A coder written as the reference's templates are",
  "author": "someone",
  "variables": [
    {"name": "SPACE_NAME", "description": "Name of your space", "default": "${dirname}", "prompt": true},
    {"name": "AGENT_API_KEY", "env_sources": ["OPENAI_API_KEY"], "default": "", "sensitive": true},
    {"name": "AGENT_BASE_URL", "env_sources": ["OPENAI_BASE_URL"], "default": "https://api.openai.com/v1"},
    {"name": "AGENT_MODEL", "env_sources": ["AGENT_MODEL"], "default": "gpt-5"}
  ]
}`,
	"space.yaml": `space:
  id: "{{SPACE_NAME}}"
  name: "{{SPACE_NAME}}"
  default_participant: human
participants:
  human:
    default_to:
      chat: ["mew"]
    capabilities:
      - kind: "*"
  mew:
    type: local
    command: "mew"
    args: ["agent", "run", "--gateway", "ws://localhost:${PORT}", "--space", "{{SPACE_NAME}}", "--token", "${TOKEN}", "--id", "mew"]
    auto_start: true
    capabilities:
      - kind: "chat"
      - kind: "reasoning/*"
      - kind: "mcp/request"
        payload:
          method: "tools/*"
    env:
      OPENAI_API_KEY: "${OPENAI_API_KEY}"
      OPENAI_BASE_URL: "{{AGENT_BASE_URL}}"
      OPENAI_MODEL: "{{AGENT_MODEL}}"
  files:
    type: local
    command: "mew"
    args: ["bridge", "start", "--gateway", "ws://localhost:${PORT}", "--space", "{{SPACE_NAME}}", "--token", "${TOKEN}", "--participant-id", "files", "--mcp-command", "mew", "--mcp-args", "mcp,filesystem,./"]
    auto_start: true
    capabilities:
      - kind: "mcp/*"
`,
}

// A reference-style template without an API key: the agent's environment
// names OpenAI's URL and gpt-5, and it answers on the offline model instead
// of failing on the network, and says why in its log.
func TestTemplateOfflineReferenceStyle(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "ref-space")
	tdir := filepath.Join(dir, "templates", "ref-coder")
	if err := os.MkdirAll(tdir, 0o755); err != nil {
		t.Fatal(err)
	}
	for name, content := range refTemplate {
		if err := os.WriteFile(filepath.Join(tdir, name), []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(dir, "README.md"), []byte("# hi"), 0o644); err != nil {
		t.Fatal(err)
	}
	tmplRun(t, dir, "init", "ref-coder")
	yaml, err := os.ReadFile(filepath.Join(dir, ".mew", "space.yaml"))
	if err != nil || !strings.Contains(string(yaml), `OPENAI_BASE_URL: "https://api.openai.com/v1"`) {
		t.Fatalf("the rendered space does not name OpenAI's URL (%v):\n%s", err, yaml)
	}
	s := tmplUp(t, dir)

	s.say("what is in README.md?")
	s.expect("mew: You asked: what is in README.md? files/read_file returned: # hi. (offline model)")
	s.stop()
	if logs := s.logs(); !strings.Contains(logs, "the model's server needs an API key and OPENAI_API_KEY is not set: using the offline rule-based model") ||
		!strings.Contains(logs, "base_url=https://api.openai.com/v1") {
		t.Errorf("the agent's log does not say why it runs offline:\n%s", logs)
	}
}
