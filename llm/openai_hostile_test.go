package llm_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mew-protocol/mew/llm"
)

// The client against servers that break the API's promises: each ends in
// the documented error, in bounded time, or (where a server merely
// deviates) in the right answer.

const okChunk = `{"id":"x","object":"chat.completion.chunk","model":"m","choices":[{"index":0,"delta":{"content":"%s"},"finish_reason":null}]}`

func hostile(t *testing.T, h http.HandlerFunc, cfg llm.Config) *llm.OpenAI {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		// Read first: only then does the server watch the connection and
		// end r's context when the client goes.
		_, _ = io.Copy(io.Discard, r.Body)
		h(w, r)
	}))
	t.Cleanup(func() {
		srv.CloseClientConnections()
		srv.Close()
	})
	cfg.BaseURL, cfg.Model = srv.URL+"/v1", "m"
	if cfg.MaxRetries == 0 {
		cfg.MaxRetries = -1
	}
	p, err := llm.NewOpenAI(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

var hi = llm.Request{Messages: []llm.Message{{Role: llm.RoleUser, Content: "hi"}}}

func sse(w http.ResponseWriter, body string) {
	w.Header().Set("Content-Type", "text/event-stream; charset=utf-8")
	fmt.Fprint(w, body)
}

func TestHostileStreamMalformed(t *testing.T) {
	for _, c := range []struct {
		name, body string
		want       error  // nil: the answer is wantText
		wantText   string // or a part of the error's message
	}{
		{"not JSON", "data: {\"choices\":[\n\n", llm.ErrBadResponse, "event 1"},
		{"a chunk of the wrong shape", "data: {\"choices\":\"many\"}\n\n", llm.ErrBadResponse, "not a JSON chunk"},
		{"only comments and unknown fields", ": keep-alive\nretry: 10\nid: 4\n\n", llm.ErrBadResponse, "without a chunk"},
		{"CRLF, comments, a split data field and no final blank line",
			": hello\r\nevent: message\r\ndata: " + fmt.Sprintf(okChunk, "a") + "\r\n\r\n" +
				"data: {\"choices\":[{\"index\":0,\r\ndata: \"delta\":{\"content\":\"b\"}}]}\r\n\r\n" +
				"data:" + fmt.Sprintf(okChunk, "c"), nil, "abc"},
		{"a choice other than the first is ignored", "data: " + strings.Replace(fmt.Sprintf(okChunk, "zz"), `"index":0`, `"index":1`, 1) + "\n\ndata: " + fmt.Sprintf(okChunk, "y") + "\n\ndata: [DONE]\n\ndata: " + fmt.Sprintf(okChunk, "after done") + "\n\n", nil, "y"},
	} {
		t.Run(c.name, func(t *testing.T) {
			p := hostile(t, func(w http.ResponseWriter, r *http.Request) { sse(w, c.body) }, llm.Config{})
			resp, err := p.Stream(context.Background(), hi, nil)
			if c.want == nil {
				if err != nil || resp.Content != c.wantText {
					t.Fatalf("got %+v, %v; want %q", resp, err, c.wantText)
				}
				return
			}
			if !errors.Is(err, c.want) || !strings.Contains(err.Error(), c.wantText) {
				t.Fatalf("err = %v, want %v saying %q", err, c.want, c.wantText)
			}
		})
	}
}

// TestHostileHugeChunks: an event far larger than the reader's buffer is
// read whole when the answer is within its bound; past the bound, one event
// alone ends the answer with ErrTooLarge.
func TestHostileHugeChunks(t *testing.T) {
	big := strings.Repeat("é", 200<<10) // 400 KB in one line
	p := hostile(t, func(w http.ResponseWriter, r *http.Request) {
		sse(w, "data: "+fmt.Sprintf(okChunk, big)+"\n\ndata: [DONE]\n\n")
	}, llm.Config{MaxResponseBytes: 1 << 20})
	resp, err := p.Stream(context.Background(), hi, nil)
	if err != nil || resp.Content != big {
		t.Fatalf("a 400 KB event: %v", err)
	}

	huge := strings.Repeat("a", 3<<20)
	p = hostile(t, func(w http.ResponseWriter, r *http.Request) {
		sse(w, "data: "+fmt.Sprintf(okChunk, huge)+"\n\n")
	}, llm.Config{MaxResponseBytes: 1 << 20})
	if _, err := p.Stream(context.Background(), hi, nil); !errors.Is(err, llm.ErrTooLarge) {
		t.Fatalf("a 3 MB event: err = %v, want ErrTooLarge", err)
	}
}

// TestHostileSlowServer: a server that never answers, or answers the
// headers and then nothing, times out on the configured timeout; a caller
// that gives up is not held.
func TestHostileSlowServer(t *testing.T) {
	hang := func(w http.ResponseWriter, r *http.Request) { <-r.Context().Done() }
	headersOnly := func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		w.WriteHeader(http.StatusOK)
		w.(http.Flusher).Flush()
		<-r.Context().Done()
	}
	halfLine := func(w http.ResponseWriter, r *http.Request) {
		sse(w, "data: {\"choi")
		w.(http.Flusher).Flush()
		<-r.Context().Done()
	}
	for name, h := range map[string]http.HandlerFunc{"no answer": hang, "headers only": headersOnly, "half a line": halfLine} {
		t.Run(name, func(t *testing.T) {
			p := hostile(t, h, llm.Config{Timeout: 200 * time.Millisecond})
			for _, stream := range []bool{false, true} {
				start := time.Now()
				var err error
				if stream {
					_, err = p.Stream(context.Background(), hi, nil)
				} else {
					_, err = p.Complete(context.Background(), hi)
				}
				if !errors.Is(err, llm.ErrTimeout) {
					t.Errorf("stream %v: err = %v, want ErrTimeout", stream, err)
				}
				if d := time.Since(start); d > 3*time.Second {
					t.Errorf("stream %v: gave up after %s", stream, d)
				}
			}
		})
	}
	p := hostile(t, hang, llm.Config{Timeout: -1})
	ctx, cancel := context.WithTimeout(context.Background(), 150*time.Millisecond)
	defer cancel()
	if _, err := p.Stream(ctx, hi, nil); !errors.Is(err, context.DeadlineExceeded) || errors.Is(err, llm.ErrTimeout) {
		t.Errorf("the caller's deadline: err = %v", err)
	}
}

