package tui

import (
	"slices"
	"strings"
)

// complete finishes the word before the cursor (Tab): a slash command at
// the start of the input, a participant after @. One candidate is taken
// with a space after it; several extend the word to what they share and
// are listed in the status bar.
func (m *Model) complete() {
	in := &m.in
	start := in.pos
	for start > 0 && in.text[start-1] != ' ' && in.text[start-1] != '\n' {
		start--
	}
	word := string(in.text[start:in.pos])
	var cands []string
	var prefix string
	words := strings.Fields(string(in.text[:start]))
	switch {
	case len(words) > 0 && words[0] == "/envelope" && start > 0:
		cands = m.envelopeCandidates(words, len(words))
	case strings.HasPrefix(word, "/") && start == 0:
		prefix = "/"
		for _, c := range allCommands() {
			cands = append(cands, c.name)
		}
	case strings.HasPrefix(word, "@"):
		prefix = "@"
		cands = sortedKeys(m.roster)
	default:
		return
	}
	stem := strings.TrimPrefix(word, prefix)
	var match []string
	for _, c := range cands {
		if strings.HasPrefix(c, stem) {
			match = append(match, c)
		}
	}
	slices.Sort(match)
	match = slices.Compact(match)
	switch len(match) {
	case 0:
		m.hint = "no completion for " + word
		return
	case 1:
		m.replaceWord(start, prefix+match[0]+" ")
		m.hint = ""
		return
	}
	common := match[0]
	for _, c := range match[1:] {
		for !strings.HasPrefix(c, common) {
			common = common[:len(common)-1]
		}
	}
	m.replaceWord(start, prefix+common)
	m.hint = prefix + strings.Join(match, " "+prefix)
}

// replaceWord replaces the input from start to the cursor with s.
func (m *Model) replaceWord(start int, s string) {
	in := &m.in
	rest := append([]rune(s), in.text[in.pos:]...)
	in.text = append(in.text[:start], rest...)
	in.pos = start + len([]rune(s))
}
