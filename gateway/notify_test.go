package gateway_test

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mew-protocol/mew/gateway"
	"github.com/mew-protocol/mew/gateway/cluster/memory"
	"github.com/mew-protocol/mew/internal/testutil"
	"github.com/mew-protocol/mew/protocol"
)

const (
	hookSecretEnv = "MEW_TEST_WEBHOOK_SECRET"
	hookSecret    = "webhook-secret-6f1c2a9e0b"
)

// webhookSpace is approvalSpace with a webhook notifier posting to url.
// extra adds settings (backoff_ms is 20 unless it says).
func webhookSpace(url, extra string) string {
	if !strings.Contains(extra, "backoff_ms") {
		extra += "    backoff_ms: 20\n"
	}
	return approvalSpace + fmt.Sprintf(`notify:
  webhook:
    url: %s
    secret_env: %s
    console_url: https://mew.example.com/
%s`, url, hookSecretEnv, extra)
}

// hooked starts one gateway serving approvalSpace whose webhook posts to
// h at path (with extra, the webhook's other keys), closed once the gateway
// has stopped, and joins the agent and alice (approvalPeers).
func hooked(t *testing.T, h http.Handler, path, extra string, opts gateway.Options) (g *testutil.Gateway, agent, alice *testutil.Peer) {
	t.Helper()
	t.Setenv(testutil.ClusterEnv, "")
	t.Setenv(hookSecretEnv, hookSecret)
	rcv := httptest.NewServer(h)
	t.Cleanup(rcv.Close)
	g = testutil.StartGateway(t, webhookSpace(rcv.URL+path, extra), opts)
	agent, alice, _, _, _, _ = approvalPeers(t, []*testutil.Gateway{g})
	return g, agent, alice
}

// hookCall is one request the test receiver took, checked as a receiver
// must: the signature over "timestamp.body" and a timestamp within five
// minutes.
type hookCall struct {
	at       time.Time
	delivery string
	attempt  int
	verified bool
	body     map[string]any
}

// hook is a receiver of webhook notifications that verifies each and
// answers what answer says for its approver and attempt.
type hook struct {
	mu     sync.Mutex
	calls  []hookCall
	answer func(approver string, attempt int) int
	// behave, when set, answers instead of answer.
	behave func(w http.ResponseWriter, r *http.Request, approver string, attempt int)
}

func (h *hook) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	raw, err := io.ReadAll(io.LimitReader(r.Body, 1<<20))
	if err != nil {
		return
	}
	c := hookCall{at: time.Now(), delivery: r.Header.Get("X-Mew-Delivery")}
	c.attempt, _ = strconv.Atoi(r.Header.Get("X-Mew-Attempt"))
	ts := r.Header.Get("X-Mew-Timestamp")
	mac := hmac.New(sha256.New, []byte(hookSecret))
	mac.Write([]byte(ts + "."))
	mac.Write(raw)
	want := "v1=" + hex.EncodeToString(mac.Sum(nil))
	sec, err := strconv.ParseInt(ts, 10, 64)
	c.verified = err == nil && hmac.Equal([]byte(want), []byte(r.Header.Get("X-Mew-Signature"))) && time.Since(time.Unix(sec, 0)).Abs() < 5*time.Minute
	_ = json.Unmarshal(raw, &c.body)
	h.mu.Lock()
	h.calls = append(h.calls, c)
	answer, behave := h.answer, h.behave
	h.mu.Unlock()
	approver := c.str("approver")
	if behave != nil {
		behave(w, r, approver, c.attempt)
		return
	}
	status := http.StatusNoContent
	if answer != nil {
		status = answer(approver, c.attempt)
	}
	w.WriteHeader(status)
}

// delivered returns the calls answered 2xx, by approver.
func (h *hook) got() []hookCall {
	h.mu.Lock()
	defer h.mu.Unlock()
	return slices.Clone(h.calls)
}

// waitCalls waits until the receiver has taken calls that ok accepts, n of
// them, and returns them.
func (h *hook) wait(t *testing.T, n int, what string, ok func(hookCall) bool) []hookCall {
	t.Helper()
	var got []hookCall
	testutil.WaitFor(t, 10*time.Second, what, func() bool {
		got = got[:0]
		for _, c := range h.got() {
			if ok(c) {
				got = append(got, c)
			}
		}
		return len(got) >= n
	})
	return got
}

