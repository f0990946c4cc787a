package studio

import (
	"context"
	"crypto/rand"
	"crypto/subtle"
	"embed"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"mime"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/mew-protocol/mew/internal/httpserve"
	"github.com/mew-protocol/mew/llm"
	"github.com/mew-protocol/mew/toolsagent"
)

//go:embed web
var webFS embed.FS

// SecretHeader carries the run's secret on every API call.
const SecretHeader = "X-Studio-Secret"

// MaxBodyBytes bounds a request body: the largest definition and the
// largest arguments, with room for the JSON around them.
const MaxBodyBytes = toolsagent.MaxFileBytes + toolsagent.MaxArgumentBytes + 64<<10

// Options configures a Server.
type Options struct {
	// Config is the definition file the studio edits; required. It must
	// exist and be a YAML (or JSON) mapping; problems the loader finds in
	// it are shown on the page, not refused.
	Config string
	// Provider is the model that runs the tests; nil means the one the
	// definition's model settings select (with Getenv), at each run.
	Provider llm.Provider
	// Getenv reads the environment (the model's OPENAI_* variables, ${VAR}
	// in the servers' settings); nil means os.Getenv.
	Getenv func(string) string
	// Environ is the environment the definition's stdio MCP servers start
	// with; nil means os.Environ().
	Environ []string
	// Logger receives diagnostics and the MCP servers' standard error; nil
	// means none.
	Logger *slog.Logger
	// ConnectTimeout bounds starting each MCP server of a run (default
	// toolsagent.DefaultConnectTimeout).
	ConnectTimeout time.Duration
	// Now is the clock that times the runs; nil means time.Now.
	Now func() time.Time
	// Secret is the secret the API calls must carry; empty means a fresh
	// random one.
	Secret string
}

// Server serves the studio for one definition file.
type Server struct {
	opts   Options
	log    *slog.Logger
	secret string
	static fs.FS

	mu      sync.Mutex // serializes saves (read, merge, write)
	running chan struct{}
}

// New checks the options and reads the file once, so that a wrong path
// fails at once instead of on the page.
func New(opts Options) (*Server, error) {
	if opts.Config == "" {
		return nil, errors.New("studio: no definition file")
	}
	data, _, err := readFile(opts.Config)
	if err != nil {
		return nil, err
	}
	if _, err := parseDocument(opts.Config, data); err != nil {
		return nil, err
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	if opts.Getenv == nil {
		opts.Getenv = os.Getenv
	}
	abs, err := filepath.Abs(opts.Config)
	if err != nil {
		return nil, fmt.Errorf("studio: %w", err)
	}
	// Save renames a new file over the old one: over the file a link
	// points to, not over the link.
	if real, err := filepath.EvalSymlinks(abs); err == nil {
		abs = real
	}
	opts.Config = abs
	s := &Server{opts: opts, log: opts.Logger, secret: opts.Secret, running: make(chan struct{}, 1)}
	if s.log == nil {
		s.log = slog.New(slog.DiscardHandler)
	}
	if s.secret == "" {
		b := make([]byte, 32)
		if _, err := rand.Read(b); err != nil {
			return nil, fmt.Errorf("studio: %w", err)
		}
		s.secret = base64.RawURLEncoding.EncodeToString(b)
	}
	if s.static, err = fs.Sub(webFS, "web"); err != nil {
		return nil, fmt.Errorf("studio: %w", err)
	}
	return s, nil
}

// dir is the definition's directory, against which its servers'
// relative commands are resolved, as toolsagent.Load does.
func (s *Server) dir() string { return filepath.Dir(s.opts.Config) }

// URL is the address of the page served on addr, with the secret in its
// fragment (which browsers do not send, nor put in a Referer).
func (s *Server) URL(addr net.Addr) string {
	return "http://" + addr.String() + "/#secret=" + s.secret
}

// Serve serves the studio on l, which must listen on a loopback address,
// until ctx ends; the runs under way end with it.
func (s *Server) Serve(ctx context.Context, l net.Listener) error {
	tcp, ok := l.Addr().(*net.TCPAddr)
	if !ok || !tcp.IP.IsLoopback() {
		_ = l.Close()
		return fmt.Errorf("studio: refusing to serve on %s: only a loopback address", l.Addr())
	}
	srv := &http.Server{
		Handler:           s.Handler(l.Addr().String()),
		ReadHeaderTimeout: 10 * time.Second,
		BaseContext:       func(net.Listener) context.Context { return ctx },
		ErrorLog:          slog.NewLogLogger(s.log.Handler(), slog.LevelDebug),
	}
	if err := httpserve.Serve(ctx, srv, l, nil); err != nil {
		return fmt.Errorf("studio: %w", err)
	}
	return nil
}

// Handler returns the studio's handler for requests whose Host is host,
// the address it is served on ("127.0.0.1:8080"); others are refused.
func (s *Server) Handler(host string) http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /api/definition", s.handleDefinition)
	mux.HandleFunc("POST /api/check", s.handleCheck)
	mux.HandleFunc("POST /api/preview", s.handlePreview)
	mux.HandleFunc("POST /api/run", s.handleRun)
	mux.HandleFunc("POST /api/save", s.handleSave)
	// The page's files sit at the top: one segment, so that no pattern
	// here shadows the API's.
	files := http.FileServerFS(s.static)
	static := func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Cache-Control", "no-store")
		files.ServeHTTP(w, r)
	}
	mux.HandleFunc("GET /{$}", static)
	mux.HandleFunc("GET /{file}", static)
	return &guard{host: host, origin: "http://" + host, secret: s.secret, next: mux}
}