func TestHostileContentType(t *testing.T) {
	p := hostile(t, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html")
		fmt.Fprint(w, "<html><body>Welcome to nginx!</body></html>")
	}, llm.Config{})
	_, err := p.Stream(context.Background(), hi, nil)
	if !errors.Is(err, llm.ErrBadResponse) || !strings.Contains(err.Error(), "text/html") || !strings.Contains(err.Error(), "Welcome to nginx") {
		t.Errorf("HTML for a stream: err = %v", err)
	}
	if _, err := p.Complete(context.Background(), hi); !errors.Is(err, llm.ErrBadResponse) || !strings.Contains(err.Error(), "Welcome to nginx") {
		t.Errorf("HTML for a completion: err = %v", err)
	}

	// A server that ignores "stream": its whole answer, calls included,
	// is the stream's one chunk.
	var deltas int
	p = hostile(t, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprint(w, `{"model":"m","choices":[{"index":0,"finish_reason":"tool_calls","message":{"role":"assistant","content":[{"type":"text","text":"on it"}],`+
			`"tool_calls":[{"id":"c1","type":"function","function":{"name":"add","arguments":{"a":1}}}]}}],"usage":{"prompt_tokens":3,"completion_tokens":4,"total_tokens":7}}`)
	}, llm.Config{})
	resp, err := p.Stream(context.Background(), hi, func(llm.Delta) { deltas++ })
	if err != nil || resp.Content != "on it" || len(resp.ToolCalls) != 1 || string(resp.ToolCalls[0].Arguments) != `{"a":1}` ||
		resp.Usage.TotalTokens != 7 || resp.FinishReason != llm.FinishToolCalls || deltas != 2 {
		t.Errorf("a whole answer for a stream: %+v, %v, %d deltas", resp, err, deltas)
	}
}

