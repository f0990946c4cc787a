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

func writeSpace(t *testing.T, yaml string) string {
	t.Helper()
	dir := t.TempDir()
	path := filepath.Join(dir, "space.yaml")
	if err := os.WriteFile(path, []byte(yaml), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

func TestGatewayStartServesAndStopsCleanly(t *testing.T) {
	path := writeSpace(t, "space: {id: cli}\nparticipants:\n  me: {tokens: [me-token], capabilities: [{kind: chat}]}\n  agent: {capabilities: [{kind: chat}]}\n")
	found := make(chan string, 1)
	out := &lineWriter{prefix: "listening on ", found: found}
	errOut := &lineWriter{}
	root := NewRoot(Options{Stdout: out, Stderr: errOut})
	root.SetArgs([]string{"gateway", "start", "-p", "0", "-s", path, "-l", "debug"})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- root.ExecuteContext(ctx) }()

	var addr string
	select {
	case addr = <-found:
	case err := <-done:
		t.Fatalf("gateway exited: %v\n%s", err, errOut.String())
	case <-time.After(10 * time.Second):
		t.Fatal("no listening line")
	}
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

	cancel() // what SIGINT/SIGTERM does in package main
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("exit: %v", err)
		}
	case <-time.After(15 * time.Second):
		t.Fatal("gateway did not stop")
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
