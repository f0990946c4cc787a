package tui

import (
	"strings"

	tea "charm.land/bubbletea/v2"
	"github.com/charmbracelet/x/ansi"

	"github.com/mew-protocol/mew/internal/termtext"
)

// input is the one-line editor: the text, the cursor, and the history of
// submitted lines (oldest first).
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
	case "right", "ctrl+f":
		in.pos = min(in.pos+1, len(in.text))
	case "home", "ctrl+a":
		in.pos = 0
	case "end", "ctrl+e":
		in.pos = len(in.text)
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
		in.text = in.text[in.pos:]
		in.pos = 0
	case "ctrl+k":
		in.text = in.text[:in.pos]
	case "ctrl+w", "alt+backspace":
		i := in.pos
		for i > 0 && in.text[i-1] == ' ' {
			i--
		}
		for i > 0 && in.text[i-1] != ' ' {
			i--
		}
		in.text = append(in.text[:i], in.text[in.pos:]...)
		in.pos = i
	case "up":
		in.browse(-1)
	case "down":
		in.browse(1)
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

// insert types s at the cursor; line breaks become spaces.
func (in *input) insert(s string) {
	s = strings.ReplaceAll(termtext.Clean(s), "\n", " ") // a paste may hold anything
	r := []rune(s)
	text := make([]rune, 0, len(in.text)+len(r))
	text = append(text, in.text[:in.pos]...)
	text = append(text, r...)
	in.text = append(text, in.text[in.pos:]...)
	in.pos += len(r)
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

// view draws the line, prompt included, within width, scrolled so that the
// cursor shows; it returns the line and the cursor's column.
func (in *input) view(prompt string, promptWidth, width int) (string, int) {
	avail := max(width-promptWidth-1, 1)
	start := 0
	if in.pos > avail {
		start = in.pos - avail
	}
	shown := string(in.text[start:])
	shown = ansi.Truncate(shown, avail, "")
	return prompt + shown, promptWidth + ansi.StringWidth(string(in.text[start:in.pos]))
}
