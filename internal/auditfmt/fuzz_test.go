package auditfmt_test

import (
	"strconv"
	"strings"
	"testing"

	"github.com/mew-protocol/mew/internal/auditfmt"
)

// FuzzParseLink: a line ParseLink accepts ends in exactly the members a
// writer would write for what it read (one spelling per line number and
// hash), and its hashed part is the line before the hash.
func FuzzParseLink(f *testing.F) {
	h := "0123456789abcdef0123456789abcdef"
	for _, s := range []string{
		`{"a":1,"chain":"1:` + h + `"}`,
		`{"a":1,"chain_prev":"` + h + `","chain":"12:` + h + `"}`,
		`{"a":1,"chain":"01:` + h + `"}`,
		`,"chain":"+1:` + h + `"}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, line []byte) {
		l, err := auditfmt.ParseLink(line)
		if err != nil {
			return
		}
		tail := `,"chain":"` + strconv.FormatUint(l.N, 10) + ":" + l.Sum.String() + `"}`
		if l.N == 0 || !strings.HasSuffix(string(line), tail) {
			t.Fatalf("%q read as line %d hash %s", line, l.N, l.Sum)
		}
		if string(l.Hashed)+l.Sum.String()+`"}` != string(line) {
			t.Fatalf("%q: hashed part %q", line, l.Hashed)
		}
		if l.HasPrev && !strings.HasSuffix(string(l.Hashed), `,"chain_prev":"`+l.Prev.String()+`","chain":"`+strconv.FormatUint(l.N, 10)+":") {
			t.Fatalf("%q: chain_prev %s not where it was read", line, l.Prev)
		}
	})
}
