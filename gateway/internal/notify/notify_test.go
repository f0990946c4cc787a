package notify

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

var secret = []byte("0123456789abcdef-test-secret")

// hit is one request a test receiver took.
type hit struct {
	at                         time.Time
	delivery, attempt, ts, sig string
	body                       []byte
	signatureOK                bool
	contentType, userAgent     string
}

// receiver records requests and answers with what answer says.
type receiver struct {
	mu     sync.Mutex
	hits   []hit
	answer func(n int) int // status of the nth request (0-based)
}

func (rc *receiver) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	h := hit{at: time.Now(), delivery: r.Header.Get(HeaderDelivery), attempt: r.Header.Get(HeaderAttempt),
		ts: r.Header.Get(HeaderTimestamp), sig: r.Header.Get(HeaderSignature), body: body,
		contentType: r.Header.Get("Content-Type"), userAgent: r.Header.Get("User-Agent")}
	h.signatureOK = h.sig == Sign(secret, h.ts, body)
	rc.mu.Lock()
	n := len(rc.hits)
	rc.hits = append(rc.hits, h)
	answer := rc.answer
	rc.mu.Unlock()
	status := http.StatusOK
	if answer != nil {
		status = answer(n)
	}
	w.WriteHeader(status)
}

func (rc *receiver) got() []hit {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	return append([]hit(nil), rc.hits...)
}

func waitFor(t *testing.T, d time.Duration, what string, cond func() bool) {
	t.Helper()
	for end := time.Now().Add(d); !cond(); time.Sleep(5 * time.Millisecond) {
		if time.Now().After(end) {
			t.Fatalf("timed out after %v waiting until %s", d, what)
		}
	}
}

func start(t *testing.T, cfg Config) *Notifier {
	t.Helper()
	if cfg.Secret == nil {
		cfg.Secret = secret
	}
	if cfg.Dir == "" {
		cfg.Dir = t.TempDir()
	}
	cfg.Name = "space"
	setDefault(&cfg.Backoff, 20*time.Millisecond)
	setDefault(&cfg.Timeout, 2*time.Second)
	n, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = n.Close() })
	return n
}

func msg(id string) *Message {
	return &Message{ID: id, Recipient: "alice", Subject: "p1", LinkTTL: time.Hour, Body: json.RawMessage(`{"proposal":"p1","approver":"alice"}`), Created: time.Now()}
}

func readLines(t *testing.T, path string) []map[string]any {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil && !os.IsNotExist(err) {
		t.Fatal(err)
	}
	var out []map[string]any
	sc := bufio.NewScanner(strings.NewReader(string(data)))
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		var m map[string]any
		if err := json.Unmarshal(sc.Bytes(), &m); err != nil {
			t.Fatalf("%s: %v: %s", path, err, sc.Text())
		}
		out = append(out, m)
	}
	return out
}

