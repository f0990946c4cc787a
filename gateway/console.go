package gateway

import (
	"encoding/json"
	"errors"
	"net/http"
	"net/url"
	"path"
	"strings"
	"time"

	"github.com/mew-protocol/mew/console"
	"github.com/mew-protocol/mew/protocol"
)

// Console limits.
const (
	// maxExchangeBody bounds the body of POST /console/session.
	maxExchangeBody = 1 << 10
	// consoleHeader is the custom header the page sends with its POSTs: a
	// cross-origin page cannot add it without a CORS preflight, which the
	// gateway never answers.
	consoleHeader = "X-Mew-Console"
	// sessionPrefix marks a console session credential.
	sessionPrefix = "mcs_"
)

// consoleRoutes adds the web console at /console/ (see docs/console.md):
// the page, the one-time links that open it, their exchange for a session,
// and the grants ledger and the lineage API under a session.
func (srv *Server) consoleRoutes(mux *http.ServeMux) {
	if srv.opts.Console.Off {
		return
	}
	page := http.StripPrefix("/console", console.Handler(console.Options{}))
	mux.Handle("GET /console/", page)
	mux.HandleFunc("GET /console", func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, "/console/", http.StatusMovedPermanently)
	})
	mux.HandleFunc("POST /console/links", srv.consoleLink)
	mux.HandleFunc("POST /console/session", srv.consoleExchange)
	mux.HandleFunc("DELETE /console/session", srv.consoleLogout)
	mux.HandleFunc("GET /console/grants", srv.consoleGrants)
	mux.HandleFunc("GET /console/me", srv.consoleMe)
	mux.HandleFunc("GET /console/approvals", srv.consoleApprovals)
	mux.HandleFunc("GET /console/lineage/{envelope}", srv.consoleLineage)
}

// consoleLink makes a one-time code for the participant whose token the
// request carries. The code is good for one exchange within ConsoleLinkTTL.
// A participant has at most maxCodesPerMember codes outstanding: past
// that it is refused (429), and nobody else's codes are touched.
func (srv *Server) consoleLink(w http.ResponseWriter, r *http.Request) {
	sp, m := srv.creds.token(bearer(r), spaceParam(r))
	if m == nil {
		srv.metrics.refusals.WithLabelValues(ErrorUnauthorized).Inc()
		writeError(w, http.StatusUnauthorized, ErrorUnauthorized, "a participant's token of this space is needed (Authorization: Bearer)")
		return
	}
	code, expires, err := srv.creds.mint(sp, m, credCode, "", srv.now(), srv.opts.Console.LinkTTL)
	if err != nil {
		srv.metrics.refusals.WithLabelValues(ErrorLimitExceeded).Inc()
		writeError(w, http.StatusTooManyRequests, ErrorLimitExceeded, err.Error())
		return
	}
	q := url.Values{"code": {code}, "space": {sp.id}}
	writeJSON(w, http.StatusCreated, struct {
		Code      string `json:"code"`
		Path      string `json:"path"` // to append to the gateway's http(s) base URL
		Space     string `json:"space"`
		ExpiresAt string `json:"expires_at"`
	}{code, "/console/#" + q.Encode(), sp.id, protocol.FormatTime(expires)})
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
		writeError(w, http.StatusForbidden, "forbidden", "missing "+consoleHeader+" header")
	case !srv.sameOrigin(r):
		writeError(w, http.StatusForbidden, "forbidden", "origin not allowed")
	case body && !strings.HasPrefix(r.Header.Get("Content-Type"), "application/json"):
		writeError(w, http.StatusUnsupportedMediaType, "invalid_request", "the body must be application/json")
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
			writeError(w, http.StatusRequestEntityTooLarge, ErrorTooLarge, "the body is too large")
			return
		}
		writeError(w, http.StatusBadRequest, "invalid_request", `the body must be {"code":"..."}`)
		return
	}
	now := srv.now()
	g, ok := srv.creds.take(in.Code, now)
	var cred string
	var expires time.Time
	if ok {
		var err error
		cred, expires, err = srv.creds.mint(g.sp, g.m, credSession, sessionPrefix, now, srv.opts.Console.SessionTTL)
		ok = err == nil
	}
	if !ok {
		srv.metrics.refusals.WithLabelValues(ErrorUnauthorized).Inc()
		writeError(w, http.StatusUnauthorized, ErrorUnauthorized, "unknown, used or expired code")
		return
	}
	srv.opts.Logger.Info("console session opened", "space", g.sp.id, "participant", g.m.name, "remote", r.RemoteAddr)
	writeJSON(w, http.StatusOK, struct {
		Session     string `json:"session"`
		Space       string `json:"space"`
		Participant string `json:"participant"`
		ExpiresAt   string `json:"expires_at"`
	}{cred, g.sp.id, g.m.name, protocol.FormatTime(expires)})
}

