package space

import (
	"bytes"
	"fmt"
	"io"
	"net/url"
	"os"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/mew-protocol/mew/internal/yamlx"
)

// Notify is the notify section: how the gateway reaches the people a
// governed proposal awaits (docs/approvals.md).
type Notify struct {
	// Webhook, when set, is where the gateway posts a signed notification
	// for each approver a proposal awaits.
	Webhook *Webhook
}

// Webhook is notify.webhook.
type Webhook struct {
	// URL is where notifications are posted: http or https, without
	// user info.
	URL string
	// SecretEnv names the environment variable holding the signing secret;
	// SecretFile, the file holding it (relative to the space directory).
	// Exactly one is set. Secret reads it.
	SecretEnv, SecretFile string
	// ConsoleURL is the gateway's base URL as people open it
	// (https://mew.example.com); the one-time console link of a
	// notification starts with it. "" leaves links relative ("/console/#…").
	ConsoleURL string
	// Timeout bounds one attempt (default 10 s); MaxAttempts is how many
	// attempts a notification gets before it goes to the dead-letter log
	// (default 8); Backoff is the wait before the first retry (default 2 s),
	// doubled for each next one up to MaxWebhookBackoff.
	Timeout     time.Duration
	MaxAttempts int
	Backoff     time.Duration

	line int // of the webhook's mapping, for Secret's errors
}

// Webhook limits and defaults.
const (
	DefaultWebhookTimeout     = 10 * time.Second
	DefaultWebhookMaxAttempts = 8
	DefaultWebhookBackoff     = 2 * time.Second
	// MaxWebhookBackoff caps the wait between two attempts.
	MaxWebhookBackoff = 10 * time.Minute
	// MinWebhookSecret and MaxWebhookSecret bound the signing secret in
	// bytes: shorter is guessable, longer is no secret file.
	MinWebhookSecret = 16
	MaxWebhookSecret = 4096

	maxWebhookTimeout  = time.Minute
	maxWebhookAttempts = 20
	maxWebhookURL      = 2048
)

// notify reads the notify section. Unlike most of space.yaml, an unknown
// key here is an error: a misspelt secret or URL key would otherwise leave
// approvers unreached without a word.
func (p *parser) notify(n *yaml.Node, key string, c *Config) error {
	if isNull(deref(n)) {
		return nil
	}
	var raw struct {
		Webhook *yaml.Node `yaml:"webhook,node"`
	}
	nodes, errs := yamlx.Fields(n, key, &raw, yamlx.FieldOptions{Lenient: true})
	if len(errs) > 0 {
		return errs[0]
	}
	v, ok := nodes["webhook"]
	if !ok || isNull(deref(v)) {
		return nil
	}
	w, err := webhook(v, joinKey(key, "webhook"))
	if err != nil {
		return err
	}
	c.Notify.Webhook = w
	return nil
}

// webhook reads notify.webhook.
func webhook(n *yaml.Node, key string) (*Webhook, error) {
	w := &Webhook{Timeout: DefaultWebhookTimeout, MaxAttempts: DefaultWebhookMaxAttempts, Backoff: DefaultWebhookBackoff, line: deref(n).Line}
	var none struct{}
	_, errs := yamlx.Fields(n, key, &none, yamlx.FieldOptions{Lenient: true, Readers: map[string]yamlx.Reader{
		"url": func(v *yaml.Node, k string) (err error) {
			w.URL, err = hookURL(v, k, false)
			return err
		},
		"console_url": func(v *yaml.Node, k string) (err error) {
			w.ConsoleURL, err = hookURL(v, k, true)
			w.ConsoleURL = strings.TrimRight(w.ConsoleURL, "/")
			return err
		},
		"secret_env": func(v *yaml.Node, k string) (err error) {
			if w.SecretEnv, err = yamlx.StrictString(v, k); err == nil && !envName(w.SecretEnv) {
				err = yamlx.Errorf(v, k, "want the name of an environment variable (letters, digits and _), got %q", showSome(w.SecretEnv))
			}
			return err
		},
		"secret_file": func(v *yaml.Node, k string) (err error) {
			if w.SecretFile, err = yamlx.StrictString(v, k); err == nil && (w.SecretFile == "" || len(w.SecretFile) > 4096 || strings.ContainsRune(w.SecretFile, 0)) {
				err = yamlx.Errorf(v, k, "want the path of the file holding the secret")
			}
			return err
		},
		"timeout_ms": func(v *yaml.Node, k string) (err error) {
			w.Timeout, err = milliseconds(v, k, DefaultWebhookTimeout, maxWebhookTimeout)
			return err
		},
		"backoff_ms": func(v *yaml.Node, k string) (err error) {
			w.Backoff, err = milliseconds(v, k, DefaultWebhookBackoff, MaxWebhookBackoff)
			return err
		},
		"max_attempts": func(v *yaml.Node, k string) (err error) {
			if isNull(deref(v)) {
				return nil
			}
			if w.MaxAttempts, err = yamlx.Count(v, k); err == nil && (w.MaxAttempts < 1 || w.MaxAttempts > maxWebhookAttempts) {
				err = yamlx.Errorf(v, k, "want 1 to %d, got %d", maxWebhookAttempts, w.MaxAttempts)
			}
			return err
		},
	}})
	if len(errs) > 0 {
		return nil, errs[0]
	}
	switch {
	case w.URL == "":
		return nil, yamlx.Errorf(n, joinKey(key, "url"), "is required: where the gateway posts notifications")
	case w.SecretEnv == "" && w.SecretFile == "":
		return nil, yamlx.Errorf(n, key, "needs secret_env or secret_file: the secret notifications are signed with")
	case w.SecretEnv != "" && w.SecretFile != "":
		return nil, yamlx.Errorf(n, key, "give secret_env or secret_file, not both")
	}
	return w, nil
}

