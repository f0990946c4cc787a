package gateway_test

import (
	"context"
	"encoding/json"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/coder/websocket"

	"github.com/mew-protocol/mew/gateway"
	"github.com/mew-protocol/mew/internal/testutil"
	"github.com/mew-protocol/mew/space"
)

// expirySpace: you may grant; the agent holds only chat.
const expirySpace = `
space: {id: expiry}
participants:
  you:
    tokens: [you-token]
    capabilities: [{kind: capability/grant}, {kind: capability/revoke}, {kind: chat}, {kind: "mcp/*"}]
  agent:
    tokens: [agent-token]
    capabilities: [{kind: chat}, {kind: mcp/response}]
`

// TestGrantExpirySynctest: a grant for 10 minutes, as the approval
// dialog's "10 minutes" makes it, on a gateway that runs in a synctest
// bubble (its clock is the bubble's, its connections in-memory pipes): the
// call it allows still goes through a second before the ten minutes are up;
// within one watchdog tick after them the holder gets a welcome without it,
// the call is refused, the gateway logs the expiry and the audit log has
// its line, stamped with the bubble's time.
func TestGrantExpirySynctest(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := startBubble(t, expirySpace, gateway.Options{})
		dir, logs, transport, shutdown := b.dir, b.logs, b.tr, b.shutdown
		you := pipeJoin(t, transport, "you-token")
		agent := pipeJoin(t, transport, "agent-token")
		start := time.Now()
		you.send(t, `{"id":"g1","kind":"capability/grant","to":["agent"],"payload":{"recipient":"agent","capabilities":[{"kind":"mcp/request","payload":{"method":"tools/list"}}],"ttl_seconds":600}}`)
		synctest.Wait()
		if w := agent.last("system/welcome"); w == nil || !strings.Contains(string(w.raw), "tools/list") {
			t.Fatalf("the holder's welcome after the grant: %v", w)
		}
		call := func(id string) {
			agent.send(t, `{"id":"`+id+`","kind":"mcp/request","to":["you"],"payload":{"jsonrpc":"2.0","id":1,"method":"tools/list"}}`)
			synctest.Wait()
		}

		time.Sleep(599*time.Second - time.Since(start))
		call("ok")
		if you.byID("ok") == nil || agent.errorFor("ok") != "" {
			t.Fatalf("a second before the end the call was refused: %s", agent.errorFor("ok"))
		}

		// Step through the end in tenths of a second: the watchdog checks
		// every quarter of the write timeout (2.5 s).
		welcomes := agent.count("system/welcome")
		var at time.Time
		for time.Since(start) < 603*time.Second {
			time.Sleep(100 * time.Millisecond)
			synctest.Wait()
			if agent.count("system/welcome") > welcomes {
				at = time.Now()
				break
			}
		}
		if at.IsZero() {
			t.Fatal("no welcome after the grant's ten minutes")
		}
		if d := at.Sub(start); d < 600*time.Second || d > 602500*time.Millisecond {
			t.Errorf("the grant went %v after it was made, want within a watchdog tick after 10m", d)
		}
		if w := agent.last("system/welcome"); strings.Contains(string(w.raw), "tools/list") {
			t.Errorf("the welcome after expiry still grants tools/list: %s", w.raw)
		}
		call("late")
		if got := agent.errorFor("late"); got != gateway.ErrorCapabilityViolation {
			t.Errorf("after expiry the call got %q, want %s", got, gateway.ErrorCapabilityViolation)
		}
		if you.byID("late") != nil {
			t.Error("the call reached you after the grant expired")
		}

		you.close()
		agent.close()
		shutdown()

		if s := logs.String(); !strings.Contains(s, "grant expired") || !strings.Contains(s, "grant=g1") {
			t.Errorf("the gateway's log lacks the expiry:\n%s", s)
		}
		data, err := os.ReadFile(filepath.Join(dir, "logs", "capability-decisions.jsonl"))
		if err != nil {
			t.Fatal(err)
		}
		var line map[string]any
		for l := range strings.SplitSeq(string(data), "\n") {
			if strings.Contains(l, `"source":"expiry"`) {
				if err := json.Unmarshal([]byte(l), &line); err != nil {
					t.Fatalf("%v: %s", err, l)
				}
			}
		}
		if line == nil || !strings.Contains(string(data), `"grant_id":"g1"`) {
			t.Fatalf("no expiry line for g1 in the audit log:\n%s", data)
		}
		ts, _ := line["timestamp"].(string)
		when, err := time.Parse(time.RFC3339Nano, ts)
		if err != nil || when.Before(start.Add(600*time.Second)) || when.After(at) {
			t.Errorf("the expiry's audit line is stamped %q (%v), want within [%v, %v]", ts, err, start.Add(600*time.Second), at)
		}
	})
}

// bubble is a gateway running in a synctest bubble: its clock is the
// bubble's, its connections in-memory pipes.
type bubble struct {
	dir      string
	logs     *testutil.Buffer // the gateway's log, at Info
	tr       *http.Transport  // dials the gateway
	shutdown func()           // stops it; idempotent, also run at cleanup
}