// A message is posted once, signed over "timestamp.body", with its link
// added to the body; the spool is empty after.
func TestDeliverSigned(t *testing.T) {
	rc := &receiver{}
	srv := httptest.NewServer(rc)
	defer srv.Close()
	exp := time.Date(2026, 11, 28, 12, 0, 0, 0, time.UTC)
	var linkFor []string
	n := start(t, Config{URL: srv.URL + "/hook", Link: func(m *Message) (string, time.Time, error) {
		linkFor = append(linkFor, m.Recipient+"/"+m.Subject)
		return "https://mew.example/console/#code=X&proposal=" + m.Subject, exp, nil
	}})
	if !n.Enqueue(msg("d1")) {
		t.Fatal("refused")
	}
	waitFor(t, 5*time.Second, "delivered", func() bool { return n.Stats().Delivered == 1 })
	h := rc.got()
	if len(h) != 1 {
		t.Fatalf("%d requests", len(h))
	}
	if !h[0].signatureOK || !strings.HasPrefix(h[0].sig, "v1=") || len(h[0].sig) != 3+64 {
		t.Errorf("signature %q over ts %q does not verify", h[0].sig, h[0].ts)
	}
	if ts, err := strconv.ParseInt(h[0].ts, 10, 64); err != nil || time.Since(time.Unix(ts, 0)).Abs() > time.Minute {
		t.Errorf("timestamp %q", h[0].ts)
	}
	if h[0].delivery != "d1" || h[0].attempt != "1" || h[0].contentType != "application/json" || h[0].userAgent != "mew-gateway" {
		t.Errorf("headers %+v", h[0])
	}
	want := `{"proposal":"p1","approver":"alice","link":"https://mew.example/console/#code=X\u0026proposal=p1","link_expires_at":"2026-11-28T12:00:00.000Z"}`
	if string(h[0].body) != want {
		t.Errorf("body %s\nwant %s", h[0].body, want)
	}
	if len(linkFor) != 1 || linkFor[0] != "alice/p1" {
		t.Errorf("links minted %v", linkFor)
	}
	// A forged or altered request does not verify.
	if Sign(secret, h[0].ts, append(h[0].body[:len(h[0].body):len(h[0].body)], ' ')) == h[0].sig || Sign([]byte("other"), h[0].ts, h[0].body) == h[0].sig ||
		Sign(secret, h[0].ts+"1", h[0].body) == h[0].sig {
		t.Error("the signature does not cover the body, secret and timestamp")
	}
	waitFor(t, 5*time.Second, "the spool emptied", func() bool {
		fi, err := os.Stat(filepath.Join(n.cfg.Dir, "space.spool.jsonl"))
		return err == nil && fi.Size() == 0
	})
	if s := n.Stats(); s.Pending != 0 || s.Retries != 0 || s.Dead != 0 {
		t.Errorf("stats %+v", s)
	}
}

// 5xx and 429 are retried with growing waits, with the same delivery id
// and the link minted once; other 4xx are not.
func TestRetryBackoff(t *testing.T) {
	rc := &receiver{answer: func(n int) int {
		return [...]int{503, 500, 429, 200, 200}[min(n, 4)]
	}}
	srv := httptest.NewServer(rc)
	defer srv.Close()
	links := 0
	n := start(t, Config{URL: srv.URL, Backoff: 40 * time.Millisecond, Link: func(*Message) (string, time.Time, error) {
		links++
		return "L", time.Now(), nil
	}})
	n.Enqueue(msg("r1"))
	waitFor(t, 10*time.Second, "delivered", func() bool { return n.Stats().Delivered == 1 })
	h := rc.got()
	if len(h) != 4 {
		t.Fatalf("%d attempts, want 4", len(h))
	}
	for i, x := range h {
		if x.delivery != "r1" || x.attempt != strconv.Itoa(i+1) || !x.signatureOK {
			t.Errorf("attempt %d: %+v", i, x)
		}
	}
	// Waits of 40, 80 and 160 ms, each less up to half of it.
	for i, least := range []time.Duration{20, 40, 80} {
		if gap := h[i+1].at.Sub(h[i].at); gap < least*time.Millisecond {
			t.Errorf("wait before attempt %d: %v, want at least %v ms", i+2, gap, least)
		}
	}
	if links != 1 {
		t.Errorf("%d links minted for one message", links)
	}
	if s := n.Stats(); s.Retries != 3 || s.Dead != 0 {
		t.Errorf("stats %+v", s)
	}

	rc4 := &receiver{answer: func(int) int { return http.StatusForbidden }}
	srv4 := httptest.NewServer(rc4)
	defer srv4.Close()
	n4 := start(t, Config{URL: srv4.URL})
	n4.Enqueue(msg("f1"))
	waitFor(t, 5*time.Second, "dead-lettered", func() bool { return n4.Stats().Dead == 1 })
	if len(rc4.got()) != 1 {
		t.Errorf("a 403 was retried: %d attempts", len(rc4.got()))
	}
	dead := readLines(t, filepath.Join(n4.cfg.Dir, "space.dead.jsonl"))
	if len(dead) != 1 || dead[0]["id"] != "f1" || dead[0]["attempts"] != 1.0 || !strings.Contains(dead[0]["error"].(string), "403") {
		t.Errorf("dead letters %v", dead)
	}
}

