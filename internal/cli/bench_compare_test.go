package cli

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/mew-protocol/mew/internal/bench"
)

// rpcArgs is a short rpc run on the relay.
var rpcArgs = []string{"rpc", "--target", "relay", "--pairs", "2", "--rate", "100", "--size", "8", "--duration", "200ms", "--warmup", "0s"}

func TestBenchSaveAndCompare(t *testing.T) {
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
	saved := filepath.Join(t.TempDir(), "rpc.json")
	stdout, stderr, err := runBench(t, noGateway, append(rpcArgs, "--save", saved)...)
	if err != nil {
		t.Fatalf("--save: %v\n%s", err, stderr)
	}
	if !strings.Contains(stdout, "ROUND TRIPS/S") {
		t.Errorf("--save without --json should still print the table:\n%s", stdout)
	}
	data, err := os.ReadFile(saved)
	if err != nil {
		t.Fatal(err)
	}
	var rep benchReport[bench.RPCOptions, bench.RPCResult]
	if err := json.Unmarshal(data, &rep); err != nil {
		t.Fatalf("saved file: %v\n%s", err, data)
	}
	if rep.Workload != "rpc" || rep.Options.Pairs != 2 || len(rep.Results) != 1 || rep.Results[0].RoundTrips == 0 {
		t.Fatalf("saved report = %+v", rep)
	}

	// Another duration is comparable; the table gets a comparison after it.
	args := append(append([]string(nil), rpcArgs...), "--duration", "300ms", "--compare-to", saved)
	stdout, stderr, err = runBench(t, noGateway, args...)
	if err != nil {
		t.Fatalf("--compare-to: %v\n%s", err, stderr)
	}
	t.Logf("\n%s", stdout)
	_, cmpPart, ok := strings.Cut(stdout, "compared to "+saved+":\n")
	if !ok {
		t.Fatalf("no comparison in:\n%s", stdout)
	}
	lines := strings.Split(strings.TrimSpace(cmpPart), "\n")
	if len(lines) != 6 || !strings.Contains(lines[0], "NEW/OLD") {
		t.Fatalf("comparison = %q, want a header and 5 metrics", lines)
	}
	if f := strings.Fields(lines[1]); f[0] != "relay" || f[1] != "round" || f[len(f)-1] == "0.00" {
		t.Errorf("first comparison row = %q", lines[1])
	}

	// With --json the comparison is in the report.
	stdout, stderr, err = runBench(t, noGateway, append(args, "--json")...)
	if err != nil {
		t.Fatalf("--compare-to --json: %v\n%s", err, stderr)
	}
	var out struct {
		Compare []comparison `json:"compare"`
	}
	if err := json.Unmarshal([]byte(stdout), &out); err != nil {
		t.Fatalf("%v\n%s", err, stdout)
	}
	if len(out.Compare) != 5 || out.Compare[0].Metric != "round_trips_per_sec" || out.Compare[0].Old != rep.Results[0].PerSec || out.Compare[0].Ratio <= 0 {
		t.Errorf("compare = %+v", out.Compare)
	}
}

func TestBenchCompareRatios(t *testing.T) {
	old := &benchReport[bench.RPCOptions, bench.RPCResult]{Results: []bench.RPCResult{
		{Target: "gateway", PerSec: 100, P50: time.Millisecond, P99: 4 * time.Millisecond, Max: 0},
		{Target: "relay", PerSec: 200},
	}}
	now := []bench.RPCResult{{Target: "gateway", PerSec: 150, P50: 500 * time.Microsecond, P99: 5 * time.Millisecond, Max: time.Second}}
	cs, err := compareRuns("old.json", old, now, rpcMetrics)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]float64{"round_trips_per_sec": 1.5, "p50": 0.5, "p99": 1.25, "max": 0, "cpu_per_round_trip": 0}
	if len(cs) != len(want) {
		t.Fatalf("got %d comparisons, want %d: %+v", len(cs), len(want), cs)
	}
	for _, c := range cs {
		if c.Target != "gateway" || c.Ratio != want[c.Metric] {
			t.Errorf("%s %s: ratio %v, want %v", c.Target, c.Metric, c.Ratio, want[c.Metric])
		}
	}
	if _, err := compareRuns("old.json", old, []bench.RPCResult{{Target: "url"}}, rpcMetrics); err == nil ||
		!strings.Contains(err.Error(), "no target of this run is in it (it has gateway, relay)") {
		t.Errorf("no common target: err = %v", err)
	}
}

func TestBenchCompareBadFiles(t *testing.T) {
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
	dir := t.TempDir()
	write := func(name, content string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	rpcOpts := `{"pairs":2,"rate":100,"size":8,"duration_ns":1,"warmup_ns":0}`
	tests := []struct {
		name, file, want string
	}{
		{"missing", filepath.Join(dir, "nope.json"), "no such file"},
		{"not json", write("garbage.json", "{not json"), "not a saved bench run"},
		{"empty object", write("empty.json", "{}"), "not a saved bench run (no workload or results)"},
		{"bad result", write("bad.json", `{"workload":"rpc","options":`+rpcOpts+`,"results":[{"target":"relay","p50_ns":"soon"}]}`), "malformed rpc run"},
		{"no results", write("none.json", `{"workload":"rpc","options":`+rpcOpts+`,"results":[]}`), "the saved run has no results"},
		{"other workload", write("fanout.json", `{"workload":"fanout","options":{},"results":[{"target":"relay"}]}`), "a fanout run cannot be compared with this rpc run"},
		{"other options", write("pairs.json", `{"workload":"rpc","options":{"pairs":3,"rate":50,"size":8},"results":[{"target":"relay"}]}`),
			"the saved run had other options (pairs 3, now 2; rate 50, now 100)"},
		{"bad options", write("opts.json", `{"workload":"rpc","options":[1],"results":[{"target":"relay"}]}`), "malformed"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			stdout, stderr, err := runBench(t, noGateway, append(rpcArgs, "--compare-to", tt.file)...)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("err = %v, want it to contain %q", err, tt.want)
			}
			if stdout != "" || strings.Contains(stderr, "connected") {
				t.Errorf("a bad --compare-to file must stop the run before it starts; stdout %q, stderr %q", stdout, stderr)
			}
		})
	}
	// A target the saved run lacks is found only after the run.
	other := write("gateway.json", `{"workload":"rpc","options":`+rpcOpts+`,"results":[{"target":"gateway","round_trips_per_sec":10}]}`)
	if _, _, err := runBench(t, noGateway, append(rpcArgs, "--compare-to", other)...); err == nil || !strings.Contains(err.Error(), "no target of this run is in it (it has gateway)") {
		t.Errorf("no common target: err = %v", err)
	}
	if _, _, err := runBench(t, noGateway, append(rpcArgs, "--save", filepath.Join(dir, "no", "such", "dir.json"))...); err == nil || !strings.Contains(err.Error(), "--save") {
		t.Errorf("unwritable --save: err = %v", err)
	}
}
