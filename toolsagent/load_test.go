package toolsagent_test

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/mew-protocol/mew/toolsagent"
)

// head is the start of a valid definition, before its tools.
const head = `name: desk
version: "1.0"
description: A desk.
mode: tools
`

// oneTool is a valid tools section; %s is more of the tool's schema
// (properties of x) and %s the prompt.
func oneTool(xSchema, prompt string) string {
	return fmt.Sprintf(`tools:
  - name: t
    description: A tool.
    parameters:
      type: object
      properties:
        x: %s
      required: [x]
    prompt: %q
`, xSchema, prompt)
}

// problemsOf loads doc and returns its problems: the errors of the
// LoadError, or the warnings.
func problemsOf(t *testing.T, doc string) ([]toolsagent.Problem, error) {
	t.Helper()
	d, err := toolsagent.Parse([]byte(doc))
	if err != nil {
		var le *toolsagent.LoadError
		if !errors.As(err, &le) {
			t.Fatalf("Parse: %v is not a *LoadError", err)
		}
		return le.Problems, err
	}
	return d.Warnings, nil
}

// hasProblem reports whether one of ps is at path and says want.
func hasProblem(ps []toolsagent.Problem, path, want string, warning bool) bool {
	for _, p := range ps {
		if p.Path == path && strings.Contains(p.Message, want) && p.Warning == warning {
			return true
		}
	}
	return false
}

