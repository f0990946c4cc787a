package tui

import (
	"fmt"
	"strings"

	tea "charm.land/bubbletea/v2"
	"github.com/charmbracelet/x/ansi"

	"github.com/mew-protocol/mew/internal/termtext"
)

// finding is a search of the transcript: the text sought, the lines that
// hold it (counted from the transcript's top) and the one shown.
type finding struct {
	q    string
	hits []int
	cur  int
}

// cmdFind is /find TEXT: the transcript's lines holding TEXT (any case),
// the latest shown first; n and N move between them while the input is
// empty, Esc ends the search. /find alone ends it too.
func (m *Model) cmdFind(args []string) tea.Cmd {
	q := strings.Join(args, " ")
	m.find = finding{}
	if q == "" {
		return nil
	}
	lq := strings.ToLower(q)
	rc := m.renderCtx()
	n := 0
	var hits []int
	for _, e := range m.tr.entries {
		for _, l := range e.lines(rc) {
			if strings.Contains(strings.ToLower(ansi.Strip(l)), lq) {
				hits = append(hits, n)
			}
			n++
		}
	}
	if len(hits) == 0 {
		m.note("no line holds "+termtext.Line(q), true)
		return nil
	}
	m.find = finding{q: q, hits: hits, cur: len(hits) - 1}
	m.showHit()
	return nil
}

// findKey moves between the hits (n: older, N: newer) or ends the search
// (Esc); it reports whether it took the key.
func (m *Model) findKey(k tea.KeyPressMsg) bool {
	if m.find.q == "" || m.in.value() != "" {
		return false
	}
	switch k.String() {
	case "n":
		m.find.cur = (m.find.cur + len(m.find.hits) - 1) % len(m.find.hits)
	case "N", "shift+n":
		m.find.cur = (m.find.cur + 1) % len(m.find.hits)
	case "esc":
		m.find = finding{}
		return true
	default:
		return false
	}
	m.showHit()
	return true
}

// showHit scrolls so that the current hit is in the middle of the
// transcript's view.
func (m *Model) showHit() {
	line := m.find.hits[m.find.cur]
	m.tr.offset = m.tr.total(m.renderCtx()) - 1 - line - m.viewHeight()/2
	m.clampOffset()
}

// highlight marks the occurrences of the search in a drawn line; such a
// line loses its other colours.
func (m *Model) highlight(l string) string {
	if m.find.q == "" {
		return l
	}
	plain := ansi.Strip(l)
	lower, lq := strings.ToLower(plain), strings.ToLower(m.find.q)
	if !strings.Contains(lower, lq) || len(lower) != len(plain) {
		return l // a case change that moved bytes: left unmarked
	}
	var b strings.Builder
	for {
		i := strings.Index(lower, lq)
		if i < 0 {
			b.WriteString(plain)
			return b.String()
		}
		b.WriteString(plain[:i])
		b.WriteString(m.st.Match.Render(plain[i : i+len(lq)]))
		plain, lower = plain[i+len(lq):], lower[i+len(lq):]
	}
}

// findStatus is the search's part of the status bar.
func (m *Model) findStatus() string {
	if m.find.q == "" {
		return ""
	}
	return fmt.Sprintf("find %q %d/%d · n/N Esc", termtext.Line(m.find.q), len(m.find.hits)-m.find.cur, len(m.find.hits))
}
