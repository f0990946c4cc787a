package tui

import (
	"slices"
	"strings"
)

// envelopeWords gives the candidates for word n of an /envelope line.
type envelopeWords interface {
	candidates(words []string, n int, present []string) []string
}

// complete finishes the word before the cursor (Tab): a slash command at
// the start of the input, a participant after @. One candidate is taken
// with a space after it; several extend the word to what they share and
// are listed in the status bar.
// commands are the commands' names, present the participants, tools
// the candidates of an /envelope line.
func (p *prompt) complete(commands, present []string, tools envelopeWords) {
	in := &p.in
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
		cands = tools.candidates(words, len(words), present)
	case strings.HasPrefix(word, "/") && start == 0:
		prefix = "/"
		cands = commands
	case strings.HasPrefix(word, "@"):
		prefix = "@"
		cands = present
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
		p.hint = "no completion for " + word
		return
	case 1:
		p.replaceWord(start, prefix+match[0]+" ")
		p.hint = ""
		return
	}
	common := match[0]
	for _, c := range match[1:] {
		for !strings.HasPrefix(c, common) {
			common = common[:len(common)-1]
		}
	}
	p.replaceWord(start, prefix+common)
	p.hint = prefix + strings.Join(match, " "+prefix)
}

// replaceWord replaces the input from start to the cursor with s.
func (p *prompt) replaceWord(start int, s string) {
	in := &p.in
	rest := append([]rune(s), in.text[in.pos:]...)
	in.text = append(in.text[:start], rest...)
	in.pos = start + len([]rune(s))
}
