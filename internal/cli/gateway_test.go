package cli

import (
	"context"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/mew-protocol/mew/internal/testutil"
	"github.com/mew-protocol/mew/space"
)

// lineWriter collects output and announces the first line with a prefix.
type lineWriter struct {
	mu     sync.Mutex
	buf    strings.Builder
	prefix string
	found  chan string
}

func (w *lineWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.buf.Write(p)
	for line := range strings.SplitSeq(w.buf.String(), "\n") {
		if rest, ok := strings.CutPrefix(line, w.prefix); ok && w.found != nil {
			w.found <- rest
			w.found = nil
		}
	}
	return len(p), nil
}

func (w *lineWriter) String() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.buf.String()
}

// writeSpace writes yaml to space.yaml in a new directory and returns
// the file's path.
func writeSpace(t *testing.T, yaml string) string {
	t.Helper()
	return filepath.Join(spaceDir(t, yaml), "space.yaml")
}

// spaceDir returns a new directory whose space.yaml is yaml.
func spaceDir(t *testing.T, yaml string) string {
	t.Helper()
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "space.yaml"), []byte(yaml), 0o644); err != nil {
		t.Fatal(err)
	}
	return dir
}

// gatewayCmd is a `mew gateway start` running in this process.
type gatewayCmd struct {
	addr   string      // where it listens
	stderr *lineWriter // its log
	cancel context.CancelFunc
	done   chan error
}

// startGatewayCmd runs `mew gateway start -p 0 ARGS...` until it listens.
func startGatewayCmd(t *testing.T, args ...string) *gatewayCmd {
	t.Helper()
	found := make(chan string, 1)
	g := &gatewayCmd{stderr: &lineWriter{}, done: make(chan error, 1)}
	root := NewRoot(Options{Stdout: &lineWriter{prefix: "listening on ", found: found}, Stderr: g.stderr})
	root.SetArgs(append([]string{"gateway", "start", "-p", "0"}, args...))
	ctx, cancel := context.WithCancel(context.Background())
	g.cancel = cancel
	go func() { g.done <- root.ExecuteContext(ctx) }()
	select {
	case g.addr = <-found:
	case err := <-g.done:
		cancel()
		t.Fatalf("gateway exited: %v\n%s", err, g.stderr.String())
	case <-time.After(20 * time.Second):
		cancel()
		<-g.done
		t.Fatal("no listening line")
	}
	t.Cleanup(func() { _ = g.stop(t) })
	return g
}

// stop cancels the command, as SIGINT/SIGTERM does in package main, and
// returns how it ended.
func (g *gatewayCmd) stop(t *testing.T) error {
	t.Helper()
	g.cancel()
	select {
	case err, ok := <-g.done:
		if ok {
			close(g.done)
		}
		return err
	case <-time.After(20 * time.Second):
		t.Fatal("gateway did not stop")
		return nil
	}
}

func TestGatewayStartServesAndStopsCleanly(t *testing.T) {
	path := writeSpace(t, "space: {id: cli}\nparticipants:\n  me: {tokens: [me-token], capabilities: [{kind: chat}]}\n  agent: {capabilities: [{kind: chat}]}\n")
	g := startGatewayCmd(t, "-s", path, "-l", "debug")
	addr, errOut := g.addr, g.stderr
	if !strings.HasPrefix(addr, "127.0.0.1:") {
		t.Fatalf("listening on %q", addr)
	}
	resp, err := http.Get("http://" + addr + "/health")
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 || !strings.Contains(string(b), `"status":"ok"`) {
		t.Fatalf("health: %d %s", resp.StatusCode, b)
	}
	// A generated token file for the participant without literal tokens.
	tok := filepath.Join(filepath.Dir(path), "tokens", "agent.token")
	if fi, err := os.Stat(tok); err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("token file: %v %v", fi, err)
	}
	tokBytes, _ := os.ReadFile(tok)

	if err := g.stop(t); err != nil {
		t.Fatalf("exit: %v", err)
	}
	logs := errOut.String()
	if !strings.Contains(logs, "shutting down") {
		t.Fatalf("stderr:\n%s", logs)
	}
	if strings.Contains(logs, "me-token") || strings.Contains(logs, strings.TrimSpace(string(tokBytes))) {
		t.Fatalf("a token reached the log:\n%s", logs)
	}
}