// consoleLogout ends the session the request carries.
func (srv *Server) consoleLogout(w http.ResponseWriter, r *http.Request) {
	if !srv.csrfSafe(w, r, false) {
		return
	}
	cred := bearer(r)
	if !strings.HasPrefix(cred, sessionPrefix) {
		writeError(w, http.StatusUnauthorized, ErrorUnauthorized, "a console session is needed")
		return
	}
	srv.creds.drop(cred)
	w.WriteHeader(http.StatusNoContent)
}

// consoleCaller is who a console request comes from: the participant whose
// token or console session it carries (Authorization: Bearer), or, having
// answered 401, ok false.
func (srv *Server) consoleCaller(w http.ResponseWriter, r *http.Request) (sp *liveSpace, m *member, ok bool) {
	sp, m = srv.joinLookup(bearer(r), spaceParam(r))
	if m == nil {
		srv.metrics.refusals.WithLabelValues(ErrorUnauthorized).Inc()
		writeError(w, http.StatusUnauthorized, ErrorUnauthorized, "a token or a console session is needed (Authorization: Bearer)")
		return nil, nil, false
	}
	return sp, m, true
}

// joinLookup resolves the credential of a WebSocket join or a console
// request: a participant's token, or a console session, which browsers send
// in the join message since they cannot set an Authorization header on a
// WebSocket.
func (srv *Server) joinLookup(cred, spaceID string) (*liveSpace, *member) {
	kinds := []credKind{credToken, credInvite}
	if !srv.opts.Console.Off {
		kinds = append(kinds, credSession)
	}
	return srv.creds.resolve(cred, spaceID, srv.now(), kinds...)
}

// consoleMe is GET /console/me: who the page is and the space's routing
// defaults for it (default_to per kind: the participant's own in space.yaml,
// else the space's), so that the console addresses plain text as the
// terminal clients do.
func (srv *Server) consoleMe(w http.ResponseWriter, r *http.Request) {
	sp, m, ok := srv.consoleCaller(w, r)
	if !ok {
		return
	}
	defaults := map[string][]string{}
	for kind, to := range sp.cfg.Defaults.DefaultTo {
		defaults[kind] = to
	}
	if m.cfg != nil {
		for kind, to := range m.cfg.DefaultTo {
			defaults[kind] = to
		}
	}
	writeJSON(w, http.StatusOK, struct {
		Space       string              `json:"space"`
		Participant string              `json:"participant"`
		DefaultTo   map[string][]string `json:"default_to"`
	}{sp.id, m.name, defaults})
}

// consoleApprovals is GET /console/approvals: the proposals the space's
// approval policy governs that still await approvers or their fulfilment,
// each as it was proposed and with its state, so that a page opened later
// (from a webhook's link) shows what awaits its participant. Every
// participant sees them: a proposal is sent to the whole space.
func (srv *Server) consoleApprovals(w http.ResponseWriter, r *http.Request) {
	sp, _, ok := srv.consoleCaller(w, r)
	if !ok {
		return
	}
	list := sp.openApprovals()
	writeJSON(w, http.StatusOK, struct {
		Approvals []approvalItem `json:"approvals"`
	}{list})
}

// consoleGrants is GET /participants/{id}/grants for the page, which holds
// a token or a session.
func (srv *Server) consoleGrants(w http.ResponseWriter, r *http.Request) {
	sp, m, ok := srv.consoleCaller(w, r)
	if !ok {
		return
	}
	srv.writeLedger(w, sp, m)
}
