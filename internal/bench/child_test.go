package bench

import (
	"context"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/mew-protocol/mew/internal/testutil"
)

// childTarget is the relay run by this test binary as a child (see TestMain).
func childTarget(t *testing.T) ChildTarget {
	t.Helper()
	exe := testutil.Executable(t)
	t.Setenv(childEnv, "1") // inherited by the child; this process has already chosen
	return ChildTarget{Label: "relay", Command: []string{exe}}
}

func TestChildFanout(t *testing.T) {
	o := FanoutOptions{Participants: 4, Senders: 2, Load: Load{Rate: 200, Size: 64, Duration: time.Second, Warmup: 200 * time.Millisecond}}
	res, err := Fanout(context.Background(), childTarget(t), o, nil)
	if err != nil {
		t.Fatalf("Fanout: %v", err)
	}
	t.Logf("%+v", res)
	if res.Target != "relay" || res.Delivered == 0 || res.Loss != 0 {
		t.Errorf("target %q, delivered %d, loss %v; want relay, all delivered", res.Target, res.Delivered, res.Loss)
	}
	// The child's CPU, in clock ticks of 10 ms: over a second of 800 deliveries it may be a
	// tick or none, but never the clients' and the child's together for long.
	if res.CPUPerDelivery < 0 || res.CPUPerDelivery > 10*time.Millisecond {
		t.Errorf("cpu per delivery %v", res.CPUPerDelivery)
	}
}

func TestChildIdle(t *testing.T) {
	res, err := Idle(context.Background(), childTarget(t), IdleOptions{Connections: 50, Settle: 200 * time.Millisecond}, nil)
	if err != nil {
		t.Fatalf("Idle: %v", err)
	}
	t.Logf("%+v", res)
	if res.Scope != ScopeChild {
		t.Errorf("scope %q, want %q", res.Scope, ScopeChild)
	}
	// The relay runs two goroutines per connection; none of them are this process's.
	if res.GoroutinesPerConn < 1.5 || res.GoroutinesPerConn > 2.5 {
		t.Errorf("goroutines per connection %v, want the relay's 2", res.GoroutinesPerConn)
	}
	if res.BytesPerConn <= 0 || res.RSSPerConn <= 0 {
		t.Errorf("bytes per connection %v, rss per connection %v: want both positive", res.BytesPerConn, res.RSSPerConn)
	}
}

func TestChildFails(t *testing.T) {
	_, err := ChildTarget{Label: "x", Command: []string{"sh", "-c", "echo broken >&2; exit 3"}}.Start(context.Background(), []string{"a"})
	if err == nil || !strings.Contains(err.Error(), "broken") {
		t.Errorf("err = %v, want the child's stderr", err)
	}
	_, err = ChildTarget{Label: "x", Command: []string{"sh", "-c", "read ids; echo not-json"}}.Start(context.Background(), []string{"a"})
	if err == nil || !strings.Contains(err.Error(), "not-json") {
		t.Errorf("err = %v, want the bad answer", err)
	}
}

func TestParseProc(t *testing.T) {
	stat := []byte("4242 (a (b) c) S 1 2 3 4 5 6 7 8 9 10 250 50 0 0 20 0 1 0 100 0 0\n")
	if d, ok := parseStatCPU(stat); !ok || d != 3*time.Second {
		t.Errorf("parseStatCPU = %v %v, want 3s", d, ok)
	}
	if _, ok := parseStatCPU([]byte("4242 (x) S 1")); ok {
		t.Error("parseStatCPU accepted a short line")
	}
	if n, err := parseVmRSS([]byte("Name:\tx\nVmRSS:\t    1234 kB\nThreads: 3\n")); err != nil || n != 1234<<10 {
		t.Errorf("parseVmRSS = %v %v", n, err)
	}
	if _, err := parseVmRSS([]byte("Name:\tx\n")); err == nil {
		t.Error("parseVmRSS without VmRSS: no error")
	}
	if d, ok := childCPU(os.Getpid()); !ok || d <= 0 {
		t.Errorf("childCPU(self) = %v %v", d, ok)
	}
}
