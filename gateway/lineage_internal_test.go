package gateway

import (
	"context"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/mew-protocol/mew/space"
)

// TestLineageIndexIdle: a space's index of the audit log, which holds its
// bodies, is dropped once no lineage request came for the idle time, and
// made again by the next request.
func TestLineageIndexIdle(t *testing.T) {
	dir := t.TempDir()
	cfg, err := space.Parse([]byte("space: {id: s}\nparticipants:\n  ann: {tokens: [ann-token], capabilities: [{kind: \"*\"}]}\n"), filepath.Join(dir, "space.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "envelope-history.jsonl"), []byte(`{"timestamp":"2026-05-01T10:00:00.000Z","event":"received","id":"e1","envelope":{"protocol":"mew/v0.4","id":"e1","kind":"chat","from":"ann","payload":{"text":"hi"}},"participant":"ann","space_id":"s"}`+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	srv, err := New(Options{Spaces: []*space.Config{cfg}, Audit: AuditOptions{Dir: dir}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = srv.Close(context.Background()) })
	srv.lineages.idle = 50 * time.Millisecond
	ask := func() {
		t.Helper()
		// httptest's default Host, example.com, is not served.
		req := httptest.NewRequest(http.MethodGet, "http://127.0.0.1/participants/ann/lineage/e1", nil)
		req.Header.Set("Authorization", "Bearer ann-token")
		w := httptest.NewRecorder()
		srv.ServeHTTP(w, req)
		if w.Code != http.StatusOK {
			t.Fatalf("lineage of e1: %d %s", w.Code, w.Body)
		}
	}
	held := func() bool {
		li := srv.lineages.index("s")
		li.mu.Lock()
		defer li.mu.Unlock()
		return li.f != nil
	}
	ask()
	if !held() {
		t.Fatal("no index after a request")
	}
	for deadline := time.Now().Add(5 * time.Second); held(); time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the index was kept past its idle time")
		}
	}
	ask()
	if !held() {
		t.Fatal("no index after a request that followed the idle time")
	}
}

// TestLineageLimitersBounded: the per-participant limiters are dropped
// once there are many, those of participants that asked nothing lately
// first; one that is still drained is kept.
func TestLineageLimitersBounded(t *testing.T) {
	g := newLineageGate(Options{Limits: Limits{LineageRate: 1, LineageBurst: 2, LineageConcurrency: 1}})
	now := time.Unix(1_700_000_000, 0)
	drained := &member{name: "drained"}
	for range 2 {
		g.allow(drained, now)
	}
	if _, ok := g.allow(drained, now); ok {
		t.Fatal("a third request within the burst of 2 was allowed")
	}
	for i := range maxLineageLimiters {
		g.allow(&member{name: "m"}, now.Add(time.Duration(i)*time.Microsecond))
	}
	// An hour later every bucket is full but the drained one's... which
	// refilled too: drain it again first.
	later := now.Add(time.Hour)
	g.allow(drained, later)
	g.allow(drained, later)
	g.allow(&member{name: "new"}, later)
	if n := len(g.limiters); n > 3 {
		t.Fatalf("%d limiters kept after the bound was reached", n)
	}
	if _, ok := g.allow(drained, later); ok {
		t.Fatal("the drained participant's limiter was dropped and refilled")
	}
}
