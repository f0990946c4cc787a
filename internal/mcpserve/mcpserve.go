package mcpserve

import (
	"net/http"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mew-protocol/mew/internal/mcpver"
)

// ProtocolVersionHeader is the HTTP header that carries a request's MCP
// revision.
const ProtocolVersionHeader = "Mcp-Protocol-Version"

// Options returns o (a new value when nil) with SupportedProtocolVersions
// set to the revisions mew speaks.
func Options(o *mcp.ServerOptions) *mcp.ServerOptions {
	if o == nil {
		o = &mcp.ServerOptions{}
	}
	o.SupportedProtocolVersions = mcpver.Supported()
	return o
}

// Handler returns the streamable HTTP handler of the servers getServer
// returns, at every revision mew speaks: the stateless revision's requests
// are served statelessly, the others in sessions. opts configures both
// (its Stateless member is ignored); nil means the defaults.
func Handler(getServer func(*http.Request) *mcp.Server, opts *mcp.StreamableHTTPOptions) http.Handler {
	var session, stateless mcp.StreamableHTTPOptions
	if opts != nil {
		session, stateless = *opts, *opts
	}
	session.Stateless, stateless.Stateless = false, true
	// In a stateless revision the POST is the whole request: a client that
	// closes it has cancelled the request, and the handler stops.
	stateless.PropagateRequestCancellation = true
	return &handler{
		session:   mcp.NewStreamableHTTPHandler(getServer, &session),
		stateless: mcp.NewStreamableHTTPHandler(getServer, &stateless),
	}
}

// handler routes each request by its revision.
type handler struct {
	session, stateless http.Handler
}

// ServeHTTP implements http.Handler.
func (h *handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if mcpver.IsStateless(r.Header.Get(ProtocolVersionHeader)) {
		// Also a stateless revision mew does not speak: the stateless
		// handler refuses it with the revisions it does, as the spec asks.
		h.stateless.ServeHTTP(w, r)
		return
	}
	h.session.ServeHTTP(w, r)
}
