package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
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

// writeTemplate writes a template folder under dir/templates/name.
func writeTemplate(t *testing.T, dir, name, manifest, spaceYAML string, agents map[string]string) {
	t.Helper()
	root := filepath.Join(dir, "templates", name)
	if err := os.MkdirAll(filepath.Join(root, "agents"), 0o755); err != nil {
		t.Fatal(err)
	}
	files := map[string]string{"template.json": manifest, "space.yaml": spaceYAML}
	for f, c := range agents {
		files[filepath.Join("agents", f)] = c
	}
	for f, c := range files {
		if err := os.WriteFile(filepath.Join(root, f), []byte(c), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

func TestInitBuiltIn(t *testing.T) {
	for _, name := range []string{"demo", "coder-agent", "note-taker", "cat-maze"} {
		t.Run(name, func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "My Project")
			if err := os.Mkdir(dir, 0o755); err != nil {
				t.Fatal(err)
			}
			out, _, err := run(t, Options{Getenv: func(k string) string { return map[string]string{"OPENAI_MODEL": "at-init"}[k] }}, "init", name, "-d", dir, "--model", "qwen2.5")
			if err != nil {
				t.Fatalf("init: %v", err)
			}
			if !strings.Contains(out, "created "+filepath.Join(dir, ".mew", "space.yaml")) {
				t.Errorf("output %q", out)
			}
			cfg, err := space.Load(filepath.Join(dir, ".mew", "space.yaml"))
			if err != nil {
				t.Fatal(err)
			}
			if name != "demo" && cfg.Space.ID != "my-project" {
				t.Errorf("space id %q", cfg.Space.ID)
			}
			data, _ := os.ReadFile(cfg.Path)
			if strings.Contains(string(data), "{{") || !strings.Contains(string(data), "qwen2.5") || strings.Contains(string(data), "at-init") {
				t.Errorf("rendered:\n%s", data)
			}
			if fi, err := os.Stat(filepath.Join(dir, ".mew", "tokens")); err != nil || fi.Mode().Perm() != 0o700 {
				t.Errorf("tokens dir: %v %v", fi, err)
			}
			gi, _ := os.ReadFile(filepath.Join(dir, ".gitignore"))
			if !strings.Contains(string(gi), ".mew/tokens/") {
				t.Errorf(".gitignore: %s", gi)
			}
			if _, _, err := run(t, Options{}, "init", name, "-d", dir); err == nil || !strings.Contains(err.Error(), "--force") {
				t.Errorf("second init: %v", err)
			}
			if _, _, err := run(t, Options{}, "init", name, "-d", dir, "--force", "--name", "Other Name"); err != nil {
				t.Errorf("init --force: %v", err)
			}
			if cfg, err := space.Load(filepath.Join(dir, ".mew", "space.yaml")); err != nil || cfg.Space.ID != "other-name" {
				t.Errorf("after --force --name: %v %v", cfg, err)
			}
		})
	}
}

func TestInitLocalTemplate(t *testing.T) {
	dir := t.TempDir()
	writeTemplate(t, dir, "mine", `{"name":"mine","description":"a local one","variables":[
		{"name":"SPACE_NAME","default":"${dirname}"},
		{"name":"GREETING","default":"hello","env_sources":["GREETING_ENV"]},
		{"name":"SECRET","sensitive":true,"default":"s3cret"}]}`,
		"space:\n  id: \"{{SPACE_NAME}}\"\n  description: {{GREETING_JSON}}\nparticipants:\n  a:\n    env: {KEY: \"{{SECRET}}\", G: {{GREETING_JSON}}}\n",
		map[string]string{"run.sh": "#!/bin/sh\necho hi\n"})
	out, _, err := run(t, Options{Getenv: func(k string) string { return map[string]string{"GREETING_ENV": `say "hi"`}[k] }},
		"init", "mine", "-d", dir, "--var", "SPACE_NAME=custom")
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := space.Load(filepath.Join(dir, ".mew", "space.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Space.ID != "custom" || cfg.Space.Description != `say "hi"` {
		t.Errorf("space %+v (%s)", cfg.Space, out)
	}
	data, _ := os.ReadFile(cfg.Path)
	if strings.Contains(string(data), "s3cret") {
		t.Error("a sensitive default was written")
	}
	if fi, err := os.Stat(filepath.Join(dir, ".mew", "agents", "run.sh")); err != nil || fi.Mode().Perm()&0o100 == 0 {
		t.Errorf("agents/run.sh: %v %v", fi, err)
	}

	list, _, err := run(t, Options{}, "init", "--list-templates", "-d", dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"mine", "a local one", "demo", "coder-agent", "note-taker", "cat-maze", "built-in"} {
		if !strings.Contains(list, want) {
			t.Errorf("list lacks %q:\n%s", want, list)
		}
	}
}

func TestInitBadTemplates(t *testing.T) {
	dir := t.TempDir()
	writeTemplate(t, dir, "badjson", `{"name":"badjson","variables":[}`, "space: {id: x}\n", nil)
	writeTemplate(t, dir, "invalid", `{"name":"invalid","variables":[]}`, "space: {id: x}\nparticipants:\n  a: {tokens: 5}\n", nil)
	writeTemplate(t, dir, "needs", `{"name":"needs","variables":[{"name":"KEY","required":true}]}`, "space: {id: x}\n", nil)
	for _, tc := range []struct {
		args []string
		want []string
	}{
		{[]string{"badjson"}, []string{filepath.Join(dir, "templates", "badjson", "template.json"), "invalid character"}},
		{[]string{"invalid"}, []string{"invalid space", "tokens"}},
		{[]string{"needs"}, []string{"needs KEY"}},
		{[]string{"nosuch"}, []string{`no template "nosuch"`, "demo"}},
		{[]string{"../escape"}, []string{"not a template name"}},
		{[]string{"demo", "--var", "novalue"}, []string{"want NAME=VALUE"}},
	} {
		_, _, err := run(t, Options{}, append([]string{"init", "-d", dir}, tc.args...)...)
		for _, w := range tc.want {
			if err == nil || !strings.Contains(err.Error(), w) {
				t.Errorf("%v: %v, want %q", tc.args, err, w)
			}
		}
	}
	if _, err := os.Stat(filepath.Join(dir, ".mew", "space.yaml")); err == nil {
		t.Error("a failed init wrote a space")
	}
}

// TestInitBinary: the built binary creates a space from a template with
// variables, and names the file and key of a bad template.
func TestInitBinary(t *testing.T) {
	dir := t.TempDir()
	out, err := mew(t, dir, "init", "note-taker", "--name", "Team Notes", "--model", "llama3")
	if err != nil {
		t.Fatalf("init: %v\n%s", err, out)
	}
	cfg, err := space.Load(filepath.Join(dir, ".mew", "space.yaml"))
	if err != nil || cfg.Space.ID != "team-notes" {
		t.Fatalf("space: %v %v", cfg, err)
	}
	if data, _ := os.ReadFile(cfg.Path); !strings.Contains(string(data), `OPENAI_MODEL: "llama3"`) {
		t.Errorf("rendered:\n%s", data)
	}
	writeTemplate(t, dir, "bad", `{"name":"bad","variables":[{"name":"A B"}]}`, "space: {id: x}\n", nil)
	out, err = mew(t, dir, "init", "bad", "--force")
	if err == nil || !strings.Contains(out, filepath.Join("templates", "bad", "template.json")) || !strings.Contains(out, `variables[0].name "A B"`) {
		t.Errorf("bad template: %v\n%s", err, out)
	}
}

// refTemplateJSON and refTemplateYAML are a template written as the
// reference writes them: members this mew does not use (license, author,
// version, tags), placeholders the template does not declare
// (SPACE_NAME, UI_THEME), ${PORT} and ${TOKEN} on command lines, type: local
// participants that start `mew agent run` and `mew bridge start` with
// every flag.
const (
	refTemplateJSON = `{
  "name": "ref-style",
  "description": "As the reference writes them",
  "author": "MEW Protocol Team",
  "version": "1.0.0",
  "license": "MIT",
  "tags": ["development"],
  "variables": [
    {"name": "AGENT_MODEL", "description": "model", "env_sources": ["AGENT_MODEL"], "default": "gpt-5", "prompt": true},
    {"name": "AGENT_API_KEY", "env_sources": ["OPENAI_API_KEY"], "default": "", "prompt": true, "sensitive": true, "required": false},
    {"name": "AGENT_PROMPT", "description": "prompt", "default": "You help \"everyone\".", "prompt": false}
  ]
}`
	refTemplateYAML = `# as the reference writes them
space:
  id: "{{SPACE_NAME}}"
  name: "{{SPACE_NAME}}"
  default_participant: human
participants:
  human:
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
          method: "tools/list"
    env:
      OPENAI_API_KEY: "${OPENAI_API_KEY}"
      OPENAI_MODEL: "{{AGENT_MODEL}}"
      MEW_THEME: "{{UI_THEME}}"
      MEW_AGENT_CONFIG: '{"maxIterations": 10, "systemPrompt": {{AGENT_PROMPT_JSON}}}'
  calc:
    type: local
    command: "mew"
    args: ["bridge", "start", "--gateway", "ws://localhost:${PORT}", "--space", "{{SPACE_NAME}}", "--token", "${TOKEN}", "--participant-id", "calc", "--mcp-command", "mew", "--mcp-args", "mcp,calculator"]
    auto_start: true
    capabilities:
      - kind: "mcp/response"
      - kind: "mcp/notification"
defaults:
  capabilities:
    - kind: "chat"
`
)

// cleanEnv returns the environment without the model's and mew's
// variables, so that a test's agents run the offline model whatever the
// developer's shell sets.
func cleanEnv(extra ...string) []string {
	var env []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "OPENAI_") && !strings.HasPrefix(kv, "MEW_") && !strings.HasPrefix(kv, "AGENT_") {
			env = append(env, kv)
		}
	}
	return append(env, extra...)
}

