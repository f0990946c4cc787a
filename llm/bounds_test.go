package llm_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/mew-protocol/mew/llm"
)

// TestHostileModelBounded: a model endpoint cannot make the provider read
// without end nor hold it past its answer time: a 20 MB answer, an endless
// stream, and a stream that drips a piece every 100 ms (each piece within
// the per-piece timeout) all end with a clear error, in bounded time.
func TestHostileModelBounded(t *testing.T) {
	chunk := `data: {"id":"x","object":"chat.completion.chunk","created":1,"model":"m","choices":[{"index":0,"delta":{"content":"aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"}}]}` + "\n\n"
	for _, c := range []struct {
		name    string
		stream  bool
		handler http.HandlerFunc
		want    error
	}{
		{"a 20 MB answer", false, func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "application/json")
			fmt.Fprint(w, `{"id":"x","object":"chat.completion","created":1,"model":"m","choices":[{"index":0,"finish_reason":"stop","message":{"role":"assistant","content":"`)
			big := strings.Repeat("a", 1<<20)
			for range 20 {
				if _, err := fmt.Fprint(w, big); err != nil {
					return
				}
			}
			fmt.Fprint(w, `"}}]}`)
		}, llm.ErrTooLarge},
		{"an endless stream", true, func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "text/event-stream")
			for r.Context().Err() == nil {
				if _, err := fmt.Fprint(w, chunk); err != nil {
					return
				}
			}
		}, llm.ErrTooLarge},
		{"a drip", true, func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "text/event-stream")
			for r.Context().Err() == nil {
				if _, err := fmt.Fprint(w, chunk); err != nil {
					return
				}
				w.(http.Flusher).Flush()
				time.Sleep(100 * time.Millisecond)
			}
		}, llm.ErrTimeout},
	} {
		t.Run(c.name, func(t *testing.T) {
			srv := httptest.NewServer(c.handler)
			defer srv.Close()
			p, err := llm.NewOpenAI(llm.Config{BaseURL: srv.URL + "/v1", APIKey: "k", MaxRetries: -1, Model: "m",
				Timeout: time.Second, MaxResponseBytes: 1 << 20, MaxAnswerTime: 700 * time.Millisecond})
			if err != nil {
				t.Fatal(err)
			}
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			start := time.Now()
			req := llm.Request{Messages: []llm.Message{{Role: llm.RoleUser, Content: "hi"}}}
			if c.stream {
				_, err = p.Stream(ctx, req, func(llm.Delta) {})
			} else {
				_, err = p.Complete(ctx, req)
			}
			if !errors.Is(err, c.want) {
				t.Fatalf("err = %v, want %v", err, c.want)
			}
			if took := time.Since(start); took > 10*time.Second {
				t.Errorf("it took %v to give up", took)
			}
		})
	}
}
