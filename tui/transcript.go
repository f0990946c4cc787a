package tui

import (
	"bytes"
	"encoding/json"
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/charmbracelet/x/ansi"

	"github.com/mew-protocol/mew/internal/clip"
	"github.com/mew-protocol/mew/internal/summary"
	"github.com/mew-protocol/mew/internal/termtext"
)

// entry is one item of the transcript, drawn by its kind's renderer. Entries
// that change (an answered request, a settled proposal, a reasoning) are
// pointers the model updates in place.
type entry interface {
	// lines returns the entry's lines, styled, none wider than rc.width.
	lines(rc *renderCtx) []string
}

// renderCtx is what renderers need to know.
type renderCtx struct {
	width int
	theme int // changes when the styles do (/theme)
	st    *Styles
	me    string
	now   time.Time
	// thoughts expands reasonings: their latest thoughts under the line.
	thoughts bool
}

// outcome renders a settled request's outcome: in the approved style when
// it starts with ok ("approved", "accepted"), else in the rejected one.
func (rc *renderCtx) outcome(text, ok string) string {
	if strings.HasPrefix(text, ok) {
		return rc.st.Approved.Render(text)
	}
	return rc.st.Rejected.Render(text)
}

// indent starts the continuation lines of an entry: a peer's text never
// starts at the margin, where the program's own lines start.
const indent = "    "

// maxEntries bounds the transcript; the oldest entries are dropped.
const maxEntries = 5000

// maxTranscriptBytes bounds the text the transcript holds, the chats' and
// the raw envelopes' of /verbose: past it the oldest entries are dropped,
// however few. maxEntryBytes bounds one entry's text: a longer one is
// folded (cut, with a note that says how to read the whole).
const (
	maxTranscriptBytes = 32 << 20
	maxEntryBytes      = 64 << 10
)

// sized is an entry that holds text enough to count against
// maxTranscriptBytes.
type sized interface{ size() int }

// fold cuts s to maxEntryBytes on a rune boundary and returns how many
// bytes it left out.
func fold(s string) (string, int) {
	if len(s) <= maxEntryBytes {
		return s, 0
	}
	// A copy: the prefix of s would keep all of s alive.
	c := strings.Clone(clip.Bytes(s, maxEntryBytes))
	return c, len(s) - len(c)
}

// foldNote says what a folded entry left out and where the whole is.
func foldNote(rc *renderCtx, left int, id string) []string {
	where := "the gateway's audit log has it"
	if id != "" {
		where = "mew log query --id " + termtext.Line(id) + " shows it"
	}
	return wrapText(indent+rc.st.Dim.Render(fmt.Sprintf("… %d KB more, folded to keep the transcript small; %s", (left+1023)/1024, where)), rc.width, indent)
}

// wrapText wraps s (already styled, no line breaks) to the width, each line
// after the first indented by ind.
func wrapText(s string, width int, ind string) []string {
	if width <= len(ind)+8 {
		return []string{ansi.Truncate(s, max(width, 1), "…")}
	}
	first := strings.Split(ansi.Wrap(s, width, ""), "\n")
	if len(first) == 1 {
		return first
	}
	rest := ansi.Wrap(strings.Join(first[1:], " "), width-len(ind), "")
	out := []string{first[0]}
	for l := range strings.SplitSeq(rest, "\n") {
		out = append(out, ind+l)
	}
	return out
}

// block renders head followed by a peer's text: the text is cleaned, its
// first line follows head, the others are indented, and all are wrapped.
func block(head, text string, width int) []string {
	var out []string
	for i, l := range strings.Split(strings.TrimRight(termtext.Clean(text), "\n"), "\n") {
		if i == 0 {
			l = head + l
		} else {
			l = indent + l
		}
		out = append(out, wrapText(l, width, indent)...)
	}
	return out
}

// names joins ids, cleaned, with ", ".
func names(ids []string) string {
	c := make([]string, len(ids))
	for i, id := range ids {
		c[i] = termtext.Line(id)
	}
	return strings.Join(c, ", ")
}

// noteEntry is a line of the program's own: help, command answers, notices.
// Its text is the program's, with any peer strings in it cleaned already.
type noteEntry struct {
	text  string
	error bool
}

func (e *noteEntry) lines(rc *renderCtx) []string {
	st := rc.st.System
	if e.error {
		st = rc.st.Error
	}
	var out []string
	for l := range strings.SplitSeq(e.text, "\n") {
		out = append(out, wrapText(st.Render(l), rc.width, indent)...)
	}
	return out
}

