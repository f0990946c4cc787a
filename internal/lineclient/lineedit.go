package lineclient

import (
	"strings"
	"unicode"
	"unicode/utf8"
)

// maxHistory bounds the lines the line editor remembers.
const maxHistory = 500

// editEvent is what one key did to the line being edited.
type editEvent int

const (
	editNone      editEvent = iota // the line changed, or nothing happened
	editLine                       // Enter: the line is done
	editEOF                        // Ctrl-D on an empty line
	editInterrupt                  // Ctrl-C
)

// lineEditor is the state of the line being typed on a terminal: its runes,
// the cursor, and the history of the lines entered before. It only
// interprets key bytes; drawing is lineScreen's. It is not safe for
// concurrent use.
type lineEditor struct {
	buf []rune
	pos int // cursor, an index into buf

	hist    []string
	histPos int    // index into hist while browsing; len(hist) when not
	draft   []rune // the line being typed before browsing the history

	esc  []byte // an escape sequence in progress
	utf8 []byte // the first bytes of a multi-byte rune
}

// feed interprets one byte of input. On editLine it returns the line
// entered, which is added to the history when not blank and not the
// previous entry.
func (e *lineEditor) feed(b byte) (string, editEvent) {
	if e.esc != nil {
		e.escape(b)
		return "", editNone
	}
	if len(e.utf8) > 0 || b >= 0x80 {
		e.utf8 = append(e.utf8, b)
		if utf8.FullRune(e.utf8) {
			r, _ := utf8.DecodeRune(e.utf8)
			e.utf8 = e.utf8[:0]
			e.insert(r)
		} else if len(e.utf8) >= utf8.UTFMax {
			e.utf8 = e.utf8[:0]
		}
		return "", editNone
	}
	switch b {
	case '\r', '\n':
		return e.enter(), editLine
	case 0x03: // Ctrl-C
		e.buf, e.pos = e.buf[:0], 0
		e.histPos = len(e.hist)
		return "", editInterrupt
	case 0x04: // Ctrl-D: end of input on an empty line, else delete
		if len(e.buf) == 0 {
			return "", editEOF
		}
		e.deleteAt(e.pos)
	case 0x01: // Ctrl-A
		e.pos = 0
	case 0x05: // Ctrl-E
		e.pos = len(e.buf)
	case 0x02: // Ctrl-B
		e.left()
	case 0x06: // Ctrl-F
		e.right()
	case 0x7f, 0x08: // Backspace, Ctrl-H
		if e.pos > 0 {
			e.pos--
			e.deleteAt(e.pos)
		}
	case 0x15: // Ctrl-U: delete to the start of the line
		e.buf = append(e.buf[:0], e.buf[e.pos:]...)
		e.pos = 0
	case 0x0b: // Ctrl-K: delete to the end of the line
		e.buf = e.buf[:e.pos]
	case 0x17: // Ctrl-W: delete the word before the cursor
		start := e.pos
		for start > 0 && e.buf[start-1] == ' ' {
			start--
		}
		for start > 0 && e.buf[start-1] != ' ' {
			start--
		}
		e.buf = append(e.buf[:start], e.buf[e.pos:]...)
		e.pos = start
	case 0x10: // Ctrl-P
		e.older()
	case 0x0e: // Ctrl-N
		e.newer()
	case '\t':
		e.insert(' ')
	case 0x1b:
		e.esc = []byte{}
	default:
		if b >= 0x20 {
			e.insert(rune(b))
		}
	}
	return "", editNone
}

// escape takes one more byte of an escape sequence and acts on it when the
// sequence is complete: ESC [ or ESC O, then parameters, then a final byte.
func (e *lineEditor) escape(b byte) {
	e.esc = append(e.esc, b)
	if len(e.esc) == 1 {
		if b != '[' && b != 'O' {
			e.esc = nil // Alt+key: ignored
		}
		return
	}
	if b < 0x40 || b > 0x7e {
		if len(e.esc) > 16 {
			e.esc = nil // not a key we know
		}
		return
	}
	seq := string(e.esc)
	e.esc = nil
	final := b
	if final == '~' { // ESC [ n ~ (with modifiers: n;m~)
		n := seq[1 : len(seq)-1]
		for i := range len(n) {
			if n[i] == ';' {
				n = n[:i]
				break
			}
		}
		switch n {
		case "1", "7":
			e.pos = 0
		case "4", "8":
			e.pos = len(e.buf)
		case "3":
			e.deleteAt(e.pos)
		}
		return
	}
	switch final {
	case 'A':
		e.older()
	case 'B':
		e.newer()
	case 'C':
		e.right()
	case 'D':
		e.left()
	case 'H':
		e.pos = 0
	case 'F':
		e.pos = len(e.buf)
	}
}

