package space

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

const notifySpace = `space: {id: s}
participants:
  alice: {tokens: [a]}
notify:
`

func TestNotifyWebhook(t *testing.T) {
	c, err := Parse([]byte(notifySpace+`  webhook:
    url: https://hooks.example.com/mew?x=1
    secret_env: MEW_HOOK_SECRET
    console_url: https://mew.example.com/
    timeout_ms: 5000
    max_attempts: 3
    backoff_ms: 100
`), "space.yaml")
	if err != nil {
		t.Fatal(err)
	}
	w := c.Notify.Webhook
	if w == nil || w.URL != "https://hooks.example.com/mew?x=1" || w.SecretEnv != "MEW_HOOK_SECRET" || w.ConsoleURL != "https://mew.example.com" ||
		w.Timeout != 5*time.Second || w.MaxAttempts != 3 || w.Backoff != 100*time.Millisecond {
		t.Errorf("webhook = %+v", w)
	}
	c, err = Parse([]byte(notifySpace+"  webhook: {url: 'http://127.0.0.1:9/x', secret_file: hook.secret}\n"), "space.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if w := c.Notify.Webhook; w.Timeout != DefaultWebhookTimeout || w.MaxAttempts != DefaultWebhookMaxAttempts || w.Backoff != DefaultWebhookBackoff || w.ConsoleURL != "" {
		t.Errorf("defaults = %+v", w)
	}
	if c, err := Parse([]byte(notifySpace+"  webhook:\n"), "space.yaml"); err != nil || c.Notify.Webhook != nil {
		t.Errorf("an empty webhook: %v %+v", err, c)
	}
}

// Malformed and hostile webhook settings are refused with their line and
// key path; unknown keys too, since a misspelt one would leave approvers
// unreached.
func TestNotifyWebhookRefused(t *testing.T) {
	long := "https://x.example/" + strings.Repeat("a", 3000)
	for _, tc := range []struct{ hook, want string }{
		{"[1]", "space.yaml:5: notify.webhook: want a mapping"},
		{"{secret_env: S}", "notify.webhook.url: is required"},
		{"{url: 'ftp://x.example/', secret_env: S}", `notify.webhook.url: want an http or https URL, got scheme "ftp"`},
		{"{url: 'file:///etc/passwd', secret_env: S}", `notify.webhook.url: want an http or https URL, got scheme "file"`},
		{"{url: 'javascript:alert(1)', secret_env: S}", "notify.webhook.url: want an http or https URL"},
		{"{url: '/relative', secret_env: S}", "notify.webhook.url: want an http or https URL"},
		{"{url: 'http://', secret_env: S}", "with a host"},
		{"{url: 'https://user:pw@x.example/', secret_env: S}", "leave user info out"},
		{"{url: 'http://x.example:port/', secret_env: S}", "notify.webhook.url: want an http or https URL"},
		{"{url: '" + long + "', secret_env: S}", "notify.webhook.url: 3018 bytes: at most 2048"},
		{"{url: 42, secret_env: S}", "notify.webhook.url: want a string"},
		{"{url: 'https://x.example/'}", "notify.webhook: needs secret_env or secret_file"},
		{"{url: 'https://x.example/', secret_env: S, secret_file: f}", "not both"},
		{"{url: 'https://x.example/', secret_env: 'A B'}", "notify.webhook.secret_env: want the name of an environment variable"},
		{"{url: 'https://x.example/', secret_env: ''}", "notify.webhook.secret_env"},
		{"{url: 'https://x.example/', secret_file: ''}", "notify.webhook.secret_file"},
		{"{url: 'https://x.example/', secret_env: S, console_url: 'https://x.example/?a=1'}", "notify.webhook.console_url: want a base URL"},
		{"{url: 'https://x.example/', secret_env: S, console_url: 'ws://x.example'}", "notify.webhook.console_url: want an http or https URL"},
		{"{url: 'https://x.example/', secret_env: S, timeout_ms: 0}", "notify.webhook.timeout_ms: want 1 to 60000"},
		{"{url: 'https://x.example/', secret_env: S, timeout_ms: 1h}", "notify.webhook.timeout_ms: want a whole number"},
		{"{url: 'https://x.example/', secret_env: S, max_attempts: 0}", "notify.webhook.max_attempts: want 1 to 20"},
		{"{url: 'https://x.example/', secret_env: S, max_attempts: 1000000000000}", "notify.webhook.max_attempts"},
		{"{url: 'https://x.example/', secret_env: S, backoff_ms: 99999999999}", "notify.webhook.backoff_ms: want 1 to 600000"},
		{"{url: 'https://x.example/', secret_env: S, secret: hunter2hunter2hunter2}", "notify.webhook.secret: unknown key"},
		{"{url: 'https://x.example/', secret_env: S, secert_file: x}", "did you mean secret_file?"},
	} {
		_, err := Parse([]byte(notifySpace+"  webhook: "+tc.hook+"\n"), "space.yaml")
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%.80s: %v, want %q", tc.hook, err, tc.want)
		}
		if err != nil && strings.Contains(err.Error(), "hunter2") {
			t.Errorf("%s: the error shows the secret: %v", tc.hook, err)
		}
	}
	if _, err := Parse([]byte(notifySpace+"  email: {to: x}\n"), "space.yaml"); err == nil || !strings.Contains(err.Error(), "notify.email: unknown key") {
		t.Errorf("notify.email: %v", err)
	}
}

// The secret comes from the environment or a file; a missing, short or
// oversized one is refused, and no error shows it.
func TestWebhookSecret(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "space.yaml")
	write := func(name, s string) {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(s), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	write("space.yaml", notifySpace+"  webhook: {url: 'https://x.example/', secret_file: hook.secret}\n")
	c, err := Load(path)
	if err != nil {
		t.Fatal(err)
	}
	const good = "correct-horse-battery-staple"
	write("hook.secret", good+"\n")
	if s, err := c.Notify.Webhook.Secret(c); err != nil || string(s) != good {
		t.Errorf("secret file: %q %v", s, err)
	}
	for _, tc := range []struct{ content, want string }{
		{"short-secret\n", "notify.webhook.secret_file: the secret is 12 bytes: at least 16"},
		{strings.Repeat("s", MaxWebhookSecret+1), "longer than 4096 bytes"},
	} {
		write("hook.secret", tc.content)
		s, err := c.Notify.Webhook.Secret(c)
		if err == nil || !strings.Contains(err.Error(), tc.want) || strings.Contains(err.Error(), tc.content[:8]) {
			t.Errorf("%.20q: %q %v, want %q", tc.content, s, err, tc.want)
		}
	}
	_ = os.Remove(filepath.Join(dir, "hook.secret"))
	if _, err := c.Notify.Webhook.Secret(c); err == nil || !strings.Contains(err.Error(), "notify.webhook.secret_file") {
		t.Errorf("missing file: %v", err)
	}

	env := &Webhook{SecretEnv: "MEW_TEST_HOOK_SECRET"}
	t.Setenv("MEW_TEST_HOOK_SECRET", "")
	if _, err := env.Secret(c); err == nil || !strings.Contains(err.Error(), "notify.webhook.secret_env: the environment variable MEW_TEST_HOOK_SECRET is not set") {
		t.Errorf("unset: %v", err)
	}
	t.Setenv("MEW_TEST_HOOK_SECRET", good)
	if s, err := env.Secret(c); err != nil || string(s) != good {
		t.Errorf("env: %q %v", s, err)
	}
}