// chatEntry is a chat: "alice → bob: text".
// maxChatRunes bounds the text of one chat that is drawn.
const maxChatRunes = 64 << 10

type chatEntry struct {
	id     string
	from   string
	to     []string
	text   string   // folded to maxEntryBytes
	folded int      // bytes of the text left out
	acks   []string // who acknowledged it (chats of mine)

	// The lines as last drawn, for a width and a theme: a chat never
	// changes, and a long one is costly to draw on every frame.
	cacheWidth, cacheTheme int
	cache                  []string
}

func (e *chatEntry) lines(rc *renderCtx) []string {
	if e.cache != nil && e.cacheWidth == rc.width && e.cacheTheme == rc.theme {
		return e.cache
	}
	e.cache, e.cacheWidth, e.cacheTheme = e.draw(rc), rc.width, rc.theme
	return e.cache
}

func (e *chatEntry) draw(rc *renderCtx) []string {
	st := rc.st.speaker(e.from)
	if e.from == rc.me {
		st = rc.st.Me
	}
	head := st.Render(termtext.Line(e.from))
	if len(e.to) > 0 {
		head += rc.st.Dim.Render(" → " + names(e.to))
	}
	var out []string
	for i, l := range markdown(clip.Runes(e.text, maxChatRunes), rc.st) {
		if i == 0 {
			l = head + ": " + l
		} else {
			l = indent + l
		}
		out = append(out, wrapText(l, rc.width, indent)...)
		if len(out) > maxChatLines {
			out = out[:maxChatLines]
			if e.folded == 0 {
				out = append(out, indent+rc.st.Dim.Render("… the rest is cut (/verbose shows the envelope)"))
			}
			break
		}
	}
	if e.folded > 0 {
		out = append(out, foldNote(rc, e.folded, e.id)...) // the whole is in the log, not in /verbose
	}
	if len(e.acks) > 0 {
		out = append(out, wrapText(indent+rc.st.Dim.Render("✓ "+names(e.acks)), rc.width, indent)...)
	}
	return out
}

// presenceEntry is a join or a leave.
type presenceEntry struct{ who, event string }

func (e *presenceEntry) lines(rc *renderCtx) []string {
	verb := e.event
	switch e.event {
	case "join":
		verb = "joined"
	case "leave":
		verb = "left"
	}
	text := "* " + termtext.Line(e.who)
	if verb != "" {
		text += " " + termtext.Line(verb)
	}
	return wrapText(rc.st.System.Render(text), rc.width, indent)
}

// errorEntry is the gateway's system/error.
type errorEntry struct{ code, message, attempted string }

func (e *errorEntry) lines(rc *renderCtx) []string {
	s := "! " + termtext.Line(e.code)
	if e.message != "" {
		s += ": " + termtext.Line(e.message)
	}
	if e.attempted != "" {
		s += " (" + termtext.Line(e.attempted) + ")"
	}
	return wrapText(rc.st.Error.Render(s), rc.width, indent)
}

// rawEntry is an envelope as JSON, for /verbose.
type rawEntry struct {
	json   string // folded to maxEntryBytes
	folded int
	id     string
}

func newRawEntry(id, json string) *rawEntry {
	e := &rawEntry{id: id}
	e.json, e.folded = fold(json)
	return e
}

func (e *rawEntry) lines(rc *renderCtx) []string {
	out := block(rc.st.Dim.Render("» "), e.json, rc.width)
	if e.folded > 0 {
		out = append(out, foldNote(rc, e.folded, e.id)...)
	}
	return out
}

func (e *rawEntry) size() int  { return len(e.json) }
func (e *chatEntry) size() int { return len(e.text) }

// requestEntry is an mcp/request, with its response once it comes:
//
//	assistant → calculator: add(a: 1, b: 5)
//	  calculator → assistant: 6
type requestEntry struct {
	from   string
	to     []string
	call   string // "add(a: 1, b: 5)", "resources/read(uri: …)"
	forPr  int    // the proposal it fulfils, 0 for none
	answer string // the result or the error, once answered
	by     string // who answered
	failed bool
}

