package clip

import (
	"strings"
	"testing"
	"unicode/utf8"
)

func TestBytes(t *testing.T) {
	for _, c := range []struct {
		in   string
		n    int
		want string
	}{
		{"hello", 10, "hello"},
		{"hello", 5, "hello"},
		{"hello", 3, "hel"},
		{"héllo", 2, "h"}, // é is two bytes: not split
		{"héllo", 3, "hé"},
		{"日本語", 4, "日"},
		{"日本語", 0, ""},
		{"abc", -1, ""},
	} {
		if got := Bytes(c.in, c.n); got != c.want {
			t.Errorf("Bytes(%q, %d) = %q, want %q", c.in, c.n, got, c.want)
		}
	}
	if got := Mark("héllo world", 3); got != "hé…" {
		t.Errorf("Mark = %q", got)
	}
	if got := Mark("short", 10); got != "short" {
		t.Errorf("Mark = %q", got)
	}
	for n := range 20 {
		if got := Bytes(strings.Repeat("€x", 5), n); !utf8.ValidString(got) || len(got) > n {
			t.Errorf("Bytes(_, %d) = %q", n, got)
		}
	}
}

func TestRunes(t *testing.T) {
	for _, c := range []struct {
		in   string
		n    int
		want string
	}{
		{"hello", 5, "hello"},
		{"hello!", 5, "hell…"},
		{"日本語です", 3, "日本…"},
		{"ab", 1, "a"[:0] + "…"},
		{"ab", 0, ""},
	} {
		if got := Runes(c.in, c.n); got != c.want {
			t.Errorf("Runes(%q, %d) = %q, want %q", c.in, c.n, got, c.want)
		}
	}
}
