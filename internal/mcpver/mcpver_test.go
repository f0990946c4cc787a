package mcpver

import (
	"slices"
	"strings"
	"testing"
)

func TestNegotiate(t *testing.T) {
	for _, v := range Supported() {
		if got := Negotiate(v); got != v {
			t.Errorf("Negotiate(%q) = %q", v, got)
		}
	}
	for _, v := range []string{"", "0.1.0", "2026-07-28", "2024-10-07", "latest"} {
		if got := Negotiate(v); got != Latest {
			t.Errorf("Negotiate(%q) = %q, want %q", v, got, Latest)
		}
	}
}

func TestAccept(t *testing.T) {
	for _, tc := range []struct{ in, want, err string }{
		{Latest, Latest, ""},
		{"2025-06-18", "2025-06-18", ""},
		{Oldest, Oldest, ""},
		{"0.1.0", Oldest, ""},
		{"1.0", Oldest, ""},
		{"2024-10-07", Oldest, ""},
		{"", "", "no protocolVersion"},
		{"2026-07-28", "", `revision "2026-07-28"`},
		{"2099-01-01", "", "mew speaks " + Latest},
	} {
		got, err := Accept(tc.in)
		if got != tc.want || (err == nil) != (tc.err == "") || (err != nil && !strings.Contains(err.Error(), tc.err)) {
			t.Errorf("Accept(%q) = %q, %v; want %q, %q", tc.in, got, err, tc.want, tc.err)
		}
	}
}

func TestSupportedIsACopy(t *testing.T) {
	s := Supported()
	s[0] = "x"
	if Supported()[0] != Latest || !slices.IsSortedFunc(Supported(), func(a, b string) int { return strings.Compare(b, a) }) {
		t.Errorf("Supported() = %v: want a fresh copy, newest first", Supported())
	}
}