func (c hookCall) str(k string) string { s, _ := c.body[k].(string); return s }

func forProposal(p string) func(hookCall) bool {
	return func(c hookCall) bool { return c.str("proposal") == p }
}

// linkCode checks that a notification's link opens the console on its
// proposal in its space, and returns the one-time code it carries.
func linkCode(t *testing.T, c hookCall) string {
	t.Helper()
	u, err := url.Parse(c.str("link"))
	if err != nil || u.Scheme != "https" || u.Host != "mew.example.com" || u.Path != "/console/" {
		t.Fatalf("link %q", c.str("link"))
	}
	q, err := url.ParseQuery(u.Fragment)
	if err != nil || q.Get("code") == "" || q.Get("space") != "approvals" || q.Get("proposal") != c.str("proposal") {
		t.Fatalf("link fragment %q", u.Fragment)
	}
	if exp, err := time.Parse(time.RFC3339, c.str("link_expires_at")); err != nil || time.Until(exp) < 10*time.Minute || time.Until(exp) > 25*time.Hour {
		t.Errorf("link_expires_at %q", c.str("link_expires_at"))
	}
	return q.Get("code")
}

// A proposal awaiting two of three sends each approver a notification of
// its own, signed, with what the proposal asks; each link, exchanged at
// POST /console/session, logs in as its approver once.
func TestWebhookAwaiting(t *testing.T) {
	h := &hook{}
	g, agent, alice := hooked(t, h, "/hook", "", gateway.Options{})

	agent.SendText(call("mcp/proposal", "p1", "write_file", "hello"))
	approvalState(t, alice, "p1", protocol.ApprovalAwaiting)
	calls := h.wait(t, 3, "three notifications", forProposal("p1"))
	time.Sleep(100 * time.Millisecond) // and no more: not the proposer, not twice
	if n := len(h.got()); n != 3 {
		t.Fatalf("%d notifications, want 3", n)
	}
	var approvers []string
	codes := map[string]string{}
	for _, c := range calls {
		if !c.verified || c.attempt != 1 || c.delivery == "" || c.delivery != c.str("id") {
			t.Errorf("notification %+v", c)
		}
		b := c.body
		if b["event"] != "approval.awaiting" || b["space"] != "approvals" || b["rule"] != "writes" || b["reason"] != "files change on disk" ||
			b["state"] != "awaiting" || b["proposer"] != "agent" || b["required"] != 2.0 || b["remaining"] != 2.0 || b["method"] != "tools/call" ||
			fmt.Sprint(b["approvers"]) != "[alice bob carol]" || fmt.Sprint(b["to"]) != "[files]" || b["deadline"] == "" {
			t.Errorf("body %v", b)
		}
		if p, _ := json.Marshal(b["params"]); string(p) != `{"arguments":{"text":"hello"},"name":"write_file"}` {
			t.Errorf("params %s", p)
		}
		if want := "agent proposes calling write_file on files; 2 of alice, bob, carol must approve under the rule writes (files change on disk), by "; !strings.HasPrefix(c.str("text"), want) {
			t.Errorf("text %q", c.str("text"))
		}
		approvers = append(approvers, c.str("approver"))
		codes[c.str("approver")] = linkCode(t, c)
	}
	slices.Sort(approvers)
	if fmt.Sprint(approvers) != "[alice bob carol]" {
		t.Errorf("notified %v", approvers)
	}
	for _, who := range []string{"bob", "alice"} {
		st, m := exchange(t, g.URL, codes[who])
		if st != http.StatusOK || m["participant"] != who || m["space"] != "approvals" || m["session"] == "" {
			t.Fatalf("%s's link: %d %v", who, st, m)
		}
		if st, _ := exchange(t, g.URL, codes[who]); st != http.StatusUnauthorized {
			t.Errorf("%s's link taken twice: %d", who, st)
		}
	}

	// An approval lowers what the next proposal's notices say of nothing
	// else; a proposal of carol's notifies alice and bob, not carol.
	carolPeer, _ := testutil.Join(t, g.WSURL, "carol-token")
	carolPeer.SendText(call("mcp/proposal", "p2", "write_file", "mine"))
	p2 := h.wait(t, 2, "two notifications of p2", forProposal("p2"))
	time.Sleep(100 * time.Millisecond)
	var p2to []string
	for _, c := range h.got() {
		if c.str("proposal") == "p2" {
			p2to = append(p2to, c.str("approver"))
		}
	}
	slices.Sort(p2to)
	if fmt.Sprint(p2to) != "[alice bob]" || p2[0].str("proposer") != "carol" {
		t.Errorf("p2 notified %v", p2to)
	}
	// An ungoverned proposal notifies nobody.
	agent.SendText(`{"id":"p3","kind":"mcp/proposal","to":["files"],"payload":{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{}}}`)
	time.Sleep(200 * time.Millisecond)
	if n := len(h.wait(t, 0, "", forProposal("p3"))); n != 0 {
		t.Errorf("an ungoverned proposal sent %d notifications", n)
	}
}

