package capability

import "testing"

// TestMatchTo: a pattern with to allows only envelopes that name at least
// one recipient, each matching one of its patterns; a broadcast never.
func TestMatchTo(t *testing.T) {
	s := MustCompile(`{"kind":"mcp/request","to":["file-server","tools-*"],"payload":{"method":"tools/call"}}`)
	call := []byte(`{"method":"tools/call"}`)
	for _, c := range []struct {
		to   []string
		want bool
	}{
		{[]string{"file-server"}, true},
		{[]string{"tools-a", "file-server"}, true},
		{nil, false},        // a broadcast
		{[]string{}, false}, // to present but empty: still nobody named
		{[]string{"file-server", "human"}, false}, // one recipient outside the list
		{[]string{"human"}, false},
		{[]string{"tools-a/b"}, false},   // * stays within one segment
		{[]string{"FILE-SERVER"}, false}, // ids are case-sensitive
	} {
		if got := s.AllowsTo("mcp/request", c.to, call); got != c.want {
			t.Errorf("to %q: %v, want %v", c.to, got, c.want)
		}
	}
	if s.Allows("mcp/request", call) {
		t.Error("Allows (a broadcast) passed a pattern with to")
	}
	any := MustCompile(`{"kind":"chat"}`)
	if !any.AllowsTo("chat", []string{"x"}, nil) || !any.Allows("chat", nil) {
		t.Error("a pattern without to must allow any recipients and broadcasts")
	}
	neg := MustCompile(`{"kind":"chat","to":"!human"}`)
	if !neg.AllowsTo("chat", []string{"agent"}, nil) || neg.AllowsTo("chat", []string{"agent", "human"}, nil) {
		t.Error("a negated to: every recipient must not be human")
	}
}

// TestSubsumesTo: a narrower to is a narrower grant.
func TestSubsumesTo(t *testing.T) {
	for _, c := range []struct {
		granter, granted string
		want             bool
	}{
		{`{"kind":"mcp/request"}`, `{"kind":"mcp/request","to":["file-server"]}`, true},
		{`{"kind":"mcp/request","to":["file-server"]}`, `{"kind":"mcp/request"}`, false},
		{`{"kind":"mcp/request","to":["file-server","db"]}`, `{"kind":"mcp/request","to":"db"}`, true},
		{`{"kind":"mcp/request","to":"tools-*"}`, `{"kind":"mcp/request","to":["tools-a","tools-b"]}`, true},
		{`{"kind":"mcp/request","to":"tools-*"}`, `{"kind":"mcp/request","to":["tools-a","human"]}`, false},
		{`{"kind":"mcp/request","to":["db"]}`, `{"kind":"mcp/request","to":["file-server"]}`, false},
	} {
		got, why := MustCompile(c.granter).Subsumes(MustCompile(c.granted))
		if got != c.want {
			t.Errorf("%s covers %s: %v (%s), want %v", c.granter, c.granted, got, why, c.want)
		}
	}
}
