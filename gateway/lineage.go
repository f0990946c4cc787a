package gateway

import (
	"errors"
	"math"
	"net/http"
	"path/filepath"
	"slices"
	"strconv"
	"sync"
	"time"

	"golang.org/x/time/rate"

	"github.com/mew-protocol/mew/auditlog"
	"github.com/mew-protocol/mew/protocol"
)

// lineageBudget bounds the envelope bodies a space's lineage index holds
// in memory; a larger log is answered 507 (use mew log why on the files).
const lineageBudget = 128 << 20

// lineageIdle is how long a space's lineage index is kept after the last
// lineage request: it holds the log's bodies, up to lineageBudget.
const lineageIdle = 5 * time.Minute

// maxLineageLimiters bounds the per-participant rate limiters kept; past
// it, those of participants that have not asked for a while (a full
// bucket) are dropped.
const maxLineageLimiters = 1024

// ErrorLineageBusy is the error code of a lineage request refused because
// the gateway is answering as many as it answers at once (HTTP 429); one
// over the participant's rate is ErrorRateLimited.
const ErrorLineageBusy = "busy"

// The labels the lineage API's refusals are counted under in
// mew_gateway_refusals_total, and what they say.
const (
	labelLineageRate   = "lineage_rate_limited"
	labelLineageBusy   = "lineage_busy"
	lineageRateMessage = "too many lineage requests from this participant; try again in a moment"
	lineageBusyMessage = "the gateway is tracing other lineages; try again in a moment"
)

// lineageGate bounds the lineage API, whose answers come from the audit
// log: a rate per participant, and a number of requests in flight for
// everyone. It keeps each space's index of the log (auditlog.Follower),
// which each request brings up to date by reading only what the log gained
// since the last one.
type lineageGate struct {
	rate  rate.Limit
	burst int
	slots chan struct{} // one per request in flight
	idle  time.Duration

	mu       sync.Mutex
	limiters map[*member]*rate.Limiter
	indexes  map[string]*lineageIndex // by space id
}

// lineageIndex is one space's index of the audit log.
type lineageIndex struct {
	mu    sync.Mutex // held while the index is updated and read
	f     *auditlog.Follower
	timer *time.Timer // drops f once idle
}

func newLineageGate(o Options) *lineageGate {
	return &lineageGate{
		rate: rate.Limit(o.Limits.LineageRate), burst: o.Limits.LineageBurst,
		slots: make(chan struct{}, o.Limits.LineageConcurrency), idle: lineageIdle,
		limiters: map[*member]*rate.Limiter{}, indexes: map[string]*lineageIndex{},
	}
}

