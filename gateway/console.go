package gateway

import (
	"crypto/rand"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"net/http"
	"net/url"
	"path"
	"strings"
	"sync"
	"time"

	"github.com/mew-protocol/mew/console"
	"github.com/mew-protocol/mew/protocol"
)

// Console limits.
const (
	// maxConsoleLinks bounds the one-time codes outstanding, and
	// maxConsoleSessions the sessions they were exchanged for: the oldest
	// go first, so a participant asking for many cannot grow the tables.
	maxConsoleLinks    = 256
	maxConsoleSessions = 1024
	// maxExchangeBody bounds the body of POST /console/session.
	maxExchangeBody = 1 << 10
	// consoleHeader is the custom header the page sends with its POSTs: a
	// cross-origin page cannot add it without a CORS preflight, which the
	// gateway never answers.
	consoleHeader = "X-Mew-Console"
	// sessionPrefix marks a console session credential.
	sessionPrefix = "mcs_"
)

// consoleState holds the one-time codes and the sessions of the console.
// Both tables are keyed by the SHA-256 of the secret, so that the secrets
// themselves are not kept.
type consoleState struct {
	mu       sync.Mutex
	links    map[[32]byte]consoleGrant
	sessions map[[32]byte]consoleGrant
}

// consoleGrant is what a code or a session stands for: one participant of
// one space, until a time.
type consoleGrant struct {
	sp      *liveSpace
	m       *member
	expires time.Time
	made    time.Time
}

// put adds g under key to tab, removing expired entries and, past limit,
// the oldest.
func (cs *consoleState) put(tab map[[32]byte]consoleGrant, key [32]byte, g consoleGrant, limit int, now time.Time) {
	for k, v := range tab {
		if !now.Before(v.expires) {
			delete(tab, k)
		}
	}
	for len(tab) >= limit {
		var oldest [32]byte
		first := true
		for k, v := range tab {
			if first || v.made.Before(tab[oldest].made) {
				oldest, first = k, false
			}
		}
		delete(tab, oldest)
	}
	tab[key] = g
}

// consoleRoutes adds the web console at /console/ (see docs/console.md):
// the page, the one-time links that open it, their exchange for a session,
// and the grants ledger and the lineage API under a session.
func (srv *Server) consoleRoutes(mux *http.ServeMux) {
	if srv.opts.NoConsole {
		return
	}
	srv.console = &consoleState{links: map[[32]byte]consoleGrant{}, sessions: map[[32]byte]consoleGrant{}}
	page := http.StripPrefix("/console", console.Handler(console.Options{}))
	mux.Handle("GET /console/", page)
	mux.HandleFunc("GET /console", func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, "/console/", http.StatusMovedPermanently)
	})
	mux.HandleFunc("POST /console/links", srv.consoleLink)
	mux.HandleFunc("POST /console/session", srv.consoleExchange)
	mux.HandleFunc("DELETE /console/session", srv.consoleLogout)
	mux.HandleFunc("GET /console/grants", srv.consoleGrants)
	mux.HandleFunc("GET /console/lineage/{envelope}", srv.consoleLineage)
}

// newSecret returns a random secret with prefix and the key it is kept
// under.
func newSecret(prefix string) (string, [32]byte) {
	s := prefix + rand.Text() // 130 random bits
	return s, sha256.Sum256([]byte(s))
}

// consoleLink makes a one-time code for the participant whose token the
// request carries. The code is good for one exchange within ConsoleLinkTTL.
func (srv *Server) consoleLink(w http.ResponseWriter, r *http.Request) {
	sp, m := srv.lookup(bearer(r), spaceParam(r))
	if m == nil {
		srv.metrics.refusals.WithLabelValues(ErrorUnauthorized).Inc()
		writeJSON(w, http.StatusUnauthorized, errorBody{Error: ErrorUnauthorized, Message: "a participant's token of this space is needed (Authorization: Bearer)"})
		return
	}
	now := srv.now()
	code, key := newSecret("")
	g := consoleGrant{sp: sp, m: m, made: now, expires: now.Add(srv.opts.ConsoleLinkTTL)}
	cs := srv.console
	cs.mu.Lock()
	cs.put(cs.links, key, g, maxConsoleLinks, now)
	cs.mu.Unlock()
	q := url.Values{"code": {code}, "space": {sp.id}}
	writeJSON(w, http.StatusCreated, struct {
		Code      string `json:"code"`
		Path      string `json:"path"` // to append to the gateway's http(s) base URL
		Space     string `json:"space"`
		ExpiresAt string `json:"expires_at"`
	}{code, "/console/#" + q.Encode(), sp.id, protocol.FormatTime(g.expires)})
}

// spaceParam is the space a request names in ?space=, "" for any.
func spaceParam(r *http.Request) string {
	q := r.URL.Query().Get("space")
	if q == "default" {
		return ""
	}
	return q
}

// sameOrigin reports whether a browser request comes from the gateway's
// own origin or one of OriginPatterns. A request without Origin is not a
// browser's cross-site request and passes; one with the header "null"
// does not.
func (srv *Server) sameOrigin(r *http.Request) bool {
	o := r.Header.Get("Origin")
	if o == "" {
		return true
	}
	u, err := url.Parse(o)
	if err != nil || u.Host == "" {
		return false
	}
	if strings.EqualFold(u.Host, r.Host) {
		return true
	}
	for _, p := range srv.opts.OriginPatterns {
		if ok, _ := path.Match(strings.ToLower(p), strings.ToLower(u.Host)); ok {
			return true
		}
	}
	return false
}

