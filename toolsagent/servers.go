package toolsagent

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mew-protocol/mew/agent"
	"github.com/mew-protocol/mew/internal/proc"
	"github.com/mew-protocol/mew/llm"
	"github.com/mew-protocol/mew/protocol"
)

// serverEnv is what starting a server needs from the agent.
type serverEnv struct {
	dir     string // the definition's directory
	getenv  func(string) string
	environ []string
}

// serverConn is a connected MCP server whose tools the agent may use.
type serverConn struct {
	cfg     ServerConfig
	log     *slog.Logger
	session *mcp.ClientSession
	cmd     *exec.Cmd // the server's command; nil over HTTP

	mu    sync.Mutex
	tools []*mcp.Tool // nil until listed
	stale bool        // the server said its tools changed
}

// connectServer starts (or reaches) a server, initializes it and lists its
// tools, within timeout.
func connectServer(ctx context.Context, cfg ServerConfig, env serverEnv, log *slog.Logger, timeout time.Duration) (*serverConn, error) {
	sc := &serverConn{cfg: cfg, log: log.With("server", cfg.Name)}
	client := mcp.NewClient(&mcp.Implementation{Name: "mew-tools-agent", Version: protocol.Version}, &mcp.ClientOptions{
		ToolListChangedHandler: func(context.Context, *mcp.ToolListChangedRequest) { sc.markStale() },
	})
	transport, err := sc.transport(env)
	if err != nil {
		return nil, err
	}
	cctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	session, err := client.Connect(cctx, transport, nil)
	if err != nil {
		sc.killGroup()
		return nil, fmt.Errorf("toolsagent: mcp server %s: %w", cfg.Name, err)
	}
	sc.session = session
	if _, err := sc.current(cctx); err != nil {
		_ = sc.close()
		return nil, err
	}
	sc.log.Info("toolsagent: MCP server ready", "tools", len(sc.tools))
	return sc, nil
}

// transport returns the server's transport: a command, or an HTTP
// endpoint.
func (s *serverConn) transport(env serverEnv) (mcp.Transport, error) {
	c := s.cfg
	expand := func(v string) string { return os.Expand(v, env.getenv) }
	if c.URL != "" {
		headers := make(http.Header, len(c.Headers))
		for k, v := range c.Headers {
			headers.Set(k, expand(v))
		}
		return &mcp.StreamableClientTransport{
			Endpoint:   c.URL,
			HTTPClient: &http.Client{Transport: headerTransport{base: http.DefaultTransport, headers: headers}},
		}, nil
	}
	command := c.Command
	if strings.ContainsRune(command, filepath.Separator) && !filepath.IsAbs(command) && env.dir != "" {
		command = filepath.Join(env.dir, command)
	}
	cmd := exec.Command(command, c.Args...)
	cmd.Dir = env.dir
	if c.Cwd != "" {
		cmd.Dir = c.Cwd
		if !filepath.IsAbs(c.Cwd) && env.dir != "" {
			cmd.Dir = filepath.Join(env.dir, c.Cwd)
		}
	}
	cmd.Env = slices.Clone(env.environ)
	keys := make([]string, 0, len(c.Env))
	for k := range c.Env {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		cmd.Env = append(cmd.Env, k+"="+expand(c.Env[k]))
	}
	cmd.Stderr = &lineLog{log: s.log}
	proc.Group(cmd) // so that close stops what the server started, too
	s.cmd = cmd
	return &mcp.CommandTransport{Command: cmd}, nil
}

// headerTransport adds headers to each request.
type headerTransport struct {
	base    http.RoundTripper
	headers http.Header
}

func (t headerTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	if len(t.headers) > 0 {
		r = r.Clone(r.Context())
		for k, v := range t.headers {
			r.Header[k] = v
		}
	}
	return t.base.RoundTrip(r)
}

func (s *serverConn) markStale() {
	s.mu.Lock()
	s.stale = true
	s.mu.Unlock()
}

// current returns the server's tools, listing them when they were never
// listed or changed since.
func (s *serverConn) current(ctx context.Context) ([]*mcp.Tool, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.tools != nil && !s.stale {
		return s.tools, nil
	}
	var tools []*mcp.Tool
	for t, err := range s.session.Tools(ctx, nil) {
		if err != nil {
			return s.tools, fmt.Errorf("toolsagent: mcp server %s: tools/list: %w", s.cfg.Name, err)
		}
		tools = append(tools, t)
	}
	if tools == nil {
		tools = []*mcp.Tool{}
	}
	s.tools, s.stale = tools, false
	return tools, nil
}