// mewEnv runs the built binary as mew does, with the environment env, and
// returns its standard output and error apart.
func mewEnv(t *testing.T, dir string, env []string, args ...string) (stdout, stderr string, err error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	c := exec.CommandContext(ctx, mewBinary(t), args...)
	c.Dir, c.Env = dir, env
	var out, errOut bytes.Buffer
	c.Stdout, c.Stderr = &out, &errOut
	err = c.Run()
	return out.String(), errOut.String(), err
}

// waitConnected waits until the space's gateway lists every id as
// connected.
func waitConnected(t *testing.T, port int, spaceID string, ids ...string) {
	t.Helper()
	url := "http://127.0.0.1:" + strconv.Itoa(port) + "/participants?space=" + spaceID
	var last string
	for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		resp, err := http.Get(url)
		if err != nil {
			continue
		}
		var body struct {
			Participants []struct {
				ID        string `json:"id"`
				Connected bool   `json:"connected"`
			} `json:"participants"`
		}
		err = json.NewDecoder(resp.Body).Decode(&body)
		resp.Body.Close()
		if err != nil {
			continue
		}
		connected := map[string]bool{}
		for _, p := range body.Participants {
			connected[p.ID] = p.Connected
		}
		missing := 0
		for _, id := range ids {
			if !connected[id] {
				missing++
			}
		}
		if missing == 0 {
			return
		}
		last = fmt.Sprint(body.Participants)
	}
	t.Fatalf("%v not all connected to %s: %s", ids, spaceID, last)
}

