package auditfmt_test

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/mew-protocol/mew/internal/auditfmt"
	"github.com/mew-protocol/mew/internal/auditfmt/auditfmttest"
)

// TestParseLinkVectors: ParseLink accepts exactly the lines gen.py says are
// well formed (the leading-zero, sign and case rules among them).
func TestParseLinkVectors(t *testing.T) {
	cases, err := auditfmttest.Forms()
	if err != nil {
		t.Fatal(err)
	}
	if len(cases) < 20 {
		t.Fatalf("only %d form vectors", len(cases))
	}
	for _, c := range cases {
		l, err := auditfmt.ParseLink([]byte(c.Line))
		if (err == nil) != c.OK {
			t.Errorf("%q: ParseLink error %v, want ok=%v", c.Line, err, c.OK)
			continue
		}
		if c.OK && (l.N != c.N || l.HasPrev != c.HasPrev) {
			t.Errorf("%q: n %d prev %v, want %d %v", c.Line, l.N, l.HasPrev, c.N, c.HasPrev)
		}
	}
}

// TestSealVectors: Seal, continued line by line as a writer does, makes
// the good chains byte for byte, and SealLen says how much it appends.
func TestSealVectors(t *testing.T) {
	root, cases, err := auditfmttest.Chains()
	if err != nil {
		t.Fatal(err)
	}
	good := 0
	for _, c := range cases {
		if !c.Intact {
			continue
		}
		good++
		var prev auditfmt.Hash
		if c.StartsAfter != "" {
			l, err := auditfmt.ParseLink([]byte(`,"chain":"1:` + c.StartsAfter + `"}`))
			if err != nil {
				t.Fatal(err)
			}
			prev = l.Sum
		}
		var h auditfmt.Hasher
		for _, f := range c.Files {
			want, err := os.ReadFile(filepath.Join(c.Dir(root), f.Name))
			if err != nil {
				t.Fatal(err)
			}
			var got []byte
			for i, l := range f.Lines {
				var line []byte
				line, prev = h.Seal([]byte(l.Body), &prev, l.WithPrev, uint64(i+1))
				if n := len(line) - len(l.Body); n != auditfmt.SealLen(uint64(i+1), l.WithPrev) {
					t.Errorf("%s line %d: Seal appended %d bytes, SealLen says %d", c.Case, i+1, n, auditfmt.SealLen(uint64(i+1), l.WithPrev))
				}
				got = append(append(got, line...), '\n')
			}
			if !bytes.Equal(got, want) {
				t.Errorf("%s/%s: sealed\n%s\nwant\n%s", c.Case, f.Name, got, want)
			}
		}
		if prev.String() != c.Head {
			t.Errorf("%s: head %s, want %s", c.Case, prev, c.Head)
		}
	}
	if good < 3 {
		t.Fatalf("only %d good chains", good)
	}
}

func TestRotatedNames(t *testing.T) {
	at := time.Date(2026, 11, 22, 10, 9, 50, 999e6, time.UTC)
	p := auditfmt.RotatedName("/x/"+auditfmt.EnvelopeHistory, at)
	if p != "/x/envelope-history.20261122T100950.999Z.jsonl" {
		t.Fatalf("RotatedName: %s", p)
	}
	if got, ok := auditfmt.RotatedTime(filepath.Base(p), auditfmt.EnvelopeHistory); !ok || !got.Equal(at) {
		t.Fatalf("RotatedTime(%s) = %v %v", p, got, ok)
	}
	for _, name := range []string{
		"envelope-history.jsonl",
		"envelope-history.old.jsonl",
		"envelope-history.20261122T100950.99Z.jsonl",
		"envelope-history.20261122T100950.999Z.json",
		"envelope-history.20261122T100950.999+01:00.jsonl",
		"capability-decisions.20261122T100950.999Z.jsonl",
		"envelope-history.20261322T100950.999Z.jsonl",
	} {
		if _, ok := auditfmt.RotatedTime(name, auditfmt.EnvelopeHistory); ok {
			t.Errorf("%s taken for a rotated file of %s", name, auditfmt.EnvelopeHistory)
		}
	}
}
