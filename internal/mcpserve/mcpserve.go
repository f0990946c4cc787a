package mcpserve

import (
	"context"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mew-protocol/mew/internal/httpserve"
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

// Path is where ServeHTTP serves MCP.
const Path = "/mcp"

// ServeHTTP serves s over streamable HTTP (Handler) at Path on l until ctx
// ends, then closes its sessions (ending their calls) and the listener, and
// returns nil; a listener that fails returns its error. Requests from a
// browser page of another site are refused, and so are requests to a
// loopback address under another host name (DNS rebinding: the go-sdk's
// check).
func ServeHTTP(ctx context.Context, l net.Listener, s *mcp.Server, logger *slog.Logger) error {
	h := Handler(func(*http.Request) *mcp.Server { return s }, &mcp.StreamableHTTPOptions{
		Logger:         logger,
		SessionTimeout: 30 * time.Minute,
	})
	mux := http.NewServeMux()
	mux.Handle(Path, http.NewCrossOriginProtection().Handler(h))
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	err := httpserve.Serve(ctx, srv, l, func() {
		for ss := range s.Sessions() {
			_ = ss.Close()
		}
	})
	if err != nil {
		return fmt.Errorf("mcp over http: %w", err)
	}
	return nil
}