func TestHostileErrorBodies(t *testing.T) {
	var attempts atomic.Int32
	p := hostile(t, func(w http.ResponseWriter, r *http.Request) {
		attempts.Add(1)
		w.Header().Set("Content-Type", "text/plain")
		w.WriteHeader(http.StatusBadRequest)
		fmt.Fprint(w, strings.Repeat("x", 2<<20)) // far past what is read
	}, llm.Config{MaxRetries: 3})
	_, err := p.Complete(context.Background(), hi)
	var apiErr *llm.APIError
	if !errors.As(err, &apiErr) || apiErr.Status != 400 || len(apiErr.Message) > 210 || attempts.Load() != 1 {
		t.Errorf("a 2 MB 400: %v (%d attempts)", err, attempts.Load())
	}

	// An error event named as such, and an error sent as a 200 body.
	for name, h := range map[string]http.HandlerFunc{
		"event: error": func(w http.ResponseWriter, r *http.Request) {
			sse(w, "data: "+fmt.Sprintf(okChunk, "a")+"\n\nevent: error\ndata: {\"message\":\"overloaded, try later\"}\n\n")
		},
		"a JSON error with status 200": func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "application/json")
			fmt.Fprint(w, `{"error":{"message":"overloaded, try later","type":"server_error"}}`)
		},
	} {
		p := hostile(t, h, llm.Config{})
		_, err := p.Stream(context.Background(), hi, nil)
		if !errors.As(err, &apiErr) || apiErr.Message != "overloaded, try later" || !strings.Contains(err.Error(), "openai model m") {
			t.Errorf("%s: err = %v", name, err)
		}
	}

	// x-should-retry: false wins over a retryable status.
	attempts.Store(0)
	p = hostile(t, func(w http.ResponseWriter, r *http.Request) {
		attempts.Add(1)
		w.Header().Set("X-Should-Retry", "false")
		w.WriteHeader(http.StatusServiceUnavailable)
	}, llm.Config{MaxRetries: 3})
	if _, err := p.Complete(context.Background(), hi); !errors.As(err, &apiErr) || apiErr.Status != 503 || attempts.Load() != 1 {
		t.Errorf("x-should-retry false: %v after %d attempts", err, attempts.Load())
	}
}

// TestHostileDroppedConnection: a connection closed before any answer is
// retried; the second attempt's answer is the result.
func TestHostileDroppedConnection(t *testing.T) {
	var attempts atomic.Int32
	p := hostile(t, func(w http.ResponseWriter, r *http.Request) {
		if attempts.Add(1) == 1 {
			conn, _, err := w.(http.Hijacker).Hijack()
			if err == nil {
				_ = conn.Close()
			}
			return
		}
		sse(w, "data: "+fmt.Sprintf(okChunk, "second")+"\n\ndata: [DONE]\n\n")
	}, llm.Config{MaxRetries: 1})
	resp, err := p.Stream(context.Background(), hi, nil)
	if err != nil || resp.Content != "second" || attempts.Load() != 2 {
		t.Fatalf("%+v, %v after %d attempts", resp, err, attempts.Load())
	}
}

// TestOpenAIHeaders: Config.Header goes with every request; the API key is
// the Authorization header, and without one none is sent.
func TestOpenAIHeaders(t *testing.T) {
	got := make(chan http.Header, 2)
	h := func(w http.ResponseWriter, r *http.Request) {
		got <- r.Header.Clone()
		sse(w, "data: "+fmt.Sprintf(okChunk, "x")+"\n\n")
	}
	p := hostile(t, h, llm.Config{Header: http.Header{"Http-Referer": {"https://example.org"}, "Authorization": {"Bearer from-header"}}})
	if _, err := p.Stream(context.Background(), hi, nil); err != nil {
		t.Fatal(err)
	}
	hd := <-got
	if hd.Get("Http-Referer") != "https://example.org" || hd.Get("Authorization") != "Bearer from-header" || hd.Get("Accept") != "text/event-stream" {
		t.Errorf("headers without a key: %v", hd)
	}
	p = hostile(t, h, llm.Config{APIKey: "sk-1", Header: http.Header{"Authorization": {"Bearer from-header"}}})
	if _, err := p.Complete(context.Background(), hi); err == nil {
		t.Error("an event stream taken for a completion")
	}
	if hd := <-got; hd.Get("Authorization") != "Bearer sk-1" {
		t.Errorf("Authorization %q, want the API key's", hd.Get("Authorization"))
	}
}
