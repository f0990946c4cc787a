package studio_test

import (
	"bufio"
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

	"github.com/mew-protocol/mew/console/studio"
	"github.com/mew-protocol/mew/internal/testutil"
	"github.com/mew-protocol/mew/llm"
	"github.com/mew-protocol/mew/toolsagent"
)

// The page is served to anyone who names the right host (it holds no
// secret), with a policy that loads nothing from elsewhere.
func TestPageAndPolicy(t *testing.T) {
	s := serve(t, writeDesk(t, 0o600).path)
	code, h, body := s.req(t, http.MethodGet, "/", nil, map[string]string{studio.SecretHeader: ""})
	if code != http.StatusOK || !bytes.Contains(body, []byte(`<script type="module" src="main.js">`)) {
		t.Fatalf("GET /: %d %.200s", code, body)
	}
	if csp := h.Get("Content-Security-Policy"); !strings.Contains(csp, "default-src 'self'") {
		t.Errorf("CSP %q", csp)
	}
	if h.Get("X-Frame-Options") != "DENY" || h.Get("X-Content-Type-Options") != "nosniff" {
		t.Errorf("headers %v", h)
	}
	for _, f := range []string{"main.js", "api.js", "schema.js", "builder.js", "testform.js", "dom.js", "studio.css"} {
		code, h, body := s.req(t, http.MethodGet, "/"+f, nil, nil)
		if code != http.StatusOK || len(body) == 0 {
			t.Errorf("GET /%s: %d", f, code)
		}
		if strings.HasSuffix(f, ".js") && !strings.Contains(h.Get("Content-Type"), "javascript") {
			t.Errorf("%s served as %q", f, h.Get("Content-Type"))
		}
		if bytes.Contains(body, []byte("http://")) || bytes.Contains(body, []byte("https://")) {
			t.Errorf("%s names an external URL", f)
		}
	}
}

// Hostile requests: another host name (DNS rebinding), no secret or a
// wrong one (or one in the query string), a write from another origin or
// site, a form post, bodies too large or malformed. None reaches a
// handler, and the file stays as it was.
func TestGuardRefusesHostileRequests(t *testing.T) {
	d := writeDesk(t, 0o600)
	unchanged := d.unchanged(t)
	s := serve(t, d.path)
	save := func() io.Reader {
		b, _ := json.Marshal(map[string]any{"tools": []any{echoTool(), noteTool()}})
		return bytes.NewReader(b)
	}
	_, port, _ := net.SplitHostPort(s.host)
	huge := bytes.Repeat([]byte(" "), studio.MaxBodyBytes+1)
	for _, tc := range []struct {
		name         string
		method, path string
		body         io.Reader
		header       map[string]string
		want         int
	}{
		{"rebound host name", "GET", "/api/definition", nil, map[string]string{"Host": "evil.example:" + port}, http.StatusMisdirectedRequest},
		{"rebound host, page", "GET", "/", nil, map[string]string{"Host": "evil.example:" + port}, http.StatusMisdirectedRequest},
		{"localhost is another name", "POST", "/api/save", save(), map[string]string{"Host": "localhost:" + port}, http.StatusMisdirectedRequest},
		{"no secret", "GET", "/api/definition", nil, map[string]string{studio.SecretHeader: ""}, http.StatusUnauthorized},
		{"wrong secret", "POST", "/api/save", save(), map[string]string{studio.SecretHeader: "guess"}, http.StatusUnauthorized},
		{"secret in the query", "GET", "/api/definition?secret=" + s.secret, nil, map[string]string{studio.SecretHeader: ""}, http.StatusUnauthorized},
		{"cross-origin write", "POST", "/api/save", save(), map[string]string{"Origin": "http://evil.example"}, http.StatusForbidden},
		{"null origin", "POST", "/api/save", save(), map[string]string{"Origin": "null"}, http.StatusForbidden},
		{"cross-site fetch", "POST", "/api/save", save(), map[string]string{"Origin": "", "Sec-Fetch-Site": "cross-site"}, http.StatusForbidden},
		{"form post", "POST", "/api/save", strings.NewReader("tools=x"), map[string]string{"Content-Type": "application/x-www-form-urlencoded"}, http.StatusUnsupportedMediaType},
		{"oversized body", "POST", "/api/save", bytes.NewReader(huge), nil, http.StatusRequestEntityTooLarge},
		{"oversized chunked body", "POST", "/api/check", io.MultiReader(strings.NewReader(`{"tools":"`), bytes.NewReader(huge)), nil, http.StatusRequestEntityTooLarge},
		{"malformed JSON", "POST", "/api/save", strings.NewReader(`{"tools": [`), nil, http.StatusBadRequest},
		{"two JSON values", "POST", "/api/save", strings.NewReader(`{"tools": []} {"tools": []}`), nil, http.StatusBadRequest},
		{"unknown field", "POST", "/api/save", strings.NewReader(`{"tools": [], "path": "/etc/passwd"}`), nil, http.StatusBadRequest},
		{"no tools", "POST", "/api/save", strings.NewReader(`{}`), nil, http.StatusBadRequest},
		{"tools not a list", "POST", "/api/save", strings.NewReader(`{"tools": {"name": "x"}}`), nil, http.StatusUnprocessableEntity},
		{"a tool not an object", "POST", "/api/save", strings.NewReader(`{"tools": ["x"]}`), nil, http.StatusUnprocessableEntity},
		{"deeply nested tools", "POST", "/api/check", strings.NewReader(`{"tools": ` + strings.Repeat("[", 20000) + strings.Repeat("]", 20000) + `}`), nil, http.StatusBadRequest},
		{"deeply nested schema", "POST", "/api/check", strings.NewReader(`{"tools": [{"name": "x", "prompt": "p", "parameters": ` + strings.Repeat(`{"type": "array", "items": `, 3000) + `{"type": "string"}` + strings.Repeat("}", 3000) + `}]}`), nil, http.StatusUnprocessableEntity},
		{"a file too large", "POST", "/api/check", strings.NewReader(`{"tools": [{"name": "x", "prompt": "p", "description": "` + strings.Repeat("ab ", 400_000) + `"}]}`), nil, http.StatusUnprocessableEntity},
		{"GET on a write", "GET", "/api/save", nil, nil, http.StatusMethodNotAllowed},
		{"unknown API", "GET", "/api/files", nil, nil, http.StatusNotFound},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, _, body := s.req(t, tc.method, tc.path, tc.body, tc.header)
			if code != tc.want {
				t.Errorf("%s %s: %d %s, want %d", tc.method, tc.path, code, body, tc.want)
			}
		})
	}
	unchanged()
}

