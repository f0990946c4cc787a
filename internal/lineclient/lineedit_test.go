package lineclient

import (
	"encoding/json"
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

// feedKeys feeds keys to e and returns the lines entered and the last
// event other than editNone and editLine.
func feedKeys(e *lineEditor, keys string) (lines []string, last editEvent) {
	for i := range len(keys) {
		line, ev := e.feed(keys[i])
		switch ev {
		case editLine:
			lines = append(lines, line)
		case editEOF, editInterrupt:
			last = ev
		}
	}
	return lines, last
}

func TestLineEditorEditing(t *testing.T) {
	for _, tc := range []struct {
		name, keys string
		line       string // being typed after the keys
		pos        int
	}{
		{"typing", "hello", "hello", 5},
		{"backspace", "hellp" + kBS + "o", "hello", 5},
		{"backspace at the start", kBS + "a", "a", 1},
		{"left and insert", "hllo" + kLeft + kLeft + kLeft + "e", "hello", 2},
		{"right stops at the end", "ab" + kRight + kRight + "c", "abc", 3},
		{"left stops at the start", "b" + kLeft + kLeft + "a", "ab", 1},
		{"application mode left", "ac" + kLeftApp + "b", "abc", 2},
		{"ctrl-a and ctrl-e", "ello" + kCtrlA + "h" + kCtrlE + "!", "hello!", 6},
		{"home and end", "bc" + kHome + "a" + kEnd + "d", "abcd", 4},
		{"vt home and end", "bc" + kHomeVT + "a" + kEndVT + "d", "abcd", 4},
		{"delete under the cursor", "abxc" + kLeft + kLeft + kDel, "abc", 2},
		{"ctrl-u deletes to the start", "drop this keep" + kLeft + kLeft + kLeft + kLeft + kCtrlU, "keep", 0},
		{"ctrl-k deletes to the end", "keep drop" + kLeft + kLeft + kLeft + kLeft + kLeft + kCtrlK, "keep", 4},
		{"ctrl-w deletes a word", "one two  " + kCtrlW, "one ", 4},
		{"ctrl-d deletes on a line", "ab" + kLeft + kCtrlD, "a", 1},
		{"modified arrows move", "ab" + kCtrlLeft + "x", "axb", 2},
		{"utf-8", "h\xc3\xa9llo " + "\xe6\xbc\xa2" + kLeft + kBS, "héllo漢", 5},
		{"a tab is a space", "a\tb", "a b", 3},
		{"controls and bidi overrides are dropped", "a\x07\x00b\u202ec\u2066", "abc", 3},
		{"alt-key is ignored", "a\x1bxb", "ab", 2},
		{"an unknown sequence is ignored", "a\x1b[99zb", "ab", 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var e lineEditor
			lines, ev := feedKeys(&e, tc.keys)
			if len(lines) > 0 || ev != editNone {
				t.Errorf("lines %q, event %d", lines, ev)
			}
			if got := string(e.buf); got != tc.line || e.pos != tc.pos {
				t.Errorf("line %q at %d, want %q at %d", got, e.pos, tc.line, tc.pos)
			}
		})
	}
}

func TestLineEditorEnterAndEnd(t *testing.T) {
	var e lineEditor
	lines, ev := feedKeys(&e, "first"+kEnter+"second\n"+kEnter+"  "+kEnter)
	if want := []string{"first", "second", "", "  "}; !slices.Equal(lines, want) || ev != editNone {
		t.Errorf("lines %q, event %d; want %q", lines, ev, want)
	}
	if want := []string{"first", "second"}; !slices.Equal(e.hist, want) {
		t.Errorf("history %q, want %q (blank lines are not kept)", e.hist, want)
	}
	if len(e.buf) != 0 || e.pos != 0 {
		t.Errorf("after Enter the line is %q at %d", string(e.buf), e.pos)
	}
	if _, ev := feedKeys(&e, "x"+kCtrlD); ev != editNone {
		t.Errorf("ctrl-d on a line: event %d", ev)
	}
	if _, ev := feedKeys(&e, kBS+kCtrlD); ev != editEOF {
		t.Errorf("ctrl-d on an empty line: event %d, want editEOF", ev)
	}
	if _, ev := feedKeys(&e, "typed"+kCtrlC); ev != editInterrupt || len(e.buf) != 0 {
		t.Errorf("ctrl-c: event %d, line %q", ev, string(e.buf))
	}
}

