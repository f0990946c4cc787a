package natscluster

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/mew-protocol/mew/gateway/cluster"
	"github.com/mew-protocol/mew/gateway/cluster/clustertest"
	"github.com/mew-protocol/mew/internal/testpki"
)

// ensureAtOnce has eight callers make the file at path with ensure at
// once, and checks that each got the same valid value and that the file is
// 0600; it returns the value. The seed and the route secret are both made so.
func ensureAtOnce(t *testing.T, path string, ensure func(string) (string, error), valid func(string) bool) string {
	t.Helper()
	var wg sync.WaitGroup
	got := make([]string, 8)
	errs := make([]error, 8)
	for i := range got {
		wg.Go(func() { got[i], errs[i] = ensure(path) })
	}
	wg.Wait()
	for i := range got {
		// Lengths only: the values are secrets.
		if errs[i] != nil || got[i] != got[0] || !valid(got[i]) {
			t.Fatalf("caller %d: %d bytes, %v (first %d bytes)", i, len(got[i]), errs[i], len(got[0]))
		}
	}
	fi, err := os.Stat(path)
	if err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("%s: %v mode %v", path, err, fi.Mode())
	}
	return got[0]
}

// TestEnsureRouteSecret: the route secret is made 0600 once, whole, and
// reused; callers at once agree on one secret; a file others may read, or
// whose first line is no secret, is refused without the secret in the error.
func TestEnsureRouteSecret(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "routes.secret")
	secret := ensureAtOnce(t, path, EnsureRouteSecret, func(s string) bool { return len(s) == routeSecretLen })
	if left, _ := filepath.Glob(filepath.Join(dir, ".routes.secret.*")); len(left) != 0 {
		t.Errorf("temporary files left behind: %v", left)
	}
	if again, err := EnsureRouteSecret(path); err != nil || again != secret {
		t.Errorf("reuse: %v, and not the same secret: %v", err, again != secret)
	}
	if err := os.Chmod(path, 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := EnsureRouteSecret(path); err == nil || !strings.Contains(err.Error(), "chmod 600") || strings.Contains(err.Error(), secret) {
		t.Errorf("a world-readable secret: %v", err)
	}
	for name, data := range map[string]string{
		"short":    "0123456789abcdef\n",
		"spaces":   strings.Repeat("ab cd ", 10) + "\n",
		"userinfo": strings.Repeat("a", 40) + "@host\n",
		"blank":    "\n" + strings.Repeat("a", 64) + "\n",
	} {
		p := testpki.WriteFile(t, dir, name, []byte(data), 0o600)
		if _, err := EnsureRouteSecret(p); !errors.Is(err, cluster.ErrInvalid) || strings.Contains(err.Error(), strings.TrimSpace(data)) {
			t.Errorf("%s: %v", name, err)
		}
	}
	if _, err := EnsureRouteSecret(filepath.Join(dir, "no", "such", "routes.secret")); err == nil {
		t.Error("a secret file in a missing directory was made")
	}
}

// freePorts returns n ports of 127.0.0.1 that were free a moment ago.
func freePorts(t *testing.T, n int) []int {
	t.Helper()
	var ports []int
	for range n {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		defer l.Close()
		ports = append(ports, l.Addr().(*net.TCPAddr).Port)
	}
	return ports
}

// routedServers starts n servers, each given only its cluster port and
// the others' (as `mew gateway start --nats-routes` does), all with secret.
func routedServers(t *testing.T, n int, secret string) []*server.Server {
	t.Helper()
	ports := freePorts(t, n)
	servers := make([]*server.Server, n)
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := range n {
		var routes []string
		for _, p := range ports {
			routes = append(routes, "nats-route://127.0.0.1:"+strconv.Itoa(p))
		}
		wg.Go(func() {
			servers[i], errs[i] = StartServer(ServerOptions{Name: fmt.Sprintf("r%d", i), StoreDir: t.TempDir(),
				ClusterName: "mewtest", ClusterPort: ports[i], Routes: routes, RouteSecret: secret})
		})
	}
	wg.Wait()
	for i, s := range servers {
		if s != nil {
			t.Cleanup(func() { s.Shutdown(); s.WaitForShutdown() })
		}
		if errs[i] != nil {
			t.Fatalf("server %d: %v", i, errs[i])
		}
	}
	return servers
}

