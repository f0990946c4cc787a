package oauthclient

import (
	"net/http"
	"strings"
)

// Transport returns a RoundTripper that sends the handler's token with
// every request to the resource's origin (and to no other), and on a 401
// (or a 403 for insufficient scope) renews it once and sends the request
// again. A request whose body cannot be sent twice gets the refusal back.
func (h *Handler) Transport(next http.RoundTripper) http.RoundTripper {
	if next == nil {
		next = http.DefaultTransport
	}
	return &transport{h: h, next: next}
}

type transport struct {
	h    *Handler
	next http.RoundTripper
}

func (t *transport) RoundTrip(req *http.Request) (*http.Response, error) {
	if !sameOrigin(req.URL, t.h.resource) {
		return t.next.RoundTrip(req)
	}
	ctx := req.Context()
	tok, err := t.h.Token(ctx)
	if err != nil {
		closeBody(req)
		return nil, err
	}
	resp, err := t.next.RoundTrip(withToken(req, tok))
	if err != nil || !refused(resp) {
		return resp, err
	}
	if req.Body != nil && req.Body != http.NoBody && req.GetBody == nil {
		return resp, nil
	}
	challenges := resp.Header.Values("WWW-Authenticate")
	drain(resp.Body)
	if err := t.h.Authorize(ctx, challenges, tok); err != nil {
		return nil, err
	}
	if tok, err = t.h.Token(ctx); err != nil {
		return nil, err
	}
	again := withToken(req, tok)
	if req.GetBody != nil {
		if again.Body, err = req.GetBody(); err != nil {
			return nil, err
		}
	}
	return t.next.RoundTrip(again)
}

// refused reports whether resp asks for (other) authorisation.
func refused(resp *http.Response) bool {
	if resp.StatusCode == http.StatusUnauthorized {
		return true
	}
	return resp.StatusCode == http.StatusForbidden &&
		strings.Contains(strings.Join(resp.Header.Values("WWW-Authenticate"), ","), "insufficient_scope")
}

// withToken is a copy of req with the token (a RoundTripper must not
// change the request it is given).
func withToken(req *http.Request, tok string) *http.Request {
	r := req.Clone(req.Context())
	if tok != "" {
		r.Header.Set("Authorization", "Bearer "+tok)
	}
	return r
}

func closeBody(req *http.Request) {
	if req.Body != nil {
		_ = req.Body.Close()
	}
}

// CloseIdleConnections passes the call on, so that a client using the
// transport can close its connections.
func (t *transport) CloseIdleConnections() {
	if c, ok := t.next.(interface{ CloseIdleConnections() }); ok {
		c.CloseIdleConnections()
	}
}
