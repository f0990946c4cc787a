package gateway

import (
	"errors"
	"net/http"
	"path/filepath"
	"slices"

	"github.com/mew-protocol/mew/auditlog"
	"github.com/mew-protocol/mew/protocol"
)

// lineageBudget bounds the envelope bodies one lineage request reads into
// memory; a larger log is answered 507 (use mew log why on the files).
const lineageBudget = 128 << 20

// lineageRoutes adds the HTTP API that serves an envelope's lineage from the
// audit log (see docs/audit.md).
func (srv *Server) lineageRoutes(mux *http.ServeMux) {
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
	sp, m := srv.joinLookup(bearer(r), spaceParam(r))
	if m == nil {
		srv.metrics.refusals.WithLabelValues(ErrorUnauthorized).Inc()
		writeJSON(w, http.StatusUnauthorized, errorBody{Error: ErrorUnauthorized, Message: "a token or a console session is needed (Authorization: Bearer)"})
		return
	}
	srv.writeLineage(w, r, sp, m, m.name)
}

// writeLineage answers with the lineage of the envelope r names, as member
// m of sp, connected as id, may see it.
func (srv *Server) writeLineage(w http.ResponseWriter, r *http.Request, sp *liveSpace, m *member, id string) {
	lg := sp.cfg.Logging
	if srv.opts.NoAudit || !lg.Enabled || !lg.EnvelopeHistory {
		writeJSON(w, http.StatusNotFound, errorBody{Error: "no_audit_log", Message: "this gateway keeps no envelope history"})
		return
	}
	ix, err := auditlog.BuildIndex(r.Context(), srv.auditDir(), auditlog.IndexOptions{Space: sp.id, MaxBytes: lineageBudget})
	switch {
	case errors.Is(err, auditlog.ErrTooLarge):
		writeJSON(w, http.StatusInsufficientStorage, errorBody{Error: "log_too_large", Message: "the audit log is too large to trace over HTTP; use mew log why"})
		return
	case err != nil:
		srv.opts.Logger.Error("lineage: reading the audit log", "err", err)
		writeJSON(w, http.StatusInternalServerError, errorBody{Error: "audit_log_unreadable", Message: "the audit log could not be read"})
		return
	}
	envID := r.PathValue("envelope")
	unknown := errorBody{Error: "not_found", Message: "no envelope with this id that you may see"}
	root, err := ix.Lineage(envID)
	if err != nil {
		writeJSON(w, http.StatusNotFound, unknown)
		return
	}
	if status := lineageAccess(root, m, id); status != http.StatusOK {
		if status == http.StatusNotFound {
			writeJSON(w, status, unknown)
		} else {
			writeJSON(w, status, errorBody{Error: ErrorUnauthorized, Message: "the lineage holds envelopes you did not see"})
		}
		return
	}
	baseNames(root)
	writeJSON(w, http.StatusOK, struct {
		Space    string         `json:"space"`
		Envelope string         `json:"envelope"`
		Lineage  *auditlog.Node `json:"lineage"`
	}{sp.id, envID, root})
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
