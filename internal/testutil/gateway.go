package testutil

import (
	"context"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/mew-protocol/mew/gateway"
	"github.com/mew-protocol/mew/space"
)

// Gateway is a running gateway for one test.
type Gateway struct {
	*gateway.Server
	Config *space.Config
	Dir    string // the space directory (holds space.yaml and .mew/)
	Addr   string // host:port
	URL    string // http://host:port
	WSURL  string // ws://host:port/ws?space=<id>
	hs     *http.Server
}

// StartGateway writes spaceYAML to a new space directory, starts a gateway
// for it on 127.0.0.1:0 and stops it when the test ends. opts.Spaces is
// filled in; other options are passed through.
func StartGateway(t testing.TB, spaceYAML string, opts gateway.Options) *Gateway {
	t.Helper()
	dir := t.TempDir()
	if err := os.MkdirAll(filepath.Join(dir, ".mew"), 0o755); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, ".mew", "space.yaml")
	if err := os.WriteFile(path, []byte(strings.TrimLeft(spaceYAML, "\n")), 0o644); err != nil {
		t.Fatal(err)
	}
	cfg, err := space.Load(path)
	if err != nil {
		t.Fatalf("space config: %v", err)
	}
	opts.Spaces = []*space.Config{cfg}
	srv, err := gateway.New(opts)
	if err != nil {
		t.Fatalf("gateway.New: %v", err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	g := &Gateway{Server: srv, Config: cfg, Dir: filepath.Dir(cfg.Path), Addr: ln.Addr().String()}
	if filepath.Base(g.Dir) == ".mew" {
		g.Dir = filepath.Dir(g.Dir)
	}
	g.URL = "http://" + g.Addr
	g.WSURL = "ws://" + g.Addr + "/ws?space=" + cfg.Space.ID
	g.hs = &http.Server{Handler: srv, ReadHeaderTimeout: 5 * time.Second}
	go func() { _ = g.hs.Serve(ln) }()
	t.Cleanup(func() { g.Stop(t) })
	return g
}

// Stop shuts the gateway down as mew gateway start does on SIGTERM. It may
// be called more than once.
func (g *Gateway) Stop(t testing.TB) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	_ = g.hs.Shutdown(ctx)
	if err := g.Close(ctx); err != nil && err != gateway.ErrClosed {
		t.Errorf("gateway close: %v", err)
	}
}

// Token returns the token of a configured participant, as the gateway
// resolved it (literal, environment or token file).
func (g *Gateway) Token(t testing.TB, id string) string {
	t.Helper()
	p := g.Config.Participant(id)
	if p == nil {
		t.Fatalf("no participant %q in the space config", id)
	}
	toks, err := space.TokenStore{Dir: filepath.Join(g.Config.MewDir, "tokens")}.Tokens(p)
	if err != nil || len(toks) == 0 {
		t.Fatalf("token of %s: %v", id, err)
	}
	return toks[0]
}

// LogPath returns the path of one of the audit logs.
func (g *Gateway) LogPath(name string) string {
	return filepath.Join(g.Config.MewDir, "logs", name)
}
