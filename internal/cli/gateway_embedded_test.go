package cli

import (
	"bytes"
	"context"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mew-protocol/mew/internal/testpki"
)

// TestGatewayStartNATSRoutesBadInput: route flags that cannot make a NATS cluster of embedded
// servers — bad ports, a list naming this server, an address twice, another host, credentials on
// the command line, a node id that is no server name, more replicas than servers — are refused
// with what is wrong, before any server starts, and no secret reaches the output.
func TestGatewayStartNATSRoutesBadInput(t *testing.T) {
	good := writeSpace(t, "space: {id: x}\nparticipants:\n  a: {capabilities: [{kind: chat}]}\n")
	dir := t.TempDir()
	open := testpki.WriteFile(t, dir, "open.secret", []byte(strings.Repeat("ab", 32)+"\n"), 0o644)
	short := testpki.WriteFile(t, dir, "short.secret", []byte("sekret\n"), 0o600)
	// Ports nothing listens on, so that a check that let something through would fail later.
	const (
		c1, c2, c3 = "41901", "41902", "41903"
		r1, r2, r3 = "41911", "41912", "41913"
	)
	emb := func(ports ...string) string {
		s := "embedded:" + ports[0]
		for _, p := range ports[1:] {
			s += ",nats://127.0.0.1:" + p
		}
		return s
	}
	ok := []string{"--nats", emb(c1, c2, c3), "--nats-route-port", r1, "--nats-routes", "127.0.0.1:" + r2 + ",127.0.0.1:" + r3, "--node-id", "n1"}
	with := func(extra ...string) []string { return append(append([]string(nil), ok...), extra...) }
	var many []string
	for p := 42000; p < 42065; p++ {
		many = append(many, "127.0.0.1:"+strconv.Itoa(p))
	}
	for _, c := range []struct {
		args []string
		want string
	}{
		// Route flags without an embedded server.
		{[]string{"--nats-route-port", r1}, "need --nats embedded"},
		{[]string{"--nats-routes", "127.0.0.1:" + r2}, "need --nats embedded"},
		{[]string{"--nats-route-secret", short}, "need --nats embedded"},
		{[]string{"--nats", "nats://127.0.0.1:1", "--nats-routes", "127.0.0.1:" + r2, "--nats-nkey", short}, "need --nats embedded"},
		{[]string{"--nats", "nats://127.0.0.1:" + c2 + ",embedded:" + c1}, "embedded must come first"},
		// One without the other.
		{[]string{"--nats", emb(c1), "--nats-routes", "127.0.0.1:" + r2}, "needs --nats-route-port"},
		{[]string{"--nats", emb(c1), "--nats-route-port", r1}, "needs --nats-routes"},
		{[]string{"--nats", emb(c1, c2)}, "needs --nats-route-port and --nats-routes"},
		{[]string{"--nats", emb(c1), "--nats-route-secret", short}, "needs --nats-route-port and --nats-routes"},
		// Ports.
		{[]string{"--nats", emb(c1), "--nats-route-port", "70000", "--nats-routes", "127.0.0.1:" + r2}, "is not from 1 to 65535"},
		{[]string{"--nats", emb(c1), "--nats-route-port", "-1", "--nats-routes", "127.0.0.1:" + r2}, "is not from 1 to 65535"},
		{[]string{"--nats", "embedded:0", "--nats-route-port", r1, "--nats-routes", "127.0.0.1:" + r2}, "cannot be clustered"},
		{[]string{"--nats", "embedded:99999"}, "is not embedded or embedded:PORT"},
		{[]string{"--nats", emb(c1), "--nats-route-port", c1, "--nats-routes", "127.0.0.1:" + r2}, "port " + c1 + " is both"},
		{[]string{"-p", r1, "--nats", emb(c1), "--nats-route-port", r1, "--nats-routes", "127.0.0.1:" + r2}, "port " + r1 + " is both the gateway's --port"},
		{[]string{"--nats", emb(c1, c2), "--nats-route-port", r1, "--nats-routes", "127.0.0.1:" + c2}, "port " + c2 + " is both"},
		// This server named among the others.
		{[]string{"--nats", emb(c1), "--nats-route-port", r1, "--nats-routes", "127.0.0.1:" + r1}, "this server's own cluster port"},
		{[]string{"--nats", emb(c1, c1), "--nats-route-port", r1, "--nats-routes", "127.0.0.1:" + r2}, "this node's own server"},
		// Duplicates.
		{[]string{"--nats", emb(c1), "--nats-route-port", r1, "--nats-routes", "127.0.0.1:" + r2 + ",localhost:" + r2}, "port " + r2 + " is both"},
		{[]string{"--nats", emb(c1, c2, c2), "--nats-route-port", r1, "--nats-routes", "127.0.0.1:" + r2}, "port " + c2 + " is both"},
		// Malformed, or elsewhere.
		{[]string{"--nats", emb(c1), "--nats-route-port", r1, "--nats-routes", "127.0.0.1"}, "is not HOST:PORT"},
		{[]string{"--nats", emb(c1), "--nats-route-port", r1, "--nats-routes", "127.0.0.1:x"}, "the port is not from 1 to 65535"},
		{[]string{"--nats", emb(c1), "--nats-route-port", r1, "--nats-routes", "127.0.0.1:0"}, "the port is not from 1 to 65535"},
		{[]string{"--nats", emb(c1), "--nats-route-port", r1, "--nats-routes", "10.1.2.3:" + r2}, "127.0.0.1 only"},
		{[]string{"--nats", emb(c1), "--nats-route-port", r1, "--nats-routes", "nats-route://mew:sekret@127.0.0.1:" + r2}, "never the command line"},
		{[]string{"--nats", "embedded:" + c1 + ",nats://u:sekret@127.0.0.1:" + c2, "--nats-route-port", r1, "--nats-routes", "127.0.0.1:" + r2}, "carries credentials"},
		{[]string{"--nats", "embedded:" + c1 + ",tls://127.0.0.1:" + c2, "--nats-route-port", r1, "--nats-routes", "127.0.0.1:" + r2}, "is not nats://127.0.0.1:PORT"},
		{[]string{"--nats", "embedded:" + c1 + ",nats://127.0.0.1:" + c2 + "/x", "--nats-route-port", r1, "--nats-routes", "127.0.0.1:" + r2}, "is not nats://127.0.0.1:PORT"},
		{[]string{"--nats", "embedded:" + c1 + ",nats://example.com:" + c2, "--nats-route-port", r1, "--nats-routes", "127.0.0.1:" + r2}, "127.0.0.1 only"},
		{[]string{"--nats", emb(c1), "--nats-route-port", r1, "--nats-routes", strings.Join(many, ",")}, "at most 64 other servers"},
		// The node's id names its server and store.
		{ok[:len(ok)-2], "needs --node-id"},
		{with("--node-id", "../x"), "needs an id of 1 to 64"},
		{with("--node-id", "a b"), "needs an id of 1 to 64"},
		{with("--node-id", ".."), "needs an id of 1 to 64"},
		// Replicas the servers cannot hold; a route secret that is none.
		{with("--replicas", "4"), "--replicas 4: the cluster has 3 NATS servers"},
		{with("--nats-route-secret", open), "chmod 600"},
		{with("--nats-route-secret", short), "no secret of 32 or more characters"},
		{with("--nats-route-secret", filepath.Join(dir, "missing", "routes.secret")), "route secret file"},
	} {
		t.Run(strings.Join(c.args, " "), func(t *testing.T) {
			_, stderr, err := run(t, Options{}, append([]string{"gateway", "start", "-p", "0", "-s", good}, c.args...)...)
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("err = %v, want it to mention %q\n%s", err, c.want, stderr)
			}
			if out := err.Error() + stderr; strings.Contains(out, "sekret") || strings.Contains(out, strings.Repeat("ab", 32)) {
				t.Fatalf("a secret reached the output: %v\n%s", err, stderr)
			}
		})
	}
	// Nothing was started: no store was made for a node that was refused.
	if _, err := os.Stat(filepath.Join(filepath.Dir(good), "nats", "nodes")); err == nil {
		t.Error("a refused node made a JetStream store")
	}
}