// A definition the loader refuses is not saved: the answer lists its
// problems and the file is left as it was, with no temporary file behind.
func TestSaveRefusesWhatDoesNotLoad(t *testing.T) {
	d := writeDesk(t, 0o640)
	unchanged := d.unchanged(t)
	s := serve(t, d.path)
	bad := noteTool()
	bad["prompt"] = "note {nothing} in notes.txt"
	hostile := echoTool()
	hostile["mcpServers"] = map[string]any{"evil": map[string]any{"command": "/bin/sh", "permission": "never"}}
	for _, tc := range []struct {
		name  string
		tools []any
		want  string
	}{
		{"unknown placeholder", []any{echoTool(), bad}, "{nothing} names neither a parameter"},
		{"key a tool does not have", []any{hostile}, "unknown key in a tool"},
		{"duplicate names", []any{echoTool(), echoTool()}, "duplicate tool name"},
		{"no tools", []any{}, "no tools"},
		{"bad schema", []any{map[string]any{"name": "x", "prompt": "p", "parameters": map[string]any{"type": "object", "properties": map[string]any{"n": map[string]any{"type": "integer", "minimum": 5, "maximum": 1}}}}}, "more than maximum"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, body := s.post(t, "/api/save", map[string]any{"tools": tc.tools})
			if code != http.StatusUnprocessableEntity || !strings.Contains(string(body), tc.want) {
				t.Errorf("save: %d %s, want 422 with %q", code, body, tc.want)
			}
		})
	}
	unchanged()
	entries, _ := os.ReadDir(filepath.Dir(d.path))
	for _, e := range entries {
		if strings.Contains(e.Name(), ".studio-") {
			t.Errorf("temporary file left: %s", e.Name())
		}
	}
}

