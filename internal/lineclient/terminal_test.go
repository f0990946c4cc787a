package lineclient

import (
	"encoding/json"
	"errors"
	"io"
	"slices"
	"strings"
	"testing"

	"github.com/mew-protocol/mew/internal/feed"
	"github.com/mew-protocol/mew/internal/termtext"
	"github.com/mew-protocol/mew/protocol"
)

// Keys as a terminal sends them.
const (
	kUp, kDown, kRight, kLeft = "\x1b[A", "\x1b[B", "\x1b[C", "\x1b[D"
	kUpApp, kLeftApp          = "\x1bOA", "\x1bOD" // application cursor mode
	kHome, kEnd, kDel         = "\x1b[H", "\x1b[F", "\x1b[3~"
	kHomeVT, kEndVT           = "\x1b[1~", "\x1b[4~"
	kCtrlLeft                 = "\x1b[1;5D"
	kBS, kCtrlA, kCtrlE       = "\x7f", "\x01", "\x05"
	kCtrlU, kCtrlK, kCtrlW    = "\x15", "\x0b", "\x17"
	kCtrlD, kCtrlC, kEnter    = "\x04", "\x03", "\r"
)

// typeKeys types keys, in chunks, on a terminal screen whose history
// holds hist, and returns the lines entered, the history after, and
// whether the input ended by a key (Ctrl-D on an empty line, Ctrl-C)
// before its end.
func typeKeys(t *testing.T, hist []string, chunks ...string) (lines, after []string, ended bool) {
	t.Helper()
	var out strings.Builder
	s := newTermScreen(&out, func() int { return 80 })
	h := &history{lines: slices.Clone(hist)}
	s.t.History = h
	ch := make(chan []byte, len(chunks)+1)
	for _, c := range chunks {
		ch <- []byte(c)
	}
	ch <- []byte("\x00end") // a mark that the keys were all read
	close(ch)
	s.keys.chunks = ch
	for {
		line, err := s.t.ReadLine()
		if errors.Is(err, io.EOF) {
			return lines, h.lines, !strings.Contains(line, "end") && len(ch) > 0
		}
		if err != nil {
			t.Fatal(err)
		}
		lines = append(lines, line)
	}
}

// TestLineEditing: the keys edit the line being typed; "|" marks where
// the cursor was when Enter came.
func TestLineEditing(t *testing.T) {
	for _, tc := range []struct {
		name, keys string
		line       string // entered, the cursor's place marked
	}{
		{"typing", "hello", "hello|"},
		{"backspace", "hellp" + kBS + "o", "hello|"},
		{"backspace at the start", kBS + "a", "a|"},
		{"left and insert", "hllo" + kLeft + kLeft + kLeft + "e", "he|llo"},
		{"right stops at the end", "ab" + kRight + kRight + "c", "abc|"},
		{"left stops at the start", "b" + kLeft + kLeft + "a", "a|b"},
		{"application mode left", "ac" + kLeftApp + "b", "ab|c"},
		{"ctrl-a and ctrl-e", "ello" + kCtrlA + "h" + kCtrlE + "!", "hello!|"},
		{"home and end", "bc" + kHome + "a" + kEnd + "d", "abcd|"},
		{"vt home and end", "bc" + kHomeVT + "a" + kEndVT + "d", "abcd|"},
		{"delete under the cursor", "abxc" + kLeft + kLeft + kDel, "ab|c"},
		{"ctrl-u deletes to the start", "drop this keep" + kLeft + kLeft + kLeft + kLeft + kCtrlU, "|keep"},
		{"ctrl-k deletes to the end", "keep drop" + kLeft + kLeft + kLeft + kLeft + kLeft + kCtrlK, "keep|"},
		{"ctrl-w deletes a word", "one two  " + kCtrlW, "one |"},
		{"ctrl-d deletes on a line", "ab" + kLeft + kCtrlD, "a|"},
		{"ctrl and an arrow move by a word", "one two" + kCtrlLeft + "x", "one x|two"},
		{"utf-8", "h\xc3\xa9llo " + "\xe6\xbc\xa2" + kLeft + kBS, "héllo|漢"},
		{"a tab is a space", "a\tb", "a b|"},
		{"controls and bidi overrides are dropped", "a\x07\x00b\u202ec\u2066\u0085", "abc|"},
		{"alt-key is ignored", "a\x1bxb", "ab|"},
		{"an unknown sequence is ignored", "a\x1b[99zb", "ab|"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			lines, _, _ := typeKeys(t, nil, tc.keys+"|"+kEnter)
			if !slices.Equal(lines, []string{tc.line}) {
				t.Errorf("entered %q, want %q", lines, tc.line)
			}
		})
	}
	// A rune cut between two reads is one rune.
	if lines, _, _ := typeKeys(t, nil, "a\xe6\xbc", "\xa2\u202e"[:1]+"\xe2\x80", "\xae"+kEnter); !slices.Equal(lines, []string{"a漢"}) {
		t.Errorf("a rune in two reads: %q", lines)
	}
}

