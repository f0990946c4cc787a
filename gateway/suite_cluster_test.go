package gateway_test

import (
	"net/http"
	"testing"

	"github.com/mew-protocol/mew/gateway"
	"github.com/mew-protocol/mew/internal/testutil"
)

// TestSuiteOnCluster: with MEW_TEST_CLUSTER set (CI runs this package once
// with "nats"), every gateway of the suite is a cluster node and its spaces
// are shared, so the whole single-node suite has run over the cluster path;
// without it, none is. Either way the test says which, so that the second
// run cannot silently fall back to the single-node path.
func TestSuiteOnCluster(t *testing.T) {
	g := start(t, gateway.Options{})
	code, body := get(t, g, "/health", "")
	if code != http.StatusOK {
		t.Fatalf("health %d: %v", code, body)
	}
	mode := testutil.ClusterMode()
	shared, _ := body["shared"].(bool)
	switch {
	case mode == "" && (shared || body["node"] != nil):
		t.Errorf("no %s, yet /health says %v", testutil.ClusterEnv, body)
	case mode != "" && (!shared || body["node"] != "n1" || body["cluster"] != "test"):
		t.Errorf("%s=%s, yet /health says %v", testutil.ClusterEnv, mode, body)
	case mode == "nats" && body["nats"] != "connected":
		t.Errorf("%s=nats, yet /health says nats %v", testutil.ClusterEnv, body["nats"])
	}
	t.Logf("cluster mode %q: %v", mode, body)
}