func TestLineEditorHistory(t *testing.T) {
	var e lineEditor
	feedKeys(&e, "one"+kEnter+"two"+kEnter+"two"+kEnter+"three"+kEnter)
	if want := []string{"one", "two", "three"}; !slices.Equal(e.hist, want) {
		t.Fatalf("history %q, want %q (a repeat is kept once)", e.hist, want)
	}
	steps := []struct{ keys, want string }{
		{"draft", "draft"},
		{kUp, "three"},
		{kUp, "two"},
		{kUpApp, "one"},
		{kUp, "one"}, // the oldest stays
		{kDown, "two"},
		{kDown, "three"},
		{kDown, "draft"}, // back to the line being typed
		{kDown, "draft"},
		{kUp + "\x10", "two"}, // ctrl-p
		{"\x0e", "three"},     // ctrl-n
	}
	for _, s := range steps {
		feedKeys(&e, s.keys)
		if got := string(e.buf); got != s.want || e.pos != len(e.buf) {
			t.Fatalf("after %q: %q at %d, want %q at the end", s.keys, got, e.pos, s.want)
		}
	}
	// An entry recalled and edited is entered as a new line; history
	// itself is unchanged.
	lines, _ := feedKeys(&e, kDown+kCtrlU+kUp+kBS+"y"+kEnter)
	if want := []string{"threy"}; !slices.Equal(lines, want) {
		t.Errorf("entered %q, want %q", lines, want)
	}
	if want := []string{"one", "two", "three", "threy"}; !slices.Equal(e.hist, want) {
		t.Errorf("history %q, want %q", e.hist, want)
	}
	if feedKeys(&e, kUp); string(e.buf) != "threy" {
		t.Errorf("up after enter: %q", string(e.buf))
	}
	// The history is bounded.
	var b lineEditor
	for i := range maxHistory + 10 {
		feedKeys(&b, strings.Repeat("x", i+1)+kEnter)
	}
	if len(b.hist) != maxHistory || b.hist[0] != strings.Repeat("x", 11) {
		t.Errorf("history of %d, first %d long", len(b.hist), len(b.hist[0]))
	}
}

func TestLineEditorView(t *testing.T) {
	var e lineEditor
	feedKeys(&e, "hello")
	if text, col := e.view("> ", 80); text != "> hello" || col != 7 {
		t.Errorf("view %q, cursor %d", text, col)
	}
	// Too long: the part around the cursor, within width-1 columns.
	feedKeys(&e, strings.Repeat("x", 30)+"END")
	text, col := e.view("> ", 20)
	if !strings.HasPrefix(text, "> ") || !strings.HasSuffix(text, "END") || runeWidth(text) > 19 || col != runeWidth(text) {
		t.Errorf("view %q (%d columns), cursor %d", text, runeWidth(text), col)
	}
	feedKeys(&e, kCtrlA)
	if text, col := e.view("> ", 20); text != "> helloxxxxxxxxxxxx" || col != 2 {
		t.Errorf("at the start: view %q, cursor %d", text, col)
	}
	// Wide runes take two columns.
	var w lineEditor
	feedKeys(&w, "漢字"+kLeft)
	if text, col := w.view("> ", 80); text != "> 漢字" || col != 4 {
		t.Errorf("wide: view %q, cursor %d", text, col)
	}
}

// TestLineScreen: output goes above the prompt, which is drawn again with
// the line being typed; the status line sits between them and is replaced
// in place; an entered line stays on the screen.
func TestLineScreen(t *testing.T) {
	var out strings.Builder
	s := &lineScreen{out: &out, ed: &lineEditor{}, prompt: "> ", width: func() int { return 40 }}
	step := func(name, want string, f func()) {
		t.Helper()
		out.Reset()
		f()
		if got := out.String(); got != want {
			t.Errorf("%s: wrote %q, want %q", name, got, want)
		}
	}
	step("typing", "> hi\x1b[K\r\x1b[4C", func() { s.keys([]byte("hi")) })
	step("output", "\r\x1b[Jfriend: hello\r\n> hi\x1b[K\r\x1b[4C", func() { s.println("friend: hello") })
	step("status", "\r\x1b[J\x1b[2magent is thinking\x1b[0m\r\n> hi\x1b[K\r\x1b[4C", func() { s.status("agent is thinking") })
	step("same status", "", func() { s.status("agent is thinking") })
	step("output under a status", "\r\x1b[1A\x1b[Jline one\r\n    two\r\n\x1b[2magent is thinking\x1b[0m\r\n> hi\x1b[K\r\x1b[4C",
		func() { s.println("line one\n    two") })
	step("long status", "\r\x1b[1A\x1b[J\x1b[2m"+strings.Repeat("s", 38)+"…\x1b[0m\r\n> hi\x1b[K\r\x1b[4C",
		func() { s.status(strings.Repeat("s", 60)) })
	step("no status", "\r\x1b[1A\x1b[J> hi\x1b[K\r\x1b[4C", func() { s.status("") })
	var lines []string
	step("enter", "\r\x1b[J> hi!\r\n> \x1b[K\r\x1b[2C", func() { lines, _ = s.keys([]byte("!\r")) })
	if !slices.Equal(lines, []string{"hi!"}) {
		t.Errorf("entered %q", lines)
	}
	step("close", "\r\x1b[J", s.close)

	// Without an editor (stdin is not a terminal) only the status is drawn.
	p := &lineScreen{out: &out, width: func() int { return 40 }}
	step("bare output", "x\r\n", func() { p.println("x") })
	step("bare status", "\x1b[2mthinking\x1b[0m\r", func() { p.status("thinking") })
	step("bare output under a status", "\r\x1b[Jy\r\n\x1b[2mthinking\x1b[0m\r", func() { p.println("y") })
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
