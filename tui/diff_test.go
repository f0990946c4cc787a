package tui

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/mew-protocol/mew/protocol"
)

func TestUnifiedDiff(t *testing.T) {
	a := "one\ntwo\nthree\nfour\nfive\nsix\nseven\neight\nnine\nten\n"
	b := "one\n2\nthree\nfour\nfive\nsix\nseven\neight\nnine\nten\neleven\n"
	want := strings.Join([]string{
		"@@ -1,5 +1,5 @@", " one", "-two", "+2", " three", " four", " five",
		"@@ -8,3 +8,4 @@", " eight", " nine", " ten", "+eleven",
	}, "\n")
	if got := strings.Join(unifiedDiff(a, b, 3), "\n"); got != want {
		t.Errorf("diff:\n%s\nwant:\n%s", got, want)
	}
	if d := unifiedDiff(a, a, 3); d == nil || len(d) != 0 {
		t.Errorf("the same text: %q", d)
	}
	if d := unifiedDiff("", "new\n", 3); strings.Join(d, "|") != "@@ -1,0 +1,1 @@|+new" {
		t.Errorf("from nothing: %q", d)
	}
	if d := unifiedDiff(strings.Repeat("x\n", maxDiffInput+1), "y", 3); d != nil {
		t.Error("a file too long was compared")
	}
}

// TestDiffPreview: a proposed write of a file the target can read is
// previewed as the change to it (the file asked for with read_file, its
// control sequences removed); a new file shows its content.
func TestDiffPreview(t *testing.T) {
	h := newHarness(t)
	h.sp.files = map[string]string{"notes.txt": "# Notes\nbuy milk\x1b]0;pwned\x07\ncall bob\n"}
	h.recv(propose("assistant", "pr1", "files", "write_file", map[string]any{
		"path": "notes.txt", "content": "# Notes\nbuy oat milk\ncall bob\nwater the plants\n",
	}))
	if len(h.sp.calls) != 1 || h.sp.calls[0] != `files {"method":"tools/call","params":{"arguments":{"path":"notes.txt"},"name":"read_file"}}` {
		t.Fatalf("calls %q", h.sp.calls)
	}
	// The read's own request and answer, as the space echoes them, are
	// not shown.
	h.recv(envelope(protocol.KindMCPRequest, "you", "rq1", []string{"files"}, nil, map[string]any{
		"jsonrpc": "2.0", "id": 7, "method": "tools/call", "params": map[string]any{"name": "read_file", "arguments": map[string]any{"path": "notes.txt"}},
	}), reply("files", "rp1", "rq1", "you", "# Notes"))
	if len(h.m.props.quiet) != 0 || strings.Contains(h.screen(), "read_file(") {
		t.Errorf("the dialog's read is shown (%v):\n%s", h.m.props.quiet, h.screen())
	}
	h.golden("dialog_diff")
	s := h.screen()
	for _, want := range []string{"changes to the file:", "-buy milk", "+buy oat milk", "+water the plants", " call bob"} {
		if !strings.Contains(s, want) {
			t.Errorf("the preview lacks %q:\n%s", want, s)
		}
	}
	if strings.Contains(s, "pwned") && strings.Contains(s, "\x1b") {
		t.Error("the file's control sequence got through")
	}
	h.key("y")

	h.recv(propose("assistant", "pr2", "files", "write_file", map[string]any{"path": "new.txt", "content": "fresh"}))
	if s := h.screen(); !strings.Contains(s, "│   content: fresh") || h.m.props.dlg == nil || h.m.props.dlg.p.diff != nil || h.m.props.dlg.p.oldErr == nil {
		t.Errorf("a new file:\n%s", s)
	}
	h.key("y")

	// Without the right to call read_file nothing is asked.
	h.sp.noRequests = true
	h.sp.calls = nil
	h.recv(propose("assistant", "pr3", "files", "write_file", map[string]any{"path": "notes.txt", "content": "x"}))
	if len(h.sp.calls) != 0 {
		t.Errorf("read without the capability: %q", h.sp.calls)
	}
}

// TestEditedElsewhere: a fulfilment whose params differ from the
// proposal's settles it as edited; the same params in another member order
// do not.
func TestEditedElsewhere(t *testing.T) {
	h := newHarness(t)
	h.sp.noRequests = true // not mine to decide: no dialog
	h.recv(propose("assistant", "pr1", "calculator", "add", map[string]any{"a": 1, "b": 5}))
	h.recv(propose("assistant", "pr2", "calculator", "add", map[string]any{"a": 1, "b": 5}))
	edited := call("bob", "rq1", "calculator", "add", map[string]any{"a": 2, "b": 5})
	edited.CorrelationID = []string{"pr1"}
	same := envelope(protocol.KindMCPRequest, "bob", "rq2", []string{"calculator"}, []string{"pr2"},
		json.RawMessage(`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"arguments":{"b":5,"a":1},"name":"add"}}`))
	h.recv(edited, same)
	if o := h.m.props.book.byID["pr1"].outcome; o != "approved by bob with edited arguments" {
		t.Errorf("pr1: %q", o)
	}
	if o := h.m.props.book.byID["pr2"].outcome; o != "approved by bob" {
		t.Errorf("pr2: %q", o)
	}
}