func TestGatewayStartBadInput(t *testing.T) {
	good := writeSpace(t, "space: {id: x}\nparticipants:\n  a: {capabilities: [{kind: chat}]}\n")
	bad := writeSpace(t, "space: {id: x}\nparticipants:\n  a: {capabilities: [{payload: {}}]}\n")
	cases := []struct {
		args []string
		want string
	}{
		{[]string{"-p", "70000", "-s", good}, "--port"},
		{[]string{"-p", "x", "-s", good}, "invalid argument"},
		{[]string{"-p", "0", "-s", good, "-l", "loud"}, "--log-level"},
		{[]string{"-p", "0", "-s", good, "--rate", "0"}, "--rate"},
		{[]string{"-p", "0", "-s", good, "--max-message-size", "10"}, "--max-message-size"},
		{[]string{"-p", "0", "-s", filepath.Join(t.TempDir(), "missing.yaml")}, "missing.yaml"},
		{[]string{"-p", "0", "-s", bad}, "participants.a.capabilities[0]"},
		{[]string{"-p", "0", "-s", good, "extra"}, "unknown command"},
	}
	for _, c := range cases {
		t.Run(strings.Join(c.args, " "), func(t *testing.T) {
			_, _, err := run(t, Options{}, append([]string{"gateway", "start"}, c.args...)...)
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("err = %v, want it to mention %q", err, c.want)
			}
		})
	}
}

func TestFloorFromEnv(t *testing.T) {
	env := func(kv ...string) func(string) string {
		return func(k string) string {
			for i := 0; i+1 < len(kv); i += 2 {
				if kv[i] == k {
					return kv[i+1]
				}
			}
			return ""
		}
	}
	fc := space.FloorControl{Enabled: true, TTL: 45 * time.Second}
	if err := floorFromEnv(&fc, env("MEW_RESPOND_ENABLED", "false", "AGENTCHAT_RESPOND_TTL_MS", "1500")); err != nil {
		t.Fatal(err)
	}
	if fc.Enabled || fc.TTL != 1500*time.Millisecond {
		t.Fatalf("got %+v", fc)
	}
	for _, bad := range [][]string{{"MEW_RESPOND_ENABLED", "maybe"}, {"MEW_RESPOND_TTL_MS", "-5"}, {"AGENTCHAT_RESPOND_TTL_MS", "soon"}} {
		if err := floorFromEnv(&fc, env(bad...)); err == nil || !strings.Contains(err.Error(), bad[0]) {
			t.Errorf("%v: err = %v", bad, err)
		}
	}
}

// TestGatewayStartCluster: two `mew gateway start` nodes, the first running
// the embedded NATS server and the second joining it by URL, serve one
// space: a chat sent on one node reaches a participant of the other, and
// /health names each node and its cluster.
func TestGatewayStartCluster(t *testing.T) {
	path := writeSpace(t, "space: {id: duo}\nparticipants:\n  ann: {tokens: [ann-token], capabilities: [{kind: chat}]}\n  bob: {tokens: [bob-token], capabilities: [{kind: chat}]}\n")
	// The history's bounds must be the same on every node: each sets the
	// stream to its own when it starts.
	bounds := []string{"--history-retention", "50", "--history-mb", "8"}
	a := startGatewayCmd(t, append([]string{"-s", path, "-l", "info", "--nats", "embedded:0", "--node-id", "node-a", "--cluster", "duo-cluster", "--log-dir", t.TempDir()}, bounds...)...)
	m := embeddedNATSLine.FindStringSubmatch(a.stderr.String())
	if m == nil {
		t.Fatalf("no NATS URL in the first node's log:\n%s", a.stderr.String())
	}
	natsURL, seed := m[1], m[2]
	if want := filepath.Join(filepath.Dir(path), "nats-auth", "nodes.nk"); seed != want {
		t.Errorf("the embedded server's seed is %s, want %s", seed, want)
	}
	checkNATSLocked(t, natsURL, seed)
	b := startGatewayCmd(t, append([]string{"-s", path, "--nats", natsURL, "--nats-nkey", seed, "--node-id", "node-b", "--cluster", "duo-cluster", "--log-dir", t.TempDir()}, bounds...)...)
	nkey, err := nats.NkeyOptionFromSeed(seed)
	if err != nil {
		t.Fatal(err)
	}
	js := testutil.JetStream(t, natsURL, nkey)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	st, err := js.Stream(ctx, "mew_duo-cluster_history")
	if err != nil {
		t.Fatal(err)
	}
	if c := st.CachedInfo().Config; c.MaxMsgsPerSubject != 50 || c.MaxBytes != 8<<20 {
		t.Errorf("the history stream keeps %d per space and %d bytes, want 50 and 8 MiB", c.MaxMsgsPerSubject, c.MaxBytes)
	}

	for _, n := range []struct {
		g  *gatewayCmd
		id string
	}{{a, "node-a"}, {b, "node-b"}} {
		resp, err := http.Get("http://" + n.g.addr + "/health")
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK || !strings.Contains(string(body), `"node":"`+n.id+`"`) || !strings.Contains(string(body), `"cluster":"duo-cluster"`) {
			t.Errorf("%s health: %d %s", n.id, resp.StatusCode, body)
		}
	}
	bob, _ := testutil.Join(t, "ws://"+b.addr+"/ws", "bob-token")
	ann, _ := testutil.Join(t, "ws://"+a.addr+"/ws", "ann-token")
	bob.ExpectFunc("system/presence", func(m testutil.Msg) bool { return strings.Contains(string(m.Raw), `"ann"`) })
	ann.SendText(`{"id":"c1","kind":"chat","payload":{"text":"across nodes"}}`)
	bob.ExpectFunc("chat", func(m testutil.Msg) bool { return strings.Contains(string(m.Raw), "across nodes") })
	if logs := a.stderr.String() + b.stderr.String(); strings.Contains(logs, "ann-token") || strings.Contains(logs, "bob-token") {
		t.Errorf("a token reached a log:\n%s", logs)
	}
}