// A receiver that always fails gets MaxAttempts attempts, then the message
// is written to the dead-letter log, with neither the secret nor the link.
func TestDeadLetter(t *testing.T) {
	rc := &receiver{answer: func(int) int { return http.StatusBadGateway }}
	srv := httptest.NewServer(rc)
	defer srv.Close()
	n := start(t, Config{URL: srv.URL + "/path-secret?token=chat-secret", MaxAttempts: 3, Backoff: 5 * time.Millisecond,
		Link: func(*Message) (string, time.Time, error) { return "https://x/console/#code=LINKCODE", time.Now(), nil }})
	n.Enqueue(msg("x1"))
	waitFor(t, 5*time.Second, "dead-lettered", func() bool { return n.Stats().Dead == 1 })
	if got := len(rc.got()); got != 3 {
		t.Errorf("%d attempts, want 3", got)
	}
	dead := readLines(t, filepath.Join(n.cfg.Dir, "space.dead.jsonl"))
	if len(dead) != 1 || dead[0]["attempts"] != 3.0 || dead[0]["recipient"] != "alice" || dead[0]["subject"] != "p1" || !strings.Contains(dead[0]["error"].(string), "502") {
		t.Fatalf("dead letters %v", dead)
	}
	_ = n.Close()
	for _, name := range []string{"space.dead.jsonl", "space.spool.jsonl"} {
		data, _ := os.ReadFile(filepath.Join(n.cfg.Dir, name))
		for _, s := range []string{string(secret), "LINKCODE", "chat-secret", "path-secret"} {
			if strings.Contains(string(data), s) {
				t.Errorf("%s holds %q", name, s)
			}
		}
	}
}

// Enqueue never blocks: past QueueSize a message is refused and
// dead-lettered; so is a body too large or not JSON.
func TestQueueFull(t *testing.T) {
	block := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.ReadAll(r.Body)
		select {
		case <-block:
		case <-r.Context().Done():
		}
	}))
	defer srv.Close()
	defer close(block)
	n := start(t, Config{URL: srv.URL, QueueSize: 3, Workers: 1})
	start := time.Now()
	var took []bool
	for i := range 6 {
		took = append(took, n.Enqueue(msg(fmt.Sprint("q", i))))
	}
	if time.Since(start) > time.Second {
		t.Errorf("enqueueing took %v", time.Since(start))
	}
	if fmt.Sprint(took) != "[true true true false false false]" {
		t.Errorf("taken %v", took)
	}
	big := msg("big")
	big.Body = json.RawMessage(`{"x":"` + strings.Repeat("a", MaxBody) + `"}`)
	bad := msg("bad")
	bad.Body = json.RawMessage(`{"x":`)
	if n.Enqueue(big) || n.Enqueue(bad) {
		t.Error("a body too large or not JSON was taken")
	}
	waitFor(t, 5*time.Second, "dead-lettered", func() bool { return len(readLines(t, filepath.Join(n.cfg.Dir, "space.dead.jsonl"))) == 5 })
	dead := readLines(t, filepath.Join(n.cfg.Dir, "space.dead.jsonl"))
	if dead[0]["id"] != "q3" || !strings.Contains(dead[0]["error"].(string), "queue is full") || !strings.Contains(dead[3]["error"].(string), "at most") || dead[4]["error"] != "the body is not JSON" {
		t.Errorf("dead letters %v", dead)
	}
	if s := n.Stats(); s.Refused != 5 || s.Pending != 3 {
		t.Errorf("stats %+v", s)
	}
}

