package clip

import "unicode/utf8"

// Bytes returns s cut to at most n bytes, at a character boundary. A
// string that is not valid UTF-8 is cut at n bytes less any trailing
// partial character.
func Bytes(s string, n int) string {
	if n <= 0 {
		return ""
	}
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n]
}

// Mark is Bytes with "…" appended when s was cut; the result may be up to
// three bytes longer than n.
func Mark(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return Bytes(s, n) + "…"
}

// Runes returns s cut to at most n characters, the last of them "…" when s
// was longer: for text measured in screen cells rather than bytes.
func Runes(s string, n int) string {
	if n <= 0 {
		return ""
	}
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	r := []rune(s)
	return string(r[:n-1]) + "…"
}