func (e *lineEditor) left() {
	if e.pos > 0 {
		e.pos--
	}
}

func (e *lineEditor) right() {
	if e.pos < len(e.buf) {
		e.pos++
	}
}

// insert puts a printable rune at the cursor; others are dropped, so the
// line never holds anything that would steer the terminal.
func (e *lineEditor) insert(r rune) {
	if r == utf8.RuneError || !unicode.IsPrint(r) {
		return
	}
	e.buf = append(e.buf, 0)
	copy(e.buf[e.pos+1:], e.buf[e.pos:])
	e.buf[e.pos] = r
	e.pos++
}

func (e *lineEditor) deleteAt(i int) {
	if i < len(e.buf) {
		e.buf = append(e.buf[:i], e.buf[i+1:]...)
	}
}

// older shows the previous history entry (Up), keeping the line being
// typed to come back to.
func (e *lineEditor) older() {
	if e.histPos == 0 {
		return
	}
	if e.histPos == len(e.hist) {
		e.draft = append(e.draft[:0], e.buf...)
	}
	e.histPos--
	e.show([]rune(e.hist[e.histPos]))
}

// newer shows the next history entry (Down), then the line being typed.
func (e *lineEditor) newer() {
	if e.histPos >= len(e.hist) {
		return
	}
	e.histPos++
	if e.histPos == len(e.hist) {
		e.show(e.draft)
		return
	}
	e.show([]rune(e.hist[e.histPos]))
}

func (e *lineEditor) show(line []rune) {
	e.buf = append(e.buf[:0], line...)
	e.pos = len(e.buf)
}

// enter ends the line: it is returned, remembered and cleared.
func (e *lineEditor) enter() string {
	line := string(e.buf)
	if strings.TrimSpace(line) != "" && (len(e.hist) == 0 || e.hist[len(e.hist)-1] != line) {
		e.hist = append(e.hist, line)
		if len(e.hist) > maxHistory {
			e.hist = e.hist[len(e.hist)-maxHistory:]
		}
	}
	e.buf, e.pos = e.buf[:0], 0
	e.histPos = len(e.hist)
	e.draft = e.draft[:0]
	return line
}

// view returns the line as it fits in width columns after prompt: the
// part around the cursor when it is too long, and the cursor's column.
func (e *lineEditor) view(prompt string, width int) (string, int) {
	avail := width - runeWidth(prompt) - 1 // the last column stays free
	if avail < 1 {
		avail = 1
	}
	// Scroll: start at the first rune that keeps the cursor on screen.
	start := 0
	for start < e.pos && widthOf(e.buf[start:e.pos]) >= avail {
		start++
	}
	end := start
	for end < len(e.buf) && widthOf(e.buf[start:end+1]) <= avail {
		end++
	}
	return prompt + string(e.buf[start:end]), runeWidth(prompt) + widthOf(e.buf[start:e.pos])
}

// widthOf is the columns rs takes on a terminal.
func widthOf(rs []rune) int {
	n := 0
	for _, r := range rs {
		n += columns(r)
	}
	return n
}

// runeWidth is the columns s takes on a terminal.
func runeWidth(s string) int {
	return widthOf([]rune(s))
}

// columns estimates the columns a printable rune takes: none for a
// combining mark, two for East Asian wide characters and most emoji.
func columns(r rune) int {
	switch {
	case unicode.Is(unicode.Mn, r) || unicode.Is(unicode.Me, r):
		return 0
	case r >= 0x1100 && r <= 0x115f, r >= 0x2e80 && r <= 0xa4cf && r != 0x303f,
		r >= 0xac00 && r <= 0xd7a3, r >= 0xf900 && r <= 0xfaff, r >= 0xfe30 && r <= 0xfe4f,
		r >= 0xff00 && r <= 0xff60, r >= 0xffe0 && r <= 0xffe6,
		r >= 0x1f300 && r <= 0x1f64f, r >= 0x1f900 && r <= 0x1f9ff, r >= 0x20000 && r <= 0x3fffd:
		return 2
	}
	return 1
}
