package llm_test

import (
	"context"
	"errors"
	"strings"
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
		// The reference's templates set OpenAI's URL and a model whether or
		// not there is a key: without one that is no choice of a server.
		{"OpenAI's URL without a key", map[string]string{"OPENAI_BASE_URL": "https://api.openai.com/v1", "OPENAI_MODEL": "gpt-5"}, llm.Config{}, "offline", llm.OfflineModel},
		{"public URL flag without a key", nil, llm.Config{BaseURL: "https://openrouter.ai/api/v1"}, "offline", llm.OfflineModel},
		{"public IP without a key", map[string]string{"OPENAI_BASE_URL": "http://8.8.8.8:8000/v1"}, llm.Config{}, "offline", llm.OfflineModel},
		{"OpenAI's URL with a key", map[string]string{"OPENAI_BASE_URL": "https://api.openai.com/v1", "OPENAI_API_KEY": "sk-1"}, llm.Config{}, "openai", llm.DefaultModel},
		{"OpenAI's URL forced without a key", map[string]string{"OPENAI_BASE_URL": "https://api.openai.com/v1"}, llm.Config{Provider: "openai"}, "openai", llm.DefaultModel},
		{"local network without a key", map[string]string{"OPENAI_BASE_URL": "http://192.168.1.20:8000/v1"}, llm.Config{}, "openai", llm.DefaultModel},
		{"compose service without a key", map[string]string{"OPENAI_BASE_URL": "http://ollama:11434/v1"}, llm.Config{}, "openai", llm.DefaultModel},
		{"localhost name without a key", map[string]string{"OPENAI_BASE_URL": "http://localhost:11434/v1"}, llm.Config{}, "openai", llm.DefaultModel},
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
				t.Errorf("model of %s: want %s", p.Name(), tc.model)
			}
		})
	}
}

// TestNeedsAPIKey: a server on the internet needs a key; one on this
// machine or the local network may not.
func TestNeedsAPIKey(t *testing.T) {
	for url, want := range map[string]bool{
		"https://api.openai.com/v1":      true,
		"https://openrouter.ai/api/v1":   true,
		"http://8.8.8.8/v1":              true,
		"http://[2001:db8::1]:8000/v1":   true,
		"http://localhost:11434/v1":      false,
		"http://127.0.0.1:8080/v1":       false,
		"http://[::1]:8080/v1":           false,
		"http://10.0.0.5:8000/v1":        false,
		"http://172.20.0.3:8000/v1":      false,
		"http://192.168.1.20/v1":         false,
		"http://169.254.1.1/v1":          false,
		"http://[fd00::5]:8000/v1":       false,
		"http://ollama:11434/v1":         false,
		"http://gpu-box.local:8000/v1":   false,
		"http://llm.corp.internal/v1":    false,
		"http://llm.home.arpa/v1":        false,
		"http://app.localhost:8000/v1":   false,
		"localhost:11434":                false, // not a URL: NewOpenAI says so
		"":                               false,
		"ftp://api.openai.com/v1":        false,
		"https://api.openai.com.evil/v1": true,
	} {
		if got := llm.NeedsAPIKey(url); got != want {
			t.Errorf("NeedsAPIKey(%q) = %v, want %v", url, got, want)
		}
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

// TestFromEnvBounds: MEW_LLM_MAX_RESPONSE_BYTES and MEW_LLM_MAX_ANSWER_TIME
// bound the provider FromEnv returns; malformed values are refused.
func TestFromEnvBounds(t *testing.T) {
	srv := testutil.NewLLMServer(t)
	srv.Script(testutil.LLMReply(strings.Repeat("x", 8<<10)))
	p, err := llm.FromEnv(env(map[string]string{"OPENAI_BASE_URL": srv.URL(), llm.EnvMaxResponseBytes: "4096", llm.EnvMaxAnswerTime: "30s"}), llm.Config{MaxRetries: -1})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := p.Complete(context.Background(), llm.Request{Messages: []llm.Message{user("hi")}}); !errors.Is(err, llm.ErrTooLarge) {
		t.Errorf("an 8 KiB answer with a 4 KiB bound: %v, want ErrTooLarge", err)
	}
	for _, bad := range []map[string]string{
		{llm.EnvMaxResponseBytes: "lots"}, {llm.EnvMaxResponseBytes: "-1"}, {llm.EnvMaxAnswerTime: "forever"}, {llm.EnvMaxAnswerTime: "0s"},
	} {
		bad["OPENAI_BASE_URL"] = srv.URL()
		if _, err := llm.FromEnv(env(bad), llm.Config{}); err == nil {
			t.Errorf("%v accepted", bad)
		}
	}
}