// hookURL reads an http or https URL with a host and without user info
// (which would put a password in the configuration and in logs); base
// also refuses a query or fragment, which a link's own would follow.
func hookURL(n *yaml.Node, key string, base bool) (string, error) {
	s, err := yamlx.StrictString(n, key)
	if err != nil {
		return "", err
	}
	if len(s) > maxWebhookURL {
		return "", yamlx.Errorf(n, key, "%d bytes: at most %d", len(s), maxWebhookURL)
	}
	u, err := url.Parse(s)
	switch {
	case err != nil:
		return "", yamlx.Errorf(n, key, "want an http or https URL, got %q", showSome(s))
	case u.Scheme != "http" && u.Scheme != "https":
		return "", yamlx.Errorf(n, key, "want an http or https URL, got scheme %q", showSome(u.Scheme))
	case u.Host == "" || u.Hostname() == "":
		return "", yamlx.Errorf(n, key, "want an http or https URL with a host")
	case u.User != nil:
		return "", yamlx.Errorf(n, key, "leave user info out of the URL (it would be logged); put credentials in its path or the secret")
	case base && (u.RawQuery != "" || u.Fragment != "" || u.ForceQuery):
		return "", yamlx.Errorf(n, key, "want a base URL without a query or fragment")
	}
	return s, nil
}

// envName reports whether s is a plausible environment variable name.
func envName(s string) bool {
	if s == "" || len(s) > 256 || s[0] >= '0' && s[0] <= '9' {
		return false
	}
	for _, r := range s {
		if !(r == '_' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9') {
			return false
		}
	}
	return true
}

// showSome shortens what is echoed of a value in an error.
func showSome(s string) string {
	if len(s) > 64 {
		return s[:64] + "…"
	}
	return s
}

// Secret reads the webhook's signing secret from its environment variable
// or its file (resolved against c's directory): at least MinWebhookSecret
// bytes, at most MaxWebhookSecret, trailing white space trimmed. Its errors
// name the key and where the secret was looked for, never the secret.
func (w *Webhook) Secret(c *Config) ([]byte, error) {
	fail := func(key, format string, args ...any) error {
		return &yamlx.Error{Line: w.line, Path: "notify.webhook." + key, Err: fmt.Errorf(format, args...)}
	}
	var secret []byte
	var key string
	if w.SecretEnv != "" {
		key = "secret_env"
		secret = []byte(os.Getenv(w.SecretEnv))
		if len(secret) == 0 {
			return nil, fail(key, "the environment variable %s is not set", w.SecretEnv)
		}
	} else {
		key = "secret_file"
		path := c.Resolve(w.SecretFile)
		f, err := os.Open(path)
		if err != nil {
			return nil, fail(key, "%w", err)
		}
		defer f.Close()
		secret, err = io.ReadAll(io.LimitReader(f, MaxWebhookSecret+2))
		if err != nil {
			return nil, fail(key, "%s: %w", path, err)
		}
	}
	secret = bytes.TrimRight(secret, " \t\r\n")
	switch {
	case len(secret) > MaxWebhookSecret:
		return nil, fail(key, "the secret is longer than %d bytes", MaxWebhookSecret)
	case len(secret) < MinWebhookSecret:
		return nil, fail(key, "the secret is %d bytes: at least %d", len(secret), MinWebhookSecret)
	}
	return secret, nil
}