// A receiver that fails is retried with growing waits until it answers;
// one that always fails gets max_attempts attempts, then the notification
// is in the dead-letter log. Neither the secret nor a link reaches the
// logs, the audit log or any file of the space.
func TestWebhookRetryAndDeadLetter(t *testing.T) {
	h := &hook{answer: func(approver string, attempt int) int {
		switch {
		case approver == "alice":
			return http.StatusInternalServerError // always
		case approver == "bob" && attempt < 3:
			return http.StatusServiceUnavailable
		case approver == "carol" && attempt < 2:
			return http.StatusTooManyRequests
		}
		return http.StatusOK
	}}
	logs := &testutil.Buffer{}
	g, agent, alice := hooked(t, h, "/hook?chat-token=path-secret", "    max_attempts: 4\n    backoff_ms: 50\n",
		gateway.Options{Logger: slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug}))})
	agent.SendText(call("mcp/proposal", "p1", "write_file", "hello"))
	approvalState(t, alice, "p1", protocol.ApprovalAwaiting)

	deadPath := filepath.Join(g.Config.MewDir, "notify", "approvals.dead.jsonl")
	var dead map[string]any
	testutil.WaitFor(t, 10*time.Second, "a dead letter", func() bool {
		data, err := os.ReadFile(deadPath)
		return err == nil && json.Unmarshal(data, &dead) == nil
	})
	if dead["recipient"] != "alice" || dead["subject"] != "p1" || dead["attempts"] != 4.0 || !strings.Contains(fmt.Sprint(dead["error"]), "500") {
		t.Errorf("dead letter %v", dead)
	}
	if body, _ := dead["body"].(map[string]any); body["approver"] != "alice" || body["link"] != nil {
		t.Errorf("dead letter body %v", dead["body"])
	}
	byWho := map[string][]hookCall{}
	h.wait(t, 4+3+2, "every attempt", func(c hookCall) bool { return true })
	for _, c := range h.got() {
		if !c.verified {
			t.Errorf("unverified %+v", c)
		}
		byWho[c.str("approver")] = append(byWho[c.str("approver")], c)
	}
	if len(byWho["alice"]) != 4 || len(byWho["bob"]) != 3 || len(byWho["carol"]) != 2 {
		t.Fatalf("attempts alice %d, bob %d, carol %d", len(byWho["alice"]), len(byWho["bob"]), len(byWho["carol"]))
	}
	for who, cs := range byWho {
		for i, c := range cs {
			if c.attempt != i+1 || c.delivery != cs[0].delivery || c.str("link") != cs[0].str("link") {
				t.Errorf("%s attempt %d: %+v", who, i+1, c)
			}
			// Waits of 50, 100, 200 ms, less up to half of each.
			if least := 25 * time.Millisecond << i; i > 0 && c.at.Sub(cs[i-1].at) < least/2 {
				t.Errorf("%s attempt %d came %v after the one before", who, i+1, c.at.Sub(cs[i-1].at))
			}
		}
	}
	resp, err := http.Get(g.URL + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	text, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	for _, want := range []string{"mew_gateway_webhook_delivered_total 2", "mew_gateway_webhook_dead_letters_total 1", "mew_gateway_webhook_retries_total 6", "mew_gateway_webhook_pending 0"} {
		if !strings.Contains(string(text), want) {
			t.Errorf("metrics lack %q", want)
		}
	}

	g.Stop(t)
	secrets := []string{hookSecret, "path-secret"}
	for _, c := range h.got() {
		u, _ := url.Parse(c.str("link"))
		q, _ := url.ParseQuery(u.Fragment)
		secrets = append(secrets, q.Get("code"))
	}
	check := func(where, text string) {
		for _, s := range secrets {
			if s != "" && strings.Contains(text, s) {
				t.Errorf("%s holds a secret or a link's code (%.6s…)", where, s)
			}
		}
	}
	check("the gateway's log", logs.String())
	if !strings.Contains(logs.String(), "webhook notification given up") {
		t.Errorf("the log does not say the notification was given up:\n%s", logs.String())
	}
	files := 0
	_ = filepath.WalkDir(g.Dir, func(path string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() && d.Name() != "space.yaml" { // the configuration names the URL
			data, _ := os.ReadFile(path)
			check(path, string(data))
			files++
		}
		return nil
	})
	if files < 3 {
		t.Errorf("walked %d files: the audit log and the notifier's files are missing", files)
	}
}

