package mcptest

import (
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// ServeHTTP serves s over streamable HTTP on 127.0.0.1 until the test
// ends, and returns its URL: the in-process server of a bridge's test (New,
// Booking, or a server of the test's own).
func ServeHTTP(t testing.TB, s *mcp.Server) string {
	t.Helper()
	hs := httptest.NewServer(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return s }, nil))
	t.Cleanup(func() {
		hs.CloseClientConnections()
		hs.Close()
		// The server's side of a session outlives the closed connection.
		for ss := range s.Sessions() {
			_ = ss.Close()
		}
	})
	return hs.URL
}
