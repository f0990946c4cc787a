package gateway

import "net/http"

// consoleRoutes adds the web console at /console/ (see docs/console.md).
func (srv *Server) consoleRoutes(mux *http.ServeMux) {}
