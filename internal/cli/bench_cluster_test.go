package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net"
	"os/exec"
	"strings"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/mew-protocol/mew/gateway"
	"github.com/mew-protocol/mew/internal/bench"
	"github.com/mew-protocol/mew/internal/testutil"
)

// TestBenchClusterNodes runs the fan-out workload against three gateway nodes on an embedded NATS
// server: the participants are spread over the nodes, every envelope reaches every participant
// whichever node it was sent on, and the deliveries that crossed nodes are measured apart.
func TestBenchClusterNodes(t *testing.T) {
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
	t.Setenv("TMPDIR", t.TempDir())
	out, errOut, err := runBench(t, gatewayBenchTarget, "fanout", "--target", "gateway", "--nodes", "3", "-n", "6", "-k", "3",
		"--rate", "150", "--size", "10", "--duration", "500ms", "--warmup", "200ms", "--json")
	if err != nil {
		t.Fatalf("mew bench fanout --nodes 3: %v\n%s", err, errOut)
	}
	var rep struct {
		Results []bench.FanoutResult `json:"results"`
	}
	if err := json.Unmarshal([]byte(out), &rep); err != nil || len(rep.Results) != 1 {
		t.Fatalf("report (%v):\n%s", err, out)
	}
	r := rep.Results[0]
	t.Logf("%+v", r)
	if r.Nodes != 3 {
		t.Errorf("nodes = %d, want 3", r.Nodes)
	}
	if r.Delivered == 0 || r.Loss != 0 || r.Errors != 0 || r.OutOfOrder != 0 {
		t.Errorf("delivered %d, loss %v, errors %d (%s), out of order %d", r.Delivered, r.Loss, r.Errors, r.FirstError, r.OutOfOrder)
	}
	// Senders 0, 1, 2 are on nodes 1, 2, 3: two thirds of the deliveries crossed nodes.
	if r.CrossP50 <= 0 || r.CrossP99 < r.CrossP50 || r.CrossP99 > r.Max {
		t.Errorf("cross-node p50 %v, p99 %v (max of all %v)", r.CrossP50, r.CrossP99, r.Max)
	}
	if strings.Contains(errOut, "mew-bench-") {
		t.Errorf("stderr names the temporary directory:\n%s", errOut)
	}

	// The table says how many nodes and the cross-node latencies.
	out, errOut, err = runBench(t, gatewayBenchTarget, "fanout", "--target", "gateway", "--nodes", "2", "-n", "2", "-k", "1",
		"--rate", "50", "--duration", "200ms", "--warmup", "0s")
	if err != nil {
		t.Fatalf("mew bench fanout --nodes 2: %v\n%s", err, errOut)
	}
	if !strings.Contains(out, "gateway: 2 nodes, deliveries across nodes: p50 ") {
		t.Errorf("table:\n%s", out)
	}
}

func TestBenchNodesFlag(t *testing.T) {
	for _, n := range []string{"0", "-1", "17"} {
		_, _, err := runBench(t, gatewayBenchTarget, "fanout", "--target", "gateway", "--nodes", n, "--duration", "100ms")
		if err == nil || !strings.Contains(err.Error(), "--nodes") {
			t.Errorf("--nodes %s: %v, want a refusal naming --nodes", n, err)
		}
	}
}

// TestClientConnectGatewayList: -g takes a comma-separated list; a dead node first is passed
// over.
func TestClientConnectGatewayList(t *testing.T) {
	g := testutil.StartGateway(t, clientSpace, gateway.Options{})
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	dead := "ws://" + ln.Addr().String()
	_ = ln.Close()
	friend := joinCLI(t, g, "friend-token")
	heard := hearChats(friend, "human")
	inR, inW := io.Pipe()
	defer inW.Close()
	out, stop := clientCmd(t, inR, "-g", dead+", ws://"+g.Addr, "-s", "cli-client", "-t", "human-token")
	waitOutput(t, out, "connected to cli-client as human")
	_, _ = io.WriteString(inW, "over the second URL\n")
	expectHeard(t, heard, "over the second URL", "the chat never arrived")
	_, _ = io.WriteString(inW, "/quit\n")
	if err := stop(); err != nil {
		t.Errorf("exit: %v", err)
	}
}

func TestBridgeGatewayList(t *testing.T) {
	for _, bad := range []string{",", "ws://a,ftp://b", "ws://a, not a url"} {
		if err := checkGatewayURLs(bad); err == nil {
			t.Errorf("checkGatewayURLs(%q) = nil", bad)
		}
	}
	if err := checkGatewayURLs("ws://a:1, wss://b:2/ws"); err != nil {
		t.Errorf("checkGatewayURLs of a good list: %v", err)
	}
	if got := redactedURLs([]string{"ws://u:p@a:1/ws?space=x", "ws://b:2"}); strings.Contains(got, "p@") || !strings.Contains(got, "b:2") {
		t.Errorf("redactedURLs = %q", got)
	}
}

// TestBenchSpawnNodes: with --spawn the whole cluster serves from one child process, which hands
// every node's URL back.
func TestBenchSpawnNodes(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	c := exec.CommandContext(ctx, mewBinary(t), "bench", "fanout", "--spawn", "--target", "gateway", "--nodes", "2",
		"-n", "4", "-k", "2", "--rate", "100", "--duration", "300ms", "--warmup", "0s", "--json")
	var out, errOut bytes.Buffer
	c.Stdout, c.Stderr = &out, &errOut
	if err := c.Run(); err != nil {
		t.Fatalf("mew bench fanout --spawn --nodes 2: %v\n%s", err, errOut.String())
	}
	var rep struct {
		Results []bench.FanoutResult `json:"results"`
	}
	if err := json.Unmarshal(out.Bytes(), &rep); err != nil || len(rep.Results) != 1 {
		t.Fatalf("report (%v):\n%s", err, out.String())
	}
	if r := rep.Results[0]; r.Nodes != 2 || r.Delivered == 0 || r.Loss != 0 || r.Errors != 0 || r.CrossP99 == 0 {
		t.Errorf("%+v", r)
	}
}