// Save writes the tools into the file and keeps the rest: other keys,
// comments, x- keys of a tool, the file's mode. Text that looks like YAML
// stays text. The result loads with the loader of `mew agent mcp`.
func TestSaveKeepsTheRest(t *testing.T) {
	d := writeDesk(t, 0o640)
	s := serve(t, d.path)
	echo := echoTool()
	echo["description"] = "Repeats.\nmcpServers:\n  evil: {command: /bin/sh, permission: never}"
	code, body := s.post(t, "/api/save", map[string]any{"tools": []any{echo, noteTool()}})
	if code != http.StatusOK {
		t.Fatalf("save: %d %s", code, body)
	}
	data, err := os.ReadFile(d.path)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"# The studio's test desk.", "# what MCP clients see", "# a real MCP server: mew's filesystem server",
		"# The first tool.", "# kept", "x-anchor: &who Ada", "name: write_note", "maxIterations: 4"} {
		if !bytes.Contains(data, []byte(want)) {
			t.Errorf("saved file lacks %q:\n%s", want, data)
		}
	}
	st, err := os.Stat(d.path)
	if err != nil {
		t.Fatal(err)
	}
	if st.Mode().Perm() != 0o640 {
		t.Errorf("mode %v, want 0640", st.Mode().Perm())
	}
	def, err := toolsagent.Load(d.path)
	if err != nil {
		t.Fatalf("the saved file does not load: %v\n%s", err, data)
	}
	if len(def.Servers) != 1 || def.Servers[0].Name != "files" {
		t.Errorf("servers %+v", def.Servers)
	}
	echoT, _ := def.Tool("echo")
	note, ok := def.Tool("write_note")
	if !ok || echoT == nil || echoT.Description != echo["description"] {
		t.Fatalf("tools %+v", def.Tools)
	}
	schema, _ := note.InputSchema()
	for _, want := range []string{`"enum":["calm","busy"]`, `"minimum":1`, `"maximum":5`, `"items":{"type":"string"}`, `"required":["count"]`} {
		if !bytes.Contains(schema, []byte(want)) {
			t.Errorf("schema %s lacks %s", schema, want)
		}
	}
	// And the page reads back what it saved.
	code, _, body = s.req(t, http.MethodGet, "/api/definition", nil, nil)
	var got struct {
		Tools []map[string]any
	}
	if err := json.Unmarshal(body, &got); code != http.StatusOK || err != nil || len(got.Tools) != 2 || got.Tools[1]["name"] != "write_note" {
		t.Errorf("definition: %d %s", code, body)
	}
}

// Preview fills the prompt as Tool.Preview does and lists what is wrong
// with the arguments; the check reports the loader's problems.
func TestPreviewAndCheck(t *testing.T) {
	s := serve(t, writeDesk(t, 0o600).path)
	tools := []any{echoTool(), noteTool()}
	code, body := s.post(t, "/api/preview", map[string]any{"tools": tools, "tool": "write_note", "args": map[string]any{"mood": "sad", "count": 9}})
	var p struct {
		OK         bool
		Prompt     string
		Violations []struct{ Path, Message string }
	}
	if err := json.Unmarshal(body, &p); code != http.StatusOK || err != nil {
		t.Fatalf("preview: %d %s", code, body)
	}
	if p.OK || p.Prompt != "note 'sad 9 {tags}' in notes.txt" || len(p.Violations) != 2 {
		t.Errorf("preview %+v", p)
	}
	code, body = s.post(t, "/api/preview", map[string]any{"tools": tools, "tool": "write_note", "args": map[string]any{"mood": "busy", "count": 3, "tags": []string{"home"}}})
	if err := json.Unmarshal(body, &p); code != http.StatusOK || err != nil || !p.OK || p.Prompt != `note 'busy 3 ["home"]' in notes.txt` {
		t.Errorf("preview: %d %s", code, body)
	}
	code, body = s.post(t, "/api/preview", map[string]any{"tools": tools, "tool": "nope"})
	if code != http.StatusNotFound {
		t.Errorf("unknown tool: %d %s", code, body)
	}
	// A warning does not stop the loading.
	bad := noteTool()
	bad["prompt"] = "{mood}"
	code, body = s.post(t, "/api/check", map[string]any{"tools": []any{bad}})
	if code != http.StatusOK || !strings.Contains(string(body), `"ok":true`) || !strings.Contains(string(body), "required parameter count is not used") {
		t.Errorf("check: %d %s", code, body)
	}
	bad["prompt"] = "{mood} {count} {x}"
	code, body = s.post(t, "/api/check", map[string]any{"tools": []any{bad}})
	if code != http.StatusOK || !strings.Contains(string(body), `"ok":false`) || !strings.Contains(string(body), "{x} names neither") {
		t.Errorf("check: %d %s", code, body)
	}
}

// events reads a run's stream.
func events(t *testing.T, r io.Reader) []map[string]any {
	t.Helper()
	var out []map[string]any
	sc := bufio.NewScanner(r)
	sc.Buffer(nil, 4<<20)
	for sc.Scan() {
		var e map[string]any
		if err := json.Unmarshal(sc.Bytes(), &e); err != nil {
			t.Fatalf("line %q: %v", sc.Text(), err)
		}
		out = append(out, e)
	}
	return out
}

