package termtext

import (
	"strings"
	"unicode/utf8"
)

// tab replaces a tab: its width would otherwise depend on the column.
const tab = "    "

// Clean returns s with everything that could steer a terminal removed:
// escape sequences as a whole (CSI, OSC, DCS and the other string
// sequences up to their terminator, and two-byte escapes), the other C0
// controls but newline, DEL, the C1 controls, and the Unicode bidi
// embeddings, overrides and isolates (U+202A–U+202E, U+2066–U+2069). A
// carriage return is removed (it would let later text overwrite earlier);
// a tab becomes spaces; U+2028 and U+2029 become newlines; bytes that are
// not UTF-8 become U+FFFD. Newlines are kept.
func Clean(s string) string {
	if safe(s) {
		return s
	}
	var b strings.Builder
	b.Grow(len(s))
	for i := 0; i < len(s); {
		r, size := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && size == 1:
			b.WriteRune(utf8.RuneError)
		case r == 0x1b: // ESC
			i += escapeLen(s[i+1:])
		case r == 0x9b: // C1 CSI
			i += csiLen(s[i+size:])
		case r == 0x90 || r == 0x98 || r == 0x9d || r == 0x9e || r == 0x9f: // C1 DCS, SOS, OSC, PM, APC
			i += stringLen(s[i+size:])
		case r == '\n':
			b.WriteByte('\n')
		case r == '\t':
			b.WriteString(tab)
		case r == '\u2028' || r == '\u2029':
			b.WriteByte('\n')
		case control(r):
			// dropped
		default:
			b.WriteString(s[i : i+size])
		}
		i += size
	}
	return b.String()
}

// Line returns Clean(s) on one line: each line break becomes a space, and
// spaces at either end are trimmed. It is for short values printed inside
// a line, such as ids, tool names and reasons.
func Line(s string) string {
	return strings.TrimSpace(strings.ReplaceAll(Clean(s), "\n", " "))
}

// Indent returns Clean(s) with every line after the first prefixed by
// indent, so that no line of s starts at the left margin where the
// program's own lines (such as "alice: ...") start. Line breaks at the end
// of s are dropped. indent should not be empty.
func Indent(s, indent string) string {
	c := strings.TrimRight(Clean(s), "\n")
	if !strings.Contains(c, "\n") {
		return c
	}
	return strings.ReplaceAll(c, "\n", "\n"+indent)
}

// safe reports whether s is printable as it is: ASCII from space to '~'
// and newlines only, the common case.
func safe(s string) bool {
	for i := 0; i < len(s); i++ {
		if c := s[i]; (c < 0x20 && c != '\n') || c > 0x7e {
			return false
		}
	}
	return true
}

// control reports whether r is a C0 or C1 control, DEL, or a bidi
// embedding, override or isolate.
func control(r rune) bool {
	return r < 0x20 || (r >= 0x7f && r <= 0x9f) ||
		(r >= 0x202a && r <= 0x202e) || (r >= 0x2066 && r <= 0x2069)
}

// escapeLen returns how many bytes of rest (what follows an ESC) belong to
// the escape sequence.
func escapeLen(rest string) int {
	if rest == "" {
		return 0
	}
	switch rest[0] {
	case '[':
		return 1 + csiLen(rest[1:])
	case ']', 'P', 'X', '^', '_': // OSC, DCS, SOS, PM, APC: a string up to its terminator
		return 1 + stringLen(rest[1:])
	}
	n := 0
	for n < len(rest) && rest[n] >= 0x20 && rest[n] <= 0x2f { // intermediates
		n++
	}
	if n < len(rest) && rest[n] >= 0x30 && rest[n] <= 0x7e { // final
		n++
	}
	return n
}

// csiLen returns the length of a control sequence's parameters,
// intermediates and final byte. A sequence broken by another byte ends
// there; that byte is not part of it.
func csiLen(rest string) int {
	n := 0
	for n < len(rest) && rest[n] >= 0x20 && rest[n] <= 0x3f {
		n++
	}
	if n < len(rest) && rest[n] >= 0x40 && rest[n] <= 0x7e {
		n++
	}
	return n
}

// stringLen returns the length of a control string and its terminator:
// BEL, ESC \ or the C1 ST; an unterminated string runs to the end.
func stringLen(rest string) int {
	for i := 0; i < len(rest); i++ {
		switch {
		case rest[i] == 0x07:
			return i + 1
		case rest[i] == 0x1b:
			if i+1 < len(rest) && rest[i+1] == '\\' {
				return i + 2
			}
			return i // a new escape ends the string; it is handled on its own
		case rest[i] == 0xc2 && i+1 < len(rest) && rest[i+1] == 0x9c: // U+009C ST
			return i + 2
		}
	}
	return len(rest)
}
