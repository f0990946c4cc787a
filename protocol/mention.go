package protocol

import "strings"

// Mentions reports whether text holds "@name" not followed by more of a
// participant id: what follows, past any '.' and '-' (punctuation ending a
// sentence), is the end of the text or a character that cannot be in an id.
// So "@calc." and "@calc, add" mention calc; "@calculator" does not.
func Mentions(text, name string) bool {
	if name == "" {
		return false
	}
	at := "@" + name
	for i := 0; ; {
		j := strings.Index(text[i:], at)
		if j < 0 {
			return false
		}
		end := i + j + len(at)
		for end < len(text) && (text[end] == '.' || text[end] == '-') { // punctuation after the name
			end++
		}
		if end == len(text) || !isIDChar(text[end]) {
			return true
		}
		i = i + j + 1
	}
}

// isIDChar reports whether c may continue a participant id.
func isIDChar(c byte) bool {
	return c == '-' || c == '_' || c == '.' || c >= '0' && c <= '9' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z'
}