// startBubble serves spaceYAML from a gateway inside the calling test's
// synctest bubble. opts.Spaces, LogDir and Logger are set here.
func startBubble(t *testing.T, spaceYAML string, opts gateway.Options) *bubble {
	t.Helper()
	dir := t.TempDir()
	path := filepath.Join(dir, "space.yaml")
	if err := os.WriteFile(path, []byte(strings.TrimLeft(spaceYAML, "\n")), 0o644); err != nil {
		t.Fatal(err)
	}
	cfg, err := space.Load(path)
	if err != nil {
		t.Fatal(err)
	}
	logs := &testutil.Buffer{}
	opts.Spaces, opts.Audit.Dir = []*space.Config{cfg}, filepath.Join(dir, "logs")
	opts.Logger = slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelInfo}))
	srv, err := gateway.New(opts)
	if err != nil {
		t.Fatal(err)
	}
	ln := newPipeListener()
	hs := srv.HTTPServer()
	served := make(chan error, 1)
	go func() { served <- hs.Serve(ln) }()
	transport := &http.Transport{DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) { return ln.dial(ctx) }}
	// Everything the bubble started ends before it does, a failed test
	// included.
	var once sync.Once
	shutdown := func() {
		once.Do(func() {
			ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
			defer cancel()
			_ = hs.Shutdown(ctx)
			if err := srv.Close(ctx); err != nil {
				t.Error(err)
			}
			ln.Close()
			<-served
			transport.CloseIdleConnections()
			synctest.Wait()
		})
	}
	t.Cleanup(shutdown)
	return &bubble{dir: dir, logs: logs, tr: transport, shutdown: shutdown}
}

// pipeListener is a net.Listener of in-memory connections (net.Pipe), which
// a synctest bubble can wait on, unlike sockets.
type pipeListener struct {
	conns chan net.Conn
	done  chan struct{}
	once  sync.Once
}

func newPipeListener() *pipeListener {
	return &pipeListener{conns: make(chan net.Conn), done: make(chan struct{})}
}

func (l *pipeListener) Accept() (net.Conn, error) {
	select {
	case c := <-l.conns:
		return c, nil
	case <-l.done:
		return nil, net.ErrClosed
	}
}

func (l *pipeListener) Close() error {
	l.once.Do(func() { close(l.done) })
	return nil
}

func (l *pipeListener) Addr() net.Addr { return pipeAddr{} }

// dial connects a new pipe to the listener.
func (l *pipeListener) dial(ctx context.Context) (net.Conn, error) {
	client, server := net.Pipe()
	select {
	case l.conns <- server:
		return client, nil
	case <-l.done:
		return nil, net.ErrClosed
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

type pipeAddr struct{}

func (pipeAddr) Network() string { return "pipe" }
func (pipeAddr) String() string  { return "pipe" }

// pipePeer is a participant connected over a pipe; a goroutine of its own
// reads everything into msgs until the connection closes.
type pipePeer struct {
	c    *websocket.Conn
	mu   sync.Mutex
	msgs []pipeMsg
	done chan struct{}
}

type pipeMsg struct {
	raw  []byte
	kind string
	id   string
	corr []string
	err  string // a system/error's error
}

// pipeJoin connects with token and waits for the welcome.
func pipeJoin(t *testing.T, tr *http.Transport, token string) *pipePeer {
	t.Helper()
	c, _, err := websocket.Dial(t.Context(), "ws://localhost/ws", &websocket.DialOptions{
		HTTPClient: &http.Client{Transport: tr},
		HTTPHeader: http.Header{"Authorization": {"Bearer " + token}},
	})
	if err != nil {
		t.Fatal(err)
	}
	c.SetReadLimit(1 << 20)
	p := &pipePeer{c: c, done: make(chan struct{})}
	go p.read()
	t.Cleanup(p.close)
	synctest.Wait()
	if p.last("system/welcome") == nil {
		t.Fatalf("%s: no welcome", token)
	}
	return p
}

func (p *pipePeer) read() {
	defer close(p.done)
	for {
		_, b, err := p.c.Read(context.Background())
		if err != nil {
			return
		}
		var env struct {
			Kind          string   `json:"kind"`
			ID            string   `json:"id"`
			CorrelationID []string `json:"correlation_id"`
			Payload       struct {
				Error string `json:"error"`
			} `json:"payload"`
		}
		_ = json.Unmarshal(b, &env)
		p.mu.Lock()
		p.msgs = append(p.msgs, pipeMsg{raw: b, kind: env.Kind, id: env.ID, corr: env.CorrelationID, err: env.Payload.Error})
		p.mu.Unlock()
	}
}

func (p *pipePeer) send(t *testing.T, s string) {
	t.Helper()
	if err := p.c.Write(t.Context(), websocket.MessageText, []byte(s)); err != nil {
		t.Fatal(err)
	}
}

// find returns the last message that ok holds for.
func (p *pipePeer) find(ok func(pipeMsg) bool) *pipeMsg {
	p.mu.Lock()
	defer p.mu.Unlock()
	for i := len(p.msgs) - 1; i >= 0; i-- {
		if ok(p.msgs[i]) {
			m := p.msgs[i]
			return &m
		}
	}
	return nil
}

func (p *pipePeer) last(kind string) *pipeMsg {
	return p.find(func(m pipeMsg) bool { return m.kind == kind })
}

func (p *pipePeer) byID(id string) *pipeMsg {
	return p.find(func(m pipeMsg) bool { return m.id == id })
}

// errorFor is the error of the system/error that answers envelope id.
func (p *pipePeer) errorFor(id string) string {
	m := p.find(func(m pipeMsg) bool {
		return m.kind == "system/error" && len(m.corr) > 0 && m.corr[0] == id
	})
	if m == nil {
		return ""
	}
	return m.err
}

func (p *pipePeer) count(kind string) int {
	p.mu.Lock()
	defer p.mu.Unlock()
	n := 0
	for _, m := range p.msgs {
		if m.kind == kind {
			n++
		}
	}
	return n
}

func (p *pipePeer) close() {
	_ = p.c.Close(websocket.StatusNormalClosure, "")
	<-p.done
}
