package studio_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"go.uber.org/goleak"

	"github.com/mew-protocol/mew/console/studio"
	"github.com/mew-protocol/mew/internal/mcpserver"
	"github.com/mew-protocol/mew/internal/testutil"
	"github.com/mew-protocol/mew/llm"
)

// envFS makes this test binary serve mew's filesystem MCP server (the one
// of `mew mcp filesystem DIR`) for DIR on its standard input and output:
// the real MCP server the definitions of these tests use.
const envFS = "MEW_STUDIO_TEST_FS"

func TestMain(m *testing.M) {
	if dir := os.Getenv(envFS); dir != "" {
		os.Exit(serveFS(dir))
	}
	goleak.VerifyTestMain(m)
}

func serveFS(dir string) int {
	s, release, err := mcpserver.Filesystem(dir)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer func() { _ = release() }()
	if err := s.Run(context.Background(), &mcp.StdioTransport{}); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	return 0
}

// definition is a tools agent with comments, other keys and one tool,
// whose "files" server is this test binary serving the directory %q.
const definition = `# The studio's test desk.
name: notes-desk # what MCP clients see
version: 1.0.0
description: Writes notes.
mode: tools
maxIterations: 4
timeout: 30s
x-anchor: &who Ada
mcpServers:
  # a real MCP server: mew's filesystem server
  files:
    command: %q
    env: {MEW_STUDIO_TEST_FS: %q}
    permission: never
tools:
  # The first tool.
  - name: echo
    description: Repeats.
    parameters:
      type: object
      properties:
        text: {type: string, description: What to say.} # kept
    prompt: "Say {text}"
`

// desk is a written definition and the directory its server serves.
type desk struct {
	path, files string
}

func writeDesk(t *testing.T, mode os.FileMode) desk {
	t.Helper()
	exe := testutil.Executable(t)
	dir := t.TempDir()
	d := desk{path: filepath.Join(dir, "desk.yaml"), files: filepath.Join(dir, "files")}
	if err := os.WriteFile(d.path, fmt.Appendf(nil, definition, exe, d.files), mode); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(d.path, mode); err != nil {
		t.Fatal(err)
	}
	return d
}

// unchanged notes the desk's file as it is now, and returns the check, for
// the end of the test, that neither its content nor its modification time
// has changed since.
func (d desk) unchanged(t *testing.T) (check func()) {
	t.Helper()
	read := func() ([]byte, time.Time) {
		t.Helper()
		data, err := os.ReadFile(d.path)
		if err != nil {
			t.Fatal(err)
		}
		st, err := os.Stat(d.path)
		if err != nil {
			t.Fatal(err)
		}
		return data, st.ModTime()
	}
	before, mtime := read()
	return func() {
		t.Helper()
		after, mtime2 := read()
		if !bytes.Equal(before, after) || !mtime2.Equal(mtime) {
			t.Errorf("the file changed:\n%s", after)
		}
	}
}

// studioServer is a studio served on 127.0.0.1 for a test.
type studioServer struct {
	base, secret, host string
	url                string // the printed URL, with the secret
}

// serve starts a studio for path with the offline model; it stops when
// the test ends.
func serve(t *testing.T, path string) *studioServer {
	t.Helper()
	return serveWith(t, studio.Options{Config: path, Provider: llm.NewOffline(), ConnectTimeout: 30 * time.Second})
}

// serveWith starts a studio with opts.
func serveWith(t *testing.T, opts studio.Options) *studioServer {
	t.Helper()
	s, err := studio.New(opts)
	if err != nil {
		t.Fatal(err)
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	testutil.Background(t, func(ctx context.Context) error { return s.Serve(ctx, l) })
	u := s.URL(l.Addr())
	_, secret, ok := strings.Cut(u, "#secret=")
	if !ok {
		t.Fatalf("URL %q has no secret in its fragment", u)
	}
	return &studioServer{base: "http://" + l.Addr().String(), secret: secret, host: l.Addr().String(), url: u}
}

// req sends a request; header holds extra headers ("" values delete).
func (s *studioServer) req(t *testing.T, method, path string, body io.Reader, header map[string]string) (int, http.Header, []byte) {
	t.Helper()
	r, err := http.NewRequest(method, s.base+path, body)
	if err != nil {
		t.Fatal(err)
	}
	r.Header.Set(studio.SecretHeader, s.secret)
	if body != nil {
		r.Header.Set("Content-Type", "application/json")
		r.Header.Set("Origin", s.base)
	}
	resp, data := testutil.HTTPDo(t, r, header)
	return resp.StatusCode, resp.Header, data
}

// post sends v as JSON to path.
func (s *studioServer) post(t *testing.T, path string, v any) (int, []byte) {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	code, _, data := s.req(t, http.MethodPost, path, bytes.NewReader(b), nil)
	return code, data
}

// noteTool is the tool the tests build: an enum, a required integer with
// bounds and an array of strings, whose prompt the offline model reads as
// "write this to notes.txt".
func noteTool() map[string]any {
	return map[string]any{
		"name":        "write_note",
		"description": "Writes a note to notes.txt.",
		"parameters": map[string]any{
			"type": "object",
			"properties": map[string]any{
				"mood":  map[string]any{"type": "string", "enum": []string{"calm", "busy"}},
				"count": map[string]any{"type": "integer", "minimum": 1, "maximum": 5, "description": "How many."},
				"tags":  map[string]any{"type": "array", "items": map[string]any{"type": "string"}},
			},
			"required": []string{"count"},
		},
		"prompt": "note '{mood} {count} {tags}' in notes.txt",
	}
}

// echoTool is the file's tool as the page sends it back.
func echoTool() map[string]any {
	return map[string]any{
		"name": "echo", "description": "Repeats.",
		"parameters": map[string]any{"type": "object", "properties": map[string]any{"text": map[string]any{"type": "string", "description": "What to say."}}},
		"prompt":     "Say {text}",
	}
}