// Run carries the tool out as `mew agent mcp` does, against the real
// filesystem server, streaming each step; invalid arguments stop it
// before the model is asked.
func TestRunStreamsSteps(t *testing.T) {
	d := writeDesk(t, 0o600)
	s := serve(t, d.path)
	tools := []any{echoTool(), noteTool()}
	code, body := s.post(t, "/api/run", map[string]any{"tools": tools, "tool": "write_note", "args": map[string]any{"mood": "busy", "count": 3, "tags": []string{"home", "work"}}})
	if code != http.StatusOK {
		t.Fatalf("run: %d %s", code, body)
	}
	evs := events(t, bytes.NewReader(body))
	var kinds []string
	for _, e := range evs {
		kinds = append(kinds, e["event"].(string))
	}
	if strings.Join(kinds, ",") != "start,model,tool,model,result" {
		t.Fatalf("events %v:\n%s", kinds, body)
	}
	if evs[0]["prompt"] != `note 'busy 3 ["home","work"]' in notes.txt` || evs[2]["tool"] != "files/write_file" || evs[2]["failed"] == true {
		t.Errorf("events:\n%s", body)
	}
	if tok := evs[4]["tokens"].(map[string]any); tok["total"].(float64) <= 0 {
		t.Errorf("no tokens counted: %v", evs[4])
	}
	if !strings.Contains(evs[4]["text"].(string), llm.OfflineLabel) {
		t.Errorf("result %v", evs[4])
	}
	note, err := os.ReadFile(filepath.Join(d.files, "notes.txt"))
	if err != nil || string(note) != `busy 3 ["home","work"]` {
		t.Errorf("notes.txt %q, %v", note, err)
	}

	code, body = s.post(t, "/api/run", map[string]any{"tools": tools, "tool": "write_note", "args": map[string]any{"count": 0}})
	evs = events(t, bytes.NewReader(body))
	if code != http.StatusOK || len(evs) != 1 || evs[0]["event"] != "error" || evs[0]["violations"] == nil {
		t.Errorf("invalid run: %d %s", code, body)
	}
}

