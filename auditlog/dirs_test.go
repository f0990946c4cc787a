package auditlog_test

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/mew-protocol/mew/auditlog"
)

// TestNodeDirs: the logs of a `mew space up --nodes 3` space are read
// together: NodeDirs finds node-2 and node-10 beside the first node's, in
// node order; ScanDirs merges their records by time; BuildIndexDirs traces
// a lineage whose steps were logged on different nodes.
func TestNodeDirs(t *testing.T) {
	one := newLogDir(t)
	nodes := map[string]*logDir{}
	for _, n := range []string{"node-2", "node-10"} {
		d := &logDir{t: t, dir: filepath.Join(one.dir, n), at: one.at}
		if err := os.MkdirAll(d.dir, 0o700); err != nil {
			t.Fatal(err)
		}
		nodes[n] = d
	}
	if err := os.MkdirAll(filepath.Join(one.dir, "node-3"), 0o700); err != nil { // no log in it
		t.Fatal(err)
	}
	// A question on node 1, a proposal about it on node 2, its fulfilment
	// on node 10, the answer on node 1: the clocks interleave.
	one.envelope("q1", "human", "chat", []string{"agent"}, "", "", `{"text":"add 1 and 2"}`)
	nodes["node-2"].at = one.at
	nodes["node-2"].envelope("p1", "agent", "mcp/proposal", []string{"calc"}, "q1", "", `{"method":"tools/call","params":{"name":"add"}}`)
	nodes["node-10"].at = nodes["node-2"].at
	nodes["node-10"].envelope("r1", "human", "mcp/request", []string{"calc"}, "p1", "", `{"method":"tools/call","params":{"name":"add"}}`)
	one.at = nodes["node-10"].at
	one.envelope("a1", "agent", "chat", []string{"human"}, "q1", "", `{"text":"3"}`)

	dirs := auditlog.NodeDirs(one.dir)
	want := []string{one.dir, filepath.Join(one.dir, "node-2"), filepath.Join(one.dir, "node-10")}
	if !slices.Equal(dirs, want) {
		t.Fatalf("NodeDirs: %v, want %v", dirs, want)
	}
	var ids []string
	st, err := auditlog.ScanDirs(t.Context(), dirs, auditlog.EnvelopeHistory, auditlog.ReadOptions{}, func(r *auditlog.Record) error {
		if r.Event == auditlog.Received {
			ids = append(ids, r.ID)
		}
		return nil
	})
	if err != nil || strings.Join(ids, " ") != "q1 p1 r1 a1" || st.Files != 3 {
		t.Fatalf("ScanDirs: %v (%+v, %v), want q1 p1 r1 a1 from 3 files", ids, st, err)
	}
	ix, err := auditlog.BuildIndexDirs(t.Context(), dirs, auditlog.IndexOptions{})
	if err != nil {
		t.Fatal(err)
	}
	root, err := ix.Lineage("r1")
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, e := range root.Envelopes() {
		got = append(got, e.Env.ID)
	}
	for _, id := range []string{"q1", "p1", "r1"} {
		if !slices.Contains(got, id) {
			t.Errorf("the lineage of r1 across nodes lacks %s: %v", id, got)
		}
	}
}

// TestLineageEditedArguments: why of a request that carried out a proposal
// says when the approver changed the arguments (which, from what to what),
// and says nothing of the kind when it carried out what was proposed.
func TestLineageEditedArguments(t *testing.T) {
	d := newLogDir(t)
	d.envelope("p1", "agent", "mcp/proposal", []string{"files"}, "", "", `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"write_file","arguments":{"path":"a.txt","content":"rm -rf"}}}`)
	d.envelope("r1", "human", "mcp/request", []string{"files"}, "p1", "", `{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"write_file","arguments":{"path":"a.txt","content":"hello"}}}`)
	d.envelope("p2", "agent", "mcp/proposal", []string{"files"}, "", "", `{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"read_file","arguments":{"path":"a.txt"}}}`)
	d.envelope("r2", "human", "mcp/request", []string{"files"}, "p2", "", `{"jsonrpc":"2.0","id":8,"method":"tools/call","params":{"name":"read_file","arguments":{"path":"a.txt"}}}`)
	ix, err := auditlog.BuildIndex(t.Context(), d.dir, auditlog.IndexOptions{})
	if err != nil {
		t.Fatal(err)
	}
	tree := func(id string) string { return lineageTree(t, ix, id).text }
	for _, id := range []string{"r1", "p1"} {
		if got := tree(id); !strings.Contains(got, `approved with edited arguments (content): proposed {"content":"rm -rf","path":"a.txt"}, carried out {"content":"hello","path":"a.txt"}`) {
			t.Errorf("why %s does not say the arguments were edited:\n%s", id, got)
		}
	}
	if got := tree("r2"); strings.Contains(got, "edited") {
		t.Errorf("why r2 says edited of a call carried out as proposed:\n%s", got)
	}
}