// modelTools returns the server's tools as the model sees them.
func (s *serverConn) modelTools(ctx context.Context) []agent.Tool {
	tools, err := s.current(ctx)
	if err != nil {
		s.log.Warn("toolsagent: using the tools listed before", "err", err)
	}
	var out []agent.Tool
	for _, t := range tools {
		if len(s.cfg.Tools) > 0 && !slices.Contains(s.cfg.Tools, t.Name) {
			continue
		}
		name, err := agent.ToolName(s.cfg.Name, t.Name)
		if err != nil {
			s.log.Warn("toolsagent: tool not offered", "tool", t.Name, "err", err)
			continue
		}
		params, err := json.Marshal(t.InputSchema)
		if err != nil || string(params) == "null" {
			params = json.RawMessage(`{"type":"object"}`)
		}
		desc := t.Description
		if desc == "" {
			desc = t.Name
		}
		tool := t.Name
		out = append(out, agent.Tool{
			Tool: llm.Tool{Name: name, Description: desc, Parameters: params},
			Call: func(ctx context.Context, args json.RawMessage) (string, error) { return s.call(ctx, tool, args) },
		})
	}
	return out
}

// call runs one tool of the server; a tool error is an error whose text
// the model is told.
func (s *serverConn) call(ctx context.Context, tool string, args json.RawMessage) (string, error) {
	res, err := s.session.CallTool(ctx, &mcp.CallToolParams{Name: tool, Arguments: args})
	if err != nil {
		return "", fmt.Errorf("%s/%s: %w", s.cfg.Name, tool, err)
	}
	text := mcpResultText(res)
	if res.IsError {
		return "", errors.New(text)
	}
	return text, nil
}

// close ends the session, which stops a command, and then whatever the
// command left running in its process group.
func (s *serverConn) close() error {
	err := s.session.Close()
	s.killGroup()
	if err != nil && !errors.Is(err, mcp.ErrConnectionClosed) {
		var exit *exec.ExitError
		if errors.As(err, &exit) {
			return nil // stopped by a signal after its input closed
		}
		return fmt.Errorf("toolsagent: mcp server %s: %w", s.cfg.Name, err)
	}
	return nil
}

// killGroup kills what is left of the command's process group.
func (s *serverConn) killGroup() {
	if s.cmd != nil && s.cmd.Process != nil {
		proc.SignalGroup(s.cmd.Process.Pid, true)
	}
}

// mcpResultText turns a tool result into text for the model: its text
// items, a note for the others, the structured content when there is no
// text.
func mcpResultText(res *mcp.CallToolResult) string {
	var parts []string
	for _, c := range res.Content {
		switch x := c.(type) {
		case *mcp.TextContent:
			parts = append(parts, x.Text)
		case *mcp.ImageContent:
			parts = append(parts, "[image, "+x.MIMEType+"]")
		case *mcp.AudioContent:
			parts = append(parts, "[audio, "+x.MIMEType+"]")
		case *mcp.ResourceLink:
			parts = append(parts, "[resource "+x.URI+"]")
		case *mcp.EmbeddedResource:
			if x.Resource != nil && x.Resource.Text != "" {
				parts = append(parts, x.Resource.Text)
			} else if x.Resource != nil {
				parts = append(parts, "[resource "+x.Resource.URI+"]")
			}
		}
	}
	if len(parts) == 0 && res.StructuredContent != nil {
		if b, err := json.Marshal(res.StructuredContent); err == nil {
			return string(b)
		}
	}
	return strings.Join(parts, "\n")
}

// maxLogLine bounds a line of a server's standard error in the log.
const maxLogLine = 4096

// lineLog writes a server's standard error to the log, line by line. The
// exec package copies into it from one goroutine of its own, which ends
// when the process is waited for.
type lineLog struct {
	log *slog.Logger
	buf []byte
}

func (w *lineLog) Write(p []byte) (int, error) {
	n := len(p)
	for len(p) > 0 {
		i := bytes.IndexByte(p, '\n')
		if i < 0 {
			room := maxLogLine - len(w.buf)
			w.buf = append(w.buf, p[:min(len(p), max(room, 0))]...)
			break
		}
		line := append(w.buf, p[:min(i, max(maxLogLine-len(w.buf), 0))]...)
		w.log.Info("toolsagent: server stderr", "line", string(line))
		w.buf = w.buf[:0]
		p = p[i+1:]
	}
	return n, nil
}
