package llm

import (
	"fmt"
	"net/http"
	"net/netip"
	"net/url"
	"os"
	"strconv"
	"strings"
	"time"
)

// Defaults of [Config].
const (
	// DefaultModel is the model asked for when none is configured.
	DefaultModel = "gpt-4o-mini"
	// DefaultTimeout bounds one attempt of a call; for a stream, the wait
	// for each piece. It is generous for local models on a CPU; a caller
	// that needs an answer sooner bounds its context.
	DefaultTimeout = 5 * time.Minute
	// DefaultMaxRetries is how often a call is retried after a rate limit,
	// a server error or a broken connection.
	DefaultMaxRetries = 2
	// DefaultMaxResponseBytes bounds what one answer may be, as the server
	// sends it (its JSON, or its stream's events): a model that sends more
	// is cut off with ErrTooLarge, before the agent's memory pays for it.
	DefaultMaxResponseBytes = 16 << 20
	// DefaultMaxAnswerTime bounds a whole answer, however it comes: a
	// stream that drips one byte at a time holds no agent longer than this.
	DefaultMaxAnswerTime = 10 * time.Minute
)

// The environment variables [FromEnv] reads.
const (
	EnvAPIKey  = "OPENAI_API_KEY"
	EnvBaseURL = "OPENAI_BASE_URL"
	EnvModel   = "OPENAI_MODEL"
	// EnvMaxResponseBytes (a number of bytes) and EnvMaxAnswerTime (a Go
	// duration such as 2m) set Config.MaxResponseBytes and MaxAnswerTime
	// for a command such as mew agent run.
	EnvMaxResponseBytes = "MEW_LLM_MAX_RESPONSE_BYTES"
	EnvMaxAnswerTime    = "MEW_LLM_MAX_ANSWER_TIME"
)

// Config configures the OpenAI provider, and through [FromEnv] the choice of
// provider. The zero value of each field means its default.
type Config struct {
	// Provider forces a choice in [FromEnv]: "openai" or "offline". Empty
	// chooses by APIKey and BaseURL.
	Provider string
	// APIKey is sent as a bearer token; local servers may need none.
	APIKey string
	// BaseURL is the API's root, such as "http://localhost:11434/v1" for
	// Ollama; empty means OpenAI's.
	BaseURL string
	// Model is the model asked for when a [Request] names none; empty
	// means [DefaultModel].
	Model string
	// Timeout bounds each attempt: the whole answer of Complete, and for
	// Stream the wait for the first piece and then for each next one.
	// Zero means [DefaultTimeout]; negative means no timeout beyond the
	// caller's context.
	Timeout time.Duration
	// MaxRetries is how often a failed attempt is retried, with
	// exponential backoff or the wait the server asks for: after HTTP 408,
	// 409, 429 and 5xx and after connection errors, never after other
	// statuses or once a stream has begun. Zero means
	// [DefaultMaxRetries]; negative means no retry.
	MaxRetries int
	// HTTPClient, when set, makes the requests.
	HTTPClient *http.Client
	// Header holds headers sent with every request, for servers that want
	// more than the API key (OpenRouter's HTTP-Referer, a proxy's own
	// token). An APIKey, when set, is the Authorization header.
	Header http.Header
	// MaxResponseBytes bounds one answer's bytes as the server sends them
	// (0: DefaultMaxResponseBytes), and MaxAnswerTime the whole of one
	// answer, retries and stream included (0: DefaultMaxAnswerTime;
	// negative: none beyond the caller's context).
	MaxResponseBytes int64
	MaxAnswerTime    time.Duration
}

// FromEnv returns the provider that configuration selects: the OpenAI
// provider when an API key or a base URL is configured, else the offline
// one. A base URL without a key counts only when it may need none
// ([NeedsAPIKey]): the reference's templates set OpenAI's URL whether or
// not there is a key, and without one that is no choice of a server, so it
// gets the offline provider, as no configuration does. Configuration comes from getenv (nil means [os.Getenv]: the variables
// [EnvAPIKey], [EnvBaseURL], [EnvModel], [EnvMaxResponseBytes] and
// [EnvMaxAnswerTime]; a malformed bound is an error), and each non-zero field of
// overrides (a command's --base-url, --model, ...) takes precedence over it.
func FromEnv(getenv func(string) string, overrides Config) (Provider, error) {
	if getenv == nil {
		getenv = os.Getenv
	}
	cfg := overrides
	if cfg.APIKey == "" {
		cfg.APIKey = getenv(EnvAPIKey)
	}
	if cfg.BaseURL == "" {
		cfg.BaseURL = getenv(EnvBaseURL)
	}
	if cfg.Model == "" {
		cfg.Model = getenv(EnvModel)
	}
	if v := strings.TrimSpace(getenv(EnvMaxResponseBytes)); v != "" && cfg.MaxResponseBytes == 0 {
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil || n <= 0 {
			return nil, fmt.Errorf("llm: %s=%q: want a positive number of bytes", EnvMaxResponseBytes, v)
		}
		cfg.MaxResponseBytes = n
	}
	if v := strings.TrimSpace(getenv(EnvMaxAnswerTime)); v != "" && cfg.MaxAnswerTime == 0 {
		d, err := time.ParseDuration(v)
		if err != nil || d <= 0 {
			return nil, fmt.Errorf("llm: %s=%q: want a positive duration such as 2m", EnvMaxAnswerTime, v)
		}
		cfg.MaxAnswerTime = d
	}
	switch cfg.Provider {
	case "":
		if cfg.APIKey == "" && (cfg.BaseURL == "" || NeedsAPIKey(cfg.BaseURL)) {
			return NewOffline(), nil
		}
	case "offline":
		return NewOffline(), nil
	case "openai":
		if cfg.APIKey == "" && cfg.BaseURL == "" {
			return nil, fmt.Errorf("llm: the openai provider needs %s or a base URL (%s, --base-url)", EnvAPIKey, EnvBaseURL)
		}
	default:
		return nil, fmt.Errorf("llm: unknown provider %q (want \"openai\" or \"offline\")", cfg.Provider)
	}
	return NewOpenAI(cfg)
}

// NeedsAPIKey reports whether baseURL names a server on the internet, such
// as OpenAI's own API (https://api.openai.com/v1) or OpenRouter's, which
// answers nothing without an API key. A server on this machine or the local
// network (localhost, a loopback, private or link-local address, a name
// without a dot such as a container's "ollama", or a name under .local,
// .internal, .lan, .localhost or .home.arpa) may need none; and what is not
// an http or https URL is left for [NewOpenAI] to refuse.
func NeedsAPIKey(baseURL string) bool {
	u, err := url.Parse(baseURL)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Hostname() == "" {
		return false
	}
	host := strings.ToLower(strings.TrimSuffix(u.Hostname(), "."))
	if ip, err := netip.ParseAddr(host); err == nil {
		return !(ip.IsLoopback() || ip.IsPrivate() || ip.IsLinkLocalUnicast() || ip.IsUnspecified())
	}
	if !strings.Contains(host, ".") {
		return false
	}
	for _, local := range []string{".local", ".internal", ".lan", ".localhost", ".home.arpa"} {
		if strings.HasSuffix(host, local) {
			return false
		}
	}
	return true
}
