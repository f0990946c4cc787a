package gateway

import (
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"strconv"
	"time"

	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/mew-protocol/mew/protocol"
)

// features are what GET /health advertises.
var features = []string{"capabilities", "context", "validation", "http-io", "polling", "metrics"}

func (srv *Server) routes() {
	mux := http.NewServeMux()
	mux.HandleFunc("/", srv.root)
	mux.HandleFunc("/ws", srv.serveWS)
	mux.HandleFunc("GET /health", srv.health)
	mux.HandleFunc("GET /participants", srv.participants)
	mux.HandleFunc("POST /participants/{id}/messages", srv.post)
	mux.HandleFunc("GET /participants/{id}/messages", srv.poll)
	mux.HandleFunc("GET /participants/{id}/grants", srv.ledger)
	srv.lineageRoutes(mux)
	srv.consoleRoutes(mux)
	mux.Handle("GET /metrics", promhttp.HandlerFor(srv.metrics.reg, promhttp.HandlerOpts{}))
	srv.mux = mux
	srv.handler = srv.crowdedHandler(srv.hostHandler(mux))
}

// root serves WebSocket upgrades at /, where the reference's own clients
// connect, and 404 otherwise.
func (srv *Server) root(w http.ResponseWriter, r *http.Request) {
	if r.URL.Path == "/" && r.Header.Get("Upgrade") != "" {
		srv.serveWS(w, r)
		return
	}
	writeError(w, http.StatusNotFound, "not_found", "no such endpoint: "+r.Method+" "+r.URL.Path)
}

type errorBody struct {
	Error   string `json:"error"`
	Message string `json:"message,omitempty"`
}

// writeError answers an HTTP request with status and the error body of code
// and msg.
func writeError(w http.ResponseWriter, status int, code, msg string) {
	writeJSON(w, status, errorBody{Error: code, Message: msg})
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(status)
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(v)
}

func (srv *Server) health(w http.ResponseWriter, _ *http.Request) {
	clients := 0
	for _, sp := range srv.order {
		sp.mu.Lock()
		clients += len(sp.sessions)
		sp.mu.Unlock()
	}
	status, code, cl := "ok", http.StatusOK, srv.clusterHealth()
	if cl.NATS != "" && cl.NATS != "connected" {
		status, code = "degraded", http.StatusServiceUnavailable
	}
	writeJSON(w, code, struct {
		Status   string   `json:"status"`
		Spaces   int      `json:"spaces"`
		Clients  int      `json:"clients"`
		Uptime   float64  `json:"uptime"`
		Features []string `json:"features"`
		clusterHealth
	}{status, len(srv.order), clients, srv.now().Sub(srv.started).Seconds(), features, cl})
}

type participantView struct {
	ID           string            `json:"id"`
	Name         string            `json:"name,omitempty"` // logical name, when id is a runtime alias
	Connected    bool              `json:"connected"`
	Transport    string            `json:"transport,omitempty"`
	Node         string            `json:"node,omitempty"` // the cluster node it is connected to, when another
	Capabilities []json.RawMessage `json:"capabilities"`
}

// participants lists a space's participants: every configured one, under
// its runtime id when it is connected under an alias.
func (srv *Server) participants(w http.ResponseWriter, r *http.Request) {
	sp := srv.space(r.URL.Query().Get("space"))
	if sp == nil {
		writeError(w, http.StatusNotFound, "unknown_space", "no such space")
		return
	}
	list := make([]participantView, 0, len(sp.members))
	sp.mu.Lock()
	for _, m := range sp.order {
		v := participantView{ID: m.name, Capabilities: m.view().list}
		if s := m.sess; s != nil {
			v.Connected, v.Transport = true, s.transport
			if s.id != m.name {
				v.ID, v.Name = s.id, m.name
			}
		} else {
			sp.link.participantLocked(m, &v)
		}
		list = append(list, v)
	}
	sp.mu.Unlock()
	writeJSON(w, http.StatusOK, struct {
		Space        string            `json:"space"`
		Participants []participantView `json:"participants"`
	}{sp.id, list})
}

// authorize checks the bearer token of a request for participant {id}.
func (srv *Server) authorize(w http.ResponseWriter, r *http.Request) (*liveSpace, *member, string, bool) {
	tok := bearer(r)
	if tok == "" {
		srv.metrics.refusals.WithLabelValues(ErrorUnauthorized).Inc()
		writeError(w, http.StatusUnauthorized, ErrorUnauthorized, "Missing or invalid authorization header")
		return nil, nil, "", false
	}
	id := r.PathValue("id")
	q := r.URL.Query().Get("space")
	if q == "default" {
		q = ""
	}
	sp, m := srv.creds.token(tok, q)
	if m == nil || (id != m.name && sp.resolve(id) != m) {
		srv.metrics.refusals.WithLabelValues(ErrorUnauthorized).Inc()
		writeError(w, http.StatusForbidden, ErrorUnauthorized, "Invalid token for participant")
		return nil, nil, "", false
	}
	return sp, m, id, true
}