func TestToolsAgentLoadErrors(t *testing.T) {
	tool := oneTool("{type: string}", "use {x}")
	cases := []struct {
		name, doc, path, want string
	}{
		{"unknown type", head + oneTool("{type: strin}", "{x}"), "tools[0].parameters.properties.x.type",
			`unknown type "strin" (want string, number, integer, boolean, array, object)`},
		{"missing type", head + oneTool("{description: d}", "{x}"), "tools[0].parameters.properties.x.type", "required: one of string"},
		{"default of the wrong type", head + oneTool("{type: string, default: 3}", "{x}"), "tools[0].parameters.properties.x.default",
			"want a string, got a number (3)"},
		{"boolean default of the wrong type", head + oneTool(`{type: boolean, default: "yes"}`, "{x}"), "tools[0].parameters.properties.x.default",
			`want a boolean, got a string ("yes")`},
		{"integer default with a fraction", head + oneTool("{type: integer, default: 1.5}", "{x}"), "tools[0].parameters.properties.x.default",
			"want an integer, got a number (1.5)"},
		{"default outside the enum", head + oneTool("{type: string, enum: [a, b], default: c}", "{x}"), "tools[0].parameters.properties.x.default",
			`"c" is not one of "a", "b"`},
		{"default above the maximum", head + oneTool("{type: number, maximum: 5, default: 6}", "{x}"), "tools[0].parameters.properties.x.default",
			"at most 5, got 6"},
		{"enum of the wrong type", head + oneTool("{type: number, enum: [1, two]}", "{x}"), "tools[0].parameters.properties.x.enum[1]",
			`want a number, got a string ("two")`},
		{"example of the wrong type", head + oneTool("{type: string, examples: [ok, 7]}", "{x}"), "tools[0].parameters.properties.x.examples[1]",
			"want a string, got a number (7)"},
		{"empty enum", head + oneTool("{type: string, enum: []}", "{x}"), "tools[0].parameters.properties.x.enum", "an empty enum"},
		{"minimum above maximum", head + oneTool("{type: integer, minimum: 3, maximum: 1}", "{x}"), "tools[0].parameters.properties.x.minimum",
			"3 is more than maximum 1"},
		{"negative length", head + oneTool("{type: string, maxLength: -1}", "{x}"), "tools[0].parameters.properties.x.maxLength",
			"want a whole number of at least 0"},
		{"key of another type", head + oneTool("{type: string, minimum: 1}", "{x}"), "tools[0].parameters.properties.x.minimum",
			"not part of the schema of a string (allowed: type, title, description, enum, default, examples, minLength, maxLength)"},
		{"array without items", head + oneTool("{type: array}", "{x}"), "tools[0].parameters.properties.x.items", "required: the schema of the items"},
		{"nested unknown type", head + oneTool("{type: array, items: {type: object, properties: {y: {type: date}}}}", "{x}"),
			"tools[0].parameters.properties.x.items.properties.y.type", `unknown type "date"`},
		{"bad property name", head + oneTool("{type: object, properties: {\"a b\": {type: string}}}", "{x}"),
			`tools[0].parameters.properties.x.properties["a b"]`, "a property name is"},
		{"required names no property", head + strings.Replace(oneTool("{type: string}", "{x}"), "required: [x]", "required: [x, y]", 1),
			"tools[0].parameters.required[1]", `"y" is not a property (properties: x)`},
		{"root not an object", head + "tools:\n  - {name: t, description: d, parameters: {type: string}, prompt: p}\n",
			"tools[0].parameters.type", "the root of parameters must be an object"},
		{"output root not an object", head + "tools:\n  - {name: t, description: d, output: {type: array, items: {type: string}}, prompt: p}\n",
			"tools[0].output.type", "the root of output must be an object"},
		{"output with an unknown key", head + "tools:\n  - {name: t, description: d, output: {type: object, format: x}, prompt: p}\n",
			"tools[0].output.format", "not part of the schema of an object"},
		{"placeholder naming nothing", head + oneTool("{type: string}", "use {x} and {y}"), "tools[0].prompt",
			"{y} names neither a parameter (x) nor a tool property (name, description)"},
		{"unclosed brace", head + oneTool("{type: string}", "use {x} {"), "tools[0].prompt", "a '{' that is not closed at byte 8"},
		{"lone closing brace", head + oneTool("{type: string}", "use {x} }"), "tools[0].prompt", "a '}' without '{' at byte 8 (near \"use {x} }\"): write }} for a literal brace"},
		{"not a placeholder", head + oneTool("{type: string}", `use {x} {"json": 1}`), "tools[0].prompt", `{"json": 1} is not a placeholder`},
		{"empty prompt", head + oneTool("{type: string}", ""), "tools[0].prompt", "empty"},
		{"missing prompt", head + "tools:\n  - {name: t, description: d}\n", "tools[0].prompt", "required"},
		{"duplicate tool names", head + tool + "  - {name: t, description: d, prompt: p}\n", "tools[1].name",
			`duplicate tool name "t" (also tools[0])`},
		{"bad tool name", head + "tools:\n  - {name: \"book flight\", description: d, prompt: p}\n", "tools[0].name",
			`"book flight": a tool name is letters, digits`},
		{"unknown tool key", head + "tools:\n  - {name: t, description: d, prompt: p, promt: q}\n", "tools[0].promt",
			"unknown key in a tool (allowed: name, description, parameters, output, prompt, tags, examples, inputModes, outputModes)"},
		{"no tools", head + "tools: []\n", "tools", "no tools"},
		{"tools missing", head, "tools", "required"},
		{"name missing", strings.Replace(head, "name: desk\n", "", 1) + tool, "name", "required"},
		{"mode missing", strings.Replace(head, "mode: tools\n", "", 1) + tool, "mode", "required: write mode: tools"},
		{"other mode", strings.Replace(head, "mode: tools", "mode: chat", 1) + tool, "mode", `"chat": a tools agent has mode "tools"`},
		{"unknown top-level key", head + tool + "maxIteration: 3\n", "maxIteration", "unknown key"},
		// A key one typo away from a known one is named.
		{"misspelt tool key", head + "tools:\n  - {name: t, description: d, prompt: p, promt: q}\n", "tools[0].promt", "); did you mean prompt?"},
		{"misspelt top-level key", head + tool + "maxIteration: 3\n", "maxIteration", "did you mean maxIterations?"},
		{"misspelt own key", head + tool + "timeuot: 3s\n", "timeuot", "did you mean timeout?"},
		{"misspelt server key", head + tool + "mcpServers:\n  s: {command: x, permission: never, arg: [y]}\n", "mcpServers.s.arg", "did you mean args?"},
		{"misspelt schema key", head + oneTool("{type: string, maxLenght: 3}", "{x}"), "tools[0].parameters.properties.x.maxLenght",
			"maxLength); did you mean maxLength?"},
		{"chat setting", head + tool + "autoRespond: true\n", "autoRespond", "not a setting of a tools agent"},
		{"model setting of the wrong type", head + tool + "maxIterations: ten\n", "", "maxIterations"},
		{"unused prompt", head + tool + "prompts: {reason: x}\n", "prompts.reason", "not used by a tools agent"},
		{"bad timeout", head + tool + "timeout: soon\n", "timeout", "want a duration such as 90s"},
		{"negative timeout", head + tool + "timeout: -3\n", "timeout", "want a positive duration"},
		{"bad concurrency", head + tool + "maxConcurrentCalls: 0\n", "maxConcurrentCalls", "want at least 1"},
		{"server without command", head + tool + "mcpServers:\n  s: {permission: never}\n", "mcpServers.s", "needs a command"},
		{"server with both", head + tool + "mcpServers:\n  s: {command: x, url: \"http://h/mcp\", permission: never}\n", "mcpServers.s", "both a command and a url"},
		{"server bad url", head + tool + "mcpServers:\n  s: {url: \"ftp://h\", permission: never}\n", "mcpServers.s.url", "want an http:// or https:// URL"},
		{"server without permission", head + tool + "mcpServers:\n  s: {command: x}\n", "mcpServers.s.permission", `required: "never"`},
		{"server bad permission", head + tool + "mcpServers:\n  s: {command: x, permission: sometimes}\n", "mcpServers.s.permission",
			`"sometimes": want "never"`},
		{"server bad name", head + tool + "mcpServers:\n  a/b: {command: x, permission: never}\n", `mcpServers["a/b"]`, "a server name is"},
		{"server unknown key", head + tool + "mcpServers:\n  s: {command: x, permission: never, cmd: y}\n", "mcpServers.s.cmd", "unknown key in an MCP server"},
		{"participant without permission", head + tool + "participants:\n  calc: {}\n", "participants.calc.permission", "required"},
		{"server and participant clash", head + tool + "mcpServers:\n  calc: {command: x, permission: never}\nparticipants:\n  calc: {permission: never}\n",
			"participants.calc", "also the name of an MCP server"},
		{"duplicate key", head + tool + "timeout: 3s\ntimeout: 4s\n", "timeout", "duplicate key"},
		{"not a mapping", "- a\n- b\n", "", "want a mapping, got a list"},
		{"enum item with a fraction", head + oneTool("{type: integer, enum: [1, 2.5]}", "{x}"), "tools[0].parameters.properties.x.enum[1]",
			"want an integer, got a number (2.5)"},
		{"null setting", head + tool + "sharedHistory:\n", "sharedHistory", "want a boolean, got null"},
		{"timeout a list", head + tool + "timeout: [3s]\n", "timeout", "want a duration such as 90s or 2m, or a number of seconds, got a list"},
		{"server env value a list", head + tool + "mcpServers:\n  s: {command: x, permission: never, env: {A: [1]}}\n", "mcpServers.s.env.A",
			"want a string, got a list"},
		{"server args item a number", head + tool + "mcpServers:\n  s: {command: x, permission: never, args: [-v, 2]}\n", "mcpServers.s.args[1]",
			"want a string, got a number (2)"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			ps, err := problemsOf(t, c.doc)
			if err == nil {
				t.Fatalf("loaded, want an error at %s", c.path)
			}
			if !hasProblem(ps, c.path, c.want, false) {
				t.Errorf("problems:\n%v\nwant at %q: %q", err, c.path, c.want)
			}
		})
	}
}

