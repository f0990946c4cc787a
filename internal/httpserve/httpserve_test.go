package httpserve

import (
	"context"
	"io"
	"net"
	"net/http"
	"testing"
	"time"
)

// TestServe: the server answers until its context ends; then stopping
// runs and Serve returns nil. A listener that fails is an error.
func TestServe(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		WriteJSON(w, http.StatusTeapot, map[string]int{"n": 1})
	}), ReadHeaderTimeout: time.Second}
	ctx, cancel := context.WithCancel(context.Background())
	stopped := make(chan struct{})
	done := make(chan error, 1)
	go func() { done <- Serve(ctx, srv, l, func() { close(stopped) }) }()

	resp, err := http.Get("http://" + l.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusTeapot || string(body) != "{\"n\":1}\n" ||
		resp.Header.Get("Content-Type") != "application/json" || resp.Header.Get("Cache-Control") != "no-store" {
		t.Errorf("answer %d %q %v", resp.StatusCode, body, resp.Header)
	}

	cancel()
	if err := <-done; err != nil {
		t.Errorf("Serve after the context ended = %v", err)
	}
	select {
	case <-stopped:
	default:
		t.Error("stopping was not called")
	}

	// A closed listener fails at once.
	_ = l.Close()
	if err := Serve(context.Background(), &http.Server{ReadHeaderTimeout: time.Second}, l, nil); err == nil {
		t.Error("Serve on a closed listener = nil")
	}
}