// TestInitReferenceTemplate: a template copied from the reference as it is
// (unknown members, undeclared placeholders, one left unset) initializes
// with warnings only, and its space comes up with its agent and bridge
// joined.
func TestInitReferenceTemplate(t *testing.T) {
	dir := t.TempDir()
	writeTemplate(t, dir, "ref-style", refTemplateJSON, refTemplateYAML, nil)
	env := cleanEnv()
	out, errOut, err := mewEnv(t, dir, env, "init", "ref-style", "--name", "Ref Space")
	if err != nil {
		t.Fatalf("init: %v\n%s%s", err, out, errOut)
	}
	if !strings.Contains(errOut, "{{UI_THEME}}") || !strings.Contains(errOut, "left empty") {
		t.Errorf("no warning about UI_THEME:\n%s", errOut)
	}
	cfg, err := space.Load(filepath.Join(dir, ".mew", "space.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Space.ID != "ref-space" {
		t.Errorf("space id %q, want ref-space (from --name)", cfg.Space.ID)
	}
	data, _ := os.ReadFile(cfg.Path)
	for _, want := range []string{`MEW_THEME: ""`, `"systemPrompt": "You help \"everyone\"."`, `OPENAI_MODEL: "gpt-5"`, `"--space", "ref-space"`, `${TOKEN}`} {
		if !strings.Contains(string(data), want) {
			t.Errorf("rendered space lacks %s:\n%s", want, data)
		}
	}
	out, errOut, err = mewEnv(t, dir, env, "space", "up", "--detach", "-p", "0")
	if err != nil {
		t.Fatalf("space up: %v\n%s%s", err, out, errOut)
	}
	st, err := space.ReadRunState(cfg.MewDir)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_, _, _ = mewEnv(t, dir, env, "space", "down")
		for _, pid := range st.PIDs() {
			proc.Terminate(pid, true)
		}
	})
	waitConnected(t, st.Port, "ref-space", "mew", "calc")
	if out, _, err := mewEnv(t, dir, env, "space", "down"); err != nil || !strings.Contains(out, "stopped") {
		t.Errorf("space down: %v\n%s", err, out)
	}
}