func TestToolsAgentLoadWarnings(t *testing.T) {
	doc := `name: desk
mode: tools
mcpServers:
  pay: {command: pay-server, permission: always}
tools:
  - name: t
    parameters:
      type: object
      properties:
        name: {type: string}
        date: {type: string}
      required: [date, date]
    prompt: "Hello {name}"
`
	ps, err := problemsOf(t, doc)
	if err != nil {
		t.Fatal(err)
	}
	for _, w := range []struct{ path, want string }{
		{"version", "missing: the server reports version 0.0.0"},
		{"description", "missing: MCP clients get no instructions"},
		{"tools[0].description", "missing"},
		{"tools[0].prompt", "the required parameter date is not used: write {date} where it belongs"},
		{"tools[0].parameters.properties.name", "the parameter hides the tool's own name"},
		{"tools[0].parameters.required[1]", `"date" is listed twice`},
		{"mcpServers.pay", "a tools agent cannot ask for: it will not use this server"},
	} {
		if !hasProblem(ps, w.path, w.want, true) {
			t.Errorf("no warning at %s: %q in\n%v", w.path, w.want, ps)
		}
	}
	if s := ps[0].String(); !strings.HasPrefix(s, "warning: ") {
		t.Errorf("warning text %q", s)
	}
}

// Every problem is reported at once, each with its path and line.
func TestToolsAgentLoadReportsEveryProblem(t *testing.T) {
	doc := head + `tools:
  - name: a
    description: d
    parameters:
      type: object
      properties:
        when: {type: strng}
        n: {type: integer, default: "one"}
    prompt: "{nope}"
  - name: a
    description: d
    prompt: p
`
	ps, err := problemsOf(t, doc)
	if err == nil {
		t.Fatal("loaded")
	}
	var le *toolsagent.LoadError
	if !errors.As(err, &le) {
		t.Fatal(err)
	}
	msg := err.Error()
	if !strings.HasPrefix(msg, "toolsagent: 4 problems:\n") {
		t.Errorf("message %q", msg)
	}
	for _, want := range []string{
		`tools[0].parameters.properties.when.type (line 11): unknown type "strng"`,
		`tools[0].parameters.properties.n.default (line 12): want a number, got a string ("one")`,
		"tools[0].prompt (line 13): {nope} names neither a parameter (n) nor a tool property",
		`tools[1].name (line 14): duplicate tool name "a" (also tools[0])`,
	} {
		if !strings.Contains(msg, want) {
			t.Errorf("%s\nlacks %q", msg, want)
		}
	}
	_ = ps
}