func TestLineEnterAndEnd(t *testing.T) {
	lines, hist, ended := typeKeys(t, nil, "first"+kEnter+"second\n"+kEnter+"  "+kEnter)
	if want := []string{"first", "second", "", "  "}; !slices.Equal(lines, want) || ended {
		t.Errorf("lines %q, ended %v; want %q", lines, ended, want)
	}
	if want := []string{"first", "second"}; !slices.Equal(hist, want) {
		t.Errorf("history %q, want %q (blank lines are not kept)", hist, want)
	}
	if lines, _, ended := typeKeys(t, nil, "x"+kCtrlD+kEnter); !slices.Equal(lines, []string{"x"}) || ended {
		t.Errorf("ctrl-d on a line: %q, ended %v", lines, ended)
	}
	if lines, _, ended := typeKeys(t, nil, "x"+kBS+kCtrlD+"more"+kEnter); len(lines) != 0 || !ended {
		t.Errorf("ctrl-d on an empty line: %q, ended %v", lines, ended)
	}
	if lines, _, ended := typeKeys(t, nil, "typed"+kCtrlC+"more"+kEnter); len(lines) != 0 || !ended {
		t.Errorf("ctrl-c: %q, ended %v", lines, ended)
	}
}

func TestLineHistory(t *testing.T) {
	_, hist, _ := typeKeys(t, nil, "one"+kEnter+"two"+kEnter+"two"+kEnter+"three"+kEnter)
	if want := []string{"one", "two", "three"}; !slices.Equal(hist, want) {
		t.Fatalf("history %q, want %q (a repeat is kept once)", hist, want)
	}
	for _, s := range []struct{ keys, want string }{
		{"draft" + kUp, "three"},
		{"draft" + kUp + kUp, "two"},
		{kUp + kUp + kUpApp, "one"},
		{kUp + kUp + kUp + kUp, "one"}, // the oldest stays
		{"draft" + kUp + kUp + kUp + kDown, "two"},
		{"draft" + kUp + kUp + kDown + kDown, "draft"}, // back to the line being typed
		{"draft" + kDown, "draft"},
		{kUp + kUp + "\x10", "one"},   // ctrl-p
		{kUp + kUp + "\x0e", "three"}, // ctrl-n
	} {
		lines, _, _ := typeKeys(t, hist, s.keys+kEnter)
		if !slices.Equal(lines, []string{s.want}) {
			t.Errorf("after %q: %q, want %q", s.keys, lines, s.want)
		}
	}
	// An entry recalled and edited is entered as a new line; the history
	// itself is unchanged.
	lines, after, _ := typeKeys(t, hist, kUp+kBS+"y"+kEnter+kUp+kEnter)
	if want := []string{"threy", "threy"}; !slices.Equal(lines, want) {
		t.Errorf("entered %q, want %q", lines, want)
	}
	if want := []string{"one", "two", "three", "threy"}; !slices.Equal(after, want) {
		t.Errorf("history %q, want %q", after, want)
	}
	// The history is bounded.
	var b history
	for i := range maxHistory + 10 {
		b.Add(strings.Repeat("x", i+1))
	}
	if b.Len() != maxHistory || b.At(maxHistory-1) != strings.Repeat("x", 11) || b.At(0) != strings.Repeat("x", maxHistory+10) {
		t.Errorf("history of %d, oldest %d long", b.Len(), len(b.At(b.Len()-1)))
	}
}

// TestPromptFor: the status fills the prompt's first row exactly, so that
// "> " starts the next; what the Terminal would count wrong is replaced.
func TestPromptFor(t *testing.T) {
	if p := promptFor("", 40); p != "> " {
		t.Errorf("no status: %q", p)
	}
	p := promptFor("agent is thinking · 漢", 40)
	if want := "\x1b[2magent is thinking · ?\x1b[0m" + strings.Repeat(" ", 19) + "> "; p != want {
		t.Errorf("prompt %q, want %q", p, want)
	}
	p = promptFor(strings.Repeat("s", 60), 40)
	if want := "\x1b[2m" + strings.Repeat("s", 30) + "…\x1b[0m" + strings.Repeat(" ", 9) + "> "; p != want {
		t.Errorf("long status: %q, want %q", p, want)
	}
}

