package console_test

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/mew-protocol/mew/gateway"
	"github.com/mew-protocol/mew/internal/browsertest"
	"github.com/mew-protocol/mew/internal/testutil"
	"github.com/mew-protocol/mew/llm"
	"github.com/mew-protocol/mew/participant"
)

// policySpace: writes to files need two of alice and bob; alice holds
// everything, bob only approves; helper, an agent, only proposes.
var policySpace = testutil.SpaceYAML("web",
	testutil.Member("alice", "*"),
	testutil.Member("bob", "chat"),
	testutil.Member("helper", "chat", "chat/*", "reasoning/*", "mcp/proposal", "mcp/withdraw", `{kind: mcp/request, payload: {method: tools/list}}`, "participant/*"),
	testutil.Member("files", "mcp/response", "participant/status", "chat"),
) + `approvals:
  - name: writes
    reason: files change on disk
    match: {to: [files], payload: {method: tools/call, params: {name: "write_*"}}}
    approvers: [alice, bob]
    required: 2
`

// webhookSecret signs the notifications of TestApprovalPolicyInConsole.
const webhookSecret = "a-secret-of-at-least-sixteen-bytes"

// notices is a webhook receiver that verifies each notification's
// signature (HMAC-SHA256 over "timestamp.body", docs/approvals.md) and
// keeps the link sent to each approver.
type notices struct {
	mu    sync.Mutex
	links map[string]string // approver → link
	bad   int
}

func (n *notices) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(io.LimitReader(r.Body, 1<<20))
	mac := hmac.New(sha256.New, []byte(webhookSecret))
	mac.Write([]byte(r.Header.Get("X-Mew-Timestamp") + "." + string(body)))
	var nt struct{ Approver, Link string }
	n.mu.Lock()
	defer n.mu.Unlock()
	if !hmac.Equal([]byte(r.Header.Get("X-Mew-Signature")), []byte("v1="+hex.EncodeToString(mac.Sum(nil)))) || json.Unmarshal(body, &nt) != nil {
		n.bad++
		w.WriteHeader(http.StatusUnauthorized)
		return
	}
	n.links[nt.Approver] = nt.Link
}

func (n *notices) link(who string) string {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.links[who]
}

// TestApprovalPolicyInConsole: bob asks an agent (a scripted model) to
// write a file; its tool call, a proposal under the space's rule, sends
// alice a signed webhook notification; she opens its link, a page that had
// not joined when the proposal was made, which shows the proposal first in
// her queue with the rule's reason and offers Approve, not Yes; her
// approval is counted; bob completes the quorum from his program; the page
// then offers Carry out, the real MCP server writes the file, and the
// agent's run continues to its answer, which the page shows.
func TestApprovalPolicyInConsole(t *testing.T) {
	t.Setenv(testutil.ClusterEnv, "") // the page and the SDK on one node: the flow, not the cluster, is tested
	t.Setenv("MEW_TEST_CONSOLE_WEBHOOK", webhookSecret)
	hooks := &notices{links: map[string]string{}}
	rcv := httptest.NewServer(hooks)
	defer rcv.Close()
	g := testutil.StartGateway(t, policySpace+`notify:
  webhook:
    url: `+rcv.URL+`/hook
    secret_env: MEW_TEST_CONSOLE_WEBHOOK
    console_url: https://mew.example.com/
`, gateway.Options{Audit: gateway.AuditOptions{Off: true}})
	work := t.TempDir()
	startFiles(t, g, work)
	bob := testutil.JoinParticipant(t, g, "bob-token", participant.Options{})
	model := testutil.NewLLMServer(t)
	model.Script(
		testutil.LLMCall(testutil.LLMToolCall{Name: "files_write_file", Arguments: `{"path":"plan.txt","content":"ship it\n"}`}),
		testutil.LLMReply("Written: plan.txt says ship it."),
	)
	provider, err := llm.NewOpenAI(llm.Config{BaseURL: model.URL(), APIKey: "k", MaxRetries: -1, Model: "m"})
	if err != nil {
		t.Fatal(err)
	}
	startToolUser(t, g, "helper-token", provider)
	if _, err := bob.Chat(t.Context(), "@helper write the plan"); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "alice's notification", func() bool { return hooks.link("alice") != "" })
	u, err := url.Parse(hooks.link("alice"))
	if err != nil || !strings.Contains(u.Fragment, "proposal=") || hooks.bad > 0 {
		t.Fatalf("alice's link %q (%v), %d bad notifications", hooks.link("alice"), err, hooks.bad)
	}
	if _, err := os.Stat(filepath.Join(work, "plan.txt")); err == nil {
		t.Fatal("the file was written before any approval")
	}

	// The link names the configured console; the page is this gateway's.
	p := page{t: t, ctx: browsertest.New(t, 3*time.Minute)}
	p.do("open the webhook's link", chromedp.Navigate(g.URL+u.Path+"#"+u.Fragment))
	p.wait("joined by link", `document.querySelector("#status").dataset.state === "connected" && document.querySelector("#whoami").textContent.includes("me alice")`)
	p.wait("awaiting alice, with the rule and its reason", `(document.querySelector("#queue .awaiting-you")||{}).textContent?.includes("1 proposal of this space awaits your approval") &&
		document.querySelector("#queue .proposal.focused .policy").textContent.includes("files change on disk") &&
		document.querySelector("#queue .proposal .policy").textContent.includes("2 more of alice, bob") &&
		document.querySelector("#queue .preview").textContent.includes("plan.txt") &&
		!!document.querySelector("#queue .proposal .approve") && !document.querySelector("#queue .proposal .yes")`)
	p.shot("approval-policy")
	p.click("#queue .proposal .approve")
	p.wait("alice's approval counted", `[...document.querySelectorAll(".proposal-entry .state")].some(e => e.textContent.includes("awaiting 1 more approval") && e.textContent.includes("approved by you"))`)
	if p.eval(`!!document.querySelector("#queue .proposal")`) != false {
		t.Fatalf("the proposal still awaits alice after her approval:\n%s", p.text("#queue"))
	}
	if _, err := os.Stat(filepath.Join(work, "plan.txt")); err == nil {
		t.Fatal("the file was written before the quorum")
	}

	// bob completes the quorum; the page offers to carry it out.
	proposal := p.eval(`document.querySelector(".entry[data-kind='mcp/proposal']").dataset.id`).(string)
	if err := bob.Approve(t.Context(), proposal); err != nil {
		t.Fatal(err)
	}
	p.wait("approved, to carry out", `!!document.querySelector("#queue .proposal .yes") && document.querySelector("#queue .proposal .policy").textContent.includes("approved by alice, bob")`)
	p.click("#queue .proposal .yes")
	p.wait("carried out", `[...document.querySelectorAll(".proposal-entry .state")].some(e => e.textContent.includes("carried out by you"))`)
	p.wait("the agent's answer", `[...document.querySelectorAll(".entry.chat")].some(e => e.textContent.includes("Written: plan.txt says ship it."))`)
	if b, err := os.ReadFile(filepath.Join(work, "plan.txt")); err != nil || string(b) != "ship it\n" {
		t.Fatalf("plan.txt: %q, %v", b, err)
	}
}