// When a proposal's time passes and it escalates, the new approvers are
// notified, with the event approval.escalated.
func TestWebhookEscalation(t *testing.T) {
	t.Setenv(testutil.ClusterEnv, "")
	t.Setenv(hookSecretEnv, hookSecret)
	h := &hook{}
	rcv := httptest.NewServer(h)
	defer rcv.Close()
	spaceYAML := strings.Replace(webhookSpace(rcv.URL, ""), "within_ms: 60000\n    then: escalate", "within_ms: 300\n    then: escalate", 1)
	g := testutil.StartGateway(t, spaceYAML, gateway.Options{})
	agent, alice, _, _, lead, _ := approvalPeers(t, []*testutil.Gateway{g})
	agent.SendText(call("mcp/proposal", "p1", "write_file", "hello"))
	approvalState(t, alice, "p1", protocol.ApprovalAwaiting)
	if e := outcome(t, alice, "a1", approveMsg("a1", "p1")); e != nil {
		t.Fatal(e)
	}
	approvalState(t, lead, "p1", protocol.ApprovalEscalated)
	esc := h.wait(t, 1, "the escalation's notification", func(c hookCall) bool { return c.str("event") == "approval.escalated" })
	c := esc[0]
	if !c.verified || c.str("approver") != "lead" || c.str("state") != "escalated" || fmt.Sprint(c.body["approvers"]) != "[lead]" ||
		c.body["required"] != 1.0 || c.body["remaining"] != 1.0 || !strings.HasPrefix(c.str("text"), "Escalated to you: agent proposes") {
		t.Errorf("escalation %v", c.body)
	}
	if st, m := exchange(t, g.URL, linkCode(t, c)); st != http.StatusOK || m["participant"] != "lead" {
		t.Errorf("lead's link: %d %v", st, m)
	}
	time.Sleep(100 * time.Millisecond)
	if n := len(h.got()); n != 4 {
		t.Errorf("%d notifications, want 3 and the escalation's", n)
	}
}