func (e *requestEntry) lines(rc *renderCtx) []string {
	head := rc.st.speaker(e.from).Render(termtext.Line(e.from)) + rc.st.Dim.Render(" → "+names(e.to)) + ": "
	call := e.call
	if e.forPr > 0 {
		call += fmt.Sprintf("  (proposal #%d)", e.forPr)
	}
	out := wrapText(head+termtext.Line(call), rc.width, indent)
	if e.by == "" {
		return out
	}
	st := rc.st.Dim
	if e.failed {
		st = rc.st.Error
	}
	ans := "  " + rc.st.speaker(e.by).Render(termtext.Line(e.by)) + rc.st.Dim.Render(" → "+termtext.Line(e.from)) + ": "
	return append(out, block(ans, st.Render(e.answer), rc.width)...)
}

// reasoningEntry is one agent's reasoning, one line while it lasts:
// "assistant is thinking · 3 thoughts · 4.2 s · calling calculator/add".
type reasoningEntry struct {
	from       string
	question   string // the chat it answers, from the start's correlation
	start, end time.Time
	thoughts   int
	doing      string
	tools      []string
	done       bool
	cancelled  string   // the reason when it was cancelled
	latest     []string // the latest thoughts' texts, for /thinking
}

// maxThoughts is how many thoughts /thinking shows per reasoning.
const maxThoughts = 3

// thought records a thought's text.
func (e *reasoningEntry) thought(text string) {
	if text = strings.TrimSpace(text); text == "" {
		return
	}
	e.latest = append(e.latest, clip.Runes(text, 400))
	if len(e.latest) > maxThoughts {
		e.latest = e.latest[len(e.latest)-maxThoughts:]
	}
}

func (e *reasoningEntry) lines(rc *renderCtx) []string {
	end := rc.now
	if e.done {
		end = e.end
	}
	elapsed := fmt.Sprintf("%.1f s", end.Sub(e.start).Seconds())
	who := rc.st.speaker(e.from).Render(termtext.Line(e.from))
	var parts []string
	switch {
	case e.cancelled != "":
		parts = []string{who + rc.st.Dim.Render(" stopped thinking: "+termtext.Line(e.cancelled))}
	case e.done:
		parts = []string{who + rc.st.Dim.Render(" thought")}
	default:
		parts = []string{who + rc.st.Dim.Render(" is thinking")}
	}
	if e.thoughts > 0 {
		parts = append(parts, plural(e.thoughts, "thought"))
	}
	parts = append(parts, elapsed)
	if !e.done && e.doing != "" {
		parts = append(parts, termtext.Line(e.doing))
	}
	if e.done && len(e.tools) > 0 {
		parts = append(parts, "used "+names(e.tools))
	}
	out := wrapText(strings.Join(parts, rc.st.Dim.Render(" · ")), rc.width, indent)
	if rc.thoughts {
		for _, t := range e.latest {
			out = append(out, block(indent+rc.st.Dim.Render("… "), t, rc.width)...)
		}
	}
	return out
}

// used records that the reasoning called tool.
func (e *reasoningEntry) used(tool string) {
	if tool == "" {
		return
	}
	for _, t := range e.tools {
		if t == tool {
			return
		}
	}
	e.tools = append(e.tools, tool)
}

// streamEntry is a stream's opening or closing.
type streamEntry struct{ text string }

func (e *streamEntry) lines(rc *renderCtx) []string {
	return wrapText(rc.st.Dim.Render("≈ "+e.text), rc.width, indent)
}

// otherEntry is any other kind: "from kind {payload…}".
type otherEntry struct{ from, kind, payload string }

func (e *otherEntry) lines(rc *renderCtx) []string {
	head := rc.st.speaker(e.from).Render(termtext.Line(e.from)) + " " + rc.st.Dim.Render(termtext.Line(e.kind)) + " "
	return wrapText(head+termtext.Line(clip.Runes(e.payload, 200)), rc.width, indent)
}

func plural(n int, what string) string {
	if n == 1 {
		return "1 " + what
	}
	return fmt.Sprintf("%d %ss", n, what)
}

// describeCall writes an MCP call readably: "add(a: 1, b: 5)" for a
// tools/call, "method(params)" otherwise.
func describeCall(method string, params json.RawMessage) string {
	if method == "tools/call" {
		var p struct {
			Name      string          `json:"name"`
			Arguments json.RawMessage `json:"arguments"`
		}
		_ = json.Unmarshal(params, &p)
		return p.Name + "(" + inlineArgs(p.Arguments) + ")"
	}
	return method + "(" + inlineArgs(params) + ")"
}

