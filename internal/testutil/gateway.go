package testutil

import (
	"context"
	"fmt"
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
	fabric *fabric
}

// StartGateway writes spaceYAML to a new space directory, starts a gateway
// for it on 127.0.0.1:0 and stops it when the test ends. opts.Spaces is
// filled in; other options are passed through.
func StartGateway(t testing.TB, spaceYAML string, opts gateway.Options) *Gateway {
	t.Helper()
	s, err := Serve(t.TempDir(), spaceYAML, opts)
	if err != nil {
		t.Fatal(err)
	}
	g := &Gateway{Server: s.Server, Config: s.Config, Dir: s.Dir, Addr: s.Addr, hs: s.hs, fabric: s.fabric}
	g.URL = "http://" + g.Addr
	g.WSURL = "ws://" + g.Addr + "/ws?space=" + g.Config.Space.ID
	t.Cleanup(func() { g.Stop(t) })
	return g
}

// Served is a gateway started by Serve.
type Served struct {
	*gateway.Server
	Config *space.Config
	Dir    string // the space directory
	Addr   string // host:port on 127.0.0.1
	hs     *http.Server
	fabric *fabric // the cluster node of MEW_TEST_CLUSTER, closed after the server
}

// Serve writes spaceYAML to dir/.mew/space.yaml and serves a gateway for it
// on 127.0.0.1:0 until Stop. It is StartGateway for code without a
// testing.TB, such as Examples.
func Serve(dir, spaceYAML string, opts gateway.Options) (*Served, error) {
	if err := os.MkdirAll(filepath.Join(dir, ".mew"), 0o755); err != nil {
		return nil, err
	}
	path := filepath.Join(dir, ".mew", "space.yaml")
	if err := os.WriteFile(path, []byte(strings.TrimLeft(spaceYAML, "\n")), 0o644); err != nil {
		return nil, err
	}
	cfg, err := space.Load(path)
	if err != nil {
		return nil, fmt.Errorf("space config: %w", err)
	}
	opts.Spaces = []*space.Config{cfg}
	fabric, err := clusterFromEnv(&opts)
	if err != nil {
		return nil, err
	}
	srv, err := gateway.New(opts)
	if err != nil {
		fabric.close()
		return nil, err
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		_ = srv.Close(context.Background())
		fabric.close()
		return nil, err
	}
	s := &Served{Server: srv, Config: cfg, Dir: dir, Addr: ln.Addr().String(), fabric: fabric}
	s.hs = srv.HTTPServer()
	go func() { _ = s.hs.Serve(srv.Listener(ln)) }()
	return s, nil
}

// Stop shuts the gateway down.
func (s *Served) Stop() error {
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	_ = s.hs.Shutdown(ctx)
	err := s.Close(ctx)
	s.fabric.close()
	if err != nil && err != gateway.ErrClosed {
		return err
	}
	return nil
}

// Stop shuts the gateway down as mew gateway start does on SIGTERM. It may
// be called more than once.
func (g *Gateway) Stop(t testing.TB) {
	t.Helper()
	if err := (&Served{Server: g.Server, hs: g.hs, fabric: g.fabric}).Stop(); err != nil {
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
