package mcptest

import (
	"context"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

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

// Connect serves s over in-memory transports and returns the session of a
// client, named name, connected to it. The session closes when the test
// ends, and the server's side is waited for.
func Connect(t testing.TB, s *mcp.Server, name string) *mcp.ClientSession {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	ct, st := mcp.NewInMemoryTransports()
	ss, err := s.Connect(ctx, st, nil)
	if err != nil {
		t.Fatal(err)
	}
	cs, err := mcp.NewClient(&mcp.Implementation{Name: name}, nil).Connect(ctx, ct, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cs.Close(); _ = ss.Wait() })
	return cs
}
