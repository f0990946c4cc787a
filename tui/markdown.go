package tui

import (
	"fmt"
	"strings"

	"github.com/mew-protocol/mew/internal/termtext"
)

// maxChatLines bounds the lines of one chat in the transcript.
const maxChatLines = 500

// markdown renders the subset of Markdown that chats use, after the text
// is cleaned of control sequences (so the only styling in the result is
// ours): **bold**, `code spans`, fenced code blocks (drawn with a bar, no
// inline marks inside), "- " / "* " / "+ " list items as bullets, and
// "# " headings in bold. Everything else stays as written, markers of an
// unclosed span included. It returns the lines, not yet wrapped; past
// maxChatLines a line says how many more there are.
func markdown(text string, st *Styles) (out []string) {
	inCode := false
	lines := strings.Split(strings.TrimRight(termtext.Clean(text), "\n"), "\n")
	if len(lines) > maxChatLines {
		defer func() {
			out = append(out, st.Dim.Render(fmt.Sprintf("… %d more lines (/verbose shows the envelope)", len(lines)-maxChatLines)))
		}()
		lines = lines[:maxChatLines]
	}
	for _, l := range lines {
		trimmed := strings.TrimSpace(l)
		if strings.HasPrefix(trimmed, "```") {
			inCode = !inCode
			continue
		}
		if inCode {
			out = append(out, st.Dim.Render("│ ")+st.Code.Render(l))
			continue
		}
		lead := l[:len(l)-len(strings.TrimLeft(l, " "))]
		switch {
		case strings.HasPrefix(trimmed, "- "), strings.HasPrefix(trimmed, "* "), strings.HasPrefix(trimmed, "+ "):
			out = append(out, lead+"• "+inline(trimmed[2:], st))
		case strings.HasPrefix(trimmed, "#"):
			h := strings.TrimLeft(trimmed, "#")
			if strings.HasPrefix(h, " ") {
				out = append(out, st.Me.Render(strings.TrimSpace(h)))
				continue
			}
			out = append(out, inline(l, st))
		default:
			out = append(out, inline(l, st))
		}
	}
	return out
}

// inline renders the code spans and bold spans of one line.
func inline(l string, st *Styles) string {
	var b strings.Builder
	for {
		i := strings.IndexByte(l, '`')
		if i < 0 {
			b.WriteString(bold(l, st))
			return b.String()
		}
		j := strings.IndexByte(l[i+1:], '`')
		if j < 0 {
			b.WriteString(bold(l, st))
			return b.String()
		}
		b.WriteString(bold(l[:i], st))
		b.WriteString(st.Code.Render(l[i+1 : i+1+j]))
		l = l[i+1+j+1:]
	}
}

// bold renders the **bold** spans of a piece of a line without code.
func bold(l string, st *Styles) string {
	var b strings.Builder
	for {
		i := strings.Index(l, "**")
		if i < 0 {
			b.WriteString(l)
			return b.String()
		}
		j := strings.Index(l[i+2:], "**")
		if j <= 0 {
			b.WriteString(l)
			return b.String()
		}
		b.WriteString(l[:i])
		b.WriteString(st.Bold.Render(l[i+2 : i+2+j]))
		l = l[i+2+j+2:]
	}
}
