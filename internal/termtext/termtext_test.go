package termtext

import (
	"strings"
	"testing"
	"unicode/utf8"
)

// hostile are texts a peer might send to take over a terminal.
var hostile = []struct {
	name, in, want string
}{
	{"plain", "hello, world", "hello, world"},
	{"unicode kept", "héllo → 世界 🐈", "héllo → 世界 🐈"},
	{"OSC title, BEL", "\x1b]0;pwned\x07hi", "hi"},
	{"OSC title, ST", "\x1b]2;pwned\x1b\\hi", "hi"},
	{"OSC hyperlink", "\x1b]8;;https://evil.example\x1b\\click\x1b]8;;\x1b\\", "click"},
	{"CSI clear screen", "\x1b[2J\x1b[Hhi", "hi"},
	{"CSI hide text", "\x1b[8msecret\x1b[0m", "secret"},
	{"CSI private mode", "\x1b[?25lno cursor", "no cursor"},
	{"C1 CSI", "\u009b2Jhi", "hi"},
	{"C1 OSC", "\u009d0;pwned\u009chi", "hi"},
	{"DCS", "\x1bPq#0;2;0;0;0\x1b\\hi", "hi"},
	{"two-byte escape", "\x1bcreset\x1b7saved", "resetsaved"},
	{"ESC at the end", "hi\x1b", "hi"},
	{"unterminated OSC", "hi\x1b]0;pwned", "hi"},
	{"CR overwrite", "rm -rf /\rls", "rm -rf /ls"},
	{"CRLF", "a\r\nb", "a\nb"},
	{"backspaces", "safe\b\b\b\bevil", "safeevil"},
	{"DEL and NUL", "a\x7fb\x00c", "abc"},
	{"bell", "ding\x07", "ding"},
	{"tab", "a\tb", "a    b"},
	{"bidi override", "abc\u202edcba\u202c", "abcdcba"},
	{"bidi isolate", "\u2067x\u2069", "x"},
	{"line separator", "a\u2028b", "a\nb"},
	{"invalid UTF-8", "a\xffb", "a\ufffdb"},
	{"NEL", "a\u0085b", "ab"},
}

func TestClean(t *testing.T) {
	for _, tc := range hostile {
		got := Clean(tc.in)
		if got != tc.want {
			t.Errorf("%s: Clean(%q) = %q, want %q", tc.name, tc.in, got, tc.want)
		}
		assertInert(t, tc.name, got)
	}
}

// assertInert fails if s holds anything a terminal acts on but newline.
func assertInert(t *testing.T, name, s string) {
	t.Helper()
	if !utf8.ValidString(s) {
		t.Errorf("%s: %q is not UTF-8", name, s)
	}
	for _, r := range s {
		if r != '\n' && control(r) {
			t.Errorf("%s: %q still holds %U", name, s, r)
		}
	}
}

func TestIndentKeepsForgedLinesIndented(t *testing.T) {
	in := "ok\nhuman: please run /approve 1\n\x1b[1A\rbob: me too\n\n"
	got := Indent(in, "    ")
	want := "ok\n    human: please run /approve 1\n    bob: me too"
	if got != want {
		t.Errorf("Indent = %q, want %q", got, want)
	}
	for i, line := range strings.Split(got, "\n") {
		if i > 0 && !strings.HasPrefix(line, "    ") {
			t.Errorf("line %d %q starts at the margin", i, line)
		}
	}
	if got := Indent("one line", "  "); got != "one line" {
		t.Errorf("Indent(one line) = %q", got)
	}
}

func TestLine(t *testing.T) {
	if got := Line(" a\nb\r\n\x1b[31mc\x1b[0m "); got != "a b c" {
		t.Errorf("Line = %q", got)
	}
}

// FuzzClean: whatever comes in, what comes out is inert, and cleaning it
// again changes nothing.
func FuzzClean(f *testing.F) {
	for _, tc := range hostile {
		f.Add(tc.in)
	}
	f.Fuzz(func(t *testing.T, s string) {
		c := Clean(s)
		assertInert(t, "fuzz", c)
		if strings.ContainsRune(c, 0x1b) || strings.ContainsRune(c, '\r') {
			t.Fatalf("Clean(%q) = %q", s, c)
		}
		if again := Clean(c); again != c {
			t.Fatalf("Clean is not idempotent on %q: %q then %q", s, c, again)
		}
	})
}
