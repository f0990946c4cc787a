// Package httpserve holds what mew's HTTP servers share: serving for as long
// as a context lasts, and answering JSON.
package httpserve

import (
	"context"
	"encoding/json"
	"errors"
	"net"
	"net/http"
	"time"
)

// shutdownTimeout is how long Serve waits for the requests under way
// before it closes their connections.
const shutdownTimeout = 5 * time.Second

// Serve serves srv on l until ctx ends or serving fails. Then it calls
// stopping, when not nil, shuts srv down (closing it when the requests
// under way take longer than five seconds) and returns why serving ended:
// nil when ctx ended it, else the error of srv.Serve.
func Serve(ctx context.Context, srv *http.Server, l net.Listener, stopping func()) error {
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(l) }() // ends with Shutdown or Close below
	var err error
	select {
	case <-ctx.Done():
	case err = <-errc:
	}
	if stopping != nil {
		stopping()
	}
	sctx, cancel := context.WithTimeout(context.Background(), shutdownTimeout)
	defer cancel()
	if serr := srv.Shutdown(sctx); serr != nil {
		_ = srv.Close()
	}
	if err == nil {
		err = <-errc
	}
	if errors.Is(err, http.ErrServerClosed) {
		return nil
	}
	return err
}

// WriteJSON answers v as JSON with status, marked not to be stored by
// caches.
func WriteJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}
