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
// rc draws the lines, and height is the view's.
func (t *transcript) cmdFind(args []string, rc *renderCtx, height int) tea.Cmd {
	q := strings.Join(args, " ")
	t.find = finding{}
	if q == "" {
		return nil
	}
	lq := strings.ToLower(q)
	n := 0
	var hits []int
	for _, e := range t.entries {
		for _, l := range e.lines(rc) {
			if strings.Contains(strings.ToLower(ansi.Strip(l)), lq) {
				hits = append(hits, n)
			}
			n++
		}
	}
	if len(hits) == 0 {
		t.e.note("no line holds "+termtext.Line(q), true)
		return nil
	}
	t.find = finding{q: q, hits: hits, cur: len(hits) - 1}
	t.showHit(rc, height)
	return nil
}

// findKey moves between the hits (n: older, N: newer) or ends the search
// (Esc), while the input is empty; it reports whether it took the key.
func (t *transcript) findKey(k tea.KeyPressMsg, inputEmpty bool, rc *renderCtx, height int) bool {
	if t.find.q == "" || !inputEmpty {
		return false
	}
	switch k.String() {
	case "n":
		t.find.cur = (t.find.cur + len(t.find.hits) - 1) % len(t.find.hits)
	case "N", "shift+n":
		t.find.cur = (t.find.cur + 1) % len(t.find.hits)
	case "esc":
		t.find = finding{}
		return true
	default:
		return false
	}
	t.showHit(rc, height)
	return true
}

// showHit scrolls so that the current hit is in the middle of a view of
// height lines.
func (t *transcript) showHit(rc *renderCtx, height int) {
	line := t.find.hits[t.find.cur]
	t.offset = t.total(rc) - 1 - line - height/2
	t.clamp(height, rc)
}

// highlight marks the occurrences of the search in a drawn line; such a
// line loses its other colours.
func (t *transcript) highlight(l string) string {
	if t.find.q == "" {
		return l
	}
	plain := ansi.Strip(l)
	lower, lq := strings.ToLower(plain), strings.ToLower(t.find.q)
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
		b.WriteString(t.e.st.Match.Render(plain[i : i+len(lq)]))
		plain, lower = plain[i+len(lq):], lower[i+len(lq):]
	}
}

// findStatus is the search's part of the status bar.
func (t *transcript) findStatus() string {
	if t.find.q == "" {
		return ""
	}
	return fmt.Sprintf("find %q %d/%d · n/N Esc", termtext.Line(t.find.q), len(t.find.hits)-t.find.cur, len(t.find.hits))
}

// showRaw reports whether every envelope is shown as JSON too.
func (t *transcript) showRaw() bool { return t.verbose }

// showThoughts reports whether reasonings show their latest thoughts.
func (t *transcript) showThoughts() bool { return t.thoughts }

// cmdVerbose is /verbose: every envelope shown as JSON too, or not.
func (t *transcript) cmdVerbose([]string) tea.Cmd {
	t.verbose = !t.verbose
	if t.verbose {
		t.e.note("verbose: every envelope is shown as JSON too", false)
	} else {
		t.e.note("verbose off", false)
	}
	return nil
}

// cmdThinking is /thinking: the reasonings' latest thoughts under their
// lines, or not.
func (t *transcript) cmdThinking([]string) tea.Cmd {
	t.thoughts = !t.thoughts
	if t.thoughts {
		t.e.note("thinking: the agents' latest thoughts show under their reasoning lines", false)
	} else {
		t.e.note("thinking hidden", false)
	}
	return nil
}

// cmdClear is /ui-clear: the transcript emptied.
func (t *transcript) cmdClear([]string) tea.Cmd {
	t.reset()
	return nil
}
