package mcpver

import (
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

func TestNegotiate(t *testing.T) {
	for _, v := range Sessions() {
		if got := Negotiate(v); got != v {
			t.Errorf("Negotiate(%q) = %q", v, got)
		}
	}
	// initialize never agrees to a stateless revision, nor to one mew does
	// not speak.
	for _, v := range []string{"", "0.1.0", Stateless, "2099-01-01", "2024-10-07", "latest"} {
		if got := Negotiate(v); got != LatestSession {
			t.Errorf("Negotiate(%q) = %q, want %q", v, got, LatestSession)
		}
	}
}

func TestAccept(t *testing.T) {
	for _, tc := range []struct{ in, want, err string }{
		{LatestSession, LatestSession, ""},
		{"2025-06-18", "2025-06-18", ""},
		{"2025-03-26", "2025-03-26", ""},
		{Oldest, Oldest, ""},
		{"0.1.0", Oldest, ""},
		{"1.0", Oldest, ""},
		{"2024-10-07", Oldest, ""},
		{"", "", "no protocolVersion"},
		{Stateless, "", `"2026-07-28", a stateless revision, which has no initialize`},
		{"2099-01-01", "", `revision "2099-01-01", which mew does not (mew speaks ` + strings.Join(Supported(), ", ")},
	} {
		got, err := Accept(tc.in)
		if got != tc.want || (err == nil) != (tc.err == "") || (err != nil && (!strings.Contains(err.Error(), tc.err) || !errors.Is(err, ErrUnsupported))) {
			t.Errorf("Accept(%q) = %q, %v; want %q, %q", tc.in, got, err, tc.want, tc.err)
		}
	}
}

func TestDiscover(t *testing.T) {
	for _, tc := range []struct {
		offered []string
		want    string
		ok      bool
	}{
		{[]string{Stateless, LatestSession}, Stateless, true},
		{[]string{"2099-01-01", Stateless}, Stateless, true},
		{[]string{LatestSession}, "", false},
		{[]string{"2099-01-01"}, "", false},
		{nil, "", false},
	} {
		if got, ok := Discover(tc.offered); got != tc.want || ok != tc.ok {
			t.Errorf("Discover(%q) = %q, %v", tc.offered, got, ok)
		}
	}
	err := Refusal([]string{"2099-01-01"})
	if !errors.Is(err, ErrUnsupported) || !strings.Contains(err.Error(), `only "2099-01-01"; mew speaks 2026-07-28, 2025-11-25`) {
		t.Errorf("Refusal: %v", err)
	}
}

func TestSupported(t *testing.T) {
	s := Supported()
	s[0] = "x"
	if Supported()[0] != Latest || !slices.IsSortedFunc(Supported(), func(a, b string) int { return strings.Compare(b, a) }) {
		t.Errorf("Supported() = %v: want a fresh copy, newest first", Supported())
	}
	if got := Sessions(); slices.ContainsFunc(got, IsStateless) || len(got) != len(Supported())-1 {
		t.Errorf("Sessions() = %v", got)
	}
	// The go-sdk carries every exchange: it must know each revision mew
	// speaks (a go-sdk upgrade that dropped one fails here).
	for _, v := range Supported() {
		if !slices.Contains(mcp.SupportedProtocolVersions(), v) {
			t.Errorf("the go-sdk does not speak %s", v)
		}
	}
}