// allow takes one of m's lineage requests, or reports how long to wait.
func (g *lineageGate) allow(m *member, now time.Time) (time.Duration, bool) {
	if g.rate < 0 {
		return 0, true
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	l := g.limiters[m]
	if l == nil {
		if len(g.limiters) >= maxLineageLimiters {
			for k, v := range g.limiters {
				if v.TokensAt(now) >= float64(g.burst) {
					delete(g.limiters, k)
				}
			}
		}
		l = rate.NewLimiter(g.rate, g.burst)
		g.limiters[m] = l
	}
	if l.AllowN(now, 1) {
		return 0, true
	}
	return time.Duration(float64(time.Second) / float64(g.rate)), false
}

// index returns the lineage index of space id, made on first use.
func (g *lineageGate) index(id string) *lineageIndex {
	g.mu.Lock()
	defer g.mu.Unlock()
	li := g.indexes[id]
	if li == nil {
		li = &lineageIndex{}
		g.indexes[id] = li
	}
	return li
}

// lineageRoutes adds the HTTP API that serves an envelope's lineage from the
// audit log (see docs/audit.md).
func (srv *Server) lineageRoutes(mux *http.ServeMux) {
	srv.lineages = newLineageGate(srv.opts)
	mux.HandleFunc("GET /participants/{id}/lineage/{envelope}", srv.lineage)
}

// lineage answers GET /participants/{id}/lineage/{envelope}: the lineage
// tree of an envelope of the caller's space, as mew log why --format json
// prints it. Who may read it: a participant that may grant or revoke
// capabilities without a payload condition (the space's administrators, who
// see the grant ledger too), or one that saw every envelope the lineage
// shows, as its sender or one of its recipients. An envelope the caller
// never saw is answered as unknown (404), so ids of others' private
// envelopes cannot be probed; a lineage that reaches beyond what it saw is
// refused (403).
func (srv *Server) lineage(w http.ResponseWriter, r *http.Request) {
	sp, m, id, ok := srv.authorize(w, r)
	if !ok {
		return
	}
	srv.writeLineage(w, r, sp, m, id)
}

// consoleLineage is GET /console/lineage/{envelope}: the lineage for the
// web console, which holds a participant's token or a console session (see
// consoleGrants). The same rules decide what the participant may read.
func (srv *Server) consoleLineage(w http.ResponseWriter, r *http.Request) {
	sp, m, ok := srv.consoleCaller(w, r)
	if !ok {
		return
	}
	srv.writeLineage(w, r, sp, m, m.name)
}

// writeLineage answers with the lineage of the envelope r names, as member
// m of sp, connected as id, may see it.
func (srv *Server) writeLineage(w http.ResponseWriter, r *http.Request, sp *liveSpace, m *member, id string) {
	lg := sp.cfg.Logging
	if srv.opts.Audit.Off || !lg.Enabled || !lg.EnvelopeHistory {
		writeError(w, http.StatusNotFound, "no_audit_log", "this gateway keeps no envelope history")
		return
	}
	if wait, ok := srv.lineages.allow(m, time.Now()); !ok {
		srv.refuseLineage(w, labelLineageRate, ErrorRateLimited, lineageRateMessage, wait)
		return
	}
	select {
	case srv.lineages.slots <- struct{}{}:
		defer func() { <-srv.lineages.slots }()
	default:
		srv.refuseLineage(w, labelLineageBusy, ErrorLineageBusy, lineageBusyMessage, time.Second)
		return
	}
	envID := r.PathValue("envelope")
	root, status, err := srv.traceLineage(r, sp, m, id, envID)
	switch {
	case err != nil && r.Context().Err() != nil:
		// The client went away; what was read is kept for the next one.
	case errors.Is(err, auditlog.ErrTooLarge):
		writeError(w, http.StatusInsufficientStorage, "log_too_large", "the audit log is too large to trace over HTTP; use mew log why")
	case err != nil:
		srv.opts.Logger.Error("lineage: reading the audit log", "err", err)
		writeError(w, http.StatusInternalServerError, "audit_log_unreadable", "the audit log could not be read")
	case status == http.StatusNotFound:
		writeError(w, status, "not_found", "no envelope with this id that you may see")
	case status != http.StatusOK:
		writeError(w, status, ErrorUnauthorized, "the lineage holds envelopes you did not see")
	default:
		writeJSON(w, http.StatusOK, struct {
			Space    string         `json:"space"`
			Envelope string         `json:"envelope"`
			Lineage  *auditlog.Node `json:"lineage"`
		}{sp.id, envID, root})
	}
}

// traceLineage brings sp's index of the audit log up to date and returns
// the lineage of envID as member m, connected as id, may read it, with
// the status lineageAccess gives.
func (srv *Server) traceLineage(r *http.Request, sp *liveSpace, m *member, id, envID string) (*auditlog.Node, int, error) {
	li := srv.lineages.index(sp.id)
	li.mu.Lock()
	defer li.mu.Unlock()
	if li.f == nil {
		li.f = auditlog.NewFollower(srv.auditDir(), auditlog.IndexOptions{Space: sp.id, MaxBytes: lineageBudget})
		li.timer = time.AfterFunc(srv.lineages.idle, func() {
			li.mu.Lock()
			defer li.mu.Unlock()
			li.f = nil // the memory goes back; the next request reads the log again
		})
	} else {
		li.timer.Reset(srv.lineages.idle)
	}
	ix, err := li.f.Update(r.Context())
	if err != nil {
		return nil, 0, err
	}
	root, err := ix.Lineage(envID)
	if err != nil {
		return nil, http.StatusNotFound, nil
	}
	// The tree points into the index, which the next update changes: it
	// is checked and cut to file names under the lock.
	if status := lineageAccess(root, m, id); status != http.StatusOK {
		return nil, status, nil
	}
	baseNames(root)
	return root, http.StatusOK, nil
}

// refuseLineage answers a lineage request over a limit 429, counted under
// label, with the time to wait in Retry-After (whole seconds, at least 1).
func (srv *Server) refuseLineage(w http.ResponseWriter, label, code, msg string, wait time.Duration) {
	srv.metrics.refusals.WithLabelValues(label).Inc()
	w.Header().Set("Retry-After", strconv.Itoa(max(1, int(math.Ceil(wait.Seconds())))))
	writeError(w, http.StatusTooManyRequests, code, msg)
}

// lineageAccess decides whether member m, connected as id, may read the
// lineage root: http.StatusOK, StatusNotFound when it never saw the
// envelope asked about, StatusForbidden when it saw that one but not all.
func lineageAccess(root *auditlog.Node, m *member, id string) int {
	set := m.view().set
	if set.Allows(protocol.KindCapabilityGrant, nil) || set.Allows(protocol.KindCapabilityRevoke, nil) {
		return http.StatusOK
	}
	names := []string{id, m.name}
	saw := func(e *auditlog.Entry) bool {
		return slices.Contains(names, e.Env.From) || slices.ContainsFunc(e.Recipients, func(p string) bool { return slices.Contains(names, p) })
	}
	entries := root.Envelopes()
	switch {
	case len(entries) == 0 || !saw(entries[0]):
		return http.StatusNotFound
	case slices.ContainsFunc(entries, func(e *auditlog.Entry) bool { return !saw(e) }):
		return http.StatusForbidden
	}
	return http.StatusOK
}

// baseNames cuts the places in a lineage to file names: the gateway's
// directories are none of a participant's business.
func baseNames(n *auditlog.Node) {
	if n.At != "" {
		n.At = filepath.Base(n.At)
	}
	for _, c := range n.Children {
		baseNames(c)
	}
}
