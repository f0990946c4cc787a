package tui

import (
	"strings"

	tea "charm.land/bubbletea/v2"
	"github.com/charmbracelet/x/ansi"

	"github.com/mew-protocol/mew/internal/termtext"
)

// input is the editor of the input line and of the approval dialog's
// edits: the text (lines separated by '\n'), the cursor, and the history
// of submitted texts (oldest first).
type input struct {
	text    []rune
	pos     int
	history []string
	hpos    int    // index into history while browsing; len(history) when not
	draft   string // what was typed before browsing began
}

// maxHistory bounds the history kept.
const maxHistory = 500

func (in *input) value() string { return string(in.text) }

func (in *input) set(s string) {
	in.text = []rune(s)
	in.pos = len(in.text)
}

// submit returns the line and clears the editor, recording the line in the
// history.
func (in *input) submit() string {
	s := strings.TrimSpace(in.value())
	in.set("")
	if s != "" && (len(in.history) == 0 || in.history[len(in.history)-1] != s) {
		in.history = append(in.history, s)
		if len(in.history) > maxHistory {
			in.history = in.history[len(in.history)-maxHistory:]
		}
	}
	in.hpos = len(in.history)
	return s
}

// key edits the line; it reports whether the key was an editing key.
func (in *input) key(k tea.KeyPressMsg) bool {
	switch k.String() {
	case "left", "ctrl+b":
		in.pos = max(in.pos-1, 0)
	case "right":
		in.pos = min(in.pos+1, len(in.text))
	case "home", "ctrl+a":
		in.pos = in.lineStart(in.pos)
	case "end", "ctrl+e":
		in.pos = in.lineEnd(in.pos)
	case "alt+enter", "ctrl+j", "shift+enter":
		in.insertRaw([]rune{'\n'})
	case "backspace", "ctrl+h":
		if in.pos > 0 {
			in.text = append(in.text[:in.pos-1], in.text[in.pos:]...)
			in.pos--
		}
	case "delete", "ctrl+d":
		if in.pos < len(in.text) {
			in.text = append(in.text[:in.pos], in.text[in.pos+1:]...)
		}
	case "ctrl+u":
		start := in.lineStart(in.pos)
		in.text = append(in.text[:start], in.text[in.pos:]...)
		in.pos = start
	case "ctrl+k":
		in.text = append(in.text[:in.pos], in.text[in.lineEnd(in.pos):]...)
	case "ctrl+w", "alt+backspace":
		i := in.pos
		for i > 0 && (in.text[i-1] == ' ' || in.text[i-1] == '\n') {
			i--
		}
		for i > 0 && in.text[i-1] != ' ' && in.text[i-1] != '\n' {
			i--
		}
		in.text = append(in.text[:i], in.text[in.pos:]...)
		in.pos = i
	case "up":
		if !in.vertical(-1) {
			in.browse(-1)
		}
	case "down":
		if !in.vertical(1) {
			in.browse(1)
		}
	case "esc":
		in.set("")
	default:
		t := k.Key().Text
		if t == "" && k.Key().Code == tea.KeySpace {
			t = " "
		}
		if t == "" || k.Key().Mod&(tea.ModCtrl|tea.ModAlt) != 0 {
			return false
		}
		in.insert(t)
	}
	return true
}

// insert types s at the cursor, cleaned of control sequences (a paste may
// hold anything); its line breaks stay.
func (in *input) insert(s string) {
	s = strings.ReplaceAll(s, "\r\n", "\n")
	in.insertRaw([]rune(termtext.Clean(strings.ReplaceAll(s, "\r", "\n"))))
}

func (in *input) insertRaw(r []rune) {
	text := make([]rune, 0, len(in.text)+len(r))
	text = append(text, in.text[:in.pos]...)
	text = append(text, r...)
	in.text = append(text, in.text[in.pos:]...)
	in.pos += len(r)
}

// lineStart and lineEnd are the bounds of the line holding position i.
func (in *input) lineStart(i int) int {
	for i > 0 && in.text[i-1] != '\n' {
		i--
	}
	return i
}

func (in *input) lineEnd(i int) int {
	for i < len(in.text) && in.text[i] != '\n' {
		i++
	}
	return i
}

// vertical moves the cursor to the line above (d<0) or below, at the same
// column or the line's end; it reports false on the first or last line.
func (in *input) vertical(d int) bool {
	start := in.lineStart(in.pos)
	col := in.pos - start
	if d < 0 {
		if start == 0 {
			return false
		}
		prev := in.lineStart(start - 1)
		in.pos = min(prev+col, start-1)
		return true
	}
	end := in.lineEnd(in.pos)
	if end == len(in.text) {
		return false
	}
	in.pos = min(end+1+col, in.lineEnd(end+1))
	return true
}

// browse moves through the history.
func (in *input) browse(d int) {
	if in.hpos == len(in.history) {
		in.draft = in.value()
	}
	n := in.hpos + d
	if n < 0 || n > len(in.history) {
		return
	}
	in.hpos = n
	if n == len(in.history) {
		in.set(in.draft)
		return
	}
	in.set(in.history[n])
}

// view draws the text, prompt included, within width and at most rows
// lines (the cursor's line and those around it), each line scrolled so that
// the cursor shows; continuation lines are indented under the prompt. It
// returns the lines and the cursor's column and line.
func (in *input) view(prompt string, promptWidth, width, rows int) ([]string, int, int) {
	avail := max(width-promptWidth-1, 1)
	lines := strings.Split(string(in.text), "\n")
	row := strings.Count(string(in.text[:in.pos]), "\n")
	col := in.pos - in.lineStart(in.pos)
	first := 0
	if len(lines) > rows {
		first = min(max(row-rows+1, 0), len(lines)-rows)
	}
	out := make([]string, 0, min(len(lines), rows))
	cx := promptWidth
	pad := strings.Repeat(" ", promptWidth)
	for i := first; i < len(lines) && i < first+rows; i++ {
		r := []rune(lines[i])
		start := 0
		if i == row && col > avail {
			start = col - avail
		}
		shown := ansi.Truncate(string(r[start:]), avail, "")
		lead := pad
		if i == 0 {
			lead = prompt
		}
		out = append(out, lead+shown)
		if i == row {
			cx = promptWidth + ansi.StringWidth(string(r[start:col]))
		}
	}
	return out, cx, row - first
}

// rows is the number of lines the text has.
func (in *input) rows() int { return strings.Count(string(in.text), "\n") + 1 }
