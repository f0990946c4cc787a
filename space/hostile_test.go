package space

import (
	"errors"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// billionLaughs builds the classic alias bomb: each level lists the
// previous one nine times, so the last expands to 9^levels strings.
func billionLaughs(levels int) string {
	var b strings.Builder
	b.WriteString("space: {id: s}\nx0: &x0 [lol, lol, lol, lol, lol, lol, lol, lol, lol]\n")
	for i := 1; i <= levels; i++ {
		prev := "*x" + strconv.Itoa(i-1)
		b.WriteString("x" + strconv.Itoa(i) + ": &x" + strconv.Itoa(i) + " [" + strings.Repeat(prev+", ", 8) + prev + "]\n")
	}
	b.WriteString("participants:\n  p:\n    capabilities: [{kind: chat, payload: {bomb: *x" + strconv.Itoa(levels) + "}}]\n")
	return b.String()
}

func TestHostileInputs(t *testing.T) {
	garbage := make([]byte, 64<<10)
	r := rand.New(rand.NewPCG(1, 2))
	for i := range garbage {
		garbage[i] = byte(r.Uint32())
	}
	bigString := "space: {id: s}\nbig: &big \"" + strings.Repeat("x", 1<<20) + "\"\nlist: [" + strings.Repeat("*big, ", 19) + "*big]\n"

	tests := []struct {
		name string
		data string
		want string // substring of the message
	}{
		{"binary garbage", string(garbage), "space.yaml"},
		{"NUL bytes", "space: {id: s}\n\x00\x00\x00", "invalid YAML"},
		{"5 MiB file", "space: {id: s}\n#" + strings.Repeat("x", 5<<20), "larger than 4194304 bytes"},
		{"billion laughs", billionLaughs(9), "document expands to more than"},
		{"alias of a huge string", bigString, "document expands to more than 8388608 bytes"},
		{"10,000-deep flow lists", "space: {id: s}\nx: " + strings.Repeat("[", 10000) + strings.Repeat("]", 10000) + "\n", "nested more than 64 levels deep"},
		{"10,000-deep flow mappings", "space: {id: s}\nx: " + strings.Repeat("{a: ", 10000) + "1" + strings.Repeat("}", 10000) + "\n", "nested more than 64 levels deep"},
		{"10,001-deep flow lists", "space: {id: s}\nx: " + strings.Repeat("[", 10001) + strings.Repeat("]", 10001) + "\n", "invalid YAML: exceeded max depth"},
		{"200-deep block mappings", "space: {id: s}\n" + deepBlock(200), "nested more than 64 levels deep"},
		{"deep through aliases", "space: {id: s}\na: &a " + strings.Repeat("[", 40) + strings.Repeat("]", 40) + "\nb: " + strings.Repeat("[", 30) + "*a" + strings.Repeat("]", 30) + "\n", "nested more than 64 levels deep"},
		{"self-referential merge", "space: {id: s}\np: &p {<<: *p}\n", "alias *p refers to a node that contains it"},
		{"tab-indented", "space:\n\tid: s\nparticipants:\n\thelper:\n\t\tcommand: x\n", "found character that cannot start any token"},
		{"participants a list", "space: {id: s}\nparticipants: [a, b]\n", "participants: want a mapping, got a list"},
		{"capabilities a string", "space: {id: s}\nparticipants: {a: {capabilities: \"chat\"}}\n", "participants.a.capabilities: want a list of capabilities"},
		{"non-string map key", "space: {id: s}\nparticipants: {[a]: {}}\n", "participants: want a string key, got a list"},
		{"two million tiny nodes", "space: {id: s}\nx: [" + strings.Repeat("1,", 2<<20-20) + "1]\n", "too complex"},
		{"many documents", strings.Repeat("---\na: 1\n", 10000), "more than one YAML document"},
		{"long key", "space: {id: s}\nparticipants:\n  " + strings.Repeat("k", 1000) + ": {}\n", "longer than 256 bytes"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			start := time.Now()
			c, err := Parse([]byte(tt.data), "")
			elapsed := time.Since(start)
			if err == nil {
				t.Fatalf("no error; got %+v", c)
			}
			var ce *ConfigError
			if !errors.As(err, &ce) {
				t.Fatalf("error %T %q is not a *ConfigError", err, err)
			}
			if !strings.Contains(err.Error(), tt.want) {
				t.Errorf("error %q does not contain %q", err, tt.want)
			}
			if len(err.Error()) > 500 {
				t.Errorf("error message is %d bytes long", len(err.Error()))
			}
			if elapsed > 2*time.Second {
				t.Errorf("took %v", elapsed)
			}
		})
	}
}

