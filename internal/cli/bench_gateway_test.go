package cli

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/spf13/cobra"
	"go.uber.org/goleak"

	"github.com/mew-protocol/mew/internal/bench"
)

// auditTally counts the lines of the envelope history by event.
type auditTally struct {
	dirs, files         int // bench space directories and audit files found
	received, delivered int
}

// readAudit counts the audit lines of every bench gateway whose directory is under tmp.
func readAudit(tmp string) (a auditTally) {
	dirs, _ := filepath.Glob(filepath.Join(tmp, "mew-bench-*"))
	a.dirs = len(dirs)
	for _, dir := range dirs {
		_ = filepath.WalkDir(filepath.Join(dir, "logs"), func(path string, d os.DirEntry, err error) error {
			if err != nil || d.IsDir() {
				return nil
			}
			a.files++
			f, err := os.Open(path)
			if err != nil {
				return nil
			}
			defer func() { _ = f.Close() }()
			sc := bufio.NewScanner(f)
			sc.Buffer(nil, 1<<20)
			for sc.Scan() {
				switch {
				case bytes.Contains(sc.Bytes(), []byte(`"event":"received"`)):
					a.received++
				case bytes.Contains(sc.Bytes(), []byte(`"event":"delivered"`)):
					a.delivered++
				}
			}
			return nil
		})
	}
	return a
}

// auditWatch is the stderr of a bench run against the real gateway target. That target keeps its
// audit log in a temporary directory it removes when it stops, so the log is read while the
// gateway still runs: when the run reports that its senders stopped, the watch waits (up to 10 s)
// until done holds for what the log holds so far, and keeps the last reading.
type auditWatch struct {
	tmp  string
	done func(auditTally) bool

	mu     sync.Mutex
	out    bytes.Buffer
	seen   bool // the run reached its straggler phase
	result auditTally
}

func (w *auditWatch) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.out.Write(p)
	if !w.seen && bytes.Contains(p, []byte("gateway: waiting for stragglers")) {
		w.seen = true
		deadline := time.Now().Add(10 * time.Second)
		for w.result = readAudit(w.tmp); !w.done(w.result) && time.Now().Before(deadline); w.result = readAudit(w.tmp) {
			time.Sleep(20 * time.Millisecond)
		}
	}
	return len(p), nil
}

// TestBenchGatewayTarget runs workloads through the real gateway target, as `mew bench` builds it,
// with each --audit setting: envelopes reach their recipients, and the audit log holds what the
// setting asks for.
func TestBenchGatewayTarget(t *testing.T) {
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
	fanout := []string{"fanout", "--target", "gateway", "-n", "3", "-k", "1", "--rate", "100", "--size", "10", "--duration", "300ms", "--warmup", "0s"}
	rpc := []string{"rpc", "--target", "gateway", "--pairs", "2", "--rate", "100", "--duration", "300ms", "--warmup", "0s"}
	tests := []struct {
		name  string
		args  []string
		count string // the result member that counts deliveries
		// done says when the audit log holds enough to judge; check judges it.
		done  func(auditTally) bool
		check func(auditTally) bool
	}{
		{"fanout default", fanout, "delivered",
			func(a auditTally) bool { return a.received > 0 && a.delivered > 0 },
			func(a auditTally) bool { return a.received > 0 && a.delivered > 0 }},
		{"fanout full", append(fanout, "--audit", "full"), "delivered",
			func(a auditTally) bool { return a.received > 0 && a.delivered > 0 },
			func(a auditTally) bool { return a.received > 0 && a.delivered > 0 }},
		// Received lines are flushed with the delivered lines of the same envelopes, so once
		// they are there, delivered lines would be too.
		{"rpc received", append(rpc, "--audit", "received"), "round_trips",
			func(a auditTally) bool { return a.received > 0 },
			func(a auditTally) bool { return a.received > 0 && a.delivered == 0 }},
		{"fanout off", append(fanout, "--audit", "off"), "delivered",
			func(a auditTally) bool { return true },
			func(a auditTally) bool { return a.dirs == 1 && a.received == 0 && a.delivered == 0 }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tmp := t.TempDir()
			t.Setenv("TMPDIR", tmp)
			w := &auditWatch{tmp: tmp, done: tt.done}
			var out bytes.Buffer
			root := &cobra.Command{Use: "mew", SilenceUsage: true, SilenceErrors: true}
			root.AddCommand(newBenchCmd(Options{Stdout: &out, Stderr: w}, gatewayBenchTarget))
			root.SetOut(&out)
			root.SetErr(w)
			root.SetArgs(append(append([]string{"bench"}, tt.args...), "--json"))
			if err := root.ExecuteContext(context.Background()); err != nil {
				t.Fatalf("mew bench %s: %v\nstderr:\n%s", strings.Join(tt.args, " "), err, w.out.String())
			}
			var rep struct {
				Results []map[string]any `json:"results"`
			}
			if err := json.Unmarshal(out.Bytes(), &rep); err != nil || len(rep.Results) != 1 {
				t.Fatalf("report (%v):\n%s", err, out.String())
			}
			res := rep.Results[0]
			t.Logf("result: %v; audit: %+v", res, w.result)
			if res["target"] != "gateway" {
				t.Errorf("target = %v, want gateway", res["target"])
			}
			if n, _ := res[tt.count].(float64); n <= 0 {
				t.Errorf("%s = %v, want deliveries", tt.count, res[tt.count])
			}
			if n, _ := res["errors"].(float64); n != 0 {
				t.Errorf("errors = %v (%v)", n, res["first_error"])
			}
			if !w.seen {
				t.Fatalf("the run never reported its straggler phase; stderr:\n%s", w.out.String())
			}
			if !tt.check(w.result) {
				t.Errorf("audit log while the gateway ran: %+v", w.result)
			}
			if a := readAudit(tmp); a.dirs != 0 {
				t.Errorf("the gateway target left %d directories behind", a.dirs)
			}
		})
	}
}

