package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/spf13/cobra"
	"go.uber.org/goleak"

	"github.com/mew-protocol/mew/internal/bench"
)

// runBench runs `mew bench args...` in a tree whose gateway target is gw.
func runBench(t *testing.T, gw func() bench.Target, args ...string) (stdout, stderr string, err error) {
	t.Helper()
	var out, errOut bytes.Buffer
	root := &cobra.Command{Use: "mew", SilenceUsage: true, SilenceErrors: true}
	root.AddCommand(newBenchCmd(Options{Stdout: &out, Stderr: &errOut}, gw))
	root.SetOut(&out)
	root.SetErr(&errOut)
	root.SetArgs(append([]string{"bench"}, args...))
	err = root.ExecuteContext(context.Background())
	return out.String(), errOut.String(), err
}

func noGateway() bench.Target { return nil }

// TestBenchCPUProfileNeedsSpawn: in one process a profile would mix the
// clients' CPU with the server's, so --cpuprofile without --spawn is
// refused before anything runs.
func TestBenchCPUProfileNeedsSpawn(t *testing.T) {
	dir := t.TempDir()
	_, _, err := runBench(t, noGateway, "fanout", "--target", "relay", "--duration", "100ms", "--cpuprofile", filepath.Join(dir, "p"))
	if err == nil || !strings.Contains(err.Error(), "--cpuprofile needs --spawn") {
		t.Fatalf("--cpuprofile without --spawn: %v", err)
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 0 {
		t.Errorf("files written: %v", entries)
	}
}

func TestBenchRegistered(t *testing.T) {
	stdout, _, err := run(t, Options{Version: "v1.2.3"}, "bench", "--help")
	if err != nil {
		t.Fatalf("mew bench --help: %v", err)
	}
	for _, want := range []string{"fanout", "rpc", "idle", "relay"} {
		if !strings.Contains(stdout, want) {
			t.Errorf("help lacks %q:\n%s", want, stdout)
		}
	}
}

func TestBenchFanoutTable(t *testing.T) {
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
	stdout, stderr, err := runBench(t, noGateway, "fanout", "--target", "relay",
		"-n", "3", "-k", "2", "--rate", "200", "--size", "20", "--duration", "300ms", "--warmup", "0s")
	if err != nil {
		t.Fatalf("mew bench fanout: %v\nstderr:\n%s", err, stderr)
	}
	t.Logf("\n%s", stdout)
	lines := strings.Split(strings.TrimSpace(stdout), "\n")
	if len(lines) != 3 {
		t.Fatalf("want a header line, a table header and one row, got:\n%s", stdout)
	}
	if !strings.HasPrefix(lines[0], "fanout: 3 participants, 2 senders, 200 envelopes/s") {
		t.Errorf("first line = %q", lines[0])
	}
	for _, col := range []string{"TARGET", "SENT", "DELIVERED", "LOSS", "DELIVERIES/S", "P50", "P99", "MAX", "ERRORS"} {
		if !strings.Contains(lines[1], col) {
			t.Errorf("table header lacks %s: %q", col, lines[1])
		}
	}
	if f := strings.Fields(lines[2]); f[0] != "relay" || f[4] != "0.00%" || f[len(f)-1] != "0" {
		t.Errorf("row = %q, want relay with no loss and no errors", lines[2])
	}
	if strings.Contains(stdout, "gateway/relay") {
		t.Errorf("a ratio line without a gateway run:\n%s", stdout)
	}
	for _, want := range []string{"relay: connected 3/3", "relay: sending"} {
		if !strings.Contains(stderr, want) {
			t.Errorf("stderr lacks progress %q:\n%s", want, stderr)
		}
	}
}

func TestBenchSideBySide(t *testing.T) {
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
	stdout, _, err := runBench(t, gatewayBenchTarget, "fanout", "-n", "3", "-k", "1", "--rate", "100",
		"--size", "10", "--duration", "200ms", "--warmup", "0s")
	if err != nil {
		t.Fatalf("mew bench fanout: %v", err)
	}
	t.Logf("\n%s", stdout)
	lines := strings.Split(strings.TrimSpace(stdout), "\n")
	if len(lines) != 5 || !strings.HasPrefix(lines[2], "gateway ") || !strings.HasPrefix(lines[3], "relay ") {
		t.Fatalf("want rows for gateway then relay and a ratio line, got:\n%s", stdout)
	}
	// Both deliver the whole paced load; how fast is the machine's business, so the ratios are
	// only reported.
	for _, row := range lines[2:4] {
		if f := strings.Fields(row); f[1] == "0" || f[4] != "0.00%" || f[len(f)-1] != "0" {
			t.Errorf("row = %q, want envelopes sent, no loss and no errors", row)
		}
	}
	var dps, p50, p99 float64
	if _, err := fmt.Sscanf(lines[4], "gateway/relay deliveries/s: %f  p50: %f  p99: %f", &dps, &p50, &p99); err != nil {
		t.Fatalf("ratio line %q: %v", lines[4], err)
	}
	if dps <= 0 || p50 <= 0 || p99 <= 0 {
		t.Errorf("ratio line %q: want positive ratios", lines[4])
	}
	t.Logf("gateway/relay: deliveries/s %.2f, p50 %.2f, p99 %.2f", dps, p50, p99)
}

func TestBenchJSON(t *testing.T) {
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
	type report struct {
		Workload string             `json:"workload"`
		Options  map[string]any     `json:"options"`
		Results  []map[string]any   `json:"results"`
		Ratios   map[string]float64 `json:"ratios"`
	}
	tests := []struct {
		args   []string
		check  string // a result member that must be positive
		ratios bool
	}{
		{[]string{"fanout", "-n", "2", "-k", "1", "--rate", "100", "--size", "8", "--duration", "200ms", "--warmup", "0s"}, "delivered", true},
		{[]string{"rpc", "--target", "relay", "--pairs", "2", "--rate", "100", "--duration", "200ms", "--warmup", "0s"}, "round_trips", false},
		{[]string{"idle", "--target", "relay", "--connections", "10", "--settle", "50ms"}, "goroutines_per_conn", false},
	}
	for _, tt := range tests {
		stdout, stderr, err := runBench(t, gatewayBenchTarget, append(tt.args, "--json")...)
		if err != nil {
			t.Fatalf("mew bench %v: %v\n%s", tt.args, err, stderr)
		}
		var rep report
		dec := json.NewDecoder(strings.NewReader(stdout))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&rep); err != nil {
			t.Fatalf("mew bench %v --json: %v\n%s", tt.args, err, stdout)
		}
		if rep.Workload != tt.args[0] || len(rep.Options) == 0 || len(rep.Results) == 0 {
			t.Errorf("%s: report %+v", tt.args[0], rep)
			continue
		}
		last := rep.Results[len(rep.Results)-1]
		if last["target"] != "relay" {
			t.Errorf("%s: last target = %v, want relay", tt.args[0], last["target"])
		}
		if v, _ := last[tt.check].(float64); v <= 0 {
			t.Errorf("%s: %s = %v, want > 0\n%s", tt.args[0], tt.check, last[tt.check], stdout)
		}
		if tt.ratios != (rep.Ratios["deliveries_per_sec"] > 0) {
			t.Errorf("%s: ratios = %v", tt.args[0], rep.Ratios)
		}
	}
}