// TestRouteSecretLocksRoutes: servers given a RouteSecret route to each
// other with it, and a server without it, or with another, gets no route;
// a route that brings its own credentials besides the secret is refused.
func TestRouteSecretLocksRoutes(t *testing.T) {
	secret := strings.Repeat("5e", 32)
	servers := routedServers(t, 2, secret)
	deadline := time.Now().Add(10 * time.Second)
	for servers[0].NumRoutes() == 0 || servers[1].NumRoutes() == 0 {
		if time.Now().After(deadline) {
			t.Fatal("the two servers never routed to each other")
		}
		time.Sleep(50 * time.Millisecond)
	}
	target := servers[0].ClusterAddr().String()
	none := startServer(t, ServerOptions{Name: "none", ClusterName: "mewtest", ClusterPort: -1,
		Routes: []string{"nats-route://" + target}})
	wrong := startServer(t, ServerOptions{Name: "wrong", ClusterName: "mewtest", ClusterPort: -1,
		Routes: []string{"nats-route://" + target}, RouteSecret: strings.Repeat("0", 64)})
	time.Sleep(2 * time.Second) // a route is made (or not) within a second
	if n, m := none.NumRoutes(), wrong.NumRoutes(); n != 0 || m != 0 {
		t.Fatalf("rogue servers routed: %d without the secret, %d with another", n, m)
	}
	_, err := StartServer(ServerOptions{StoreDir: t.TempDir(), ClusterPort: -1, RouteSecret: secret,
		Routes: []string{"nats-route://u:sekret@" + target}})
	if !errors.Is(err, cluster.ErrInvalid) || strings.Contains(err.Error(), "sekret") || strings.Contains(err.Error(), secret) {
		t.Errorf("a route with credentials besides the secret: %v", err)
	}
}

// TestNodesStartTogether: three nodes started at the same moment on three
// servers of a new cluster, each given only its own server, all come up with
// replicas 3. Their creates of each bucket and stream race; nats-server
// leaves such racing creates unanswered, and New asks again (createAnswered)
// rather than wait out its context.
func TestNodesStartTogether(t *testing.T) {
	servers := routedServers(t, 3, strings.Repeat("ab", 32))
	var wg sync.WaitGroup
	errs := make([]error, 3)
	took := make([]time.Duration, 3)
	for i, s := range servers {
		wg.Go(func() {
			ctx, cancel := context.WithTimeout(context.Background(), 40*time.Second)
			defer cancel()
			start := time.Now()
			var n *Node
			// Until the meta leader is elected the servers answer 503 at
			// once: asked again, as `mew gateway start` does. A New that
			// waited out its context instead is the failure looked for.
			for {
				nctx, ncancel := context.WithTimeout(ctx, 30*time.Second)
				n, errs[i] = New(nctx, Options{NodeID: fmt.Sprintf("n%d", i), Cluster: "together", URL: s.ClientURL(),
					Replicas: 3, PresenceTTL: clustertest.PresenceTTL, RequestTimeout: 3 * time.Second})
				ncancel()
				if errs[i] == nil || errors.Is(errs[i], context.DeadlineExceeded) || ctx.Err() != nil {
					break
				}
				time.Sleep(200 * time.Millisecond)
			}
			took[i] = time.Since(start)
			if n != nil {
				t.Cleanup(func() { _ = n.Close() })
			}
		})
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Errorf("node %d: %v after %v", i, err, took[i])
		}
	}
	t.Logf("three nodes started together on a new cluster: up after %v", took)
}

// TestWriteAgain: writeAgain sends a write again while no server takes it (a replicated
// stream electing a leader after its leader's server died), and never a write that failed
// otherwise (a timeout may have been stored), nor once the context ends or the node's
// connection is down.
func TestWriteAgain(t *testing.T) {
	n := &Node{ownConn: true}
	ctx := context.Background()
	calls := 0
	got, err := writeAgain(ctx, n, func() (uint64, error) {
		calls++
		switch calls {
		case 1:
			return 0, jetstream.ErrNoStreamResponse
		case 2:
			return 0, fmt.Errorf("put: %w", nats.ErrNoResponders)
		}
		return 9, nil
	})
	if got != 9 || err != nil || calls != 3 {
		t.Fatalf("after two unanswered writes: %d, %v in %d calls", got, err, calls)
	}
	for _, other := range []error{context.DeadlineExceeded, nats.ErrTimeout, errors.New("wrong last sequence")} {
		calls = 0
		if _, err := writeAgain(ctx, n, func() (uint64, error) { calls++; return 0, other }); !errors.Is(err, other) || calls != 1 {
			t.Errorf("%v: %v in %d calls, want it at once", other, err, calls)
		}
	}
	cctx, cancel := context.WithTimeout(ctx, 100*time.Millisecond)
	defer cancel()
	start := time.Now()
	if _, err := writeAgain(cctx, n, func() (uint64, error) { return 0, nats.ErrNoResponders }); !noResponders(err) || time.Since(start) > time.Second {
		t.Errorf("a context ending: %v after %v", err, time.Since(start))
	}
	n.down.Store(true)
	calls = 0
	if _, err := writeAgain(ctx, n, func() (uint64, error) { calls++; return 0, nats.ErrNoResponders }); !noResponders(err) || calls != 1 {
		t.Errorf("the connection down: %v in %d calls, want it at once", err, calls)
	}
}
