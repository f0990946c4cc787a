package auditlog_test

import (
	"path/filepath"
	"testing"

	"github.com/mew-protocol/mew/auditlog"
	"github.com/mew-protocol/mew/internal/auditfmt/auditfmttest"
)

// TestVerifyVectors: Verify finds the independently generated good chains
// intact, with their head and starting point, and breaks each bad one
// (a line numbered "02", "0" or "+2", a hash or chain_prev in upper case,
// a line altered, a file missing) at the line the vector names.
func TestVerifyVectors(t *testing.T) {
	root, cases, err := auditfmttest.Chains()
	if err != nil {
		t.Fatal(err)
	}
	var good, bad int
	for _, c := range cases {
		rep, err := auditlog.Verify(c.Dir(root), auditlog.VerifyOptions{})
		if err != nil {
			t.Errorf("%s: %v", c.Case, err)
			continue
		}
		if len(rep.Logs) != 1 {
			t.Errorf("%s: %d logs", c.Case, len(rep.Logs))
			continue
		}
		lr := rep.Logs[0]
		if c.Intact {
			good++
			lines := 0
			for _, f := range c.Files {
				lines += len(f.Lines)
			}
			if lr.Problem != nil || lr.Lines != lines || lr.Head != c.Head || lr.StartsAfter != c.StartsAfter || len(lr.Files) != len(c.Files) {
				t.Errorf("%s: %+v (problem %v), want intact with %d lines, head %s, starting after %q", c.Case, lr, lr.Problem, lines, c.Head, c.StartsAfter)
			}
			continue
		}
		bad++
		if lr.Problem == nil || filepath.Base(lr.Problem.File) != c.File || lr.Problem.Line != c.Line {
			t.Errorf("%s: problem %v, want one at %s:%d", c.Case, lr.Problem, c.File, c.Line)
		}
	}
	if good < 3 || bad < 6 {
		t.Fatalf("%d good and %d bad chains", good, bad)
	}
}
