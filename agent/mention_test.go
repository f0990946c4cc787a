package agent

import "testing"

func TestMentions(t *testing.T) {
	for _, c := range []struct {
		text string
		want bool
	}{
		{"@agent hi", true},
		{"hi @agent", true},
		{"hi @agent, there", true},
		{"hi @agent-2", false},
		{"hi @agentx and @agent.", true},
		{"hi @agentx", false},
		{"agent hi", false},
		{"email@agent", true},
	} {
		if got := mentions(c.text, "agent"); got != c.want {
			t.Errorf("mentions(%q) = %v, want %v", c.text, got, c.want)
		}
	}
	if mentions("@ hi", "") {
		t.Error("empty name mentioned")
	}
}

func TestSummary(t *testing.T) {
	long := ""
	for len(long) < 300 {
		long += "é "
	}
	s := summary(long)
	if len(s) > maxSummary+len("…") {
		t.Errorf("summary is %d bytes", len(s))
	}
	for _, r := range s {
		if r == '\uFFFD' {
			t.Fatal("summary cut a character")
		}
	}
	if got := summary("  a \n b  "); got != "a b" {
		t.Errorf("summary = %q", got)
	}
}