// A message pending when a notifier closes (its receiver down) is delivered
// by the next notifier on the same directory, with its attempts counted
// and a fresh link.
func TestRestart(t *testing.T) {
	// Down, the receiver drops each connection unanswered: a network error.
	var up atomic.Bool
	rc := &receiver{}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !up.Load() {
			conn, _, err := http.NewResponseController(w).Hijack()
			if err == nil {
				_ = conn.Close()
			}
			return
		}
		rc.ServeHTTP(w, r)
	}))
	defer srv.Close()
	dir := t.TempDir()
	n1 := start(t, Config{URL: srv.URL + "/hook", Dir: dir, Backoff: time.Hour,
		Link: func(*Message) (string, time.Time, error) { return "first", time.Now(), nil }})
	n1.Enqueue(msg("s1"))
	n1.Enqueue(msg("s2"))
	waitFor(t, 5*time.Second, "two failed attempts", func() bool { return n1.Stats().Retries == 2 })
	if err := n1.Close(); err != nil {
		t.Fatal(err)
	}
	// One more line that is no JSON, as a crash mid-write would leave.
	f, err := os.OpenFile(filepath.Join(dir, "space.spool.jsonl"), os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		t.Fatal(err)
	}
	_, _ = f.WriteString(`{"op":"add","message":{"id":"tru` + "\n")
	_ = f.Close()

	up.Store(true)
	n2 := start(t, Config{URL: srv.URL + "/hook", Dir: dir,
		Link: func(*Message) (string, time.Time, error) { return "second", time.Now(), nil }})
	waitFor(t, 5*time.Second, "both delivered", func() bool { return n2.Stats().Delivered == 2 })
	got := rc.got()
	for _, h := range got {
		var b map[string]any
		_ = json.Unmarshal(h.body, &b)
		if h.attempt != "2" || b["link"] != "second" || !h.signatureOK {
			t.Errorf("after the restart: attempt %s, body %s", h.attempt, h.body)
		}
	}
	if len(got) != 2 || got[0].delivery == got[1].delivery {
		t.Errorf("deliveries %v", got)
	}
	if s := n2.Stats(); s.Pending != 0 || s.Dead != 0 {
		t.Errorf("stats %+v", s)
	}
}

// A receiver that hangs is cut off at Timeout and retried; one that
// answers slowly within it is fine; one that answers without end is read
// no further than maxResponse; a redirect is not followed.
func TestHostileReceivers(t *testing.T) {
	var mu sync.Mutex
	calls := 0
	stop := make(chan struct{})
	hang := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.ReadAll(r.Body) // so that the server notices the client leaving
		mu.Lock()
		calls++
		first := calls == 1
		mu.Unlock()
		if first {
			select { // hangs until the gateway gives up
			case <-r.Context().Done():
			case <-stop:
			}
			return
		}
		time.Sleep(100 * time.Millisecond) // slow, within the timeout
	}))
	defer hang.Close()
	defer close(stop)
	n := start(t, Config{URL: hang.URL, Timeout: time.Second, Backoff: 10 * time.Millisecond})
	began := time.Now()
	n.Enqueue(msg("h1"))
	waitFor(t, 5*time.Second, "delivered", func() bool { return n.Stats().Delivered == 1 })
	if s := n.Stats(); s.Retries != 1 || time.Since(began) > 4*time.Second {
		t.Errorf("stats %+v after %v", s, time.Since(began))
	}

	huge := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(http.StatusOK)
		chunk := []byte(strings.Repeat("x", 32<<10))
		for i := 0; i < 1<<15; i++ { // 1 GiB, if anyone read it all
			if _, err := w.Write(chunk); err != nil {
				return
			}
		}
	}))
	defer huge.Close()
	nh := start(t, Config{URL: huge.URL})
	began = time.Now()
	nh.Enqueue(msg("b1"))
	waitFor(t, 10*time.Second, "delivered", func() bool { return nh.Stats().Delivered == 1 })
	if time.Since(began) > 5*time.Second {
		t.Errorf("a huge answer took %v", time.Since(began))
	}

	target := &receiver{}
	tsrv := httptest.NewServer(target)
	defer tsrv.Close()
	redir := httptest.NewServer(http.RedirectHandler(tsrv.URL, http.StatusTemporaryRedirect))
	defer redir.Close()
	nr := start(t, Config{URL: redir.URL})
	nr.Enqueue(msg("rd"))
	waitFor(t, 5*time.Second, "dead-lettered", func() bool { return nr.Stats().Dead == 1 })
	if len(target.got()) != 0 {
		t.Error("the redirect was followed")
	}
}