// Serve refuses an address that is not loopback.
func TestServeOnlyLoopback(t *testing.T) {
	s, err := studio.New(studio.Options{Config: writeDesk(t, 0o600).path})
	if err != nil {
		t.Fatal(err)
	}
	l, err := net.Listen("tcp", "0.0.0.0:0")
	if err != nil {
		t.Skipf("cannot listen on all addresses here: %v", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := s.Serve(ctx, l); err == nil || !strings.Contains(err.Error(), "loopback") {
		t.Errorf("Serve on %s: %v", l.Addr(), err)
	}
	if _, err := studio.New(studio.Options{Config: filepath.Join(t.TempDir(), "missing.yaml")}); err == nil {
		t.Error("New with a missing file: no error")
	}
	list := filepath.Join(t.TempDir(), "list.yaml")
	_ = os.WriteFile(list, []byte("- a\n- b\n"), 0o600)
	if _, err := studio.New(studio.Options{Config: list}); err == nil {
		t.Error("New with a list: no error")
	}
}

// stuck is a model that answers nothing until its call is cancelled, and
// says when it was asked and when it gave up.
type stuck struct {
	asked, gaveUp chan struct{}
}

func (*stuck) Name() string { return "stuck" }

func (m *stuck) Complete(ctx context.Context, _ llm.Request) (*llm.Response, error) {
	close(m.asked)
	<-ctx.Done()
	close(m.gaveUp)
	return nil, ctx.Err()
}

func (m *stuck) Stream(ctx context.Context, req llm.Request, _ func(llm.Delta)) (*llm.Response, error) {
	return m.Complete(ctx, req)
}

// One run at a time; a run ends when the page goes away.
func TestRunIsExclusiveAndEndsWithThePage(t *testing.T) {
	d := writeDesk(t, 0o600)
	m := &stuck{asked: make(chan struct{}), gaveUp: make(chan struct{})}
	s := serveWith(t, studio.Options{Config: d.path, Provider: m})
	body, _ := json.Marshal(map[string]any{"tools": []any{echoTool()}, "tool": "echo", "args": map[string]any{"text": "hi"}})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, http.MethodPost, s.base+"/api/run", bytes.NewReader(body))
	req.Header.Set(studio.SecretHeader, s.secret)
	req.Header.Set("Content-Type", "application/json")
	first := make(chan error, 1)
	go func() {
		resp, err := http.DefaultClient.Do(req)
		if err == nil {
			_, err = io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
		}
		first <- err
	}()
	select {
	case <-m.asked:
	case <-time.After(30 * time.Second):
		t.Fatal("the model was never asked")
	}
	if code, body := s.post(t, "/api/run", map[string]any{"tools": []any{echoTool()}, "tool": "echo"}); code != http.StatusConflict {
		t.Errorf("a second run: %d %s", code, body)
	}
	cancel()
	select {
	case <-m.gaveUp:
	case <-time.After(10 * time.Second):
		t.Fatal("the run went on after the page left")
	}
	<-first
	// The slot is free again: a run that fails on its arguments answers.
	deadline := time.Now().Add(10 * time.Second)
	for {
		code, body := s.post(t, "/api/run", map[string]any{"tools": []any{noteTool()}, "tool": "write_note"})
		if code == http.StatusOK && strings.Contains(string(body), `"violations"`) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("after the run: %d %s", code, body)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// A definition reached through a symbolic link is saved into the file
// the link points to; the link stays a link.
func TestSaveThroughALink(t *testing.T) {
	d := writeDesk(t, 0o600)
	link := filepath.Join(t.TempDir(), "link.yaml")
	if err := os.Symlink(d.path, link); err != nil {
		t.Skip(err)
	}
	s := serve(t, link)
	if code, body := s.post(t, "/api/save", map[string]any{"tools": []any{echoTool(), noteTool()}}); code != http.StatusOK {
		t.Fatalf("save: %d %s", code, body)
	}
	if fi, err := os.Lstat(link); err != nil || fi.Mode()&os.ModeSymlink == 0 {
		t.Errorf("the link was replaced: %v %v", fi.Mode(), err)
	}
	if def, err := toolsagent.Load(d.path); err != nil || len(def.Tools) != 2 {
		t.Errorf("the target: %v", err)
	}
}

// A JSON definition is written back as JSON that loads.
func TestSaveJSONDefinition(t *testing.T) {
	path := filepath.Join(t.TempDir(), "desk.json")
	if err := os.WriteFile(path, []byte(`{"name": "j", "mode": "tools", "maxIterations": 2, "tools": [{"name": "echo", "description": "Repeats.", "prompt": "Say {text}", "parameters": {"type": "object", "properties": {"text": {"type": "string"}}}}]}`), 0o600); err != nil {
		t.Fatal(err)
	}
	s := serve(t, path)
	if code, body := s.post(t, "/api/save", map[string]any{"tools": []any{echoTool(), noteTool()}}); code != http.StatusOK {
		t.Fatalf("save: %d %s", code, body)
	}
	data, _ := os.ReadFile(path)
	var v map[string]any
	if err := json.Unmarshal(data, &v); err != nil || v["maxIterations"] != float64(2) {
		t.Fatalf("not JSON, or a key lost: %v\n%s", err, data)
	}
	if def, err := toolsagent.Load(path); err != nil || len(def.Tools) != 2 {
		t.Errorf("load: %v", err)
	}
}

// TestSaveKeepsFormatting: Save rewrites the tools and leaves every other
// line as the person wrote it: four-space indentation, quoting, flow
// mappings, blank lines and comments, above the tools and below them.
func TestSaveKeepsFormatting(t *testing.T) {
	exe := testutil.Executable(t)
	dir := t.TempDir()
	path := filepath.Join(dir, "desk.yaml")
	head := fmt.Sprintf(`# Written by hand.
name:    "notes-desk"     # aligned, quoted
version: '1.0.0'
mode: tools
description: >
    Writes notes,
    folded.

mcpServers:
    files:
        command: %q
        env: { MEW_STUDIO_TEST_FS: %q }
        permission: never
`, exe, filepath.Join(dir, "files"))
	tail := `
# How long it may think.
maxIterations:    4   # kept as written
timeout: "30s"
`
	tools := `tools:
    - name: echo
      description: Repeats.
      prompt: "Say {text}"
      parameters: {type: object, properties: {text: {type: string}}}
`
	if err := os.WriteFile(path, []byte(head+tools+tail), 0o644); err != nil {
		t.Fatal(err)
	}
	s := serve(t, path)
	code, body := s.post(t, "/api/save", map[string]any{"tools": []any{echoTool(), noteTool()}})
	if code != http.StatusOK {
		t.Fatalf("save: %d %s", code, body)
	}
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.HasPrefix(data, []byte(head)) || !bytes.HasSuffix(data, []byte(tail)) {
		t.Fatalf("the lines outside the tools changed:\n%s", data)
	}
	if !bytes.Contains(data, []byte("name: write_note")) {
		t.Errorf("the new tool is not in the file:\n%s", data)
	}
	if _, err := toolsagent.Load(path); err != nil {
		t.Fatalf("the saved file does not load: %v\n%s", err, data)
	}
}
