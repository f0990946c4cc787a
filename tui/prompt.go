package tui

import tea "charm.land/bubbletea/v2"

// prompt is the input line at the bottom of the screen: the text typed,
// its history, and the completions offered (in the status bar until the
// next key). It owns them and takes the keys the root does not.
type prompt struct {
	in   input
	hint string // completions offered, in the status bar until the next key
}

// key edits the input with k.
func (p *prompt) key(k tea.KeyPressMsg) {
	p.hint = ""
	p.in.key(k)
}

// submit takes the line typed, into the history, and empties the input.
func (p *prompt) submit() string {
	p.hint = ""
	return p.in.submit()
}

func newPrompt(history []string) prompt {
	return prompt{in: input{history: append([]string(nil), history...), hpos: len(history)}}
}

// history is the lines submitted, oldest first, the seeded ones included.
func (p *prompt) history() []string { return append([]string(nil), p.in.history...) }

// set replaces the text typed with s.
func (p *prompt) set(s string) { p.in.set(s) }

// empty reports whether nothing is typed.
func (p *prompt) empty() bool { return len(p.in.text) == 0 }

// paste inserts pasted text at the cursor.
func (p *prompt) paste(s string) { p.in.insert(s) }

// rows is the number of lines the text typed takes, at most most.
func (p *prompt) rows(most int) int { return min(p.in.rows(), most) }

// view draws the input, prompt first, width columns wide, at most rows
// lines, and returns where its cursor is.
func (p *prompt) view(prompt string, promptWidth, width, rows int) ([]string, int, int) {
	return p.in.view(prompt, promptWidth, width, rows)
}

// offered is the completions offered, for the status bar.
func (p *prompt) offered() string { return p.hint }
