// Command webhook-receiver takes the MEW gateway's webhook notifications
// (notify.webhook in space.yaml, see docs/approvals.md) and forwards each
// as a one-line message to a chat tool's incoming webhook, as a
// Slack-style {"text": "..."} POST:
//
//	MEW_WEBHOOK_SECRET=... webhook-receiver -listen 127.0.0.1:8787 \
//	    -chat-url https://hooks.slack.com/services/...
//
// It checks every request's signature (HMAC-SHA256 over the timestamp
// header, a dot and the body, with the secret the space names) and its
// timestamp (within five minutes), refuses a replayed request, answers a
// request that fails any check 401 and forwards nothing. A notification
// retried by the gateway (the same X-Mew-Delivery) is forwarded once. When
// the chat tool fails, it answers 502, so the gateway tries again later.
//
// The secret comes from the environment variable -secret-env names
// (default MEW_WEBHOOK_SECRET) or the file -secret-file names; the chat
// URL from -chat-url or CHAT_WEBHOOK_URL.
package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"os/signal"
	"strings"
	"sync"
	"syscall"
	"time"
)

// maxBody bounds a notification: the gateway's are at most 64 KiB.
const maxBody = 64<<10 + 4<<10

// maxDeliveries bounds the delivery ids remembered to forward a retried
// notification once; the oldest are forgotten first.
const maxDeliveries = 4096

// receiver verifies notifications and forwards them to the chat tool.
type receiver struct {
	verify  *verifier
	chatURL string
	client  *http.Client
	log     *slog.Logger

	mu        sync.Mutex
	forwarded map[string]bool // delivery ids forwarded
	order     []string        // the same ids, oldest first
}

// notification is what the receiver reads of a gateway's notification.
type notification struct {
	Event         string `json:"event"`
	Text          string `json:"text"`
	Link          string `json:"link"`
	LinkExpiresAt string `json:"link_expires_at"`
}

func (rc *receiver) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost {
		http.Error(w, "POST only", http.StatusMethodNotAllowed)
		return
	}
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, maxBody))
	if err != nil {
		http.Error(w, "body too large or unreadable", http.StatusRequestEntityTooLarge)
		return
	}
	taken, err := rc.verify.verify(r.Header, body)
	if err != nil {
		rc.log.Warn("notification refused", "remote", r.RemoteAddr, "err", err)
		http.Error(w, "unauthorized: "+err.Error(), http.StatusUnauthorized)
		return
	}
	var n notification
	if err := json.Unmarshal(body, &n); err != nil || n.Text == "" {
		http.Error(w, "not a notification", http.StatusBadRequest)
		return
	}
	id := r.Header.Get(headerDelivery)
	if rc.seen(id) {
		taken()
		w.WriteHeader(http.StatusOK) // a retry of what was forwarded: once is enough
		return
	}
	if err := rc.forward(r.Context(), n); err != nil {
		rc.log.Warn("chat tool failed", "err", err)
		http.Error(w, "the chat tool failed", http.StatusBadGateway)
		return
	}
	taken()
	rc.remember(id)
	w.WriteHeader(http.StatusOK)
}

// seen reports whether the delivery id was forwarded already.
func (rc *receiver) seen(id string) bool {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	return id != "" && rc.forwarded[id]
}

func (rc *receiver) remember(id string) {
	if id == "" {
		return
	}
	rc.mu.Lock()
	defer rc.mu.Unlock()
	if len(rc.order) >= maxDeliveries {
		delete(rc.forwarded, rc.order[0])
		rc.order = rc.order[1:]
	}
	rc.forwarded[id] = true
	rc.order = append(rc.order, id)
}

// message is the one line posted to the chat tool.
func message(n notification) string {
	text := strings.Join(strings.Fields(n.Text), " ") // one line, whatever the proposal said
	if n.Link != "" {
		text += " Open: " + n.Link
		if n.LinkExpiresAt != "" {
			text += " (one use, until " + n.LinkExpiresAt + ")"
		}
	}
	return text
}

// forward posts the notification's line to the chat tool.
func (rc *receiver) forward(ctx context.Context, n notification) error {
	payload, err := json.Marshal(map[string]string{"text": message(n)})
	if err != nil {
		return fmt.Errorf("chat message: %w", err)
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, rc.chatURL, bytes.NewReader(payload))
	if err != nil {
		return fmt.Errorf("chat request: %w", err)
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := rc.client.Do(req)
	if err != nil {
		return fmt.Errorf("chat post: %w", err)
	}
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
	_ = resp.Body.Close()
	if resp.StatusCode/100 != 2 {
		return fmt.Errorf("chat post: %s", resp.Status)
	}
	return nil
}

func newReceiver(secret []byte, chatURL string, log *slog.Logger) *receiver {
	return &receiver{
		verify: newVerifier(secret), chatURL: chatURL, log: log,
		client:    &http.Client{Timeout: 10 * time.Second},
		forwarded: map[string]bool{},
	}
}

// readSecret reads the secret from a file, or else from an environment
// variable, trailing white space trimmed.
func readSecret(file, env string) ([]byte, error) {
	var s []byte
	if file != "" {
		var err error
		if s, err = os.ReadFile(file); err != nil {
			return nil, fmt.Errorf("secret: %w", err)
		}
	} else {
		s = []byte(os.Getenv(env))
	}
	s = bytes.TrimRight(s, " \t\r\n")
	if len(s) < 16 {
		return nil, errors.New("secret: missing or shorter than 16 bytes (-secret-file, or the variable -secret-env names)")
	}
	return s, nil
}

func main() {
	listen := flag.String("listen", "127.0.0.1:8787", "address to listen on")
	secretEnv := flag.String("secret-env", "MEW_WEBHOOK_SECRET", "environment variable holding the secret")
	secretFile := flag.String("secret-file", "", "file holding the secret (instead of -secret-env)")
	chatURL := flag.String("chat-url", os.Getenv("CHAT_WEBHOOK_URL"), "the chat tool's incoming-webhook URL (default $CHAT_WEBHOOK_URL)")
	flag.Parse()
	log := slog.New(slog.NewTextHandler(os.Stderr, nil))
	secret, err := readSecret(*secretFile, *secretEnv)
	if err != nil {
		fmt.Fprintln(os.Stderr, "webhook-receiver:", err)
		os.Exit(2)
	}
	if !strings.HasPrefix(*chatURL, "http://") && !strings.HasPrefix(*chatURL, "https://") {
		fmt.Fprintln(os.Stderr, "webhook-receiver: -chat-url (or CHAT_WEBHOOK_URL) must be an http or https URL")
		os.Exit(2)
	}
	srv := &http.Server{Addr: *listen, Handler: newReceiver(secret, *chatURL, log), ReadHeaderTimeout: 10 * time.Second}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	go func() {
		<-ctx.Done()
		shut, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = srv.Shutdown(shut)
	}()
	log.Info("listening", "addr", *listen)
	if err := srv.ListenAndServe(); err != nil && !errors.Is(err, http.ErrServerClosed) {
		fmt.Fprintln(os.Stderr, "webhook-receiver:", err)
		os.Exit(1)
	}
}
