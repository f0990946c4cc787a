package cli

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

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
	for _, name := range []string{"demo", "coder-agent", "note-taker"} {
		t.Run(name, func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "My Project")
			if err := os.Mkdir(dir, 0o755); err != nil {
				t.Fatal(err)
			}
			out, _, err := run(t, Options{Getenv: func(k string) string { return map[string]string{"OPENAI_MODEL": "qwen2.5"}[k] }}, "init", name, "-d", dir)
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
			if strings.Contains(string(data), "{{") || !strings.Contains(string(data), "qwen2.5") {
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
	for _, want := range []string{"mine", "a local one", "demo", "coder-agent", "note-taker", "built-in"} {
		if !strings.Contains(list, want) {
			t.Errorf("list lacks %q:\n%s", want, list)
		}
	}
}

func TestInitBadTemplates(t *testing.T) {
	dir := t.TempDir()
	writeTemplate(t, dir, "badkey", `{"name":"badkey","colour":"red","variables":[]}`, "space: {id: x}\n", nil)
	writeTemplate(t, dir, "undeclared", `{"name":"undeclared","variables":[{"name":"SPACE_NAME","default":"x"}]}`,
		"space:\n  id: \"{{SPACE_NAME}}\"\n  name: \"{{SPACE_TITLE}}\"\n", nil)
	writeTemplate(t, dir, "invalid", `{"name":"invalid","variables":[]}`, "space: {id: x}\nparticipants:\n  a: {tokens: 5}\n", nil)
	writeTemplate(t, dir, "needs", `{"name":"needs","variables":[{"name":"KEY","required":true}]}`, "space: {id: x}\n", nil)
	for _, tc := range []struct {
		args []string
		want []string
	}{
		{[]string{"badkey"}, []string{filepath.Join(dir, "templates", "badkey", "template.json"), `unknown field "colour"`}},
		{[]string{"undeclared"}, []string{filepath.Join(dir, "templates", "undeclared") + "/space.yaml:3", "{{SPACE_TITLE}} is not a variable"}},
		{[]string{"invalid"}, []string{"invalid space", "tokens"}},
		{[]string{"needs"}, []string{"needs KEY"}},
		{[]string{"nosuch"}, []string{`no template "nosuch"`, "demo"}},
		{[]string{"../escape"}, []string{"not a template name"}},
		{[]string{"demo", "--var", "NOPE=1"}, []string{"has no variable NOPE"}},
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
	writeTemplate(t, dir, "bad", `{"name":"bad","variabels":[]}`, "space: {id: x}\n", nil)
	out, err = mew(t, dir, "init", "bad", "--force")
	if err == nil || !strings.Contains(out, filepath.Join("templates", "bad", "template.json")) || !strings.Contains(out, `"variabels"`) {
		t.Errorf("bad template: %v\n%s", err, out)
	}
}