func deepBlock(levels int) string {
	var b strings.Builder
	for i := range levels {
		b.WriteString(strings.Repeat(" ", i) + "k:\n")
	}
	return b.String()
}

func TestDepthLimitBoundary(t *testing.T) {
	// The top mapping is level 1, so 63 more lists make 64 levels.
	ok := "space: {id: s}\nx: " + strings.Repeat("[", maxDepth-1) + strings.Repeat("]", maxDepth-1) + "\n"
	if _, err := Parse([]byte(ok), ""); err != nil {
		t.Errorf("64 levels: %v", err)
	}
	deep := "space: {id: s}\nx: " + strings.Repeat("[", maxDepth) + strings.Repeat("]", maxDepth) + "\n"
	if _, err := Parse([]byte(deep), ""); err == nil || !strings.Contains(err.Error(), "nested more than 64 levels deep") {
		t.Errorf("65 levels: %v", err)
	}
}

// TestManyLongUnknownKeys: unknown keys are warnings, each compared with
// the known ones for a suggestion; thousands of long ones cost little,
// and each is listed once, clipped, without a suggestion.
func TestManyLongUnknownKeys(t *testing.T) {
	var b strings.Builder
	b.WriteString("space: {id: s}\nparticipants:\n  p:\n")
	for i := range 3000 {
		b.WriteString("    " + strings.Repeat("command", 140) + strconv.Itoa(i) + ": x\n")
	}
	start := time.Now()
	c, err := Parse([]byte(b.String()), "")
	if err != nil {
		t.Fatal(err)
	}
	if d := time.Since(start); d > 2*time.Second {
		t.Errorf("took %v", d)
	}
	if len(c.Unknown) != 3000 || len(c.DidYouMean) != 0 || len(c.Unknown[0]) > 200 {
		t.Errorf("%d unknown keys (the first %d bytes), %d suggestions", len(c.Unknown), len(c.Unknown[0]), len(c.DidYouMean))
	}
}

func TestModestAliasesAllowed(t *testing.T) {
	// Reuse that stays within the limits is fine.
	if _, err := Parse([]byte(billionLaughs(4)), ""); err != nil { // 9^5 = 59,049 strings
		t.Errorf("small alias expansion refused: %v", err)
	}
}

func TestLoadTooLarge(t *testing.T) {
	path := filepath.Join(t.TempDir(), "space.yaml")
	if err := os.WriteFile(path, []byte("space: {id: s}\n#"+strings.Repeat("x", 5<<20)), 0o644); err != nil {
		t.Fatal(err)
	}
	_, err := Load(path)
	var ce *ConfigError
	if !errors.As(err, &ce) || !strings.Contains(err.Error(), "larger than") {
		t.Errorf("Load of a 5 MiB file: %v", err)
	}
}

func TestReservedParticipantIDs(t *testing.T) {
	for _, id := range []string{"system:gateway", "gateway", "System:Gateway", "system:anything"} {
		if err := ValidParticipantID(id); !errors.Is(err, ErrInvalidParticipantID) || !strings.Contains(err.Error(), "reserved") {
			t.Errorf("ValidParticipantID(%q) = %v, want reserved", id, err)
		}
	}
}
