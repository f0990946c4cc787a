package auditlog_test

import (
	"bytes"
	"context"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/mew-protocol/mew/agent"
	"github.com/mew-protocol/mew/auditlog"
	"github.com/mew-protocol/mew/gateway"
	"github.com/mew-protocol/mew/internal/testutil"
	"github.com/mew-protocol/mew/llm"
	"github.com/mew-protocol/mew/participant"
	"github.com/mew-protocol/mew/protocol"
)

// reasonSpace: a person, a calculator, an agent that reasons and calls
// tools, and a raw client that does the same by hand.
const reasonSpace = `
space: {id: reason}
participants:
  human: {tokens: [human-token], capabilities: [{kind: "*"}]}
  calc: {tokens: [calc-token], capabilities: [{kind: chat}]}
  agent:
    tokens: [agent-token]
    capabilities: [{kind: chat}, {kind: "chat/*"}, {kind: "reasoning/*"}, {kind: mcp/request}, {kind: "participant/*"}]
  raw:
    tokens: [raw-token]
    capabilities: [{kind: "reasoning/*"}, {kind: mcp/request}]
`

// TestLineageByContext: an agent driven by a scripted model through a real
// gateway sets its reasoning's id as the context of its tool calls, and the
// lineage of such a call names that reasoning by context, not by
// inference; a call without context still gets the inferred reasoning, and
// one whose context names no reasoning gets none.
func TestLineageByContext(t *testing.T) {
	g := testutil.StartGateway(t, reasonSpace, gateway.Options{})
	model := testutil.NewLLMServer(t)
	model.Script(
		testutil.LLMCall(testutil.LLMToolCall{Name: "calc_add", Arguments: `{"a":2,"b":3}`}),
		testutil.LLMReply("2 + 3 = 5"),
	)
	human := testutil.JoinParticipant(t, g, "human-token", participant.Options{})
	add := testutil.ArithTool("add", "", func(a, b float64) float64 { return a + b })
	testutil.JoinParticipant(t, g, "calc-token", participant.Options{}, add)
	provider, err := llm.NewOpenAI(llm.Config{BaseURL: model.URL(), APIKey: "k", MaxRetries: -1, Model: "m"})
	if err != nil {
		t.Fatal(err)
	}
	testutil.WaitTools(t, testutil.StartAgent(t, g, "agent-token", provider, agent.Config{ReasoningEnabled: true, DiscoveryWait: 5 * time.Second}))
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()

	answered := make(chan string, 1)
	remove := human.Client().OnMessage(func(env *protocol.Envelope) {
		if env.Kind == "chat" && env.From == "agent" {
			select {
			case answered <- env.ID:
			default:
			}
		}
	})
	defer remove()
	if _, err := human.Chat(ctx, "what is 2 plus 3?", "agent"); err != nil {
		t.Fatal(err)
	}
	select {
	case <-answered:
	case <-ctx.Done():
		t.Fatal("the agent never answered")
	}

	// By hand: a call while a reasoning is open but without context, and
	// one naming a context that is no reasoning.
	raw, _ := testutil.Join(t, g.WSURL, "raw-token")
	raw.SendText(`{"id":"r1","kind":"reasoning/start","payload":{"message":"by hand"}}`)
	raw.SendText(`{"id":"c1","kind":"mcp/request","to":["calc"],"payload":{"method":"tools/call","params":{"name":"add","arguments":{"a":1,"b":1}}}}`)
	raw.ExpectFunc("mcp/response", func(m testutil.Msg) bool { return true })
	raw.SendText(`{"id":"c2","kind":"mcp/request","to":["calc"],"context":"workflow/7","payload":{"method":"tools/call","params":{"name":"add","arguments":{"a":2,"b":2}}}}`)
	raw.ExpectFunc("mcp/response", func(m testutil.Msg) bool { return true })
	g.Stop(t)

	ix, err := auditlog.BuildIndex(context.Background(), filepath.Dir(g.LogPath(auditlog.EnvelopeHistory)), auditlog.IndexOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var call *auditlog.Entry
	for _, e := range ix.Entries() {
		if e.Env.Kind == "mcp/request" && e.Env.From == "agent" && bytes.Contains(e.Env.Payload, []byte(`"tools/call"`)) {
			call = e
		}
	}
	if call == nil {
		t.Fatal("no tool call of the agent in the log")
	}
	if call.Env.Context == "" {
		t.Fatal("the agent's tool call carries no context")
	}
	tree := lineageTree(t, ix, call.Env.ID)
	r := find(tree.root, auditlog.RelReasoning)
	if r == nil || r.ID != call.Env.Context || r.Kind != "reasoning/start" || r.Inferred {
		t.Fatalf("the call's reasoning: %+v\n%s", r, tree.text)
	}
	for _, want := range []string{"in reasoning: ", "(named by its context)", "reasoning/thought", "reasoning/conclusion", "what is 2 plus 3?"} {
		if !strings.Contains(tree.text, want) {
			t.Errorf("lineage lacks %q:\n%s", want, tree.text)
		}
	}
	if strings.Contains(tree.text, "open when") {
		t.Errorf("a call with context is explained by inference:\n%s", tree.text)
	}

	tree = lineageTree(t, ix, "c1")
	if r := find(tree.root, auditlog.RelReasoning); r == nil || r.ID != "r1" || !r.Inferred || !strings.Contains(r.Text, "(open when raw sent this)") {
		t.Errorf("c1 without context: the reasoning is not inferred:\n%s", tree.text)
	}
	tree = lineageTree(t, ix, "c2")
	if r := find(tree.root, auditlog.RelReasoning); r == nil || r.ID != "" || !strings.Contains(r.Text, "its context workflow/7 names no reasoning") {
		t.Errorf("c2 with a foreign context: %s", tree.text)
	}
	// r1's steps: c1 (no context, sent while it was open), not c2 (its
	// context is another one).
	tree = lineageTree(t, ix, "r1")
	if !strings.Contains(tree.text, "mcp/request c1") || strings.Contains(tree.text, "mcp/request c2") {
		t.Errorf("r1's steps:\n%s", tree.text)
	}
}

type lineage struct {
	root *auditlog.Node
	text string
}

// lineageTree returns id's lineage and its printed tree.
func lineageTree(t *testing.T, ix *auditlog.Index, id string) lineage {
	t.Helper()
	n, err := ix.Lineage(id)
	if err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	if err := n.WriteTree(&b); err != nil {
		t.Fatal(err)
	}
	return lineage{n, b.String()}
}

// find returns the first node below n with relation rel, depth first.
func find(n *auditlog.Node, rel string) *auditlog.Node {
	for _, c := range n.Children {
		if c.Relation == rel {
			return c
		}
		if f := find(c, rel); f != nil {
			return f
		}
	}
	return nil
}