// TestBenchSpawn runs the built mew with --spawn: the gateway and the relay serve from child
// processes (mew bench serve), and what is measured is theirs alone.
func TestBenchSpawn(t *testing.T) {
	bin := mewBinary(t)
	runJSON := func(args ...string) []byte {
		t.Helper()
		ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
		defer cancel()
		c := exec.CommandContext(ctx, bin, append([]string{"bench"}, args...)...)
		var out, errOut bytes.Buffer
		c.Stdout, c.Stderr = &out, &errOut
		if err := c.Run(); err != nil {
			t.Fatalf("mew bench %s: %v\n%s", strings.Join(args, " "), err, errOut.String())
		}
		return out.Bytes()
	}

	var idle struct {
		Results []bench.IdleResult `json:"results"`
	}
	// Settled past the writers' linger, an idle gateway connection keeps no goroutine on
	// Linux (its reader parks after half a second of silence) and one, its reader, elsewhere,
	// where the relay keeps two.
	out := runJSON("idle", "--spawn", "--connections", "30", "--settle", "800ms", "--json")
	if err := json.Unmarshal(out, &idle); err != nil || len(idle.Results) != 2 {
		t.Fatalf("idle JSON %v:\n%s", err, out)
	}
	for _, r := range idle.Results {
		if r.Scope != bench.ScopeChild || r.Errors != 0 || r.RSSPerConn == 0 {
			t.Errorf("%s: scope %q, errors %d, rss/conn %v", r.Target, r.Scope, r.Errors, r.RSSPerConn)
		}
		gw := 1.0
		if runtime.GOOS == "linux" {
			gw = 0
		}
		if want := map[string]float64{"gateway": gw, "relay": 2}[r.Target]; r.GoroutinesPerConn < want-0.2 || r.GoroutinesPerConn > want+0.2 {
			t.Errorf("%s: %.2f goroutines per connection, want %v", r.Target, r.GoroutinesPerConn, want)
		}
	}

	var fan struct {
		Results []bench.FanoutResult `json:"results"`
	}
	// --cpuprofile: the child writes a profile of its server (a gzipped
	// pprof protocol buffer) to FILE.gateway when it stops.
	prof := filepath.Join(t.TempDir(), "cpu")
	out = runJSON("fanout", "--spawn", "--target", "gateway", "--rate-limit", "-n", "3", "-k", "1",
		"--rate", "100", "--duration", "500ms", "--warmup", "0s", "--json", "--cpuprofile", prof)
	if b, err := os.ReadFile(prof + ".gateway"); err != nil || len(b) < 2 || b[0] != 0x1f || b[1] != 0x8b {
		t.Errorf("the gateway child's CPU profile: %v, %d bytes", err, len(b))
	}
	if err := json.Unmarshal(out, &fan); err != nil || len(fan.Results) != 1 {
		t.Fatalf("fanout JSON %v:\n%s", err, out)
	}
	if r := fan.Results[0]; r.Target != "gateway" || r.Delivered == 0 || r.Loss != 0 || r.Errors != 0 {
		t.Errorf("fanout: %+v", r)
	}
}
