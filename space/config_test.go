package space

import (
	"encoding/json"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/mew-protocol/mew/capability"
)

func raws(patterns ...string) []json.RawMessage {
	out := make([]json.RawMessage, len(patterns))
	for i, p := range patterns {
		out[i] = json.RawMessage(p)
	}
	return out
}

// jsonEq compares json.RawMessage byte for byte (key order matters here).
var rawCmp = cmp.Comparer(func(a, b json.RawMessage) bool { return string(a) == string(b) })

func mustRead(t *testing.T, name string) []byte {
	t.Helper()
	data, err := os.ReadFile(filepath.Join("testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	return data
}

func TestParseExample(t *testing.T) {
	c, err := Parse(mustRead(t, "example.yaml"), "")
	if err != nil {
		t.Fatal(err)
	}
	want := &Config{
		Space: Info{ID: "demo", Name: "Demo space", DefaultParticipant: "me", UITheme: "deep-space"},
		Participants: []*Participant{
			{
				ID:           "me",
				DefaultTo:    map[string][]string{"chat": {"helper"}},
				Capabilities: raws(`{"kind":"*"}`),
			},
			{
				ID:      "helper",
				Command: "mew",
				Args:    []string{"agent", "run", "--gateway", "ws://localhost:${PORT}", "--space", "demo", "--token", "${TOKEN}", "--id", "helper"},
				Env: []EnvVar{
					{Name: "OPENAI_API_KEY", Value: "${OPENAI_API_KEY}"},
					{Name: "MEW_AGENT_CONFIG", Value: `{"mockLLM":true}`},
				},
				AutoStart: true,
				Capabilities: raws(
					`{"kind":"chat"}`,
					`{"kind":"reasoning/*"}`,
					`{"kind":"mcp/proposal"}`,
					`{"kind":"mcp/request","payload":{"method":"!tools/call"}}`,
					`{"kind":"mcp/request","payload":{"method":"tools/call","params":{"name":"read_*"}}}`,
				),
			},
			{
				ID:           "files",
				Type:         "mcp-bridge",
				AutoStart:    true,
				MCPServer:    &MCPServer{Command: "mew", Args: []string{"mcp", "filesystem", "./"}},
				Capabilities: raws(`{"kind":"mcp/response"}`, `{"kind":"mcp/request","payload":{"method":"tools/*"}}`),
			},
			{
				ID:           "watcher",
				Tokens:       []string{"watcher-secret"},
				OutputLog:    "./logs/watcher.jsonl",
				AutoConnect:  true,
				Capabilities: raws(`{"kind":"chat"}`),
			},
		},
		Defaults:     Defaults{Capabilities: raws(`{"kind":"chat"}`)},
		Logging:      Logging{Enabled: true, EnvelopeHistory: true, CapabilityDecisions: true},
		FloorControl: FloorControl{Enabled: true, TTL: 45 * time.Second},
	}
	if diff := cmp.Diff(want, c, rawCmp); diff != "" {
		t.Errorf("Parse mismatch (-want +got):\n%s", diff)
	}
	// Every participant's capabilities compile, and say what they should.
	set, err := capability.Compile(c.Participant("helper").Capabilities)
	if err != nil {
		t.Fatal(err)
	}
	if !set.Allows("mcp/request", []byte(`{"method":"tools/call","params":{"name":"read_file"}}`)) {
		t.Error("helper may not call read_file")
	}
	if set.Allows("mcp/request", []byte(`{"method":"tools/call","params":{"name":"write_file"}}`)) {
		t.Error("helper may call write_file")
	}
}

func TestParseAllKeys(t *testing.T) {
	c, err := Parse(mustRead(t, "allkeys.yaml"), "")
	if err != nil {
		t.Fatal(err)
	}
	want := &Config{
		Space: Info{
			ID: "all-keys", Name: "All keys", Description: "A space that sets everything",
			DefaultParticipant: "human", UITheme: "retro-term",
		},
		Participants: []*Participant{
			{
				ID:           "human",
				Tokens:       []string{"human-token-1", "human-token-2"},
				Capabilities: []json.RawMessage{},
				DefaultTo:    map[string][]string{"chat": {"agent", "bridge"}, "mcp/proposal": {"bridge"}},
				Fifo:         true,
				IO:           "http",
				OutputLog:    "/var/log/human.jsonl",
			},
			{
				ID:      "agent",
				Type:    "local",
				Command: "./agent",
				Args:    []string{"--port", "8080", "--verbose", "true", "${TOKEN}"},
				Env: []EnvVar{
					{Name: "B", Value: "second"},
					{Name: "A", Value: "1"},
					{Name: "EMPTY", Value: ""},
				},
				AutoStart:     true,
				RestartPolicy: "on-failure",
			},
			{
				ID:   "bridge",
				Type: "mcp-bridge",
				MCPServer: &MCPServer{
					Command: "node",
					Args:    []string{"server.js", "--root", "./data"},
					Env:     []EnvVar{{Name: "ROOT", Value: "./data"}, {Name: "DEBUG", Value: "1"}},
					Cwd:     "./servers",
				},
				BridgeConfig: map[string]any{
					"init_timeout":   30000.0,
					"reconnect":      true,
					"max_reconnects": 3.0,
					"extra":          map[string]any{"nested": []any{1.0, "two", nil}},
				},
			},
			{ID: "silent"},
		},
		Defaults: Defaults{
			Capabilities: raws(`{"kind":"chat"}`, `{"kind":["stream/request","stream/close"]}`),
			DefaultTo:    map[string][]string{"chat": {"human"}},
		},
		Logging:      Logging{Enabled: true, EnvelopeHistory: false, CapabilityDecisions: true},
		FloorControl: FloorControl{Enabled: false, TTL: 1500 * time.Millisecond},
		Unknown: []string{
			"defaults.routing.strategy",
			"gateway.host",
			"gateway_logging.capability_decisions.rotate",
			"participants.agent.colour",
			"participants.bridge.mcp_server.shell",
			"space.colour",
			"version",
		},
	}
	if diff := cmp.Diff(want, c, rawCmp); diff != "" {
		t.Errorf("Parse mismatch (-want +got):\n%s", diff)
	}
	if got := c.Capabilities(c.Participant("human")); got == nil || len(got) != 0 {
		t.Errorf("Capabilities(human) = %v, want empty (capabilities: [])", got)
	}
	if got := c.Capabilities(c.Participant("agent")); len(got) != 2 {
		t.Errorf("Capabilities(agent) = %s, want the two defaults", got)
	}
	if got := c.Capabilities(nil); len(got) != 2 {
		t.Errorf("Capabilities(nil) = %s, want the two defaults", got)
	}
	if c.Participant("nobody") != nil {
		t.Error(`Participant("nobody") != nil`)
	}
}

func TestParseDefaults(t *testing.T) {
	c, err := Parse([]byte("space: {id: s}\n"), "")
	if err != nil {
		t.Fatal(err)
	}
	want := &Config{
		Space:        Info{ID: "s"},
		Logging:      Logging{Enabled: true, EnvelopeHistory: true, CapabilityDecisions: true},
		FloorControl: FloorControl{Enabled: true, TTL: DefaultFloorTTL},
	}
	if diff := cmp.Diff(want, c, rawCmp); diff != "" {
		t.Errorf("mismatch (-want +got):\n%s", diff)
	}
}

func TestCapabilityJSON(t *testing.T) {
	tests := []struct {
		name, yaml, want string
	}{
		{"key order kept",
			`{kind: mcp/request, payload: {method: tools/call, params: {name: "read_*"}}}`,
			`{"kind":"mcp/request","payload":{"method":"tools/call","params":{"name":"read_*"}}}`},
		{"reverse order kept",
			`{payload: {z: 1, a: 2}, kind: chat}`,
			`{"payload":{"z":1,"a":2},"kind":"chat"}`},
		{"block style",
			"\n        kind: chat\n        payload:\n          text: hi",
			`{"kind":"chat","payload":{"text":"hi"}}`},
		{"scalars",
			`{kind: x, payload: {i: 5, neg: -3, hex: 0x1F, f: 1.5, e: 1e3, tiny: 1e-7, big: 18446744073709551615, t: true, f2: False, n: null, tilde: ~, s: "5", q: 'yes'}}`,
			`{"kind":"x","payload":{"i":5,"neg":-3,"hex":31,"f":1.5,"e":1000,"tiny":1e-7,"big":18446744073709551615,"t":true,"f2":false,"n":null,"tilde":null,"s":"5","q":"yes"}}`},
		{"lists and nesting",
			`{kind: [chat, "mcp/*"], payload: {method: [tools/list, tools/call], deep: [[1], {a: [b]}]}}`,
			`{"kind":["chat","mcp/*"],"payload":{"method":["tools/list","tools/call"],"deep":[[1],{"a":["b"]}]}}`},
		{"escapes, no HTML escaping",
			`{kind: chat, payload: {text: "a\"b\\c\n\t<&>\u2028\x01é"}}`,
			`{"kind":"chat","payload":{"text":"a\"b\\c\n\t<&>` + "\u2028" + `\u0001é"}}`},
		{"jsonpath and regex keys",
			`{kind: mcp/request, payload: {"$.params.name": "/^read_/", "**": secret}}`,
			`{"kind":"mcp/request","payload":{"$.params.name":"/^read_/","**":"secret"}}`},
		{"extra members kept",
			`{id: c1, kind: chat, description: talk}`,
			`{"id":"c1","kind":"chat","description":"talk"}`},
		{"timestamp stays text",
			`{kind: chat, payload: {date: 2001-12-14}}`,
			`{"kind":"chat","payload":{"date":"2001-12-14"}}`},
		{"empty payload",
			`{kind: chat, payload: {}}`,
			`{"kind":"chat","payload":{}}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			data := "space: {id: s}\nparticipants:\n  p:\n    capabilities:\n      - " + tt.yaml + "\n"
			c, err := Parse([]byte(data), "")
			if err != nil {
				t.Fatal(err)
			}
			if got := string(c.Participants[0].Capabilities[0]); got != tt.want {
				t.Errorf("got  %s\nwant %s", got, tt.want)
			}
			if !json.Valid(c.Participants[0].Capabilities[0]) {
				t.Errorf("not valid JSON: %s", c.Participants[0].Capabilities[0])
			}
		})
	}
}

func TestAnchorsAndMerges(t *testing.T) {
	data := `
space: {id: s}
x-common: &common
  - {kind: chat}
  - {kind: "reasoning/*"}
x-agent: &agent
  command: mew
  auto_start: true
  capabilities: *common
participants:
  a:
    <<: *agent
    args: [one]
  b:
    <<: *agent
    command: other
    capabilities:
      - <<: {kind: mcp/request, payload: {method: tools/list}}
        kind: mcp/response
`
	c, err := Parse([]byte(data), "")
	if err != nil {
		t.Fatal(err)
	}
	a, b := c.Participant("a"), c.Participant("b")
	if a.Command != "mew" || !a.AutoStart || len(a.Args) != 1 || len(a.Capabilities) != 2 {
		t.Errorf("a = %+v", a)
	}
	if b.Command != "other" || !b.AutoStart {
		t.Errorf("b = %+v", b)
	}
	if got, want := string(b.Capabilities[0]), `{"payload":{"method":"tools/list"},"kind":"mcp/response"}`; got != want {
		t.Errorf("merged capability = %s, want %s", got, want)
	}
	if diff := cmp.Diff([]string{"x-agent", "x-common"}, c.Unknown); diff != "" {
		t.Errorf("Unknown (-want +got):\n%s", diff)
	}
}

func TestParseErrors(t *testing.T) {
	tests := []struct {
		name string
		yaml string
		want string // the whole error message
	}{
		{"empty file", ``, `space.yaml: space.id: is required`},
		{"only a comment", "# nothing\n", `space.yaml: space.id: is required`},
		{"no space section", "participants: {}\n", `space.yaml:1: space.id: is required`},
		{"space without id", "space:\n  name: x\n", `space.yaml:2: space.id: is required`},
		{"space id invalid", "space: {id: a/b}\n", `space.yaml:1: space.id: invalid space id: contains '/'`},
		{"space id dotdot", "space: {id: ..}\n", `space.yaml:1: space.id: invalid space id: ".." is not a name`},
		{"space not a mapping", "space: demo\n", `space.yaml:1: space: want a mapping, got a string ("demo")`},
		{"top level list", "- a\n- b\n", `space.yaml:1: want a mapping at the top level, got a list`},
		{"top level scalar", "hello\n", `space.yaml:1: want a mapping at the top level, got a string ("hello")`},
		{"participants a list", "space: {id: s}\nparticipants: [a, b]\n", `space.yaml:2: participants: want a mapping, got a list`},
		{"participant id slash", "space: {id: s}\nparticipants:\n  a/b: {}\n", `space.yaml:3: participants.a/b: invalid participant id: contains '/'`},
		{"participant id dots", "space: {id: s}\nparticipants:\n  \"x..y\": {}\n", `space.yaml:3: participants.x..y: invalid participant id: contains ".."`},
		{"participant id control", "space: {id: s}\nparticipants:\n  \"a\\tb\": {}\n", `space.yaml:3: participants."a\tb": invalid participant id: contains a control character`},
		{"participant not a mapping", "space: {id: s}\nparticipants:\n  a: [x]\n", `space.yaml:3: participants.a: want a mapping, got a list`},
		{"capabilities a string", "space: {id: s}\nparticipants:\n  a:\n    capabilities: \"chat\"\n", `space.yaml:4: participants.a.capabilities: want a list of capabilities, got a string ("chat")`},
		{"capability a string", "space: {id: s}\nparticipants:\n  a:\n    capabilities: [chat]\n", `space.yaml:4: participants.a.capabilities[0]: want a capability mapping, got a string ("chat")`},
		{"capability without kind", "space: {id: s}\nparticipants:\n  helper:\n    capabilities:\n      - kind: chat\n      - payload: {x: 1}\n", `space.yaml:6: participants.helper.capabilities[1]: kind is required`},
		{"kind a number", "space: {id: s}\nparticipants:\n  a:\n    capabilities: [{kind: 5}]\n", `space.yaml:4: participants.a.capabilities[0].kind: want a string, got a number (5)`},
		{"kind a mapping", "space: {id: s}\nparticipants:\n  a:\n    capabilities: [{kind: {x: 1}}]\n", `space.yaml:4: participants.a.capabilities[0].kind: want a string, got a mapping`},
		{"kind empty", "space: {id: s}\nparticipants:\n  a:\n    capabilities: [{kind: \"\"}]\n", `space.yaml:4: participants.a.capabilities[0].kind: must not be empty`},
		{"kind list with number", "space: {id: s}\nparticipants:\n  a:\n    capabilities: [{kind: [chat, 3]}]\n", `space.yaml:4: participants.a.capabilities[0].kind[1]: want a string, got a number (3)`},
		{"bad regex", "space: {id: s}\nparticipants:\n  a:\n    capabilities:\n      - kind: chat\n      - kind: mcp/request\n        payload: {params: {name: \"/(/\"}}\n", `space.yaml:6: participants.a.capabilities[1].payload.params.name: invalid regular expression: error parsing regexp: missing closing ): ` + "`(`"},
		{"bad payload", "space: {id: s}\ndefaults:\n  capabilities:\n    - {kind: chat, payload: 5}\n", `space.yaml:4: defaults.capabilities[0].payload: invalid capability pattern: want an object, got number`},
		{"infinite number", "space: {id: s}\nparticipants:\n  a:\n    capabilities: [{kind: x, payload: {n: .inf}}]\n", `space.yaml:4: participants.a.capabilities[0].payload.n: .inf cannot be written as JSON`},
		{"tokens a string", "space: {id: s}\nparticipants:\n  a:\n    tokens: secret-abc\n", `space.yaml:4: participants.a.tokens: want a list of tokens, got a string`},
		{"token empty", "space: {id: s}\nparticipants:\n  a:\n    tokens: [\"\"]\n", `space.yaml:4: participants.a.tokens[0]: a token must not be empty`},
		{"token null", "space: {id: s}\nparticipants:\n  a:\n    tokens: [ok-token, null]\n", `space.yaml:4: participants.a.tokens[1]: want a token, got null`},
		{"token a mapping", "space: {id: s}\nparticipants:\n  a:\n    tokens: [{t: x}]\n", `space.yaml:4: participants.a.tokens[0]: want a string, got a mapping`},
		{"token twice", "space: {id: s}\nparticipants:\n  a:\n    tokens: [tok-1, tok-1]\n", `space.yaml:4: participants.a.tokens[1]: the same token is listed twice`},
		{"token shared", "space: {id: s}\nparticipants:\n  a:\n    tokens: [tok-1]\n  b:\n    tokens: [tok-2, tok-1]\n", `space.yaml:6: participants.b.tokens[1]: the same token is listed for participant "a"; a token must identify one participant`},
		{"token newline", "space: {id: s}\nparticipants:\n  a:\n    tokens: [\"x\\ny\"]\n", `space.yaml:4: participants.a.tokens[0]: a token must not contain control characters`},
		{"auto_start words", "space: {id: s}\nparticipants:\n  x:\n    auto_start: yes please\n", `space.yaml:4: participants.x.auto_start: want a boolean, got a string ("yes please")`},
		{"auto_start yes", "space: {id: s}\nparticipants:\n  x:\n    auto_start: yes\n", `space.yaml:4: participants.x.auto_start: want a boolean, got a string ("yes")`},
		{"fifo number", "space: {id: s}\nparticipants:\n  x:\n    fifo: 1\n", `space.yaml:4: participants.x.fifo: want a boolean, got a number (1)`},
		{"command a list", "space: {id: s}\nparticipants:\n  x:\n    command: [a]\n", `space.yaml:4: participants.x.command: want a string, got a list`},
		{"args a string", "space: {id: s}\nparticipants:\n  x:\n    args: \"--a --b\"\n", `space.yaml:4: participants.x.args: want a list, got a string ("--a --b")`},
		{"args item a mapping", "space: {id: s}\nparticipants:\n  x:\n    args: [a, {b: c}]\n", `space.yaml:4: participants.x.args[1]: want a string, got a mapping`},
		{"env a list", "space: {id: s}\nparticipants:\n  x:\n    env: [A=1]\n", `space.yaml:4: participants.x.env: want a mapping, got a list`},
		{"env bad name", "space: {id: s}\nparticipants:\n  x:\n    env: {\"A=B\": 1}\n", `space.yaml:4: participants.x.env.A=B: invalid environment variable name`},
		{"env value a list", "space: {id: s}\nparticipants:\n  x:\n    env: {A: [1]}\n", `space.yaml:4: participants.x.env.A: want a string, got a list`},
		{"default_to a list", "space: {id: s}\nparticipants:\n  x:\n    default_to: [a]\n", `space.yaml:4: participants.x.default_to: want a mapping, got a list`},
		{"default_to chat a string", "space: {id: s}\nparticipants:\n  x:\n    default_to: {chat: a}\n", `space.yaml:4: participants.x.default_to.chat: want a list, got a string ("a")`},
		{"mcp_server a string", "space: {id: s}\nparticipants:\n  x:\n    mcp_server: npx server\n", `space.yaml:4: participants.x.mcp_server: want a mapping, got a string ("npx server")`},
		{"mcp_server args", "space: {id: s}\nparticipants:\n  x:\n    mcp_server: {command: a, args: b}\n", `space.yaml:4: participants.x.mcp_server.args: want a list, got a string ("b")`},
		{"bridge_config a list", "space: {id: s}\nparticipants:\n  x:\n    bridge_config: [1]\n", `space.yaml:4: participants.x.bridge_config: want a mapping, got a list`},
		{"defaults capabilities", "space: {id: s}\ndefaults:\n  capabilities: {kind: chat}\n", `space.yaml:3: defaults.capabilities: want a list of capabilities, got a mapping`},
		{"defaults routing", "space: {id: s}\ndefaults:\n  routing:\n    default_to: {chat: [a, [b]]}\n", `space.yaml:4: defaults.routing.default_to.chat[1]: want a string, got a list`},
		{"logging enabled", "space: {id: s}\ngateway_logging: {enabled: off}\n", `space.yaml:2: gateway_logging.enabled: want a boolean, got a string ("off")`},
		{"logging sub", "space: {id: s}\ngateway_logging: {envelope_history: {enabled: 0}}\n", `space.yaml:2: gateway_logging.envelope_history.enabled: want a boolean, got a number (0)`},
		{"logging sub string", "space: {id: s}\ngateway_logging: {capability_decisions: no}\n", `space.yaml:2: gateway_logging.capability_decisions: want a mapping, got a string ("no")`},
		{"floor ttl string", "space: {id: s}\nfloor_control: {ttl_ms: 5s}\n", `space.yaml:2: floor_control.ttl_ms: want a whole number of milliseconds, got a string ("5s")`},
		{"floor ttl zero", "space: {id: s}\nfloor_control: {ttl_ms: 0}\n", `space.yaml:2: floor_control.ttl_ms: want 1 to 86400000 milliseconds, got 0`},
		{"floor ttl float", "space: {id: s}\nfloor_control: {ttl_ms: 1.5}\n", `space.yaml:2: floor_control.ttl_ms: want a whole number of milliseconds, got a number (1.5)`},
		{"gateway a number", "space: {id: s}\ngateway: 8080\n", `space.yaml:2: gateway: want a mapping, got a number (8080)`},
		{"non-string key", "space: {id: s}\nparticipants:\n  1: {}\n", `space.yaml:3: participants: want a string key, got a number (1)`},
		{"null key", "space: {id: s}\n? null\n: x\n", `space.yaml:2: want a string key, got null`},
		{"list key", "space: {id: s}\n? [a]\n: x\n", `space.yaml:2: want a string key, got a list`},
		{"non-string key in capability", "space: {id: s}\ndefaults:\n  capabilities: [{kind: chat, payload: {true: x}}]\n", `space.yaml:3: defaults.capabilities[0].payload: want a string key, got a boolean (true)`},
		{"duplicate key", "space: {id: s}\nparticipants:\n  a: {}\n  a: {}\n", `space.yaml:4: participants.a: duplicate key`},
		{"duplicate top key", "space: {id: s}\nspace: {id: t}\n", `space.yaml:2: space: duplicate key`},
		{"unsupported tag", "space: {id: !secret s}\n", `space.yaml:1: space.id: unsupported YAML tag !secret`},
		{"bad merge", "space: {id: s}\nparticipants:\n  a: {<<: 5}\n", `space.yaml:3: participants.a: a merge (<<) wants a mapping or a list of mappings, got a number (5)`},
		{"two documents", "space: {id: s}\n---\nspace: {id: t}\n", `space.yaml:2: more than one YAML document`},
		{"syntax error", "space: {id: s\n", `space.yaml:1: invalid YAML: did not find expected ',' or '}'`},
		{"tab indented", "space:\n\tid: s\n", `space.yaml:2: invalid YAML: found character that cannot start any token`},
		{"unknown anchor", "space: {id: *nope}\n", `space.yaml: invalid YAML: unknown anchor 'nope' referenced`},
		{"self-referencing alias", "space: &a {id: s, more: *a}\n", `space.yaml:1: alias *a refers to a node that contains it`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, err := Parse([]byte(tt.yaml), "")
			if err == nil {
				t.Fatalf("no error; got %+v", c)
			}
			var ce *ConfigError
			if !errors.As(err, &ce) {
				t.Fatalf("error %T %q is not a *ConfigError", err, err)
			}
			if got := err.Error(); got != tt.want {
				t.Errorf("error\n got  %s\n want %s", got, tt.want)
			}
		})
	}
}

func TestCompileErrorUnwraps(t *testing.T) {
	_, err := Parse([]byte("space: {id: s}\ndefaults:\n  capabilities: [{kind: chat}, {kind: x, payload: {\"$.[\": 1}}]\n"), "x/space.yaml")
	var ce *capability.CompileError
	if !errors.As(err, &ce) {
		t.Fatalf("error %v does not unwrap to a *capability.CompileError", err)
	}
	if !errors.Is(err, capability.ErrBadJSONPath) {
		t.Errorf("error %v is not ErrBadJSONPath", err)
	}
	if !strings.HasPrefix(err.Error(), "x/space.yaml:3: defaults.capabilities[1].payload") {
		t.Errorf("error %q", err)
	}
}

func TestIDErrorUnwraps(t *testing.T) {
	_, err := Parse([]byte("space: {id: s}\nparticipants: {\"a\\\\b\": {}}\n"), "")
	if !errors.Is(err, ErrInvalidParticipantID) {
		t.Errorf("error %v does not wrap ErrInvalidParticipantID", err)
	}
}

func TestScalarsAsText(t *testing.T) {
	c, err := Parse([]byte("space: {id: 42, name: 2024-01-02, description: true}\nparticipants:\n  p: {command: 7, env: {N: 1.50}, tokens: [12345]}\n"), "")
	if err != nil {
		t.Fatal(err)
	}
	if c.Space.ID != "42" || c.Space.Name != "2024-01-02" || c.Space.Description != "true" {
		t.Errorf("Space = %+v", c.Space)
	}
	p := c.Participants[0]
	if p.Command != "7" || p.Env[0].Value != "1.50" || p.Tokens[0] != "12345" {
		t.Errorf("participant = %+v", p)
	}
}

func TestLogSwitchShorthand(t *testing.T) {
	c, err := Parse([]byte("space: {id: s}\ngateway_logging: {envelope_history: false, capability_decisions: {enabled: false}}\n"), "")
	if err != nil {
		t.Fatal(err)
	}
	if want := (Logging{Enabled: true}); c.Logging != want {
		t.Errorf("Logging = %+v, want %+v", c.Logging, want)
	}
}

func TestLoad(t *testing.T) {
	example := mustRead(t, "example.yaml")
	dir := t.TempDir()
	path := filepath.Join(dir, "space.yaml")
	if err := os.WriteFile(path, example, 0o644); err != nil {
		t.Fatal(err)
	}
	t.Chdir(dir)
	c, err := Load("space.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if c.Path != path || c.Dir != dir || c.MewDir != dir {
		t.Errorf("Path, Dir, MewDir = %q, %q, %q; want %q, %q, %q", c.Path, c.Dir, c.MewDir, path, dir, dir)
	}
	if got, want := c.Resolve(c.Participant("watcher").OutputLog), filepath.Join(dir, "logs", "watcher.jsonl"); got != want {
		t.Errorf("Resolve(output_log) = %q, want %q", got, want)
	}
	if got := c.Resolve("/abs/x"); got != "/abs/x" {
		t.Errorf("Resolve(/abs/x) = %q", got)
	}
	if got := c.Resolve(""); got != "" {
		t.Errorf(`Resolve("") = %q`, got)
	}

	// With a .mew directory beside it, the state goes there.
	if err := os.Mkdir(filepath.Join(dir, ".mew"), 0o755); err != nil {
		t.Fatal(err)
	}
	if c, err = Load(path); err != nil {
		t.Fatal(err)
	}
	if want := filepath.Join(dir, ".mew"); c.MewDir != want {
		t.Errorf("MewDir = %q, want %q", c.MewDir, want)
	}

	// The mew init layout: .mew/space.yaml, .mew/.mew absent ⇒ MewDir = .mew.
	inner := filepath.Join(dir, ".mew", "space.yaml")
	if err := os.WriteFile(inner, example, 0o644); err != nil {
		t.Fatal(err)
	}
	if c, err = Load(inner); err != nil {
		t.Fatal(err)
	}
	if want := filepath.Join(dir, ".mew"); c.Dir != want || c.MewDir != want {
		t.Errorf("Dir, MewDir = %q, %q; want %q", c.Dir, c.MewDir, want)
	}
}

func TestLoadErrors(t *testing.T) {
	dir := t.TempDir()
	_, err := Load(filepath.Join(dir, "missing.yaml"))
	var ce *ConfigError
	if !errors.As(err, &ce) || !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("missing file: %v (%T), want a *ConfigError wrapping fs.ErrNotExist", err, err)
	}
	if _, err := Load(dir); !errors.As(err, &ce) {
		t.Errorf("directory: %v, want a *ConfigError", err)
	}
	bad := filepath.Join(dir, "bad.yaml")
	if err := os.WriteFile(bad, []byte("space: {id: s}\nparticipants: [a]\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	_, err = Load(bad)
	if want := bad + ":2: participants: want a mapping, got a list"; err == nil || err.Error() != want {
		t.Errorf("error %v, want %s", err, want)
	}
}

func TestFindConfig(t *testing.T) {
	dir := t.TempDir()
	_, err := FindConfig(dir)
	if !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("empty dir: %v, want fs.ErrNotExist", err)
	}
	for _, name := range []string{filepath.Join(".mew", "space.yaml"), "space.yaml"} {
		if !strings.Contains(err.Error(), filepath.Join(dir, name)) {
			t.Errorf("error %q does not name %s", err, name)
		}
	}

	plain := filepath.Join(dir, "space.yaml")
	if err := os.WriteFile(plain, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if got, err := FindConfig(dir); err != nil || got != plain {
		t.Errorf("FindConfig = %q, %v; want %q", got, err, plain)
	}

	// A directory named like the file does not count.
	if err := os.MkdirAll(filepath.Join(dir, ".mew", "space.yaml"), 0o755); err != nil {
		t.Fatal(err)
	}
	if got, err := FindConfig(dir); err != nil || got != plain {
		t.Errorf("FindConfig = %q, %v; want %q", got, err, plain)
	}
	if err := os.Remove(filepath.Join(dir, ".mew", "space.yaml")); err != nil {
		t.Fatal(err)
	}

	inner := filepath.Join(dir, ".mew", "space.yaml")
	if err := os.WriteFile(inner, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if got, err := FindConfig(dir); err != nil || got != inner {
		t.Errorf("FindConfig = %q, %v; want %q (.mew first)", got, err, inner)
	}
}

func TestValidParticipantID(t *testing.T) {
	tests := []struct {
		id string
		ok bool
	}{
		{"a", true},
		{"helper", true},
		{"mcp-fs-bridge", true},
		{"agent_1.v2", true},
		{".hidden", true},
		{"üser 名前", true},
		{strings.Repeat("x", 256), true},
		{"", false},
		{strings.Repeat("x", 257), false},
		{".", false},
		{"..", false},
		{"../x", false},
		{"a..b", false},
		{"a/b", false},
		{`a\b`, false},
		{"a\x00b", false},
		{"a\nb", false},
		{"a\x7fb", false},
		{"a\u0085b", false},
		{"\xff", false},
	}
	for _, tt := range tests {
		err := ValidParticipantID(tt.id)
		if (err == nil) != tt.ok {
			t.Errorf("ValidParticipantID(%q) = %v, want ok=%v", tt.id, err, tt.ok)
		}
		if err != nil && !errors.Is(err, ErrInvalidParticipantID) {
			t.Errorf("ValidParticipantID(%q) = %v, not wrapping ErrInvalidParticipantID", tt.id, err)
		}
	}
}

// TestMewLayout: with .mew/space.yaml the space directory is the parent of
// .mew, where relative paths point and state lives in .mew.
func TestMewLayout(t *testing.T) {
	dir := t.TempDir()
	if err := os.Mkdir(filepath.Join(dir, ".mew"), 0o755); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, ".mew", "space.yaml")
	if err := os.WriteFile(path, []byte("space: {id: s}\nparticipants:\n  w: {output_log: ./logs/w.jsonl}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	c, err := Load(path)
	if err != nil {
		t.Fatal(err)
	}
	if c.SpaceDir() != dir || c.MewDir != filepath.Join(dir, ".mew") {
		t.Errorf("SpaceDir %q, MewDir %q", c.SpaceDir(), c.MewDir)
	}
	if got, want := c.Resolve(c.Participant("w").OutputLog), filepath.Join(dir, "logs", "w.jsonl"); got != want {
		t.Errorf("Resolve = %q, want %q", got, want)
	}
}

// TestProposalTimeoutDefault: defaults.proposal_timeout_ms is read as a
// duration, refused out of range or not a whole number, and handed by the
// launcher to the participants it starts.
func TestProposalTimeoutDefault(t *testing.T) {
	cfg, err := Parse([]byte("space: {id: s}\nparticipants: {a: {tokens: [x]}}\ndefaults: {proposal_timeout_ms: 3600000}\n"), "/tmp/space.yaml")
	if err != nil || cfg.Defaults.ProposalTimeout != time.Hour {
		t.Fatalf("%v, %v", cfg.Defaults.ProposalTimeout, err)
	}
	for _, bad := range []string{"0", "-1", "1h", "999999999999", "[1]"} {
		_, err := Parse([]byte("space: {id: s}\nparticipants: {a: {tokens: [x]}}\ndefaults: {proposal_timeout_ms: "+bad+"}\n"), "/tmp/space.yaml")
		if err == nil || !strings.Contains(err.Error(), "defaults.proposal_timeout_ms") {
			t.Errorf("proposal_timeout_ms: %s: %v", bad, err)
		}
	}
}
