package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mew-protocol/mew/gateway"
	"github.com/mew-protocol/mew/internal/testutil"
)

var testSecret = []byte("receiver-test-secret-0123")

// signed returns the headers the gateway sends for body at t.
func signed(secret []byte, t time.Time, body []byte) http.Header {
	ts := strconv.FormatInt(t.Unix(), 10)
	h := http.Header{}
	h.Set(headerTimestamp, ts)
	h.Set(headerSignature, expected(secret, ts, body))
	return h
}

func TestVerify(t *testing.T) {
	now := time.Unix(1_800_000_000, 0)
	v := newVerifier(testSecret)
	v.now = func() time.Time { return now }
	body := []byte(`{"text":"hello"}`)

	good := signed(testSecret, now.Add(-time.Minute), body)
	taken, err := v.verify(good, body)
	if err != nil {
		t.Fatalf("a good request: %v", err)
	}
	// Until it is taken, the same request may come again (an error
	// answered to it); after, it is a replay.
	if _, err := v.verify(good, body); err != nil {
		t.Errorf("the same request before it was taken: %v", err)
	}
	taken()
	if _, err := v.verify(good, body); !errors.Is(err, errReplay) {
		t.Errorf("the same request again: %v", err)
	}
	for _, tc := range []struct {
		name string
		h    http.Header
		body []byte
		want error
	}{
		{"another body", signed(testSecret, now, body), []byte(`{"text":"hellO"}`), errBadSig},
		{"another secret", signed([]byte("not-the-secret-at-all"), now, body), body, errBadSig},
		{"stale", signed(testSecret, now.Add(-5*time.Minute-time.Second), body), body, errStale},
		{"from the future", signed(testSecret, now.Add(6*time.Minute), body), body, errStale},
		{"no signature", http.Header{headerTimestamp: {"1800000000"}}, body, errNoSignature},
		{"no timestamp", http.Header{headerSignature: {"v1=00"}}, body, errNoSignature},
		{"a timestamp that is no number", http.Header{headerTimestamp: {"soon"}, headerSignature: {"v1=00"}}, body, errStale},
		{"a huge timestamp", http.Header{headerTimestamp: {"99999999999999999999"}, headerSignature: {"v1=00"}}, body, errStale},
		{"no v1 prefix", http.Header{headerTimestamp: {strconv.FormatInt(now.Unix(), 10)}, headerSignature: {strings.TrimPrefix(expected(testSecret, strconv.FormatInt(now.Unix(), 10), body), "v1=")}}, body, errBadSig},
	} {
		if _, err := v.verify(tc.h, tc.body); !errors.Is(err, tc.want) {
			t.Errorf("%s: %v, want %v", tc.name, err, tc.want)
		}
	}
	// A re-signed copy (the gateway's retry: a new timestamp) is no replay.
	if _, err := v.verify(signed(testSecret, now, body), body); err != nil {
		t.Errorf("a retry signed anew: %v", err)
	}
}

// chat is a fake chat tool's incoming webhook.
type chat struct {
	mu    sync.Mutex
	texts []string
	fail  int // answer 500 to this many posts first
}

func (c *chat) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	var m struct{ Text string }
	if err := json.NewDecoder(r.Body).Decode(&m); err != nil {
		http.Error(w, "bad", http.StatusBadRequest)
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.fail > 0 {
		c.fail--
		w.WriteHeader(http.StatusInternalServerError)
		return
	}
	c.texts = append(c.texts, m.Text)
}

func (c *chat) got() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]string(nil), c.texts...)
}

