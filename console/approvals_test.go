package console_test

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/chromedp/chromedp/kb"

	"github.com/mew-protocol/mew/gateway"
	"github.com/mew-protocol/mew/internal/browsertest"
	"github.com/mew-protocol/mew/internal/testutil"
	"github.com/mew-protocol/mew/llm"
	"github.com/mew-protocol/mew/participant"
)

// policySpace: writes to files need two of alice and bob; alice holds
// everything, bob only approves; helper, an agent, only proposes.
const policySpace = `
space: {id: web}
participants:
  alice:
    tokens: [alice-token]
    capabilities: [{kind: "*"}]
  bob:
    tokens: [bob-token]
    capabilities: [{kind: chat}]
  helper:
    tokens: [helper-token]
    capabilities:
      - {kind: chat}
      - {kind: "chat/*"}
      - {kind: "reasoning/*"}
      - {kind: mcp/proposal}
      - {kind: mcp/withdraw}
      - {kind: mcp/request, payload: {method: "tools/list"}}
      - {kind: "participant/*"}
  files:
    tokens: [files-token]
    capabilities: [{kind: mcp/response}, {kind: participant/status}, {kind: chat}]
approvals:
  - name: writes
    reason: files change on disk
    match: {to: [files], payload: {method: tools/call, params: {name: "write_*"}}}
    approvers: [alice, bob]
    required: 2
`

// TestApprovalPolicyInConsole: alice opens the console from a one-time
// link (as a notification would give her); the agent's tool call, a
// proposal under the space's rule, awaits her with the rule's reason; she
// approves; bob, from his program, completes the quorum; the page then
// offers to carry it out, the MCP server writes the file, and the agent's
// run continues to its answer, which the page shows.
func TestApprovalPolicyInConsole(t *testing.T) {
	t.Setenv(testutil.ClusterEnv, "") // the page and the SDK on one node: the flow, not the cluster, is tested
	g := testutil.StartGateway(t, policySpace, gateway.Options{Audit: gateway.AuditOptions{Off: true}})
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
	link := consoleLink(t, g, "alice-token")
	p := page{t: t, ctx: browsertest.New(t, 3*time.Minute)}
	p.do("open the link", chromedp.Navigate(g.URL+link))
	p.wait("joined by link", `document.querySelector("#status").dataset.state === "connected" && document.querySelector("#whoami").textContent.includes("me alice")`)

	p.do("ask the agent", chromedp.SendKeys(chromedp.CSS("#compose-input"), "@helper write the plan"+kb.Enter))
	p.wait("awaiting alice, with the rule and its reason", `(document.querySelector("#queue .awaiting-you")||{}).textContent?.includes("1 proposal of this space awaits your approval") &&
		document.querySelector("#queue .proposal .policy").textContent.includes("files change on disk") &&
		document.querySelector("#queue .proposal .policy").textContent.includes("2 more of alice, bob") &&
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
