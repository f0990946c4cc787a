package space

import (
	"strings"
	"testing"
	"time"
)

const approvalSpace = `space: {id: s}
participants:
  agent: {tokens: [a]}
  alice: {tokens: [b]}
  bob: {tokens: [c]}
  carol: {tokens: [d]}
  lead: {tokens: [e]}
approvals:
`

func TestApprovalRules(t *testing.T) {
	c, err := Parse([]byte(approvalSpace+`  - name: writes
    reason: files change
    match: {payload: {method: tools/call, params: {name: "write_*"}}}
    approvers: [alice, bob, carol]
    required: 2
    within_ms: 60000
    then: escalate
    escalate: {approvers: [lead], within_ms: 30000}
    always_ask: true
  - name: everything
    match: {}
    approvers: [alice]
`), "space.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if len(c.Approvals) != 2 {
		t.Fatalf("%d rules", len(c.Approvals))
	}
	w := c.Approvals[0]
	if w.Name != "writes" || w.Reason != "files change" || w.Required != 2 || w.Within != time.Minute || w.Then != ThenEscalate ||
		!w.AlwaysAsk || len(w.Approvers) != 3 || w.Escalate == nil || w.Escalate.Required != 1 || w.Escalate.Within != 30*time.Second {
		t.Errorf("writes = %+v (escalate %+v)", w, w.Escalate)
	}
	if got, want := string(w.Proposal), `{"kind":"mcp/proposal","payload":{"method":"tools/call","params":{"name":"write_*"}}}`; got != want {
		t.Errorf("proposal pattern %s, want %s", got, want)
	}
	if got, want := string(w.Request), `{"kind":"mcp/request","payload":{"method":"tools/call","params":{"name":"write_*"}}}`; got != want {
		t.Errorf("request pattern %s, want %s", got, want)
	}
	e := c.Approvals[1]
	if string(e.Proposal) != `{"kind":"mcp/proposal"}` || e.Required != 1 || e.Then != ThenTimeout || e.Within != 0 {
		t.Errorf("everything = %+v", e)
	}
}

// Malformed and hostile rules are refused with the key path and what is
// wrong.
func TestApprovalRulesRefused(t *testing.T) {
	for _, tc := range []struct{ rules, want string }{
		{"  name: x", "want a list of approval rules"},
		{"  - {match: {}, approvers: [alice]}", "approvals[0].name: is required"},
		{"  - {name: x, approvers: [alice]}", "approvals[0].match: is required"},
		{"  - {name: x, match: {kind: chat}, approvers: [alice]}", "approvals[0].match.kind: leave kind out"},
		{"  - {name: x, match: [1], approvers: [alice]}", "approvals[0].match: want a capability pattern"},
		{"  - {name: x, match: {}, approvers: []}", "approvals[0].approvers: is required"},
		{"  - {name: x, match: {}, approvers: [mallory]}", `approvals[0].approvers[0]: "mallory" is no participant`},
		{"  - {name: x, match: {}, approvers: [alice, alice]}", `approvals[0].approvers[1]: "alice" is named twice`},
		{"  - {name: x, match: {}, approvers: [alice], required: 2}", "approvals[0].required: want 1 to 1"},
		{"  - {name: x, match: {}, approvers: [alice], required: -1}", "approvals[0].required"},
		{"  - {name: x, match: {}, approvers: [alice], within_ms: 0}", "approvals[0].within_ms: want 1 to"},
		{"  - {name: x, match: {}, approvers: [alice], then: never}", `approvals[0].then: want timeout or escalate, got "never"`},
		{"  - {name: x, match: {}, approvers: [alice], then: escalate, within_ms: 10}", "approvals[0].escalate: is required"},
		{"  - {name: x, match: {}, approvers: [alice], then: escalate, escalate: {approvers: [bob]}}", "approvals[0].within_ms: is required with then: escalate"},
		{"  - {name: x, match: {}, approvers: [alice], then: escalate, within_ms: 10, escalate: {approvers: [eve]}}", `approvals[0].escalate.approvers[0]: "eve" is no participant`},
		{"  - {name: x, match: {}, approvers: [alice]}\n  - {name: x, match: {}, approvers: [bob]}", `approvals[1].name: "x" names two rules`},
		{`  - {name: x, match: {payload: {a: "/[/"}}, approvers: [alice]}`, "approvals[0].match"},
		{"  - {name: x, match: {}, approvers: [alice], colour: red}", ""}, // an unknown key is a warning
	} {
		c, err := Parse([]byte(approvalSpace+tc.rules+"\n"), "space.yaml")
		if tc.want == "" {
			if err != nil || len(c.Unknown) != 1 {
				t.Errorf("%s: %v, unknown %v", tc.rules, err, c.Unknown)
			}
			continue
		}
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v, want %q", tc.rules, err, tc.want)
		}
	}
	var many strings.Builder
	for i := range maxApprovalRules + 1 {
		many.WriteString("  - {name: r" + strings.Repeat("x", i%3) + string(rune('a'+i%26)) + ", match: {}, approvers: [alice]}\n")
	}
	if _, err := Parse([]byte(approvalSpace+many.String()), "space.yaml"); err == nil || !strings.Contains(err.Error(), "at most") {
		t.Errorf("%d rules: %v", maxApprovalRules+1, err)
	}
}