// TestStatusScreen: without typing on the terminal, output goes above the
// status, which is replaced in place.
func TestStatusScreen(t *testing.T) {
	var out strings.Builder
	p := &statusScreen{out: &out, width: func() int { return 40 }}
	step := func(name, want string, f func()) {
		t.Helper()
		out.Reset()
		f()
		if got := out.String(); got != want {
			t.Errorf("%s: wrote %q, want %q", name, got, want)
		}
	}
	step("bare output", "x\r\n", func() { p.println("x") })
	step("bare status", "\x1b[2mthinking\x1b[0m\r", func() { p.status("thinking") })
	step("same status", "", func() { p.status("thinking") })
	step("bare output under a status", "\r\x1b[Jy\r\n\x1b[2mthinking\x1b[0m\r", func() { p.println("y") })
	step("close", "\r\x1b[J", p.close)
}

// recordingDisplay keeps the latest status.
type recordingDisplay struct {
	plainDisplay
	last string
}

func (d *recordingDisplay) status(s string) { d.last = s }

// TestReasoningStatus: the status line follows thoughts and tool calls,
// holds nothing that steers the terminal, and empties at the end.
func TestReasoningStatus(t *testing.T) {
	d := &recordingDisplay{plainDisplay: plainDisplay{out: &strings.Builder{}}}
	lc := &lineClient{disp: d, feed: feed.NewReader(), reasonings: map[string]*reasoning{}, calls: map[string]call{}, typed: map[string]bool{}, roster: map[string]bool{}}
	var printed []string
	read := func(kind, id, ctx string, payload any) {
		t.Helper()
		e := &protocol.Envelope{Protocol: protocol.Version, Kind: kind, ID: id, From: "agent", Context: ctx}
		if err := e.SetPayload(payload); err != nil {
			t.Fatal(err)
		}
		lc.mu.Lock()
		defer lc.mu.Unlock()
		for _, ev := range lc.feed.Read(e) {
			if s := lc.take(ev, "me"); s != "" {
				printed = append(printed, termtext.Indent(s, indent)) // as printf cleans it
			}
		}
	}
	read(protocol.KindReasoningStart, "r1", "", protocol.Reasoning{Message: "Thinking about: secret question"})
	if d.last != "agent is thinking" {
		t.Errorf("after start: %q", d.last)
	}
	read(protocol.KindReasoningThought, "t1", "r1", protocol.Reasoning{
		Action: "tool_call", ActionInput: json.RawMessage(`[{"name":"calc/add\u001b]0;x\u0007\u202e"}]`),
	})
	if d.last != "agent is thinking · 1 thought · calling calc/add" {
		t.Errorf("after a thought: %q", d.last)
	}
	read(protocol.KindMCPRequest, "q1", "", map[string]any{"method": "tools/call", "params": map[string]any{"name": "add"}})
	read(protocol.KindMCPRequest, "q2", "", map[string]any{"method": "tools/call", "params": map[string]any{"name": "mul"}})
	if d.last != "agent is thinking · 1 thought · calling mul" {
		t.Errorf("after a call: %q", d.last)
	}
	read(protocol.KindReasoningThought, "t2", "r1", protocol.Reasoning{Message: "Checking."})
	read(protocol.KindReasoningThought, "t3", "r1", protocol.Reasoning{Message: "Answering.", Action: "respond"})
	if d.last != "agent is thinking · 3 thoughts · answering" {
		t.Errorf("after the last thought: %q", d.last)
	}
	read(protocol.KindReasoningStart, "r2", "", protocol.Reasoning{})
	if want := "agent is thinking · 3 thoughts · answering  |  agent is thinking"; d.last != want {
		t.Errorf("two reasonings: %q, want %q", d.last, want)
	}
	read(protocol.KindReasoningConclusion, "x1", "r1", map[string]any{"message": "done"})
	if want := []string{"  (agent reasoned: 3 thoughts, used add, mul)"}; !slices.Equal(printed, want) {
		t.Errorf("the end: %q, want %q", printed, want)
	}
	if d.last != "agent is thinking" {
		t.Errorf("after the end: %q", d.last)
	}
	read(protocol.KindReasoningCancel, "k1", "r2", map[string]any{"reason": "floor yielded"})
	if want := "  (agent stopped thinking: cancelled: floor yielded)"; printed[len(printed)-1] != want || d.last != "" {
		t.Errorf("a cancel: %q, status %q", printed[len(printed)-1], d.last)
	}
}