// A notification pending when the gateway stops (its receiver down) is
// delivered by the next gateway on the same directory once the receiver is
// up, with a fresh link that the new gateway takes.
func TestWebhookRestart(t *testing.T) {
	t.Setenv(testutil.ClusterEnv, "")
	t.Setenv(hookSecretEnv, hookSecret)
	var up atomic.Bool
	h := &hook{}
	var down atomic.Int64
	rcv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !up.Load() {
			// Down: the connection is dropped unanswered.
			down.Add(1)
			if conn, _, err := http.NewResponseController(w).Hijack(); err == nil {
				_ = conn.Close()
			}
			return
		}
		h.ServeHTTP(w, r)
	}))
	defer rcv.Close()
	dir := t.TempDir()
	spaceYAML := webhookSpace(rcv.URL, "    backoff_ms: 60000\n")
	s1, err := testutil.Serve(dir, spaceYAML, gateway.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = s1.Stop() }()
	ws1 := "ws://" + s1.Addr + "/ws?space=approvals"
	agent, _ := testutil.Join(t, ws1, "agent-token")
	carol, _ := testutil.Join(t, ws1, "carol-token")
	agent.SendText(call("mcp/proposal", "p1", "write_file", "hello"))
	approvalState(t, carol, "p1", protocol.ApprovalAwaiting)
	testutil.WaitFor(t, 10*time.Second, "three failed attempts counted", func() bool {
		resp, err := http.Get("http://" + s1.Addr + "/metrics")
		if err != nil {
			return false
		}
		text, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		return strings.Contains(string(text), "mew_gateway_webhook_retries_total 3")
	})
	if down.Load() != 3 {
		t.Errorf("%d attempts to the receiver while down, want 3", down.Load())
	}
	if err := s1.Stop(); err != nil {
		t.Fatal(err)
	}
	up.Store(true)
	s2, err := testutil.Serve(dir, spaceYAML, gateway.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = s2.Stop() }()
	calls := h.wait(t, 3, "the three notifications", forProposal("p1"))
	for _, c := range calls {
		if !c.verified || c.attempt != 2 {
			t.Errorf("after the restart: %+v", c)
		}
	}
	// The link was minted by the new gateway, which takes it.
	if st, m := exchange(t, "http://"+s2.Addr, linkCode(t, calls[0])); st != http.StatusOK || m["participant"] != calls[0].str("approver") {
		t.Errorf("the new link: %d %v", st, m)
	}
	time.Sleep(100 * time.Millisecond)
	if n := len(h.got()); n != 3 {
		t.Errorf("%d deliveries, want 3", n)
	}
}

