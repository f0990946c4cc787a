package cluster

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"
)

func TestKeys(t *testing.T) {
	for _, k := range []string{GrantKey("a", "g"), InviteKey("p.q"), ControlKey("x y"), StreamKey("s*"), FloorKey("m>"), AliasKey("c 1")} {
		if err := CheckKey(k); err != nil {
			t.Errorf("%q: %v", k, err)
		}
	}
	if KeyKind(GrantKey("a", "g")) != "grant" || KeyKind(FloorKey("m")) != "floor" {
		t.Error("KeyKind")
	}
	long := strings.Repeat("a", MaxNameLen+1)
	for _, k := range []string{"", "/", "a/", "/a", "a//b", long, "a\x00b", string([]byte{0xc3}), strings.Repeat("ab/", 400) + "c"} {
		if err := CheckKey(k); !errors.Is(err, ErrInvalid) {
			t.Errorf("CheckKey(%.20q): %v, want ErrInvalid", k, err)
		}
	}
}

func TestRecordsRoundTrip(t *testing.T) {
	at := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	g := Grant{ID: "g1", To: "agent", From: "human", At: at, Capabilities: []json.RawMessage{json.RawMessage(`{"kind":"chat"}`)},
		Session: true, Links: []GrantLink{{Pattern: json.RawMessage(`{"kind":"*"}`), Grant: "g0"}}}
	b, err := Encode(g)
	if err != nil {
		t.Fatal(err)
	}
	g2, err := DecodeGrant(b)
	if err != nil || g2.ID != g.ID || !g2.At.Equal(at) || string(g2.Capabilities[0]) != `{"kind":"chat"}` || !g2.Expires.IsZero() ||
		!g2.Session || len(g2.Links) != 1 || g2.Links[0].Grant != "g0" {
		t.Fatalf("%+v %v", g2, err)
	}
	// A grant's provenance must hold together: one link per capability,
	// not to itself, a link either a parent or the entry level.
	for name, bad := range map[string]Grant{
		"no links":     {ID: "g1", To: "agent", From: "human", Capabilities: g.Capabilities},
		"to itself":    {ID: "g1", To: "human", From: "human", Capabilities: g.Capabilities, Links: g.Links},
		"empty link":   {ID: "g1", To: "agent", From: "human", Capabilities: g.Capabilities, Links: []GrantLink{{}}},
		"both":         {ID: "g1", To: "agent", From: "human", Capabilities: g.Capabilities, Links: []GrantLink{{Pattern: g.Links[0].Pattern, Grant: "g0", Entry: true}}},
		"parent slash": {ID: "g1", To: "agent", From: "human", Capabilities: g.Capabilities, Links: []GrantLink{{Pattern: g.Links[0].Pattern, Grant: "a/b"}}},
	} {
		b, _ := Encode(bad)
		if _, err := DecodeGrant(b); !errors.Is(err, ErrInvalid) {
			t.Errorf("%s: %v", name, err)
		}
	}
	inv := Invite{Participant: "guest", From: "human", TokenHash: make([]byte, 32)}
	if b, err = Encode(inv); err != nil {
		t.Fatal(err)
	}
	if _, err := DecodeInvite(b); err != nil {
		t.Fatal(err)
	}
	inv.TokenHash = []byte("short")
	b, _ = Encode(inv)
	if _, err := DecodeInvite(b); !errors.Is(err, ErrInvalid) {
		t.Errorf("a short token hash: %v", err)
	}
	if b, err = Encode(Alias{ID: "client-7", Participant: "alice"}); err != nil {
		t.Fatal(err)
	}
	if a, err := DecodeAlias(b); err != nil || a.ID != "client-7" || a.Participant != "alice" {
		t.Fatalf("%+v %v", a, err)
	}
	if _, err := DecodeAlias([]byte(`{"id":"a/b","participant":"alice"}`)); !errors.Is(err, ErrInvalid) {
		t.Errorf("an alias with a slash: %v", err)
	}
	c := Control{Participant: "p", PausedUntil: -1}
	b, _ = Encode(c)
	if _, err := DecodeControl(b); !errors.Is(err, ErrInvalid) {
		t.Errorf("a negative pause: %v", err)
	}
	if _, err := Encode(Stream{ID: "s", Request: json.RawMessage(`"` + strings.Repeat("x", MaxValueLen) + `"`)}); !errors.Is(err, ErrInvalid) {
		t.Errorf("an oversized record encoded: %v", err)
	}
}

func TestBeats(t *testing.T) {
	a := Claim{ID: "a", StartedAt: 10}
	b := Claim{ID: "b", StartedAt: 10}
	c := Claim{ID: "0", StartedAt: 11}
	if !a.Beats(b) || b.Beats(a) || !b.Beats(c) || c.Beats(a) || a.Beats(a) {
		t.Error("earliest start, then the smaller id")
	}
}

// FuzzDecode feeds every decoder what another node could have written: an
// error or a record, never a panic, and a record it accepts encodes again.
func FuzzDecode(f *testing.F) {
	for _, s := range []string{`{"participant":"p","node":"n","conn":"c"}`, `{"id":"g","to":"a","from":"b"}`,
		`{"holder":"h","id":"i","started_at":1}`, `null`, `{}`, `[`, `{"participant":"p","paused_until":-5}`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		if m, err := DecodeMember(b); err == nil {
			if _, err := Encode(m); err != nil && !errors.Is(err, ErrInvalid) {
				t.Fatal(err)
			}
		}
		_, _ = DecodeGrant(b)
		_, _ = DecodeInvite(b)
		_, _ = DecodeControl(b)
		_, _ = DecodeStream(b)
		_, _ = DecodeClaim(b)
	})
}