// inlineArgs writes an object's members as "a: 1, b: 5", strings unquoted
// and clipped, in the object's own order.
func inlineArgs(raw json.RawMessage) string {
	members, ok := objectMembers(raw)
	if !ok {
		return clip.Runes(summary.Compact(raw), 80)
	}
	parts := make([]string, 0, len(members))
	for _, m := range members {
		parts = append(parts, m.key+": "+clip.Runes(scalarText(m.value), 40))
	}
	return strings.Join(parts, ", ")
}

// member is one member of a JSON object, in source order.
type member struct {
	key   string
	value json.RawMessage
}

// objectMembers returns the members of a JSON object in their order.
func objectMembers(raw json.RawMessage) ([]member, bool) {
	dec := json.NewDecoder(bytes.NewReader(raw))
	if t, err := dec.Token(); err != nil || t != json.Delim('{') {
		return nil, false
	}
	var out []member
	for dec.More() {
		k, err := dec.Token()
		if err != nil {
			return nil, false
		}
		var v json.RawMessage
		if err := dec.Decode(&v); err != nil {
			return nil, false
		}
		out = append(out, member{key: fmt.Sprint(k), value: v})
	}
	return out, true
}

// scalarText writes a JSON value: a string as it is, anything else as
// compact JSON.
func scalarText(v json.RawMessage) string {
	var s string
	if json.Unmarshal(v, &s) == nil {
		return s
	}
	return summary.Compact(v)
}

// sortedKeys returns m's keys in order.
func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// transcript is the conversation as drawn: its entries, bounded by their
// number and by the text they hold, how far the reader has scrolled back,
// the search (find.go) and what is shown (/verbose, /thinking). It owns
// that state and those commands; the root gives it what drawing needs.
type transcript struct {
	e         *env
	entries   []entry
	textBytes int // what the entries' texts hold (sized), bounded by maxTranscriptBytes
	offset    int // lines scrolled back from the bottom
	find      finding
	verbose   bool // /verbose: every envelope as JSON too
	thoughts  bool // /thinking: reasonings show their latest thoughts
}

// add appends an entry, keeping the place of a reader who scrolled back,
// and lets the oldest entries go past the bounds.
func (t *transcript) add(e entry, rc *renderCtx) {
	if t.offset > 0 {
		t.offset += len(e.lines(rc))
	}
	t.entries = append(t.entries, e)
	if s, ok := e.(sized); ok {
		t.textBytes += s.size()
	}
	drop := max(len(t.entries)-maxEntries, 0)
	dropped := t.droppedBytes(drop)
	for drop < len(t.entries)-1 && t.textBytes-dropped > maxTranscriptBytes {
		if s, ok := t.entries[drop].(sized); ok {
			dropped += s.size()
		}
		drop++
	}
	if drop > 0 {
		t.textBytes -= dropped
		clear(t.entries[:drop]) // let the dropped entries go
		t.entries = t.entries[drop:]
	}
}

// scroll moves the view n lines back (n < 0: on); the root clamps it.
func (t *transcript) scroll(n int) { t.offset += n }

// toEnd scrolls to the latest lines.
func (t *transcript) toEnd() { t.offset = 0 }

// scrolled is how many lines the view is scrolled back.
func (t *transcript) scrolled() int { return t.offset }

// droppedBytes is the text the first n entries hold.
func (t *transcript) droppedBytes(n int) int {
	b := 0
	for _, e := range t.entries[:n] {
		if s, ok := e.(sized); ok {
			b += s.size()
		}
	}
	return b
}

// reset forgets every entry (/ui-clear); the search and the modes stay.
func (t *transcript) reset() { t.entries, t.textBytes, t.offset = nil, 0, 0 }

// tail returns the last n+offset lines, oldest first, drawing only the
// entries needed.
func (t *transcript) tail(n int, rc *renderCtx) []string {
	var rev [][]string
	count := 0
	for i := len(t.entries) - 1; i >= 0 && count < n+t.offset; i-- {
		l := t.entries[i].lines(rc)
		rev = append(rev, l)
		count += len(l)
	}
	out := make([]string, 0, count)
	for i := len(rev) - 1; i >= 0; i-- {
		out = append(out, rev[i]...)
	}
	return out
}

// total counts the lines.
func (t *transcript) total(rc *renderCtx) int {
	n := 0
	for _, e := range t.entries {
		n += len(e.lines(rc))
	}
	return n
}

// clamp keeps the offset within what a view of height lines can show.
func (t *transcript) clamp(height int, rc *renderCtx) {
	if t.offset <= 0 {
		t.offset = 0
		return
	}
	if most := t.total(rc) - height; t.offset > most {
		t.offset = max(most, 0)
	}
}