// TestInitModelAtSpaceUp: a built-in template initialized without model
// settings takes them from the environment of space up (not the empty
// values of init's); --model and --var fix them at init. The demo
// template's files folder is created, so that its bridge can start.
func TestInitModelAtSpaceUp(t *testing.T) {
	dir := t.TempDir()
	initEnv := func(k string) string {
		return map[string]string{"OPENAI_MODEL": "init-model", "OPENAI_BASE_URL": "http://init.example/v1"}[k]
	}
	if _, _, err := run(t, Options{Getenv: initEnv}, "init", "coder-agent", "-d", dir); err != nil {
		t.Fatal(err)
	}
	upEnv := []string{"PATH=/bin", "OPENAI_BASE_URL=http://up.example/v1", "OPENAI_MODEL=up-model"}
	env := launchEnv(t, dir, upEnv, "mew")
	if env["OPENAI_BASE_URL"] != "http://up.example/v1" || env["OPENAI_MODEL"] != "up-model" {
		t.Errorf("space up with the model settings in its environment: the agent gets %q, %q", env["OPENAI_BASE_URL"], env["OPENAI_MODEL"])
	}
	if env := launchEnv(t, dir, []string{"PATH=/bin"}, "mew"); env["OPENAI_BASE_URL"] != "" || env["OPENAI_MODEL"] != "" {
		t.Errorf("space up without them: the agent gets %q, %q", env["OPENAI_BASE_URL"], env["OPENAI_MODEL"])
	}

	fixed := t.TempDir()
	if _, _, err := run(t, Options{Getenv: initEnv}, "init", "coder-agent", "-d", fixed, "--model", "fixed-model", "--var", "AGENT_BASE_URL=http://fixed.example/v1"); err != nil {
		t.Fatal(err)
	}
	if env := launchEnv(t, fixed, upEnv, "mew"); env["OPENAI_BASE_URL"] != "http://fixed.example/v1" || env["OPENAI_MODEL"] != "fixed-model" {
		t.Errorf("settings fixed at init: the agent gets %q, %q", env["OPENAI_BASE_URL"], env["OPENAI_MODEL"])
	}

	demo := t.TempDir()
	if _, _, err := run(t, Options{}, "init", "demo", "-d", demo); err != nil {
		t.Fatal(err)
	}
	if fi, err := os.Stat(filepath.Join(demo, "files")); err != nil || !fi.IsDir() {
		t.Errorf("init demo did not create ./files: %v", err)
	}
}

// launchEnv returns the environment space up gives participant id of the
// space in dir when it runs with environ.
func launchEnv(t *testing.T, dir string, environ []string, id string) map[string]string {
	t.Helper()
	cfg, err := space.Load(filepath.Join(dir, ".mew", "space.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	p, ok, err := space.Launch{Config: cfg, Executable: "/bin/mew", Port: 1, Environ: environ}.Participant(cfg.Participant(id), "tok")
	if err != nil || !ok {
		t.Fatalf("launch %s: %v %v", id, ok, err)
	}
	env := map[string]string{}
	for _, kv := range p.Env { // the last of a name wins, as in the process
		k, v, _ := strings.Cut(kv, "=")
		env[k] = v
	}
	return env
}
