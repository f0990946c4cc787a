package cli

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestAgentRunDefaults: `mew agent run` starts from the reference agent's
// defaults — transparent reasoning and auto-respond on — whether its
// settings come from flags, MEW_AGENT_CONFIG or a file, and each may turn
// them off.
func TestAgentRunDefaults(t *testing.T) {
	file := filepath.Join(t.TempDir(), "agent.yaml")
	if err := os.WriteFile(file, []byte("gateway: ws://127.0.0.1:1\nspace: s\ntoken: tok\nmaxIterations: 5\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	off := filepath.Join(t.TempDir(), "off.yaml")
	if err := os.WriteFile(off, []byte("gateway: ws://127.0.0.1:1\nspace: s\ntoken: tok\nreasoningEnabled: false\nautoRespond: false\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	flags := agentFlags{gateway: "ws://127.0.0.1:1", space: "s", token: "tok"}
	for _, tc := range []struct {
		name                string
		f                   agentFlags
		env                 map[string]string
		reasoning, autoResp bool
	}{
		{"flags", flags, nil, true, true},
		{"MEW_AGENT_CONFIG without them", flags, map[string]string{envAgentConfig: `{"name": "a", "maxIterations": 3}`}, true, true},
		{"MEW_AGENT_CONFIG turning them off", flags, map[string]string{envAgentConfig: `{"reasoningEnabled": false, "autoRespond": false}`}, false, false},
		{"file without them", agentFlags{config: file}, nil, true, true},
		{"file turning them off", agentFlags{config: off}, nil, false, false},
	} {
		s, err := resolveAgent(tc.f, func(k string) string { return tc.env[k] })
		if err != nil {
			t.Errorf("%s: %v", tc.name, err)
			continue
		}
		if s.cfg.ReasoningEnabled != tc.reasoning || s.cfg.AutoRespond != tc.autoResp {
			t.Errorf("%s: reasoning %v, auto-respond %v; want %v, %v", tc.name, s.cfg.ReasoningEnabled, s.cfg.AutoRespond, tc.reasoning, tc.autoResp)
		}
	}
}

// TestAgentProposalTimeout: how long the agent's proposals wait for a
// person comes from, in increasing precedence, the space's default
// (MEW_PROPOSAL_TIMEOUT, which mew space up sets), the agent's own
// requestTimeout, and --proposal-timeout; malformed values are refused.
func TestAgentProposalTimeout(t *testing.T) {
	flags := agentFlags{gateway: "ws://127.0.0.1:1", space: "s", token: "tok"}
	withFlag := flags
	withFlag.proposalTimeout = 2 * time.Hour
	for _, tc := range []struct {
		name string
		f    agentFlags
		env  map[string]string
		want time.Duration
	}{
		{"none", flags, nil, 0},
		{"the space's", flags, map[string]string{envProposalTimeout: "45m"}, 45 * time.Minute},
		{"the agent's over the space's", flags, map[string]string{envProposalTimeout: "45m", envAgentConfig: `{"requestTimeout":3600000}`}, time.Hour},
		{"the flag over both", withFlag, map[string]string{envProposalTimeout: "45m", envAgentConfig: `{"requestTimeout":3600000}`}, 2 * time.Hour},
	} {
		s, err := resolveAgent(tc.f, func(k string) string { return tc.env[k] })
		if err != nil || s.cfg.ProposalTimeout != tc.want {
			t.Errorf("%s: %v (%v), want %v", tc.name, s.cfg.ProposalTimeout, err, tc.want)
		}
	}
	for _, bad := range []string{"soon", "-5m", "0s"} {
		if _, err := resolveAgent(flags, func(k string) string { return map[string]string{envProposalTimeout: bad}[k] }); err == nil || !strings.Contains(err.Error(), envProposalTimeout) {
			t.Errorf("MEW_PROPOSAL_TIMEOUT=%q: %v", bad, err)
		}
	}
	neg := flags
	neg.proposalTimeout = -time.Minute
	if _, err := resolveAgent(neg, func(string) string { return "" }); err == nil {
		t.Error("a negative --proposal-timeout was accepted")
	}
}