func TestToolsAgentLoadValues(t *testing.T) {
	doc := head + `timeout: 90
sharedHistory: true
maxConcurrentCalls: 2
reasoningEnabled: false
model: some-model
systemPrompt: Be brief.
maxIterations: 7
conversationHistoryLength: 4
prompts: {act: "go on"}
gateway: ws://localhost:8080
space: s
token: ${TOKEN}
participant_id: desk
logLevel: debug
mcpServers:
  web: {url: "https://example.com/mcp", headers: {Authorization: "Bearer ${KEY}"}, permission: never, tools: [fetch]}
  local: {command: ./bin/server, args: [-v], env: {N: 1}, cwd: work, permission: never}
participants:
  calc: {permission: never, tools: [add]}
  "*": {permission: always}
defs:
  sizes: &sizes {type: integer, minimum: 1, maximum: 9}
x-shared:
  sizes: &sizes2 {type: integer, minimum: 1, maximum: 9}
tools:
  - name: t
    description: d
    parameters:
      type: object
      properties:
        n: *sizes
        tags: {type: array, items: [{type: string}, {type: boolean}], uniqueItems: true}
        opts: {type: object, additionalProperties: {type: number}}
        strict: {type: object, additionalProperties: false, properties: {a: {type: boolean, default: true}}}
      required: [n]
    prompt: "n={n} {{literal}} {name}"
`
	// defs is not a key; x-shared, like every key starting with x-, is
	// ignored: a place for anchors.
	if _, err := toolsagent.Parse([]byte(doc)); err == nil || !strings.Contains(err.Error(), "defs (line 25): unknown key") {
		t.Fatalf("unknown key defs: %v", err)
	}
	doc = strings.Replace(doc, "defs:\n  sizes: &sizes {type: integer, minimum: 1, maximum: 9}\n", "", 1)
	doc = strings.Replace(doc, "n: *sizes", "n: *sizes2\n        m: &sizes {type: integer, minimum: 1, maximum: 9}", 1)
	d, err := toolsagent.Parse([]byte(doc))
	if err != nil {
		t.Fatal(err)
	}
	if d.Timeout != 90*time.Second || !d.SharedHistory || d.MaxConcurrentCalls != 2 || d.Reasoning {
		t.Errorf("own settings: %+v", d)
	}
	m := d.Model
	if m.Model != "some-model" || m.SystemPrompt != "Be brief." || m.MaxIterations != 7 || m.HistoryLength != 4 || m.Prompts.Act != "go on" || m.Name != "desk" {
		t.Errorf("model settings: %+v", m)
	}
	if d.Gateway != "ws://localhost:8080" || d.Space != "s" || d.Token != "${TOKEN}" || d.ParticipantID != "desk" {
		t.Errorf("connection: %q %q %q %q", d.Gateway, d.Space, d.Token, d.ParticipantID)
	}
	if len(d.Servers) != 2 || d.Servers[0].Headers["Authorization"] != "Bearer ${KEY}" || d.Servers[1].Env["N"] != "1" ||
		d.Servers[1].Cwd != "work" || d.Servers[1].Args[0] != "-v" || d.Servers[0].Tools[0] != "fetch" {
		t.Errorf("servers: %+v", d.Servers)
	}
	if len(d.Participants) != 2 || d.Participants[1].ID != "*" || d.Participants[1].Permission != toolsagent.PermissionAlways {
		t.Errorf("participants: %+v", d.Participants)
	}
	schema, err := d.Tools[0].InputSchema()
	if err != nil {
		t.Fatal(err)
	}
	want := `{"type":"object","properties":{"n":{"type":"integer","minimum":1,"maximum":9},"m":{"type":"integer","minimum":1,"maximum":9},` +
		`"tags":{"type":"array","prefixItems":[{"type":"string"},{"type":"boolean"}],"uniqueItems":true},` +
		`"opts":{"type":"object","properties":{},"additionalProperties":{"type":"number"}},` +
		`"strict":{"type":"object","properties":{"a":{"type":"boolean","default":true}},"additionalProperties":false}},"required":["n"]}`
	if string(schema) != want {
		t.Errorf("input schema\n%s\nwant\n%s", schema, want)
	}
	prompt, err := d.Tools[0].Fill([]byte(`{"n":3}`))
	if err != nil || prompt != "n=3 {literal} t" {
		t.Errorf("Fill: %q, %v", prompt, err)
	}

	// Without a participants section, every participant may be used.
	d, err = toolsagent.Parse([]byte(head + oneTool("{type: string}", "{x}")))
	if err != nil {
		t.Fatal(err)
	}
	if len(d.Participants) != 1 || d.Participants[0].ID != "*" || d.Participants[0].Permission != toolsagent.PermissionNever {
		t.Errorf("default participants %+v", d.Participants)
	}
	if d.Timeout != toolsagent.DefaultTimeout || !d.Reasoning || d.MaxConcurrentCalls != toolsagent.DefaultMaxConcurrentCalls {
		t.Errorf("defaults %+v", d)
	}
}