// TestGatewayStartClusterBadInput: cluster flags (and --write-coalesce) that cannot work are
// refused before the gateway serves.
func TestGatewayStartClusterBadInput(t *testing.T) {
	good := writeSpace(t, "space: {id: x}\nparticipants:\n  a: {capabilities: [{kind: chat}]}\n")
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--node-id", "n1"}, "need --nats"},
		{[]string{"--cluster", "c"}, "need --nats"},
		{[]string{"--replicas", "3"}, "need --nats"},
		{[]string{"--presence-ttl", "30s"}, "need --nats"},
		{[]string{"--log-retention", "500"}, "need --nats"},
		{[]string{"--history-retention", "500"}, "need --nats"},
		{[]string{"--history-mb", "16"}, "need --nats"},
		{[]string{"--nats", "embedded:0", "--history-retention", "15"}, "--history-retention: 15 is not from 16 to 1000000"},
		{[]string{"--nats", "embedded:0", "--history-retention", "1000001"}, "is not from 16"},
		{[]string{"--nats", "embedded:0", "--history-retention", "-1"}, "is not from 16"},
		{[]string{"--nats", "embedded:0", "--history-mb", "0"}, "--history-mb: 0 is not from 1 to 1048576"},
		{[]string{"--nats", "embedded:0", "--history-mb", "99999999999999"}, "is not from 1 to"},
		{[]string{"--nats", "embedded:0", "--history-mb", "1e3"}, "invalid argument"},
		{[]string{"--nats", "embedded:0", "--replicas", "0"}, "--replicas: 0 is not from 1 to 5"},
		{[]string{"--nats", "embedded:0", "--replicas", "6"}, "--replicas: 6 is not from 1 to 5"},
		{[]string{"--nats", "embedded:0", "--replicas", "x"}, "invalid argument"},
		{[]string{"--nats", "embedded:0", "--presence-ttl", "1500ms"}, "is not whole seconds"},
		{[]string{"--nats", "embedded:0", "--presence-ttl", "0s"}, "is not whole seconds"},
		{[]string{"--nats", "embedded:0", "--presence-ttl", "-5s"}, "is not whole seconds"},
		{[]string{"--nats", "embedded:0", "--presence-ttl", "2h"}, "is not whole seconds"},
		{[]string{"--nats", "embedded:0", "--log-retention", "99"}, "is not from 100 to 1000000"},
		{[]string{"--nats", "embedded:0", "--log-retention", "99999999999"}, "is not from 100"},
		{[]string{"--nats", "embedded:0", "--replicas", "3"}, "replicas"},
		{[]string{"--nats", "embedded:x"}, "is not embedded or embedded:PORT"},
		{[]string{"--nats", "embedded:99999"}, "is not embedded or embedded:PORT"},
		{[]string{"--nats", "embeddedx"}, "is not embedded or embedded:PORT"},
		{[]string{"--nats", "nats://mew:sekret@127.0.0.1:1"}, "nats://mew:xxxxx@127.0.0.1:1"},
		{[]string{"--write-coalesce", "-1ms"}, "--write-coalesce: -1ms is not from 0 (off) to 100ms"},
		{[]string{"--write-coalesce", "1s"}, "--write-coalesce: 1s is not from 0 (off) to 100ms"},
		{[]string{"--write-coalesce", "fast"}, "invalid argument"},
	} {
		t.Run(strings.Join(c.args, " "), func(t *testing.T) {
			_, stderr, err := run(t, Options{}, append([]string{"gateway", "start", "-p", "0", "-s", good}, c.args...)...)
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("err = %v, want it to mention %q", err, c.want)
			}
			if strings.Contains(err.Error()+stderr, "sekret") {
				t.Fatalf("the NATS password reached the output: %v\n%s", err, stderr)
			}
		})
	}
}
