package agent_test

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/mew-protocol/mew/agent"
	"github.com/mew-protocol/mew/llm"
)

func TestConfigMergeJSON(t *testing.T) {
	c := agent.Config{Name: "keep", ReasoningEnabled: true, MaxIterations: 3}
	err := c.MergeJSON([]byte(`{"model":"m","autoRespond":true,"maxIterations":100,"conversationHistoryLength":0,
		"messageQueue":{"maxQueueSize":2,"dropStrategy":"oldest"},"apiKey":"k","logLevel":"debug","unknownKey":1,
		"prompts":{"classify":"C {input}"},"chatResponse":{"respondToQuestions":false,"confidenceThreshold":0.7},
		"discoveryWaitMs":0,"requestTimeout":3600000}`))
	if err != nil {
		t.Fatal(err)
	}
	no := false
	want := agent.Config{Name: "keep", Model: "m", ReasoningEnabled: true, AutoRespond: true, MaxIterations: 100,
		HistoryLength: -1, QueueSize: 2, APIKey: "k", DiscoveryWait: -1, ProposalTimeout: time.Hour, Prompts: agent.Prompts{Classify: "C {input}"},
		ChatResponse: agent.ChatResponse{RespondToQuestions: &no, ConfidenceThreshold: 0.7}}
	if !reflect.DeepEqual(c, want) {
		t.Errorf("got %+v\nwant %+v", c, want)
	}
	if err := c.MergeJSON([]byte(`{"thinkingEnabled":false}`)); err != nil || c.ReasoningEnabled {
		t.Errorf("thinkingEnabled: %v, %v", c.ReasoningEnabled, err)
	}
	err = c.MergeJSON([]byte(`{"floorControl":{"enabled":false,"minDelayMs":5,"maxDelayMs":10,"operators":["boss"]}}`))
	wantFloor := agent.FloorControl{Disabled: true, MinDelay: 5 * time.Millisecond, MaxDelay: 10 * time.Millisecond, Operators: []string{"boss"}}
	if err != nil || !reflect.DeepEqual(c.FloorControl, wantFloor) {
		t.Errorf("floorControl: %+v, %v", c.FloorControl, err)
	}
	if err := c.MergeJSON([]byte(`{"floorControl":{"minDelayMs":-1}}`)); err == nil {
		t.Error("a negative delay was accepted")
	}
}

func TestConfigMergeJSONRefuses(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{`[1]`, "cannot unmarshal"},
		{`{"maxIterations":"ten"}`, "maxIterations"},
		{`{"chatResponse":{"confidenceThreshold":2}}`, "confidenceThreshold"},
		{`{"reasoningFormat":"poetry"}`, "reasoningFormat"},
		{`{"name":"a"} {"name":"b"}`, "more than one"},
		{`{"name":`, "unexpected EOF"},
		{`{"requestTimeout":"1h"}`, "requestTimeout"},
	} {
		c := agent.Config{Name: "keep"}
		err := c.MergeJSON([]byte(tc.in))
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v, want an error with %q", tc.in, err, tc.want)
		}
		if c.Name != "keep" {
			t.Errorf("%s: a refused config changed the name to %q", tc.in, c.Name)
		}
	}
}