// A receiver that hangs is cut off at timeout_ms and retried; a slow one
// within it and one that answers with a huge body are delivered to at
// once, the body read no further than a bound.
func TestWebhookHostileReceiver(t *testing.T) {
	stop := make(chan struct{})
	h := &hook{behave: func(w http.ResponseWriter, r *http.Request, approver string, attempt int) {
		switch {
		case approver == "alice" && attempt == 1:
			select { // hangs until the gateway gives up
			case <-r.Context().Done():
			case <-stop:
			}
		case approver == "bob":
			time.Sleep(200 * time.Millisecond) // slow, within the timeout
		case approver == "carol":
			chunk := []byte(strings.Repeat("x", 32<<10))
			for range 1 << 15 { // 1 GiB, if anyone read it all
				if _, err := w.Write(chunk); err != nil {
					return
				}
			}
		}
	}}
	defer close(stop)
	g, agent, alice := hooked(t, h, "", "    timeout_ms: 1500\n    max_attempts: 3\n", gateway.Options{})
	began := time.Now()
	agent.SendText(call("mcp/proposal", "p1", "write_file", "hello"))
	approvalState(t, alice, "p1", protocol.ApprovalAwaiting)
	h.wait(t, 4, "four attempts", forProposal("p1"))
	took := time.Since(began)
	resp, err := http.Get(g.URL + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	text, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	testutil.WaitFor(t, 5*time.Second, "three delivered", func() bool {
		resp, err := http.Get(g.URL + "/metrics")
		if err != nil {
			return false
		}
		text, _ = io.ReadAll(resp.Body)
		resp.Body.Close()
		return strings.Contains(string(text), "mew_gateway_webhook_delivered_total 3")
	})
	if !strings.Contains(string(text), "mew_gateway_webhook_retries_total 1") || took > 6*time.Second {
		t.Errorf("took %v; metrics:\n%s", took, text)
	}
	var attempts []string
	for _, c := range h.got() {
		attempts = append(attempts, fmt.Sprint(c.str("approver"), c.attempt))
	}
	slices.Sort(attempts)
	if fmt.Sprint(attempts) != "[alice1 alice2 bob1 carol1]" {
		t.Errorf("attempts %v", attempts)
	}
}

// A webhook whose secret is missing or too short keeps the gateway from
// starting, with the key path and without the secret.
func TestWebhookSecretRefused(t *testing.T) {
	t.Setenv(testutil.ClusterEnv, "")
	t.Setenv(hookSecretEnv, "")
	if s, err := testutil.Serve(t.TempDir(), webhookSpace("http://127.0.0.1:9/", ""), gateway.Options{}); err == nil {
		_ = s.Stop()
		t.Fatal("a gateway started without its webhook's secret")
	} else if !strings.Contains(err.Error(), "notify.webhook.secret_env: the environment variable "+hookSecretEnv+" is not set") {
		t.Errorf("missing secret: %v", err)
	}
	t.Setenv(hookSecretEnv, "short-secret")
	if s, err := testutil.Serve(t.TempDir(), webhookSpace("http://127.0.0.1:9/", ""), gateway.Options{}); err == nil {
		_ = s.Stop()
		t.Fatal("a gateway started with a short secret")
	} else if !strings.Contains(err.Error(), "at least 16") || strings.Contains(err.Error(), "short-secret") {
		t.Errorf("short secret: %v", err)
	}
}

// Two nodes of a cluster serving the space from one directory (as mew
// space up --nodes does) each spool the notifications of the proposals
// they govern in a file of their own: neither writes the other's.
func TestWebhookClusterSpools(t *testing.T) {
	t.Setenv(hookSecretEnv, hookSecret)
	down := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusServiceUnavailable) }))
	defer down.Close()
	mc := memory.New(memory.Options{})
	t.Cleanup(func() { _ = mc.Close() })
	dir := t.TempDir()
	var urls []string
	for _, id := range []string{"n1", "n2"} {
		node, err := mc.Node(id)
		if err != nil {
			t.Fatal(err)
		}
		s, err := testutil.Serve(dir, webhookSpace(down.URL+"/hook", "    max_attempts: 20\n"), gateway.Options{
			Cluster: gateway.ClusterOptions{Node: node, Name: "c"},
			Audit:   gateway.AuditOptions{Off: true}, // mew space up gives each node a log directory of its own; here only the spools share one
		})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = s.Stop() })
		urls = append(urls, "ws://"+s.Addr+"/ws?space=approvals")
	}
	agent, _ := testutil.Join(t, urls[0], "agent-token")
	carol, _ := testutil.Join(t, urls[1], "carol-token")
	alice, _ := testutil.Join(t, urls[1], "alice-token")
	// One after the other: alice reads her node's announcements in order.
	agent.SendText(call("mcp/proposal", "p1", "write_file", "one"))
	approvalState(t, alice, "p1", protocol.ApprovalAwaiting)
	carol.SendText(call("mcp/proposal", "p2", "write_file", "two"))
	approvalState(t, alice, "p2", protocol.ApprovalAwaiting)
	spool := func(node string) string {
		b, _ := os.ReadFile(filepath.Join(dir, ".mew", "notify", "approvals@"+node+".spool.jsonl"))
		return string(b)
	}
	testutil.WaitFor(t, 5*time.Second, "each node's spool", func() bool {
		return strings.Contains(spool("n1"), `"subject":"p1"`) && strings.Contains(spool("n2"), `"subject":"p2"`)
	})
	if strings.Contains(spool("n1"), `"subject":"p2"`) || strings.Contains(spool("n2"), `"subject":"p1"`) {
		t.Errorf("a node spooled the other's proposal:\nn1: %s\nn2: %s", spool("n1"), spool("n2"))
	}
}

// A shutdown ends the participant's webhook links with its other console
// credentials (its token stays).
func TestWebhookLinkEndsWithShutdown(t *testing.T) {
	h := &hook{}
	g, agent, alice := hooked(t, h, "/hook", "", gateway.Options{})
	agent.SendText(call("mcp/proposal", "p1", "write_file", "hello"))
	calls := h.wait(t, 3, "three notifications", forProposal("p1"))
	var code string
	for _, c := range calls {
		if c.str("approver") == "alice" {
			code = linkCode(t, c)
		}
	}
	alice.SendText(`{"kind":"participant/shutdown","to":["alice"],"payload":{"reason":"done"}}`)
	alice.ExpectFunc("participant/shutdown", func(testutil.Msg) bool { return true })
	if st, _ := exchange(t, g.URL, code); st != http.StatusUnauthorized {
		t.Errorf("alice's webhook link after her shutdown: %d", st)
	}
	if _, w := testutil.Join(t, g.WSURL, "alice-token"); w.Kind() != "system/welcome" {
		t.Errorf("alice's token after the shutdown: %s", w.Raw)
	}
}