// TestGatewayStartNATSAloneWaits: a node of a cluster of embedded servers whose peers never
// come waits for a JetStream majority, saying so, does not listen meanwhile, and when stopped
// ends with an error that says what it was waiting for and stops its server.
func TestGatewayStartNATSAloneWaits(t *testing.T) {
	good := writeSpace(t, "space: {id: alone}\nparticipants:\n  a: {tokens: [a-token], capabilities: [{kind: chat}]}\n")
	ports := distinctPorts(t, 4)
	var out, errOut bytes.Buffer
	root := NewRoot(Options{Stdout: &out, Stderr: &lockedWriter{w: &errOut}})
	root.SetArgs([]string{"gateway", "start", "-p", "0", "-s", good, "--node-id", "n1", "-l", "info",
		"--nats", "embedded:" + strconv.Itoa(ports[0]) + ",nats://127.0.0.1:" + strconv.Itoa(ports[1]),
		"--nats-route-port", strconv.Itoa(ports[2]), "--nats-routes", "127.0.0.1:" + strconv.Itoa(ports[3])})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- root.ExecuteContext(ctx) }()
	time.Sleep(3 * time.Second)
	cancel()
	var err error
	select {
	case err = <-done:
	case <-time.After(30 * time.Second):
		t.Fatal("the node did not stop")
	}
	if err == nil || !strings.Contains(err.Error(), "stopped while waiting for a JetStream majority") {
		t.Errorf("err = %v", err)
	}
	if strings.Contains(out.String(), "listening on") {
		t.Errorf("a node without a JetStream majority listened: %s", out.String())
	}
	if !strings.Contains(errOut.String(), "waiting for the other NATS servers") {
		t.Errorf("the node did not say what it waits for:\n%s", errOut.String())
	}
	// Its embedded server is stopped: the client port is free again.
	ln, lerr := net.Listen("tcp", "127.0.0.1:"+strconv.Itoa(ports[0]))
	if lerr != nil {
		t.Fatalf("the embedded server's port is still taken: %v", lerr)
	}
	ln.Close()
}

// lockedWriter serialises writes to w, which the command's logger and the test share.
type lockedWriter struct {
	mu sync.Mutex
	w  *bytes.Buffer
}

func (l *lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}
