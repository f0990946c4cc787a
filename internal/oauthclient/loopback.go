package oauthclient

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"strconv"
	"sync"
	"time"
)

// Errors of the authorisation code flow's redirect.
var (
	// ErrState: the redirect carried another state than the request, so
	// it answers someone else's request (or a forgery); the flow ends.
	ErrState = errors.New("oauth: the redirect's state does not match the request")
	// ErrDenied: the authorisation server redirected with an error.
	ErrDenied = errors.New("oauth: the authorisation server refused")
	// ErrTimeout: no redirect came within the flow's time.
	ErrTimeout = errors.New("oauth: no sign-in within the time allowed")
)

// callbackPath is the redirect URI's path on the loopback listener.
const callbackPath = "/callback"

// redirect is what came back to the loopback listener.
type redirect struct {
	code, iss string
	err       error
}

// loopback is a one-shot redirect listener on 127.0.0.1: the first
// request to callbackPath ends it, whatever it holds.
type loopback struct {
	ln    net.Listener
	srv   *http.Server
	state string
	once  sync.Once
	got   chan redirect // one value, from the handler that won once
	done  chan struct{} // closed when Serve has returned
}

// listenLoopback listens on 127.0.0.1:port (0: any free port).
func listenLoopback(port int, state string) (*loopback, error) {
	ln, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(port)))
	if err != nil {
		return nil, fmt.Errorf("oauth: redirect listener: %w", err)
	}
	l := &loopback{ln: ln, state: state, got: make(chan redirect, 1), done: make(chan struct{})}
	mux := http.NewServeMux()
	mux.HandleFunc(callbackPath, l.callback)
	l.srv = &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	go func() {
		defer close(l.done)
		_ = l.srv.Serve(ln) // ends at close
	}()
	return l, nil
}

// uri is the redirect URI to register and send.
func (l *loopback) uri() string {
	return "http://" + l.ln.Addr().String() + callbackPath
}

func (l *loopback) callback(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	var got redirect
	switch {
	case q.Get("state") != l.state:
		got.err = ErrState
	case q.Get("error") != "":
		why := clip(q.Get("error"), 64)
		if d := q.Get("error_description"); d != "" {
			why += ": " + clip(d, 200)
		}
		got.err = fmt.Errorf("%w: %s", ErrDenied, why)
	case q.Get("code") == "":
		got.err = fmt.Errorf("%w: the redirect holds no code", ErrDenied)
	default:
		got.code, got.iss = q.Get("code"), q.Get("iss")
	}
	first := false
	l.once.Do(func() { first = true; l.got <- got })
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	w.Header().Set("Cache-Control", "no-store")
	switch {
	case !first:
		http.Error(w, "This sign-in has already been answered.", http.StatusGone)
	case got.err != nil:
		http.Error(w, "Sign-in failed: "+got.err.Error(), http.StatusBadRequest)
	default:
		fmt.Fprintln(w, "Signed in. You may close this window.")
	}
}

// close stops the listener and waits for its goroutine; the answer in
// flight, if any, is finished first (briefly).
func (l *loopback) close() {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	if err := l.srv.Shutdown(ctx); err != nil {
		_ = l.srv.Close()
	}
	<-l.done
}
