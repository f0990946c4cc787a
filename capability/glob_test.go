package capability

import (
	"math/rand/v2"
	"regexp"
	"strings"
	"testing"
	"unicode/utf8"
)

// naiveGlob is a second, deliberately simple implementation of the glob rules
// (segment lists compared recursively, each segment through a regular
// expression), used to check the linear-time matcher.
func naiveGlob(pattern, s string) bool {
	return naiveSegs(splitUnescaped(pattern), strings.Split(s, "/"))
}

func naiveSegs(ps, vs []string) bool {
	if len(ps) == 0 {
		return len(vs) == 0
	}
	if ps[0] == "**" {
		if naiveSegs(ps[1:], vs) {
			return true
		}
		return len(vs) > 0 && !strings.HasPrefix(vs[0], ".") && naiveSegs(ps, vs[1:])
	}
	return len(vs) > 0 && naiveSegment(ps[0], vs[0]) && naiveSegs(ps[1:], vs[1:])
}

func naiveSegment(p, v string) bool {
	if p != "" && strings.Trim(p, "*") == "" && v == "" { // only stars: one character at least

		return false
	}
	var re strings.Builder
	re.WriteString(`^(?s)`)
	for i := 0; i < len(p); i++ {
		switch c := p[i]; c {
		case '\\':
			if i+1 < len(p) {
				_, n := utf8.DecodeRuneInString(p[i+1:])
				re.WriteString(regexp.QuoteMeta(p[i+1 : i+1+n]))
				i += n
			} else {
				re.WriteString(`\\`)
			}
		case '*':
			re.WriteString(`.*`)
		case '?':
			re.WriteString(`.`)
		default:
			re.WriteString(regexp.QuoteMeta(string(c)))
		}
	}
	re.WriteString(`$`)
	if (strings.HasPrefix(p, "*") || strings.HasPrefix(p, "?")) && strings.HasPrefix(v, ".") {
		return false
	}
	return regexp.MustCompile(re.String()).MatchString(v)
}

func TestGlobAgainstNaive(t *testing.T) {
	fixed := []struct{ p, s string }{
		{"mcp/*", "mcp/request"}, {"mcp/*", "mcp/a/b"}, {"**", ""}, {"**", "a/b"}, {"**", ".a"},
		{"a/**/b/**/c", "a/x/b/y/z/c"}, {"a/**/b/**/c", "a/b/c"}, {"a/**/b/**/c", "a/.x/b/c"},
		{"**/.git/**", "x/.git/y"}, {"**/x", "x"}, {"*a*b*", "xaybz"}, {"*a*b*", "xbya"},
		{"?", "é"}, {"??", "é"}, {"a?c", "a/c"}, {"\\*", "*"}, {"\\*", "x"}, {"a\\", "a\\"},
		{"a/*/c", "a//c"}, {"a/**/c", "a//c"}, {"*", ""}, {"x*", "x"},
	}
	for _, c := range fixed {
		if got, want := compileGlob(c.p).match(c.s), naiveGlob(c.p, c.s); got != want {
			t.Errorf("glob %q on %q: got %v, naive %v", c.p, c.s, got, want)
		}
	}
	// Random patterns and strings over a small alphabet, so that matches happen.
	rng := rand.New(rand.NewPCG(1, 2))
	pick := func(alphabet []string, n int) string {
		var b strings.Builder
		for range n {
			b.WriteString(alphabet[rng.IntN(len(alphabet))])
		}
		return b.String()
	}
	pats := []string{"a", "b", ".", "/", "*", "?", "**", "\\*"}
	vals := []string{"a", "b", ".", "/", "*"}
	for range 20000 {
		p, s := pick(pats, rng.IntN(7)), pick(vals, rng.IntN(8))
		if !isGlob(p) {
			continue
		}
		if got, want := compileGlob(p).match(s), naiveGlob(p, s); got != want {
			t.Fatalf("glob %q on %q: got %v, naive %v", p, s, got, want)
		}
	}
}

func FuzzGlob(f *testing.F) {
	for _, seed := range [][2]string{{"mcp/*", "mcp/request"}, {"/public/**", "/public/a/../b"}, {"a/**/b", "a/x/y/b"}, {"*.txt", ".txt"}, {"?\\*", "x*"}} {
		f.Add(seed[0], seed[1])
	}
	f.Fuzz(func(t *testing.T, p, s string) {
		if len(p) > 64 || len(s) > 256 || strings.Count(p, "**") > 4 {
			t.Skip() // the naive matcher is exponential
		}
		if !utf8.ValidString(p) || !utf8.ValidString(s) {
			t.Skip() // patterns and values come from validated JSON
		}
		if !isGlob(p) {
			return
		}
		if got, want := compileGlob(p).match(s), naiveGlob(p, s); got != want {
			t.Fatalf("glob %q on %q: got %v, naive %v", p, s, got, want)
		}
	})
}

// Many globstars against a long path stay fast: the matcher backtracks only to
// the latest globstar.
func TestGlobNoExponentialBacktracking(t *testing.T) {
	p := strings.Repeat("**/a/", 20) + "b"
	s := strings.Repeat("a/", 5000) + "c"
	g := compileGlob(p)
	if g.match(s) {
		t.Fatal("should not match")
	}
	res := testing.Benchmark(func(b *testing.B) {
		for b.Loop() {
			g.match(s)
		}
	})
	if res.NsPerOp() > int64(200e6) {
		t.Errorf("match took %v per call", res.NsPerOp())
	}
}
