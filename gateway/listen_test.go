package gateway

import (
	"bufio"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
)

// TestBusyResponse: the hand-written 503 is a well-formed HTTP response
// whose body is the JSON error its Content-Length announces.
func TestBusyResponse(t *testing.T) {
	resp, err := http.ReadResponse(bufio.NewReader(strings.NewReader(busyResponse)), nil)
	if err != nil {
		t.Fatal(err)
	}
	body, err := io.ReadAll(resp.Body)
	if err != nil || resp.StatusCode != http.StatusServiceUnavailable || int64(len(body)) != resp.ContentLength {
		t.Fatalf("status %d, body %q (%d bytes, Content-Length %d), %v", resp.StatusCode, body, len(body), resp.ContentLength, err)
	}
	var e errorBody
	if err := json.Unmarshal(body, &e); err != nil || e.Error != "too_many_connections" {
		t.Fatalf("body %q: %v", body, err)
	}
	if !strings.HasSuffix(busyResponse, "\r\n\r\n"+string(body)) {
		t.Fatalf("bytes after the announced body: %q", busyResponse)
	}
}