// post injects an envelope as a participant (spec 5.3), with the same rules
// as the WebSocket path.
func (srv *Server) post(w http.ResponseWriter, r *http.Request) {
	sp, m, id, ok := srv.authorize(w, r)
	if !ok {
		return
	}
	srv.connectLazily(sp, m)
	o := origin{m: m, id: id, transport: transportHTTP}
	sp.mu.Lock()
	o.s = m.sess
	sp.mu.Unlock()

	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, srv.opts.Limits.MaxMessageSize))
	var rf *refusal
	switch {
	case err != nil:
		var mbe *http.MaxBytesError
		if errors.As(err, &mbe) {
			rf = tooLarge(srv.opts.Limits.MaxMessageSize)
			rf.ref = protocol.PeekIDPrefix(body[:min(len(body), maxPeek)])
		} else {
			rf = refuse(ErrorInvalidEnvelope, "could not read the request body")
		}
	case srv.audit.WaitRoom(r.Context()) != nil:
		return // the client went away while the audit log was behind
	default:
		var res result
		res, rf = sp.inbound(o, body, &inState{})
		if rf == nil && res.body != nil {
			writeJSON(w, res.status, res.body)
			return
		}
		if rf == nil {
			writeJSON(w, http.StatusOK, struct {
				ID        string `json:"id"`
				Status    string `json:"status"`
				Timestamp string `json:"timestamp"`
			}{res.id, "accepted", protocol.FormatTime(res.ts)})
			return
		}
	}
	sp.answer(o, rf)
	writeRefusal(w, rf)
}

func writeRefusal(w http.ResponseWriter, rf *refusal) {
	b := protocol.AppendString(append([]byte(nil), `{"error":`...), rf.code)
	b = protocol.AppendString(append(b, `,"message":`...), rf.message)
	if rf.ref != "" {
		b = protocol.AppendString(append(b, `,"id":`...), rf.ref)
	}
	if rf.fields != nil {
		b = rf.fields(b)
	}
	b = append(b, "}\n"...)
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	if rf.code == ErrorRateLimited {
		w.Header().Set("Retry-After", "1")
	}
	w.WriteHeader(rf.status)
	_, _ = w.Write(b)
}

// poll returns the envelopes a participant could see since a time or a
// cursor, from the space's history (spec 5.3); on a node of a cluster, from
// the cluster's.
func (srv *Server) poll(w http.ResponseWriter, r *http.Request) {
	sp, m, _, ok := srv.authorize(w, r)
	if !ok {
		return
	}
	q := r.URL.Query()
	var after time.Time
	if v := q.Get("since"); v != "" {
		t, err := time.Parse(time.RFC3339Nano, v)
		if err != nil {
			writeError(w, http.StatusBadRequest, "invalid_request", "since must be an RFC 3339 time")
			return
		}
		after = t
	}
	limit, err := parseUint(q.Get("limit"))
	if err != nil || limit > 1000 {
		writeError(w, http.StatusBadRequest, "invalid_request", "limit must be an integer from 1 to 1000")
		return
	}
	if limit == 0 {
		limit = 100
	}
	// A node of a cluster reads the cluster's history (clusterSpace.poll);
	// one node alone, its own (pollHere).
	sp.link.poll(w, r, m, after, q.Get("cursor"), int(limit))
}

// pollHere answers a poll from this node's history (the solo link's
// poll).
func (sp *liveSpace) pollHere(w http.ResponseWriter, m *member, after time.Time, cursor string, limit int) {
	from, err := parseUint(cursor)
	if err != nil {
		writeError(w, http.StatusBadRequest, "invalid_request", "cursor must be a non-negative integer")
		return
	}
	sp.mu.Lock()
	entries := sp.history.since(after, from, limit, m)
	next := sp.history.next
	sp.mu.Unlock()
	if len(entries) > 0 {
		next = entries[len(entries)-1].seq + 1
	}
	msgs := make([]json.RawMessage, len(entries))
	for i, e := range entries {
		msgs[i] = e.data
	}
	writeJSON(w, http.StatusOK, struct {
		Messages []json.RawMessage `json:"messages"`
		Cursor   string            `json:"cursor"`
	}{msgs, strconv.FormatUint(next, 10)})
}

func parseUint(s string) (uint64, error) {
	if s == "" {
		return 0, nil
	}
	return strconv.ParseUint(s, 10, 64)
}
