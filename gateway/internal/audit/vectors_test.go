package audit

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/mew-protocol/mew/internal/auditfmt"
	"github.com/mew-protocol/mew/internal/auditfmt/auditfmttest"
)

// TestChainVectorsWritten: the writer's seal, fed the bodies of the
// independently generated good chains, writes them byte for byte, and its
// size estimate is exact for every line.
func TestChainVectorsWritten(t *testing.T) {
	root, cases, err := auditfmttest.Chains()
	if err != nil {
		t.Fatal(err)
	}
	var h auditfmt.Hasher
	for _, c := range cases {
		if !c.Intact {
			continue
		}
		s := &sink{}
		if c.StartsAfter != "" {
			l, err := auditfmt.ParseLink([]byte(`,"chain":"1:` + c.StartsAfter + `"}`))
			if err != nil {
				t.Fatal(err)
			}
			s.chain = l.Sum
		}
		for _, f := range c.Files {
			want, err := os.ReadFile(filepath.Join(c.Dir(root), f.Name))
			if err != nil {
				t.Fatal(err)
			}
			s.n = 0
			var got []byte
			for _, l := range f.Lines {
				s.needPrev = l.WithPrev
				est := len(l.Body) + suffixLen(s.n+1, s.needPrev)
				line := seal(&h, s, []byte(l.Body))
				if len(line) != est {
					t.Errorf("%s/%s line %d: %d bytes, estimated %d", c.Case, f.Name, s.n, len(line), est)
				}
				got = append(got, line...)
			}
			if !bytes.Equal(got, want) {
				t.Errorf("%s/%s: written\n%s\nwant\n%s", c.Case, f.Name, got, want)
			}
		}
		if s.chain.String() != c.Head {
			t.Errorf("%s: ends at %s, want %s", c.Case, s.chain, c.Head)
		}
	}
}

// TestChainVectorsContinued: a gateway starting on a file continues from
// its last line exactly when the vectors call that line well formed (so
// that the verifier, which reads lines by the same vectors, follows it),
// and sets the file aside otherwise. A writer that read "01:" or "+1:" as
// line 1 would continue a chain the verifier breaks at that line.
func TestChainVectorsContinued(t *testing.T) {
	forms, err := auditfmttest.Forms()
	if err != nil {
		t.Fatal(err)
	}
	at := time.Date(2026, 11, 22, 10, 9, 50, 0, time.UTC)
	for _, fc := range forms {
		if fc.Line == "" {
			continue // an empty line is no line: the file would be empty
		}
		dir := t.TempDir()
		if err := os.WriteFile(filepath.Join(dir, EnvelopeHistoryFile), []byte(fc.Line+"\n"), 0o600); err != nil {
			t.Fatal(err)
		}
		l, err := Open(Options{Dir: dir, EnvelopeHistory: true, Now: func() time.Time { return at }})
		if err != nil {
			t.Fatal(err)
		}
		l.Envelope(EnvelopeRecord{Time: at, Event: Received, ID: "x", Envelope: []byte(`{"id":"x"}`), Participant: "a", Space: "s"})
		if err := l.Close(); err != nil {
			t.Fatal(err)
		}
		lines := readRaw(t, filepath.Join(dir, EnvelopeHistoryFile))
		last, err := auditfmt.ParseLink([]byte(lines[len(lines)-1]))
		if err != nil {
			t.Fatalf("%q: the new line has no chain: %v", fc.Line, err)
		}
		rotated, err := findRotated(filepath.Join(dir, EnvelopeHistoryFile))
		if err != nil {
			t.Fatal(err)
		}
		if fc.OK {
			want, _ := auditfmt.ParseLink([]byte(fc.Line))
			if len(lines) != 2 || len(rotated) != 0 || last.N != fc.N+1 || !last.HasPrev || last.Prev != want.Sum {
				t.Errorf("%q (well formed): continued as line %d from %s with %d set aside, want line %d from %s",
					fc.Line, last.N, last.Prev, len(rotated), fc.N+1, want.Sum)
			}
			continue
		}
		if len(lines) != 1 || len(rotated) != 1 || last.N != 1 {
			t.Errorf("%q (malformed): new line %d, %d lines, %d set aside; want it set aside and a new file",
				fc.Line, last.N, len(lines), len(rotated))
			continue
		}
		if b, _ := os.ReadFile(rotated[0].path); strings.TrimSuffix(string(b), "\n") != fc.Line {
			t.Errorf("%q: set aside as %q", fc.Line, b)
		}
	}
}
