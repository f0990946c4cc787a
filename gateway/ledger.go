package gateway

import (
	"encoding/json"
	"net/http"
	"slices"

	"github.com/mew-protocol/mew/protocol"
)

// grantView is one runtime grant in force, as GET /participants/{id}/grants
// shows it.
type grantView struct {
	ID           string            `json:"id"`   // the capability/grant envelope's id: what capability/revoke names
	From         string            `json:"from"` // the granter's logical name
	To           string            `json:"to"`   // the holder's logical name
	Capabilities []json.RawMessage `json:"capabilities"`
	GrantedAt    string            `json:"granted_at"`
	ExpiresAt    string            `json:"expires_at,omitempty"` // absent: until revoked; else the earliest of its own end and its parents'
	Session      bool              `json:"session,omitempty"`    // ends when its granter leaves the space
	Parents      []string          `json:"parents,omitempty"`    // the grants it leans on: it ends with any of them
}

// ledger lists the runtime grants in force in the caller's space, oldest
// first per holder. A participant that may grant or revoke without a
// payload condition sees the whole space's ledger, since it needs it to
// revoke; any other sees only the grants it holds or made. Static
// capabilities from the space config are not grants and are not listed
// (GET /participants shows them).
func (srv *Server) ledger(w http.ResponseWriter, r *http.Request) {
	sp, m, _, ok := srv.authorize(w, r)
	if !ok {
		return
	}
	srv.writeLedger(w, sp, m)
}

// writeLedger answers with the ledger of sp as m may see it.
func (srv *Server) writeLedger(w http.ResponseWriter, sp *liveSpace, m *member) {
	set := m.view().set
	all := set.Allows(protocol.KindCapabilityGrant, nil) || set.Allows(protocol.KindCapabilityRevoke, nil)
	list := []grantView{}
	now := srv.now()
	sp.mu.Lock()
	for _, h := range sp.order {
		for _, g := range h.grants {
			if !all && h != m && g.from != m.name {
				continue
			}
			if g.waiting || (!g.until.IsZero() && !now.Before(g.until)) {
				continue // due; settled at the next envelope or tick
			}
			v := grantView{ID: g.id, From: g.from, To: h.name, Capabilities: g.caps, GrantedAt: protocol.FormatTime(g.at), Session: g.session}
			if !g.until.IsZero() {
				v.ExpiresAt = protocol.FormatTime(g.until)
			}
			for _, l := range g.links {
				if l.grantID != "" && !slices.Contains(v.Parents, l.grantID) {
					v.Parents = append(v.Parents, l.grantID)
				}
			}
			list = append(list, v)
		}
	}
	sp.mu.Unlock()
	writeJSON(w, http.StatusOK, struct {
		Space  string      `json:"space"`
		Grants []grantView `json:"grants"`
	}{sp.id, list})
}