// A JSON file is a YAML file.
func TestToolsAgentLoadJSON(t *testing.T) {
	doc := `{"name": "j", "version": "2", "description": "d", "mode": "tools", "timeout": "1m",
	  "tools": [{"name": "t", "description": "d", "prompt": "Say {word}",
	    "parameters": {"type": "object", "properties": {"word": {"type": "string", "default": "hi"}}}}]}`
	path := filepath.Join(t.TempDir(), "def.json")
	if err := os.WriteFile(path, []byte(doc), 0o600); err != nil {
		t.Fatal(err)
	}
	d, err := toolsagent.Load(path)
	if err != nil {
		t.Fatal(err)
	}
	if d.Dir != filepath.Dir(path) || d.Timeout != time.Minute {
		t.Errorf("%+v", d)
	}
	if p, err := d.Tools[0].Fill(nil); err != nil || p != "Say hi" {
		t.Errorf("Fill: %q, %v", p, err)
	}
	if _, err := toolsagent.Load(filepath.Join(t.TempDir(), "missing.yaml")); err == nil {
		t.Error("a missing file loaded")
	}
	bad := filepath.Join(t.TempDir(), "bad.yaml")
	if err := os.WriteFile(bad, []byte(head), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := toolsagent.Load(bad); err == nil || !strings.HasPrefix(err.Error(), "toolsagent: "+bad+": tools") {
		t.Errorf("error names the file: %v", err)
	}
}

// Hostile files: too large, alias bombs, deep nesting, garbage. None
// panics and each is refused with a reason.
func TestToolsAgentLoadHostile(t *testing.T) {
	// A billion laughs through merge keys: each level merges the one
	// below ten times.
	bomb := head + "x-laughs:\n  - &l0 {a: {type: string}}\n"
	for i := 1; i <= 9; i++ {
		bomb += fmt.Sprintf("  - &l%d {<<: [%s]}\n", i, strings.TrimSuffix(strings.Repeat(fmt.Sprintf("*l%d, ", i-1), 10), ", "))
	}
	bomb += "tools:\n  - name: t\n    description: d\n    prompt: \"{a}\"\n    parameters:\n      type: object\n      properties: *l9\n"
	deepSchema := "{type: string}"
	for range 40 {
		deepSchema = "{type: array, items: " + deepSchema + "}"
	}
	cases := []struct {
		name, doc, want string
	}{
		{"too large", head + "# " + strings.Repeat("x", toolsagent.MaxFileBytes) + "\n", "larger than 1048576 bytes"},
		{"alias bomb", bomb, "document expands to more than 100000 nodes"},
		{"deep flow nesting", head + "x: " + strings.Repeat("[", 20000), "exceeded max depth"},
		{"deep schema", head + oneTool(deepSchema, "{x}"), "schemas nested deeper than 16 levels"},
		{"garbage", "\x00\xff\xfe{{{[[[::::", ""},
		{"empty", "", "the file is empty"},
		{"a scalar", "hello", "want a mapping, got a string"},
		{"recursive alias", head + oneTool("&a {type: array, items: *a}", "{x}"), ""},
		{"recursive merge", head + oneTool("&a {type: object, <<: *a}", "{x}"), ""},
		// Unknown keys are compared with the known ones for a suggestion:
		// long ones cost nothing, and the key path shows them clipped.
		{"many long unknown keys", head + oneTool("{type: string}", "{x}") + strings.Repeat("k", 1000) + "0: 1\n" + manyKeys(900, 1000), "unknown key (a tools agent has"},
		{"unknown key with control characters", head + oneTool("{type: string}", "{x}") + "mcpServers:\n  s: {command: x, permission: never, \"\\e[31mcmd\": y}\n",
			`mcpServers.s["\u001b[31mcmd"] (line 15): unknown key in an MCP server`},
		{"alias of the wrong kind into a field", head + oneTool("{type: string}", "{x}") + "x-l: &l [1]\ntimeout: *l\n", "timeout (line 15): want a duration"},
		{"merge of a scalar into a server", head + oneTool("{type: string}", "{x}") + "mcpServers:\n  s: {<<: 3, command: x, permission: never}\n",
			"a merge (<<) wants a mapping or a list of mappings, got a number (3)"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			start := time.Now()
			_, err := toolsagent.Parse([]byte(c.doc))
			if err == nil {
				t.Fatal("loaded")
			}
			if c.want != "" && !strings.Contains(err.Error(), c.want) {
				t.Errorf("%.300v\nwant %q", err, c.want)
			}
			if d := time.Since(start); d > 5*time.Second {
				t.Errorf("took %s", d)
			}
		})
	}
}