func TestBenchURL(t *testing.T) {
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
	ep, err := bench.RelayTarget{}.Start(context.Background(), []string{"bench-idle-0", "bench-idle-1"})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = ep.Close() }()
	tokens := "bench-idle-0=" + ep.Tokens["bench-idle-0"] + ",bench-idle-1=" + ep.Tokens["bench-idle-1"]
	stdout, _, err := runBench(t, noGateway, "idle", "--url", ep.URL, "--token", tokens, "--connections", "2", "--settle", "0s")
	if err != nil {
		t.Fatalf("mew bench idle --url: %v", err)
	}
	if !strings.Contains(stdout, "url ") || !strings.Contains(stdout, bench.ScopeClientOnly) {
		t.Errorf("want a url row labelled %q:\n%s", bench.ScopeClientOnly, stdout)
	}
}

func TestBenchBadFlags(t *testing.T) {
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
	tests := []struct {
		args []string
		want string
	}{
		{[]string{"fanout", "--target", "relay", "--rate", "-5"}, "rate must be a finite number >= 0"},
		{[]string{"fanout", "--target", "relay", "-n", "0"}, "participants must be at least 1, got 0"},
		{[]string{"fanout", "--target", "relay", "-n", "2", "-k", "3"}, "senders (3) cannot exceed participants (2)"},
		{[]string{"fanout", "--target", "relay", "--duration", "0s"}, "duration must be positive"},
		{[]string{"fanout", "--target", "relay", "--size", "-1"}, "size must be at least 1"},
		{[]string{"fanout", "--target", "relay,bogus"}, `unknown target "bogus" (want gateway, relay or url)`},
		{[]string{"fanout", "--target", "relay,"}, "empty target name"},
		{[]string{"fanout", "--url", "ws://127.0.0.1:1/ws?space=x", "--token", "alice"}, `--token: malformed entry "alice", want id=token`},
		{[]string{"fanout", "--url", "ws://127.0.0.1:1/ws?space=x", "--token", "a=1,=2"}, `malformed entry "=2"`},
		{[]string{"fanout", "--token", "a=b"}, "--token is for --url"},
		{[]string{"fanout", "--target", "url"}, "--target url needs --url"},
		{[]string{"fanout", "--target", "relay", "--url", "ws://127.0.0.1:1/ws"}, "does not include url"},
		{[]string{"fanout"}, "gateway target not available in this build"},
		{[]string{"rpc", "--target", "gateway"}, "gateway target not available in this build"},
		{[]string{"rpc", "--target", "relay", "--pairs", "0"}, "pairs must be at least 1"},
		{[]string{"idle", "--target", "relay", "--connections", "0"}, "connections must be at least 1"},
		{[]string{"idle", "--target", "relay", "--settle", "-1s"}, "settle cannot be negative"},
		{[]string{"fanout", "--target", "relay", "--rate", "fast"}, `invalid argument "fast"`},
		{[]string{"fanout", "--target", "relay", "extra"}, `unknown command "extra"`},
		{[]string{"frobnicate"}, `unknown command "frobnicate" for "mew bench"`},
	}
	for _, tt := range tests {
		stdout, _, err := runBench(t, noGateway, tt.args...)
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("mew bench %s: err = %v, want it to contain %q", strings.Join(tt.args, " "), err, tt.want)
		}
		if stdout != "" {
			t.Errorf("mew bench %s: stdout = %q, want nothing", strings.Join(tt.args, " "), stdout)
		}
	}
}