// guard applies the studio's rules to every request before it reaches
// the handlers.
type guard struct {
	host, origin, secret string
	next                 http.Handler
}

func (g *guard) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	h := w.Header()
	h.Set("Content-Security-Policy", "default-src 'self'; frame-ancestors 'none'; base-uri 'none'; form-action 'none'")
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("X-Frame-Options", "DENY")
	h.Set("Referrer-Policy", "no-referrer")
	h.Set("Cross-Origin-Resource-Policy", "same-origin")
	// A page of another site that rebound its name to 127.0.0.1 sends its
	// own name as Host.
	if r.Host != g.host {
		http.Error(w, "studio: wrong Host: use the printed URL", http.StatusMisdirectedRequest)
		return
	}
	if !strings.HasPrefix(r.URL.Path, "/api/") {
		g.next.ServeHTTP(w, r)
		return
	}
	got := r.Header.Get(SecretHeader)
	if subtle.ConstantTimeCompare([]byte(got), []byte(g.secret)) != 1 {
		http.Error(w, "studio: missing or wrong secret: open the URL the command printed", http.StatusUnauthorized)
		return
	}
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		if o := r.Header.Get("Origin"); o != "" && o != g.origin {
			http.Error(w, "studio: cross-origin write refused", http.StatusForbidden)
			return
		}
		if site := r.Header.Get("Sec-Fetch-Site"); site != "" && site != "same-origin" && site != "none" {
			http.Error(w, "studio: cross-site write refused", http.StatusForbidden)
			return
		}
		if mt, _, err := mime.ParseMediaType(r.Header.Get("Content-Type")); err != nil || mt != "application/json" {
			http.Error(w, "studio: want Content-Type: application/json", http.StatusUnsupportedMediaType)
			return
		}
		if r.ContentLength > MaxBodyBytes {
			http.Error(w, fmt.Sprintf("studio: the body is larger than %d bytes", MaxBodyBytes), http.StatusRequestEntityTooLarge)
			return
		}
		r.Body = http.MaxBytesReader(w, r.Body, MaxBodyBytes)
	}
	g.next.ServeHTTP(w, r)
}

// problem is a toolsagent.Problem as the page reads it.
type problem struct {
	Path    string `json:"path,omitempty"`
	Line    int    `json:"line,omitempty"`
	Message string `json:"message"`
	Warning bool   `json:"warning,omitempty"`
}

// problemsOf lists err's problems (a *toolsagent.LoadError), or err itself.
func problemsOf(err error, warnings []toolsagent.Problem) []problem {
	out := []problem{}
	var le *toolsagent.LoadError
	switch {
	case errors.As(err, &le):
		warnings = le.Problems
	case err != nil:
		out = append(out, problem{Message: err.Error()})
	}
	for _, p := range warnings {
		out = append(out, problem{Path: p.Path, Line: p.Line, Message: p.Message, Warning: p.Warning})
	}
	return out
}

// fail answers an error message with status.
func fail(w http.ResponseWriter, status int, err error) {
	httpserve.WriteJSON(w, status, map[string]any{"error": err.Error()})
}

// request is the body of the POST calls: the page's tools, and for
// preview and run the tool and its arguments.
type request struct {
	Tools json.RawMessage `json:"tools"`
	Tool  string          `json:"tool,omitempty"`
	Args  json.RawMessage `json:"args,omitempty"`
}

// decode reads the body of a POST call.
func decode(w http.ResponseWriter, r *http.Request) (*request, bool) {
	var req request
	dec := json.NewDecoder(r.Body)
	dec.DisallowUnknownFields()
	if err := dec.Decode(&req); err != nil {
		var tooLarge *http.MaxBytesError
		if errors.As(err, &tooLarge) {
			fail(w, http.StatusRequestEntityTooLarge, fmt.Errorf("studio: the body is larger than %d bytes", MaxBodyBytes))
		} else {
			fail(w, http.StatusBadRequest, fmt.Errorf("studio: bad request body: %w", err))
		}
		return nil, false
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		fail(w, http.StatusBadRequest, errors.New("studio: bad request body: more than one JSON value"))
		return nil, false
	}
	if len(req.Tools) == 0 {
		fail(w, http.StatusBadRequest, errors.New("studio: bad request body: no tools"))
		return nil, false
	}
	return &req, true
}

// candidate is the file as it would be with the page's tools: its bytes,
// the loader's verdict on them, and the file's mode.
type candidate struct {
	data []byte
	def  *toolsagent.Definition
	err  error // the loader's; nil when def loads
	mode os.FileMode
}