// csrfSafe checks what a state-changing console call must carry: the
// custom header, a JSON body when it has one, and an allowed Origin.
func (srv *Server) csrfSafe(w http.ResponseWriter, r *http.Request, body bool) bool {
	switch {
	case r.Header.Get(consoleHeader) != "1":
		writeJSON(w, http.StatusForbidden, errorBody{Error: "forbidden", Message: "missing " + consoleHeader + " header"})
	case !srv.sameOrigin(r):
		writeJSON(w, http.StatusForbidden, errorBody{Error: "forbidden", Message: "origin not allowed"})
	case body && !strings.HasPrefix(r.Header.Get("Content-Type"), "application/json"):
		writeJSON(w, http.StatusUnsupportedMediaType, errorBody{Error: "invalid_request", Message: "the body must be application/json"})
	default:
		return true
	}
	return false
}

// consoleExchange trades a one-time code for a session credential. The code
// is removed on its first use, whatever the outcome.
func (srv *Server) consoleExchange(w http.ResponseWriter, r *http.Request) {
	if !srv.csrfSafe(w, r, true) {
		return
	}
	var in struct {
		Code string `json:"code"`
	}
	dec := json.NewDecoder(http.MaxBytesReader(w, r.Body, maxExchangeBody))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&in); err != nil || in.Code == "" || dec.More() {
		var mbe *http.MaxBytesError
		if errors.As(err, &mbe) {
			writeJSON(w, http.StatusRequestEntityTooLarge, errorBody{Error: ErrorTooLarge, Message: "the body is too large"})
			return
		}
		writeJSON(w, http.StatusBadRequest, errorBody{Error: "invalid_request", Message: `the body must be {"code":"..."}`})
		return
	}
	now := srv.now()
	key := sha256.Sum256([]byte(in.Code))
	cs := srv.console
	cs.mu.Lock()
	g, ok := cs.links[key]
	delete(cs.links, key)
	ok = ok && now.Before(g.expires)
	var cred string
	if ok {
		var skey [32]byte
		cred, skey = newSecret(sessionPrefix)
		g = consoleGrant{sp: g.sp, m: g.m, made: now, expires: now.Add(srv.opts.ConsoleSessionTTL)}
		cs.put(cs.sessions, skey, g, maxConsoleSessions, now)
	}
	cs.mu.Unlock()
	if !ok {
		srv.metrics.refusals.WithLabelValues(ErrorUnauthorized).Inc()
		writeJSON(w, http.StatusUnauthorized, errorBody{Error: ErrorUnauthorized, Message: "unknown, used or expired code"})
		return
	}
	srv.opts.Logger.Info("console session opened", "space", g.sp.id, "participant", g.m.name, "remote", r.RemoteAddr)
	writeJSON(w, http.StatusOK, struct {
		Session     string `json:"session"`
		Space       string `json:"space"`
		Participant string `json:"participant"`
		ExpiresAt   string `json:"expires_at"`
	}{cred, g.sp.id, g.m.name, protocol.FormatTime(g.expires)})
}

// consoleLogout ends the session the request carries.
func (srv *Server) consoleLogout(w http.ResponseWriter, r *http.Request) {
	if !srv.csrfSafe(w, r, false) {
		return
	}
	cred := bearer(r)
	if !strings.HasPrefix(cred, sessionPrefix) {
		writeJSON(w, http.StatusUnauthorized, errorBody{Error: ErrorUnauthorized, Message: "a console session is needed"})
		return
	}
	key := sha256.Sum256([]byte(cred))
	cs := srv.console
	cs.mu.Lock()
	delete(cs.sessions, key)
	cs.mu.Unlock()
	w.WriteHeader(http.StatusNoContent)
}

// consoleSession returns the participant a session credential stands for.
func (srv *Server) consoleSession(cred, spaceID string) (*liveSpace, *member) {
	cs := srv.console
	if cs == nil || !strings.HasPrefix(cred, sessionPrefix) {
		return nil, nil
	}
	key := sha256.Sum256([]byte(cred))
	cs.mu.Lock()
	g, ok := cs.sessions[key]
	cs.mu.Unlock()
	if !ok || !srv.now().Before(g.expires) || (spaceID != "" && spaceID != g.sp.id) {
		return nil, nil
	}
	return g.sp, g.m
}

// joinLookup resolves the credential of a WebSocket join: a participant's
// token, or a console session, which browsers send in the join message
// since they cannot set an Authorization header on a WebSocket.
func (srv *Server) joinLookup(cred, spaceID string) (*liveSpace, *member) {
	if sp, m := srv.lookup(cred, spaceID); m != nil {
		return sp, m
	}
	return srv.consoleSession(cred, spaceID)
}

// consoleGrants is GET /participants/{id}/grants for the page, which holds
// a token or a session.
func (srv *Server) consoleGrants(w http.ResponseWriter, r *http.Request) {
	sp, m := srv.joinLookup(bearer(r), spaceParam(r))
	if m == nil {
		srv.metrics.refusals.WithLabelValues(ErrorUnauthorized).Inc()
		writeJSON(w, http.StatusUnauthorized, errorBody{Error: ErrorUnauthorized, Message: "a token or a console session is needed (Authorization: Bearer)"})
		return
	}
	srv.writeLedger(w, sp, m)
}
