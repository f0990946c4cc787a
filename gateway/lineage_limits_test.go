package gateway_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/mew-protocol/mew/auditlog"
	"github.com/mew-protocol/mew/gateway"
	"github.com/mew-protocol/mew/internal/testutil"
)

// lineageAnswer is one answer of the lineage API.
type lineageAnswer struct {
	code       int
	retryAfter string
	body       map[string]any
}

// askLineage asks for the lineage of env as participant who.
func askLineage(t *testing.T, base, who, token, env string) lineageAnswer {
	t.Helper()
	return askLineageWith(t, http.DefaultClient, base, who, token, env)
}

func askLineageWith(t *testing.T, client *http.Client, base, who, token, env string) lineageAnswer {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, base+"/participants/"+who+"/lineage/"+env, nil)
	if err != nil {
		t.Error(err)
		return lineageAnswer{}
	}
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := client.Do(req)
	if err != nil {
		t.Error(err)
		return lineageAnswer{}
	}
	defer resp.Body.Close()
	var body map[string]any
	if err := json.NewDecoder(resp.Body).Decode(&body); err != nil {
		t.Errorf("lineage of %s: not JSON: %v", env, err)
	}
	return lineageAnswer{resp.StatusCode, resp.Header.Get("Retry-After"), body}
}

// flood asks for env's lineage n times at once as who and returns the
// answers.
func flood(t *testing.T, base, who, token, env string, n int) []lineageAnswer {
	t.Helper()
	out := make([]lineageAnswer, n)
	// A client of its own: connections it dialed and did not use would
	// otherwise wait idle in the shared one, holding the gateway's
	// shutdown for 5 s.
	client := &http.Client{Transport: &http.Transport{}}
	defer client.CloseIdleConnections()
	var wg sync.WaitGroup
	start := make(chan struct{})
	for i := range n {
		wg.Go(func() {
			<-start
			out[i] = askLineageWith(t, client, base, who, token, env)
		})
	}
	close(start)
	wg.Wait()
	return out
}

// tooMany checks a 429 answer: Retry-After, one of the two codes, no
// lineage.
func tooMany(t *testing.T, a lineageAnswer, codes ...string) {
	t.Helper()
	if a.code != http.StatusTooManyRequests {
		return
	}
	if s, err := strconv.Atoi(a.retryAfter); err != nil || s < 1 {
		t.Errorf("a 429 with Retry-After %q", a.retryAfter)
	}
	if c, _ := a.body["error"].(string); !strings.Contains(" "+strings.Join(codes, " ")+" ", " "+c+" ") || a.body["lineage"] != nil {
		t.Errorf("a 429 answer: %v, want one of %v", a.body, codes)
	}
}

// chatScene joins alice and bob, has alice send chats c0..c(n-1), each in
// reply to the one before, and waits until the audit log holds the last.
func chatScene(t *testing.T, g *testutil.Gateway, n int) (alice, bob *testutil.Peer) {
	t.Helper()
	alice, _ = testutil.Join(t, g.WSURL, "alice-token")
	bob, _ = testutil.Join(t, g.WSURL, "bob-token")
	alice.Expect("system/presence")
	for i := range n {
		reply := ""
		if i > 0 {
			reply = fmt.Sprintf(`,"correlation_id":["c%d"]`, i-1)
		}
		alice.SendText(fmt.Sprintf(`{"id":"c%d","kind":"chat"%s,"payload":{"text":"chat %d"}}`, i, reply, i))
		bob.ExpectFunc("chat", func(m testutil.Msg) bool { return m.ID() == fmt.Sprintf("c%d", i) })
	}
	waitLineage(t, g.URL, "alice", "alice-token", fmt.Sprintf("c%d", n-1))
	return alice, bob
}