// manyKeys writes n keys of size bytes each, with values.
func manyKeys(n, size int) string {
	var b strings.Builder
	for i := range n {
		fmt.Fprintf(&b, "%s%06d: 1\n", strings.Repeat("k", size-6), i)
	}
	return b.String()
}

// Merge keys (<<) feed the typed fields as if the members were written
// in place; members written in place win.
func TestToolsAgentLoadMerge(t *testing.T) {
	doc := head + oneTool("{type: string}", "{x}") + `x-server: &server {command: ./s, args: [-v], permission: always}
mcpServers:
  a: {<<: *server, permission: never}
  b: {<<: *server, cwd: w}
`
	d, err := toolsagent.Parse([]byte(doc))
	if err != nil {
		t.Fatal(err)
	}
	if len(d.Servers) != 2 || d.Servers[0].Permission != toolsagent.PermissionNever || d.Servers[0].Args[0] != "-v" ||
		d.Servers[1].Permission != toolsagent.PermissionAlways || d.Servers[1].Cwd != "w" || d.Servers[1].Command != "./s" {
		t.Errorf("servers %+v", d.Servers)
	}
}

// FuzzToolsAgentParse checks that no input makes Parse panic, and that
// what loads has tools whose prompts fill.
func FuzzToolsAgentParse(f *testing.F) {
	f.Add([]byte(head + oneTool("{type: string}", "use {x}")))
	f.Add([]byte(head + oneTool("{type: array, items: [{type: integer, enum: [1, 2]}]}", "{{x}} {x} {name}")))
	f.Add([]byte(`{"name":"j","mode":"tools","tools":[{"name":"t","prompt":"{a}","parameters":{"type":"object","properties":{"a":{"type":"number"}}}}]}`))
	f.Add([]byte("a: &a [*a]"))
	f.Fuzz(func(t *testing.T, data []byte) {
		d, err := toolsagent.Parse(data)
		if err != nil {
			return
		}
		for _, tl := range d.Tools {
			if _, err := tl.InputSchema(); err != nil {
				t.Fatal(err)
			}
			_, _ = tl.Fill([]byte(`{}`))
			_, _ = tl.Preview(nil)
		}
	})
}

// TestFaresDefinitionLoads: testdata/fares.yaml, which CI's conformance
// step serves, loads with its output schema.
func TestFaresDefinitionLoads(t *testing.T) {
	def, err := toolsagent.Load(filepath.Join("testdata", "fares.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	fare, ok := def.Tool("fare")
	if !ok || fare.Output == nil {
		t.Fatalf("fare: %+v", fare)
	}
	if out, err := fare.OutputSchema(); err != nil || !strings.Contains(string(out), `"required":["price","currency"]`) {
		t.Errorf("output schema %s, %v", out, err)
	}
}
