package a2a_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/mew-protocol/mew/a2a"
)

// remote is a hostile or broken agent: handler writes what it likes.
func remote(t *testing.T, handler http.HandlerFunc) *a2a.Client {
	t.Helper()
	hs := httptest.NewServer(handler)
	t.Cleanup(func() {
		hs.CloseClientConnections()
		hs.Close()
	})
	return a2a.NewClient(hs.URL+"/", a2a.ClientOptions{MaxEventBytes: 4096, MaxResponseBytes: 4096})
}

// sse starts an event stream and returns a function writing one event.
func sse(w http.ResponseWriter) func(string) {
	w.Header().Set("Content-Type", "text/event-stream")
	w.WriteHeader(http.StatusOK)
	return func(result string) {
		fmt.Fprintf(w, "data: {\"jsonrpc\":\"2.0\",\"id\":1,\"result\":%s}\n\n", result)
		w.(http.Flusher).Flush()
	}
}

const working = `{"task":{"id":"t","contextId":"c","status":{"state":"TASK_STATE_WORKING"}}}`

func TestClientAgainstBrokenAgents(t *testing.T) {
	send := a2a.SendMessageRequest{Message: userMessage("hi")}

	t.Run("drops the stream", func(t *testing.T) {
		c := remote(t, func(w http.ResponseWriter, r *http.Request) { sse(w)(working) })
		st, err := c.SendStreamingMessage(ctxT(t), send)
		if err != nil {
			t.Fatal(err)
		}
		defer st.Close()
		if ev, err := st.Next(); err != nil || ev.Task == nil {
			t.Fatalf("first event %+v, %v", ev, err)
		}
		if _, err := st.Next(); !errors.Is(err, a2a.ErrStreamBroken) {
			t.Fatalf("after the drop: %v", err)
		}
	})

	t.Run("streams forever", func(t *testing.T) {
		stopped := make(chan struct{})
		c := remote(t, func(w http.ResponseWriter, r *http.Request) {
			defer close(stopped)
			write := sse(w)
			for {
				select {
				case <-r.Context().Done():
					return
				case <-time.After(5 * time.Millisecond):
					write(`{"statusUpdate":{"taskId":"t","contextId":"c","status":{"state":"TASK_STATE_WORKING"}}}`)
				}
			}
		})
		ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
		defer cancel()
		st, err := c.SendStreamingMessage(ctx, send)
		if err != nil {
			t.Fatal(err)
		}
		defer st.Close()
		n := 0
		for {
			if _, err = st.Next(); err != nil {
				break
			}
			n++
		}
		if n == 0 || !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("after %d events: %v", n, err)
		}
		select {
		case <-stopped:
		case <-time.After(5 * time.Second):
			t.Fatal("the connection stayed open after the deadline")
		}
	})

	t.Run("oversized event", func(t *testing.T) {
		c := remote(t, func(w http.ResponseWriter, r *http.Request) {
			sse(w)(`{"task":{"id":"` + strings.Repeat("x", 10000) + `"}}`)
		})
		st, err := c.SendStreamingMessage(ctxT(t), send)
		if err != nil {
			t.Fatal(err)
		}
		defer st.Close()
		if _, err := st.Next(); err == nil || !strings.Contains(err.Error(), "longer than 4096 bytes") {
			t.Fatalf("oversized event: %v", err)
		}
	})

	t.Run("not JSON-RPC", func(t *testing.T) {
		c := remote(t, func(w http.ResponseWriter, r *http.Request) { fmt.Fprint(w, `<html>hello</html>`) })
		if _, err := c.SendMessage(ctxT(t), send); !errors.Is(err, a2a.ErrInvalidAgentResponse) {
			t.Fatalf("HTML answer: %v", err)
		}
	})

	t.Run("oversized response", func(t *testing.T) {
		c := remote(t, func(w http.ResponseWriter, r *http.Request) { fmt.Fprint(w, strings.Repeat(" ", 10000)) })
		if _, err := c.GetTask(ctxT(t), a2a.GetTaskRequest{ID: "t"}); err == nil || !strings.Contains(err.Error(), "larger than 4096") {
			t.Fatalf("oversized response: %v", err)
		}
	})

	t.Run("answer to another request", func(t *testing.T) {
		c := remote(t, func(w http.ResponseWriter, r *http.Request) {
			fmt.Fprint(w, `{"jsonrpc":"2.0","id":999,"result":{"id":"t","status":{"state":"TASK_STATE_WORKING"}}}`)
		})
		if _, err := c.GetTask(ctxT(t), a2a.GetTaskRequest{ID: "t"}); !errors.Is(err, a2a.ErrInvalidAgentResponse) {
			t.Fatalf("wrong id: %v", err)
		}
	})
}