func TestLoadFile(t *testing.T) {
	dir := t.TempDir()
	yamlFile := filepath.Join(dir, "agent.yaml")
	if err := os.WriteFile(yamlFile, []byte(`
gateway: ws://localhost:8080
space: production
token: secret
participant_id: assistant-1
systemPrompt: "You are a helpful assistant"
thinkingEnabled: true
maxIterations: 10
reasoningFormat: scratchpad
chatResponse:
  respondToMentions: false
  answersPerMinute: 5
prompts:
  respond: "Say {observation}"
`), 0o600); err != nil {
		t.Fatal(err)
	}
	f, err := agent.LoadFile(yamlFile)
	if err != nil {
		t.Fatal(err)
	}
	no := false
	want := agent.File{Gateway: "ws://localhost:8080", Space: "production", Token: "secret", ParticipantID: "assistant-1",
		Config: agent.Config{SystemPrompt: "You are a helpful assistant", ReasoningEnabled: true, MaxIterations: 10,
			ReasoningFormat: agent.FormatScratchpad, Prompts: agent.Prompts{Respond: "Say {observation}"},
			ChatResponse: agent.ChatResponse{RespondToMentions: &no, AnswersPerMinute: 5}}}
	if !reflect.DeepEqual(f, want) {
		t.Errorf("got %+v\nwant %+v", f, want)
	}

	jsonFile := filepath.Join(dir, "agent.json")
	if err := os.WriteFile(jsonFile, []byte(`{"mockLLM": true, "autoRespond": true}`), 0o600); err != nil {
		t.Fatal(err)
	}
	f, err = agent.LoadFile(jsonFile)
	if err != nil || !f.Config.MockLLM || !f.Config.AutoRespond {
		t.Errorf("json file: %+v, %v", f, err)
	}
	p, err := f.Config.Provider(func(string) string { return "" })
	if err != nil || p.Name() != "offline" {
		t.Errorf("mockLLM provider: %v, %v", p, err)
	}
}

func TestLoadFileRefuses(t *testing.T) {
	for _, tc := range []struct{ name, in, want string }{
		{"unknown key", "maxIteration: 3", `unknown field "maxIteration"`},
		{"wrong type", "maxIterations: [1]", "maxIterations"},
		{"nested unknown", "chatResponse: {confidence: 1}", `unknown field "confidence"`},
		{"token not a string", "token: {a: 1}", "token: want a string"},
		{"not a mapping", "- a\n- b", "want a mapping, got a list"},
		{"bad yaml", "a: [", "invalid YAML"},
		{"oversized", "name: " + strings.Repeat("x", 300<<10), "larger than"},
		{"bad format", "reasoningFormat: poetry", "reasoningFormat"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := agent.ParseFile([]byte(tc.in))
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("%v, want an error with %q", err, tc.want)
			}
		})
	}
	if _, err := agent.LoadFile(filepath.Join(t.TempDir(), "missing.yaml")); err == nil {
		t.Error("a missing file loaded")
	}
	// A hostile YAML (a billion laughs) is refused quickly.
	bomb := "a: &a [x,x,x,x,x,x,x,x,x]\nb: &b [*a,*a,*a,*a,*a,*a,*a,*a,*a]\nc: &c [*b,*b,*b,*b,*b,*b,*b,*b,*b]\n" +
		"d: &d [*c,*c,*c,*c,*c,*c,*c,*c,*c]\ne: &e [*d,*d,*d,*d,*d,*d,*d,*d,*d]\nf: &f [*e,*e,*e,*e,*e,*e,*e,*e,*e]\n" +
		"g: &g [*f,*f,*f,*f,*f,*f,*f,*f,*f]\nh: &h [*g,*g,*g,*g,*g,*g,*g,*g,*g]\n"
	start := time.Now()
	if _, err := agent.ParseFile([]byte(bomb)); err == nil {
		t.Error("a YAML bomb was accepted")
	}
	if d := time.Since(start); d > 2*time.Second {
		t.Errorf("the YAML bomb took %v", d)
	}
}

func TestConfigProvider(t *testing.T) {
	env := map[string]string{llm.EnvBaseURL: "http://127.0.0.1:1/v1"}
	p, err := agent.Config{}.Provider(func(k string) string { return env[k] })
	if err != nil || p.Name() != "openai" {
		t.Errorf("with a base URL: %v, %v", p, err)
	}
	p, err = agent.Config{}.Provider(func(string) string { return "" })
	if err != nil || p.Name() != "offline" {
		t.Errorf("with nothing: %v, %v", p, err)
	}
}
