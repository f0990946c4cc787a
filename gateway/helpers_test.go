package gateway_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/mew-protocol/mew/gateway"
	"github.com/mew-protocol/mew/internal/testutil"
	"github.com/mew-protocol/mew/space"
)

// testSpace is the space most tests use: a trusted human, a limited agent,
// one participant whose token lives in a file, one output_log participant
// joined at start and one joined on its first HTTP post.
const testSpace = `
space:
  id: test
  name: Test space
participants:
  alice:
    tokens: [alice-token]
    capabilities: [{kind: "*"}]
  bob:
    tokens: [bob-token]
    capabilities:
      - {kind: chat}
      - {kind: mcp/proposal}
      - {kind: mcp/request, payload: {method: "tools/list"}}
  carol:
    capabilities: [{kind: chat}]
  watcher:
    tokens: [watcher-token]
    output_log: ./logs/watcher.jsonl
    auto_connect: true
    capabilities: [{kind: chat}]
  lazy:
    tokens: [lazy-token]
    output_log: ./logs/lazy.jsonl
    capabilities: [{kind: chat}]
defaults:
  capabilities: [{kind: "reasoning/*"}]
`

func start(t *testing.T, opts gateway.Options) *testutil.Gateway {
	t.Helper()
	return testutil.StartGateway(t, testSpace, opts)
}

// post sends body to POST /participants/{id}/messages and returns the status
// and decoded answer.
func post(t *testing.T, g *testutil.Gateway, id, token, body string) (int, map[string]any) {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, g.URL+"/participants/"+id+"/messages", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	return do(t, req)
}

func get(t *testing.T, g *testutil.Gateway, path, token string) (int, map[string]any) {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, g.URL+path, nil)
	if err != nil {
		t.Fatal(err)
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	return do(t, req)
}

func do(t *testing.T, req *http.Request) (int, map[string]any) {
	t.Helper()
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatalf("%s %s: answer is not a JSON object: %q", req.Method, req.URL.Path, b)
	}
	return resp.StatusCode, m
}

// waitFile polls a file until it contains want.
func waitFile(t *testing.T, path, want string) []byte {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for {
		b, _ := os.ReadFile(path)
		if bytes.Contains(b, []byte(want)) {
			return b
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s never contained %s; it holds:\n%s", path, want, b)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// ids returns the ids of a welcome's participants.
func ids(list any) []string {
	var out []string
	for _, p := range list.([]any) {
		out = append(out, p.(map[string]any)["id"].(string))
	}
	return out
}

// serveSpaces serves a gateway for the given spaces (each written to a
// directory of its own) on 127.0.0.1:0 until the test ends, and returns its
// http:// base URL.
func serveSpaces(t *testing.T, opts gateway.Options, spaceYAMLs ...string) string {
	t.Helper()
	return "http://" + serveSpacesOn(t, "127.0.0.1:0", opts, spaceYAMLs...)
}

// serveSpacesOn is serveSpaces listening on addr; it returns the address
// listened on.
func serveSpacesOn(t *testing.T, addr string, opts gateway.Options, spaceYAMLs ...string) string {
	t.Helper()
	for i, y := range spaceYAMLs {
		d := filepath.Join(t.TempDir(), strconv.Itoa(i), ".mew")
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
		p := filepath.Join(d, "space.yaml")
		if err := os.WriteFile(p, []byte(y), 0o644); err != nil {
			t.Fatal(err)
		}
		cfg, err := space.Load(p)
		if err != nil {
			t.Fatal(err)
		}
		opts.Spaces = append(opts.Spaces, cfg)
	}
	srv, err := gateway.New(opts)
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	hs := srv.HTTPServer()
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = hs.Serve(srv.Listener(ln))
	}()
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		_ = hs.Shutdown(ctx)
		_ = srv.Close(ctx)
		<-done
	})
	return ln.Addr().String()
}
