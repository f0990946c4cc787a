package llm_test

import (
	"context"
	"testing"

	"github.com/mew-protocol/mew/internal/testutil"
	"github.com/mew-protocol/mew/llm"
)

func env(vars map[string]string) func(string) string {
	return func(k string) string { return vars[k] }
}

func TestFromEnvSelects(t *testing.T) {
	for _, tc := range []struct {
		name      string
		vars      map[string]string
		overrides llm.Config
		provider  string // "" for an error
		model     string
	}{
		{"nothing configured", nil, llm.Config{}, "offline", llm.OfflineModel},
		{"only a model", map[string]string{"OPENAI_MODEL": "gpt-x"}, llm.Config{}, "offline", llm.OfflineModel},
		{"API key", map[string]string{"OPENAI_API_KEY": "sk-1"}, llm.Config{}, "openai", llm.DefaultModel},
		{"API key and model", map[string]string{"OPENAI_API_KEY": "sk-1", "OPENAI_MODEL": "gpt-x"}, llm.Config{}, "openai", "gpt-x"},
		{"base URL alone (Ollama)", map[string]string{"OPENAI_BASE_URL": "http://127.0.0.1:11434/v1"}, llm.Config{Model: "llama3.2"}, "openai", "llama3.2"},
		{"flag base URL", nil, llm.Config{BaseURL: "http://127.0.0.1:8080/v1"}, "openai", llm.DefaultModel},
		{"flag model wins", map[string]string{"OPENAI_API_KEY": "sk-1", "OPENAI_MODEL": "gpt-x"}, llm.Config{Model: "gpt-y"}, "openai", "gpt-y"},
		{"forced offline", map[string]string{"OPENAI_API_KEY": "sk-1"}, llm.Config{Provider: "offline"}, "offline", llm.OfflineModel},
		{"forced openai without key", nil, llm.Config{Provider: "openai"}, "", ""},
		{"unknown provider", nil, llm.Config{Provider: "gemini"}, "", ""},
		{"bad base URL", map[string]string{"OPENAI_BASE_URL": "localhost:11434"}, llm.Config{}, "", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p, err := llm.FromEnv(env(tc.vars), tc.overrides)
			if tc.provider == "" {
				if err == nil {
					t.Fatalf("got %s, want an error", p.Name())
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if p.Name() != tc.provider {
				t.Errorf("provider %s, want %s", p.Name(), tc.provider)
			}
			if m, ok := p.(interface{ Model() string }); !ok || m.Model() != tc.model {
				t.Errorf("model %v, want %s", m, tc.model)
			}
		})
	}
}

func TestFromEnvReachesServer(t *testing.T) {
	srv := testutil.NewLLMServer(t)
	srv.Script(testutil.LLMReply("hello from the server"))
	p, err := llm.FromEnv(env(map[string]string{"OPENAI_BASE_URL": srv.URL(), "OPENAI_MODEL": "local-model"}), llm.Config{})
	if err != nil {
		t.Fatal(err)
	}
	resp, err := p.Complete(context.Background(), llm.Request{Messages: []llm.Message{user("hi")}})
	if err != nil {
		t.Fatal(err)
	}
	if resp.Content != "hello from the server" {
		t.Errorf("content %q", resp.Content)
	}
	r := srv.Requests()[0]
	if r.Model != "local-model" || r.Header.Get("Authorization") != "" {
		t.Errorf("model %q, Authorization %q: no key was configured", r.Model, r.Header.Get("Authorization"))
	}
}
