package cli

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/mew-protocol/mew/gateway"
	"github.com/mew-protocol/mew/internal/bench"
	"github.com/mew-protocol/mew/space"
)

// gatewayBench is the bench target that runs our gateway in-process, with
// its audit log on (in a temporary directory) unless told otherwise.
type gatewayBench struct {
	noAudit      bool
	receivedOnly bool
	rateLimit    bool // the default rate limits, instead of none
	nodes        int  // with more than 1, a cluster of that many nodes (bench_cluster.go)
}

func (gatewayBench) Name() string { return "gateway" }

// options are the gateway's options for cfg: rate limits at rate, a
// message size that no benchmark reaches, and the audit log as t says. A
// node of a cluster adds its own.
func (t gatewayBench) options(cfg *space.Config, rate float64) gateway.Options {
	return gateway.Options{
		Spaces: []*space.Config{cfg},
		Limits: gateway.Limits{
			Rate:           rate,
			MaxMessageSize: 16 << 20,
		},
		Audit: gateway.AuditOptions{
			Off:          t.noAudit,
			ReceivedOnly: t.receivedOnly,
		},
	}
}

// Start writes a space.yaml for ids (each with a random literal token and
// every capability) into a temporary directory and serves it on 127.0.0.1:0.
// Rate limiting is off unless rateLimit: the benchmark sets the rate.
func (t gatewayBench) Start(ctx context.Context, ids []string) (*bench.Endpoint, error) {
	dir, err := os.MkdirTemp("", "mew-bench-")
	if err != nil {
		return nil, fmt.Errorf("bench gateway: %w", err)
	}
	tokens := make(map[string]string, len(ids))
	var y strings.Builder
	y.WriteString("space: {id: bench}\nparticipants:\n")
	for _, id := range ids {
		b := make([]byte, 24)
		_, _ = rand.Read(b)
		tok := base64.RawURLEncoding.EncodeToString(b)
		tokens[id] = tok
		fmt.Fprintf(&y, "  %s: {tokens: [%q], capabilities: [{kind: \"*\"}]}\n", id, tok)
	}
	path := filepath.Join(dir, "space.yaml")
	if err := os.WriteFile(path, []byte(y.String()), 0o600); err != nil {
		_ = os.RemoveAll(dir)
		return nil, fmt.Errorf("bench gateway: %w", err)
	}
	cfg, err := space.Load(path)
	if err != nil {
		_ = os.RemoveAll(dir)
		return nil, fmt.Errorf("bench gateway: %w", err)
	}
	rate := -1.0
	if t.rateLimit {
		rate = 0 // the default
	}
	if t.nodes > 1 {
		return t.startCluster(ctx, cfg, dir, tokens, rate)
	}
	gw, err := gateway.New(t.options(cfg, rate))
	if err != nil {
		_ = os.RemoveAll(dir)
		return nil, err
	}
	ln, err := (&net.ListenConfig{}).Listen(ctx, "tcp", "127.0.0.1:0")
	if err != nil {
		_ = gw.Close(context.Background())
		_ = os.RemoveAll(dir)
		return nil, fmt.Errorf("bench gateway: %w", err)
	}
	hs := gw.HTTPServer()
	served := make(chan error, 1)
	go func() { served <- hs.Serve(gw.Listener(ln)) }()
	return &bench.Endpoint{
		URL:      "ws://" + ln.Addr().String() + "/ws?space=bench",
		Tokens:   tokens,
		AuditDir: filepath.Join(cfg.MewDir, "logs"), // the gateway's default LogDir
		Close: func() error {
			sctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
			defer cancel()
			herr := hs.Shutdown(sctx)
			gerr := gw.Close(sctx)
			<-served
			return errors.Join(herr, gerr, os.RemoveAll(dir))
		},
	}, nil
}