// waitLineage waits until env's lineage is served (the audit writer
// flushes within moments).
func waitLineage(t *testing.T, base, who, token, env string) {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); ; {
		a := askLineage(t, base, who, token, env)
		if a.code == http.StatusOK {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s's lineage of %s: %d %v", who, env, a.code, a.body)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// TestAttackLineageFlood: 50 lineage requests at once from one participant
// are mostly refused 429 with Retry-After, and counted; while it floods,
// another participant's chats still round-trip quickly, and its own
// lineage requests are not charged for the flood.
func TestAttackLineageFlood(t *testing.T) {
	g := start(t, gateway.Options{})
	alice, bob := chatScene(t, g, 3)

	// bob chats to alice throughout the flood, timing each round trip.
	type chatted struct {
		n       int
		slowest time.Duration
		err     error
	}
	stop := make(chan struct{})
	chats := make(chan chatted, 1)
	go func() {
		var c chatted
		defer func() { chats <- c }()
		for {
			select {
			case <-stop:
				return
			default:
			}
			id := fmt.Sprintf("during%d", c.n)
			sent := time.Now()
			bob.SendText(`{"id":"` + id + `","kind":"chat","to":["alice"],"payload":{"text":"still there?"}}`)
			for {
				m, err := alice.Read(5 * time.Second)
				if err != nil {
					c.err = fmt.Errorf("chat %s: %w", id, err)
					return
				}
				if m.ID() == id {
					break
				}
			}
			c.slowest = max(c.slowest, time.Since(sent))
			c.n++
		}
	}()
	began := time.Now()
	answers := flood(t, g.URL, "alice", "alice-token", "c2", 50)
	took := time.Since(began)
	close(stop)
	c := <-chats
	if c.err != nil || c.n == 0 {
		t.Fatalf("bob's chats during the flood: %d round trips, %v", c.n, c.err)
	}
	t.Logf("%d chats round-tripped during the flood (%v), the slowest in %v", c.n, took, c.slowest)
	served, limited := 0, 0
	for _, a := range answers {
		switch {
		case a.code == http.StatusOK:
			served++
		case a.code == http.StatusTooManyRequests:
			tooMany(t, a, gateway.ErrorRateLimited, gateway.ErrorLineageBusy)
			if a.body["error"] == gateway.ErrorRateLimited {
				limited++
			}
		default:
			t.Errorf("an answer of the flood: %d %v", a.code, a.body)
		}
	}
	// At most the burst, and what 4 a second added while it lasted.
	if most := 8 + int(4*took.Seconds()) + 1; served > most {
		t.Errorf("%d of 50 requests at once served in %v; at most %d may be", served, took, most)
	}
	if served+limited < 25 || limited == 0 {
		t.Errorf("of 50 requests at once %d served and %d refused for the rate", served, limited)
	}
	if c.slowest > 2*time.Second {
		t.Errorf("a chat took %v to round-trip during the flood", c.slowest)
	}
	// bob's bucket is his own: he reads his burst at once; alice's is
	// empty: she is refused within hers.
	for i := range 8 {
		if a := askLineage(t, g.URL, "bob", "bob-token", "c2"); a.code != http.StatusOK {
			t.Fatalf("bob's request %d after alice's flood: %d %v", i, a.code, a.body)
		}
	}
	for i := 0; ; i++ {
		a := askLineage(t, g.URL, "alice", "alice-token", "c2")
		if a.code == http.StatusTooManyRequests && a.body["error"] == gateway.ErrorRateLimited {
			limited++
			break
		}
		if i == 8 {
			t.Fatalf("alice after her flood: 9 requests in a row served")
		}
	}
	if n := metric(t, g.URL, `mew_gateway_refusals_total{code="lineage_rate_limited"}`); int(n) != limited {
		t.Errorf("lineage refusals counted: %v, want %d", n, limited)
	}
	// The limits refuse before reading: a refused request costs no scan,
	// and alice is served again once her bucket refills.
	time.Sleep(300 * time.Millisecond)
	if a := askLineage(t, g.URL, "alice", "alice-token", "c2"); a.code != http.StatusOK {
		t.Errorf("alice after a pause: %d %v", a.code, a.body)
	}
}

// TestAttackLineageInFlight: with the per-participant rate off, the gateway
// still traces at most LineageConcurrency lineages at once: requests past
// it are answered 429 busy at once instead of queueing scans of the log.
func TestAttackLineageInFlight(t *testing.T) {
	g := start(t, gateway.Options{Limits: gateway.Limits{LineageRate: -1, LineageConcurrency: 1}})
	chatScene(t, g, 2)
	// A log of some size, so that reading it takes a while: the history
	// the next requests must read on from.
	logs := filepath.Join(g.Dir, ".mew", "logs", auditlog.EnvelopeHistory)
	f, err := os.OpenFile(logs, os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	line := `{"timestamp":"2026-05-01T10:00:00.000Z","event":"received","id":"pad%d","envelope":{"protocol":"mew/v0.4","id":"pad%d","kind":"chat","from":"alice","payload":{"text":"` + strings.Repeat("x", 300) + `"}},"participant":"alice","space_id":"test","direction":"inbound","transport":"websocket"}` + "\n"
	for i := range 20000 {
		if _, err := fmt.Fprintf(f, line, i, i); err != nil {
			t.Fatal(err)
		}
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	answers := flood(t, g.URL, "alice", "alice-token", "c1", 50)
	busy := 0
	for _, a := range answers {
		switch a.code {
		case http.StatusOK:
		case http.StatusTooManyRequests:
			busy++
			tooMany(t, a, gateway.ErrorLineageBusy)
		default:
			t.Errorf("an answer: %d %v", a.code, a.body)
		}
	}
	if busy == 0 {
		t.Error("50 requests at once with one allowed in flight: none refused")
	}
	if n := metric(t, g.URL, `mew_gateway_refusals_total{code="lineage_busy"}`); int(n) != busy {
		t.Errorf("busy refusals counted: %v, want %d", n, busy)
	}
}

// fullScanLineage is what the lineage API answered before it kept an
// index: the lineage from a read of the whole log, its places cut to file
// names, as JSON.
func fullScanLineage(t *testing.T, dir, space, env string) any {
	t.Helper()
	ix, err := auditlog.BuildIndex(context.Background(), dir, auditlog.IndexOptions{Space: space})
	if err != nil {
		t.Fatal(err)
	}
	root, err := ix.Lineage(env)
	if err != nil {
		t.Fatalf("%s: %v", env, err)
	}
	var cut func(*auditlog.Node)
	cut = func(n *auditlog.Node) {
		if n.At != "" {
			n.At = filepath.Base(n.At)
		}
		for _, c := range n.Children {
			cut(c)
		}
	}
	cut(root)
	b, _ := json.Marshal(root)
	var v any
	_ = json.Unmarshal(b, &v)
	return v
}

// TestLineageIndexRotation: with an audit log that rotates every few
// envelopes, and old files deleted, the lineage API, which reads on from
// where it stopped, answers exactly as a read of the whole log does, file
// names included, after every step.
func TestLineageIndexRotation(t *testing.T) {
	for _, keep := range []int{-1, 2} {
		t.Run(fmt.Sprintf("files kept %d", keep), func(t *testing.T) {
			g := start(t, gateway.Options{Limits: gateway.Limits{LineageRate: -1}, Audit: gateway.AuditOptions{MaxFileSize: 2048, MaxFiles: keep}})
			dir := filepath.Join(g.Dir, ".mew", "logs")
			alice, _ := testutil.Join(t, g.WSURL, "alice-token")
			bob, _ := testutil.Join(t, g.WSURL, "bob-token")
			alice.Expect("system/presence")
			rotated := map[string]bool{}
			for i := range 18 {
				reply := ""
				if i > 0 {
					reply = fmt.Sprintf(`,"correlation_id":["r%d"]`, i-1)
				}
				alice.SendText(fmt.Sprintf(`{"id":"r%d","kind":"chat"%s,"payload":{"text":"step %d %s"}}`, i, reply, i, strings.Repeat("y", 200)))
				bob.ExpectFunc("chat", func(m testutil.Msg) bool { return m.ID() == fmt.Sprintf("r%d", i) })
				if i%3 != 2 {
					continue
				}
				env := fmt.Sprintf("r%d", i)
				waitLineage(t, g.URL, "alice", "alice-token", env)
				// The log's writer may still be writing the envelope's
				// delivery and rotating after it: compare once it is still.
				settleFiles(t, dir)
				files, _ := auditlog.Files(dir, auditlog.EnvelopeHistory)
				for _, f := range files {
					rotated[filepath.Base(f)] = true
				}
				for _, id := range []string{env, fmt.Sprintf("r%d", i-1), "r0"} {
					a := askLineage(t, g.URL, "alice", "alice-token", id)
					if id == "r0" && a.code == http.StatusNotFound && keep > 0 {
						continue // rotated away and deleted
					}
					if a.code != http.StatusOK {
						t.Fatalf("step %d, lineage of %s: %d %v", i, id, a.code, a.body)
					}
					if d := cmp.Diff(fullScanLineage(t, dir, "test", id), a.body["lineage"]); d != "" {
						t.Fatalf("step %d, lineage of %s differs from a full read (-full +api):\n%s", i, id, d)
					}
				}
			}
			if len(rotated) < 5 {
				t.Fatalf("the log rotated %d times; the test needs several", len(rotated)-1)
			}
		})
	}
}

// settleFiles waits until the files of dir, their names and sizes, stay the
// same for 100 ms.
func settleFiles(t *testing.T, dir string) {
	t.Helper()
	list := func() string {
		var b strings.Builder
		ents, _ := os.ReadDir(dir)
		for _, e := range ents {
			if fi, err := e.Info(); err == nil {
				fmt.Fprintf(&b, "%s %d\n", e.Name(), fi.Size())
			}
		}
		return b.String()
	}
	prev := list()
	for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); {
		time.Sleep(100 * time.Millisecond)
		cur := list()
		if cur == prev {
			return
		}
		prev = cur
	}
	t.Fatalf("the files of %s kept changing", dir)
}