func post(t *testing.T, url string, h http.Header, body []byte) int {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, url, bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	for k, v := range h {
		req.Header[k] = v
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	return resp.StatusCode
}

// The receiver refuses what does not verify (401), a body too large (413),
// forwards a good notification as one line, a retry of it not again, and
// answers 502 when the chat tool fails.
func TestReceiver(t *testing.T) {
	ch := &chat{}
	chatSrv := httptest.NewServer(ch)
	defer chatSrv.Close()
	rcv := httptest.NewServer(newReceiver(testSecret, chatSrv.URL, slog.New(slog.DiscardHandler)))
	defer rcv.Close()

	body := []byte(`{"text":"agent proposes calling write_file\non files.","link":"https://mew.example/console/#code=C","link_expires_at":"2026-11-28T12:00:00.000Z"}`)
	bad := signed([]byte("wrong-secret-wrong-secret"), time.Now(), body)
	if st := post(t, rcv.URL, bad, body); st != http.StatusUnauthorized {
		t.Errorf("a bad signature: %d", st)
	}
	if st := post(t, rcv.URL, signed(testSecret, time.Now().Add(-10*time.Minute), body), body); st != http.StatusUnauthorized {
		t.Errorf("a stale timestamp: %d", st)
	}
	huge := bytes.Repeat([]byte("x"), maxBody+1)
	if st := post(t, rcv.URL, signed(testSecret, time.Now(), huge), huge); st != http.StatusRequestEntityTooLarge {
		t.Errorf("a huge body: %d", st)
	}
	if len(ch.got()) != 0 {
		t.Fatalf("forwarded %v", ch.got())
	}
	h := signed(testSecret, time.Now(), body)
	h.Set(headerDelivery, "d1")
	if st := post(t, rcv.URL, h, body); st != http.StatusOK {
		t.Fatalf("a good notification: %d", st)
	}
	if st := post(t, rcv.URL, h, body); st != http.StatusUnauthorized {
		t.Errorf("the same request replayed: %d", st)
	}
	h = signed(testSecret, time.Now().Add(time.Second), body)
	h.Set(headerDelivery, "d1")
	if st := post(t, rcv.URL, h, body); st != http.StatusOK {
		t.Errorf("a retry: %d", st)
	}
	want := "agent proposes calling write_file on files. Open: https://mew.example/console/#code=C (one use, until 2026-11-28T12:00:00.000Z)"
	if got := ch.got(); len(got) != 1 || got[0] != want {
		t.Errorf("chat got %q\nwant %q", got, want)
	}
	ch.mu.Lock()
	ch.fail = 1
	ch.mu.Unlock()
	body2 := []byte(`{"text":"another"}`)
	h = signed(testSecret, time.Now(), body2)
	h.Set(headerDelivery, "d2")
	if st := post(t, rcv.URL, h, body2); st != http.StatusBadGateway {
		t.Errorf("the chat tool failing: %d", st)
	}
	// The same request again, the gateway's retry within the same second,
	// is forwarded now.
	if st := post(t, rcv.URL, h, body2); st != http.StatusOK || len(ch.got()) != 2 {
		t.Errorf("the retry after a failure: %d, chat got %d", st, len(ch.got()))
	}
}

// End to end: a real gateway's notifications, verified by the receiver,
// reach a chat tool, one line per approver; the chat tool failing once
// makes the gateway retry; each line's link logs its approver in.
func TestEndToEnd(t *testing.T) {
	t.Setenv(testutil.ClusterEnv, "") // a cluster node refuses approval rules for now
	t.Setenv("MEW_E2E_HOOK_SECRET", string(testSecret))
	ch := &chat{fail: 1}
	chatSrv := httptest.NewServer(ch)
	defer chatSrv.Close()
	rcv := httptest.NewServer(newReceiver(testSecret, chatSrv.URL, slog.New(slog.DiscardHandler)))
	defer rcv.Close()
	g := testutil.StartGateway(t, fmt.Sprintf(`
space: {id: e2e}
participants:
  agent: {tokens: [agent-token], capabilities: [{kind: mcp/proposal}]}
  alice: {tokens: [alice-token], capabilities: [{kind: chat}]}
  bob: {tokens: [bob-token], capabilities: [{kind: chat}]}
  files: {tokens: [files-token], capabilities: [{kind: mcp/response}]}
approvals:
  - name: writes
    reason: files change on disk
    match: {to: [files], payload: {method: tools/call, params: {name: "write_*"}}}
    approvers: [alice, bob]
    within_ms: 600000
notify:
  webhook:
    url: %s
    secret_env: MEW_E2E_HOOK_SECRET
    console_url: %s
    backoff_ms: 20
`, rcv.URL, "http://console.example"), gateway.Options{})
	agent, _ := testutil.Join(t, g.WSURL, "agent-token")
	agent.SendText(`{"id":"p1","kind":"mcp/proposal","to":["files"],"payload":{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"write_file","arguments":{"path":"notes.txt"}}}}`)
	testutil.WaitFor(t, 10*time.Second, "two chat messages", func() bool { return len(ch.got()) == 2 })
	time.Sleep(100 * time.Millisecond)
	texts := ch.got()
	if len(texts) != 2 {
		t.Fatalf("chat got %q", texts)
	}
	who := map[string]bool{}
	for _, text := range texts {
		if !strings.HasPrefix(text, "agent proposes calling write_file on files; 1 of alice, bob must approve under the rule writes (files change on disk), by ") {
			t.Errorf("chat line %q", text)
		}
		i := strings.Index(text, "Open: http://console.example/console/#")
		if i < 0 {
			t.Fatalf("no link in %q", text)
		}
		link := strings.Fields(text[i+len("Open: "):])[0]
		u, _ := url.Parse(link)
		q, _ := url.ParseQuery(u.Fragment)
		if q.Get("proposal") != "p1" || q.Get("space") != "e2e" {
			t.Errorf("link %q", link)
		}
		body, _ := json.Marshal(map[string]string{"code": q.Get("code")})
		req, _ := http.NewRequest(http.MethodPost, g.URL+"/console/session", bytes.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("X-Mew-Console", "1")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		var s struct{ Participant string }
		_ = json.NewDecoder(resp.Body).Decode(&s)
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("the link's exchange: %d", resp.StatusCode)
		}
		who[s.Participant] = true
	}
	if !who["alice"] || !who["bob"] {
		t.Errorf("the links logged in %v", who)
	}
}