// candidate merges tools into the file as it is on disk now and loads the
// result with the loader `mew agent mcp` uses. An error means the tools
// loadable builds the candidate file for tools and answers the request
// itself when there is none or it does not load: 422 when the file cannot
// be made, and status with the loader's problems when it does not load.
func (s *Server) loadable(w http.ResponseWriter, tools json.RawMessage, status int) (*candidate, bool) {
	c, err := s.candidate(tools)
	if err != nil {
		fail(w, http.StatusUnprocessableEntity, err)
		return nil, false
	}
	if c.err != nil {
		httpserve.WriteJSON(w, status, map[string]any{"ok": false, "problems": problemsOf(c.err, nil)})
		return nil, false
	}
	return c, true
}

// could not even be merged (not JSON objects, the file unreadable).
func (s *Server) candidate(tools json.RawMessage) (*candidate, error) {
	data, mode, err := readFile(s.opts.Config)
	if err != nil {
		return nil, err
	}
	doc, err := parseDocument(s.opts.Config, data)
	if err != nil {
		return nil, err
	}
	if err := doc.setTools(tools); err != nil {
		return nil, err
	}
	out, err := doc.encode()
	if err != nil {
		return nil, err
	}
	c := &candidate{data: out, mode: mode}
	c.def, c.err = toolsagent.Parse(out)
	return c, nil
}

func (s *Server) handleDefinition(w http.ResponseWriter, _ *http.Request) {
	data, _, err := readFile(s.opts.Config)
	if err != nil {
		fail(w, http.StatusInternalServerError, err)
		return
	}
	doc, err := parseDocument(s.opts.Config, data)
	if err != nil {
		fail(w, http.StatusUnprocessableEntity, err)
		return
	}
	tools, err := doc.toolsJSON()
	if err != nil {
		fail(w, http.StatusUnprocessableEntity, err)
		return
	}
	def, lerr := toolsagent.Parse(data)
	type server struct {
		Name       string `json:"name"`
		Permission string `json:"permission"`
	}
	resp := struct {
		File     string          `json:"file"`
		Name     string          `json:"name"`
		Tools    json.RawMessage `json:"tools"`
		Servers  []server        `json:"servers"`
		Problems []problem       `json:"problems"`
	}{File: s.opts.Config, Tools: tools, Servers: []server{}}
	if def != nil {
		resp.Name = def.Name
		for _, sc := range def.Servers {
			resp.Servers = append(resp.Servers, server{Name: sc.Name, Permission: string(sc.Permission)})
		}
		resp.Problems = problemsOf(nil, def.Warnings)
	} else {
		resp.Name = mapValue(doc.root.Content[0], "name")
		resp.Problems = problemsOf(lerr, nil)
	}
	httpserve.WriteJSON(w, http.StatusOK, resp)
}

func (s *Server) handleCheck(w http.ResponseWriter, r *http.Request) {
	req, ok := decode(w, r)
	if !ok {
		return
	}
	c, err := s.candidate(req.Tools)
	if err != nil {
		fail(w, http.StatusUnprocessableEntity, err)
		return
	}
	var warnings []toolsagent.Problem
	if c.def != nil {
		warnings = c.def.Warnings
	}
	httpserve.WriteJSON(w, http.StatusOK, map[string]any{"ok": c.err == nil, "problems": problemsOf(c.err, warnings), "file": string(c.data)})
}

// violation is an argument's problem as the page reads it.
type violation struct {
	Path    string `json:"path"`
	Message string `json:"message"`
}

func (s *Server) handlePreview(w http.ResponseWriter, r *http.Request) {
	req, ok := decode(w, r)
	if !ok {
		return
	}
	c, ok := s.loadable(w, req.Tools, http.StatusOK)
	if !ok {
		return
	}
	tool, found := c.def.Tool(req.Tool)
	if !found {
		fail(w, http.StatusNotFound, fmt.Errorf("%w: %q", toolsagent.ErrUnknownTool, req.Tool))
		return
	}
	prompt, err := tool.Preview(req.Args)
	vs := []violation{}
	var argErr *toolsagent.ArgumentError
	switch {
	case errors.As(err, &argErr):
		for _, v := range argErr.Violations {
			vs = append(vs, violation{Path: v.Path, Message: v.Message})
		}
	case err != nil:
		vs = append(vs, violation{Message: err.Error()})
	}
	httpserve.WriteJSON(w, http.StatusOK, map[string]any{"ok": len(vs) == 0, "prompt": prompt, "violations": vs})
}

func (s *Server) handleSave(w http.ResponseWriter, r *http.Request) {
	req, ok := decode(w, r)
	if !ok {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	c, ok := s.loadable(w, req.Tools, http.StatusUnprocessableEntity)
	if !ok {
		return
	}
	if err := writeFile(s.opts.Config, c.data, c.mode); err != nil {
		fail(w, http.StatusInternalServerError, err)
		return
	}
	s.log.Info("studio: saved", "file", s.opts.Config, "tools", len(c.def.Tools))
	httpserve.WriteJSON(w, http.StatusOK, map[string]any{"ok": true, "problems": problemsOf(nil, c.def.Warnings), "file": string(c.data)})
}