// Close stops an attempt under way; the message stays in the spool.
func TestCloseDuringAttempt(t *testing.T) {
	entered := make(chan struct{}, 1)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.ReadAll(r.Body)
		entered <- struct{}{}
		<-r.Context().Done()
	}))
	defer srv.Close()
	dir := t.TempDir()
	n := start(t, Config{URL: srv.URL, Dir: dir, Timeout: time.Minute})
	n.Enqueue(msg("c1"))
	<-entered
	began := time.Now()
	_ = n.Close()
	if time.Since(began) > 5*time.Second {
		t.Errorf("Close took %v", time.Since(began))
	}
	if n.Enqueue(msg("c2")) {
		t.Error("a closed notifier took a message")
	}
	lines := readLines(t, filepath.Join(dir, "space.spool.jsonl"))
	if len(lines) != 1 || lines[0]["op"] != "add" {
		t.Errorf("spool %v", lines)
	}
}

func TestNewRefused(t *testing.T) {
	for _, cfg := range []Config{
		{URL: "ftp://x/", Secret: secret, Dir: t.TempDir(), Name: "s"},
		{URL: "http://x/", Dir: t.TempDir(), Name: "s"},
		{URL: "http://x/", Secret: secret, Name: "s"},
	} {
		if n, err := New(cfg); err == nil {
			_ = n.Close()
			t.Errorf("%+v: no error", cfg)
		}
	}
}

// A spool damaged or tampered with is read for what it holds: lines too
// long, not JSON, of unknown operations, or adding an id twice are
// skipped, and the good lines after them still count.
func TestSpoolHostile(t *testing.T) {
	dir := t.TempDir()
	good := func(id string) string {
		b, _ := json.Marshal(spoolLine{Op: opAdd, Message: msg(id)})
		return string(b)
	}
	spool := strings.Join([]string{
		good("a1"),
		`{"op":"add","message":{"id":"huge","body":"` + strings.Repeat("x", maxSpoolLine) + `"}}`,
		`not json`,
		`{"op":"explode","id":"a1"}`,
		good("a1"), // twice
		`{"op":"done","id":"nobody"}`,
		`{"op":"add","message":{"id":""}}`,
		good("a2"),
		`{"op":"try","id":"a2","attempts":1}`,
		good("a3"),
		`{"op":"done","id":"a3"}`,
		good("a4"),
		`{"op":"try","id":"a4","attempts":99}`,
	}, "\n")
	if err := os.WriteFile(filepath.Join(dir, "space.spool.jsonl"), []byte(spool), 0o600); err != nil {
		t.Fatal(err)
	}
	rc := &receiver{}
	srv := httptest.NewServer(rc)
	defer srv.Close()
	n := start(t, Config{URL: srv.URL, Dir: dir, MaxAttempts: 5})
	waitFor(t, 5*time.Second, "a1 and a2 delivered", func() bool { return n.Stats().Delivered == 2 })
	var got []string
	for _, h := range rc.got() {
		got = append(got, h.delivery+"/"+h.attempt)
	}
	if fmt.Sprint(got) != "[a1/1 a2/2]" && fmt.Sprint(got) != "[a2/2 a1/1]" {
		t.Errorf("delivered %v", got)
	}
	// a4 had used its attempts up: dead-lettered at once.
	dead := readLines(t, filepath.Join(dir, "space.dead.jsonl"))
	if len(dead) != 1 || dead[0]["id"] != "a4" {
		t.Errorf("dead letters %v", dead)
	}
}
