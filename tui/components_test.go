package tui

import (
	"context"
	"strings"
	"testing"
	"time"

	tea "charm.land/bubbletea/v2"
	"github.com/charmbracelet/x/ansi"

	"github.com/mew-protocol/mew/protocol"
)

// The components work without the root: these tests build each over a
// bare env and stand-ins for the components it reads, which is all the
// coupling they have.

// bareEnv is an env over sp whose transcript is a list of the notes'
// texts.
func bareEnv(sp *fakeSpace) (*env, *[]string) {
	now := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	sp.now = func() time.Time { return now }
	var notes []string
	e := &env{sp: sp, ctx: context.Background(), now: sp.now, st: DefaultStyles()}
	e.add = func(x entry) {
		if n, ok := x.(*noteEntry); ok {
			notes = append(notes, n.text)
		}
	}
	return e, &notes
}

// chatOf returns the text of the chat env carries, and to whom.
func chatOf(t *testing.T, env *protocol.Envelope) (string, []string) {
	t.Helper()
	var c protocol.Chat
	if env.Kind != protocol.KindChat || env.DecodePayload(&c) != nil {
		t.Fatalf("not a chat: %s", env.Kind)
	}
	return c.Text, env.To
}

// runMsg runs cmd and returns its message (nil for no command).
func runMsg(cmd tea.Cmd) tea.Msg {
	if cmd == nil {
		return nil
	}
	return cmd()
}

// stand-ins for what the command line and the board read.
type (
	stubLive struct {
		id   string
		from string
	}
	stubChats struct{ last *sentChat }
)

func (s stubLive) latest() (string, *reasoningEntry, bool) {
	if s.id == "" {
		return "", nil, false
	}
	return s.id, &reasoningEntry{from: s.from}, true
}

func (s stubLive) of(from string) []*reasoningEntry {
	if from != s.from || s.id == "" {
		return nil
	}
	return []*reasoningEntry{{from: from, thoughts: 2, doing: "reading"}}
}

func (s stubChats) lastUnacked() (sentChat, bool) {
	if s.last == nil {
		return sentChat{}, false
	}
	return *s.last, true
}

func (stubChats) cmdStreams([]string) tea.Cmd { return nil }

func TestCommandLineAlone(t *testing.T) {
	sp := newFake()
	e, notes := bareEnv(sp)
	r := newRoster(e)
	chats := stubChats{}
	own := 0
	c := newCommands(e, r, stubLive{}, chats, []command{{"mine", "[x]", "a component's command", func(args []string) tea.Cmd {
		own = len(args)
		return nil
	}}})

	// The table: /help first, the components' commands, /exit, then the
	// controls.
	names := c.names()
	if names[0] != "help" || names[1] != "mine" || names[2] != "exit" || names[3] != "pause" {
		t.Fatalf("the table: %v", names)
	}
	if runMsg(c.submit("/mine a b")) != nil || own != 2 {
		t.Errorf("/mine a b ran with %d arguments", own)
	}
	if _, ok := runMsg(c.submit("/QUIT")).(tea.QuitMsg); !ok {
		t.Error("/QUIT does not quit")
	}
	c.submit("/nope")
	if got := (*notes)[len(*notes)-1]; got != "unknown command /nope; /help lists them" {
		t.Errorf("/nope: %q", got)
	}
	c.submit("/help")
	if help := (*notes)[len(*notes)-1]; !strings.Contains(help, "/mine [x]") || !strings.Contains(help, "Controls (/help NAME for one): /pause") {
		t.Errorf("/help:\n%s", help)
	}

	// A chat goes to its @ids, else to /target's choice, else to everyone.
	runMsg(c.submit("@bob, @carol: hello"))
	if text, to := chatOf(t, sp.sent[len(sp.sent)-1]); text != "hello" || strings.Join(to, " ") != "bob carol" {
		t.Errorf("@bob, @carol: hello went as %q to %v", text, to)
	}
	c.submit("/target @alice")
	runMsg(c.submit("plain"))
	if text, to := chatOf(t, sp.sent[len(sp.sent)-1]); text != "plain" || strings.Join(to, " ") != "alice" {
		t.Errorf("after /target: %q to %v", text, to)
	}
	c.submit("/target none")
	runMsg(c.submit("all"))
	if _, to := chatOf(t, sp.sent[len(sp.sent)-1]); len(to) != 0 {
		t.Errorf("after /target none: to %v", to)
	}

	// /ack answers the latest chat to me, once.
	c.chatToMe(sentChat{id: "c9", to: []string{"bob"}})
	runMsg(c.submit("/ack seen"))
	if last := sp.sent[len(sp.sent)-1]; last.Kind != protocol.KindChatAcknowledge || last.To[0] != "bob" || last.CorrelationID[0] != "c9" {
		t.Errorf("/ack sent %s to %v for %v", last.Kind, last.To, last.CorrelationID)
	}
	before := len(sp.sent)
	runMsg(c.submit("/ack"))
	if len(sp.sent) != before || (*notes)[len(*notes)-1] != "no chat to you to acknowledge" {
		t.Errorf("a second /ack: %d sent, %q", len(sp.sent)-before, (*notes)[len(*notes)-1])
	}

	// /cancel asks its stand-ins: nothing open, then a chat, then a reasoning.
	runMsg(c.submit("/cancel"))
	if !strings.HasPrefix((*notes)[len(*notes)-1], "nothing to cancel") {
		t.Errorf("/cancel with nothing open: %q", (*notes)[len(*notes)-1])
	}
	c.board = stubChats{last: &sentChat{id: "c1", to: []string{"bob"}}}
	runMsg(c.submit("/cancel"))
	if last := sp.sent[len(sp.sent)-1]; last.Kind != protocol.KindChatCancel || last.CorrelationID[0] != "c1" {
		t.Errorf("/cancel of a chat sent %s for %v", last.Kind, last.CorrelationID)
	}
	c.live = stubLive{id: "r1", from: "agent"}
	runMsg(c.submit("/cancel"))
	if last := sp.sent[len(sp.sent)-1]; last.Kind != protocol.KindReasoningCancel || last.Context != "r1" || last.To[0] != "agent" {
		t.Errorf("/cancel of a reasoning sent %s (context %q) to %v", last.Kind, last.Context, last.To)
	}
}

type (
	stubPeople []string
	stubProps  []*proposal
	stubLedger struct{}
)

func (p stubPeople) ids() []string { return p }
func (p stubPeople) has(id string) bool {
	for _, x := range p {
		if x == id {
			return true
		}
	}
	return false
}
func (p stubProps) pending() []*proposal     { return p }
func (stubLedger) what(g LedgerGrant) string { return "what " + g.ID }

func TestBoardAlone(t *testing.T) {
	sp := newFake()
	e, notes := bareEnv(sp)
	pr := &proposal{n: 3, from: "agent", to: []string{"files"}, tool: "write_file"}
	b := boardState{e: e, present: stubPeople{"agent", "files"}, props: stubProps{pr}, live: stubLive{id: "r1", from: "agent"}, ledger: stubLedger{}}

	// Where it shows: auto docks it from 120 columns; open stacks it below
	// 100; closed hides it.
	for _, c := range []struct {
		mode          boardMode
		width         int
		docked, stack bool
		text          int
	}{
		{boardAuto, 119, false, false, 119},
		{boardAuto, 120, true, false, 120 - boardWidth - 1},
		{boardOpen, 99, false, true, 99},
		{boardOpen, 100, true, false, 100 - boardWidth - 1},
		{boardClosed, 200, false, false, 200},
	} {
		b.mode = c.mode
		if b.docked(c.width) != c.docked || b.stacked(c.width) != c.stack || b.textWidth(c.width) != c.text {
			t.Errorf("mode %d at %d columns: docked %v stacked %v text %d", c.mode, c.width, b.docked(c.width), b.stacked(c.width), b.textWidth(c.width))
		}
	}
	b.mode = boardAuto
	if b.toggle(80); b.mode != boardOpen {
		t.Errorf("F2 on a hidden board left it %d", b.mode)
	}
	if b.toggle(80); b.mode != boardClosed {
		t.Errorf("F2 on a shown board left it %d", b.mode)
	}
	if b.cmdBoard([]string{"sideways"}, 80) != nil || (*notes)[len(*notes)-1] != "/board [open|close|auto]" {
		t.Errorf("/board sideways: %v", *notes)
	}

	// What it draws comes from its sources.
	b.showGrants([]LedgerGrant{{ID: "g1", To: "agent"}, {ID: "g2", To: "files"}})
	b.forgetGrant("g2")
	got := ansi.Strip(strings.Join(b.lines(40, 20), "\n"))
	for _, want := range []string{"● agent  thinking · 2 thoughts · reading", "● files", "AWAITING YOU (1)", "#3 agent → files: write_file", "agent · until revoked", "  what g1"} {
		if !strings.Contains(got, want) {
			t.Errorf("the board lacks %q:\n%s", want, got)
		}
	}
	if strings.Contains(got, "g2") {
		t.Errorf("a forgotten grant shows:\n%s", got)
	}
	if short := b.lines(40, 3); len(short) != 3 || ansi.Strip(short[2]) != "…" {
		t.Errorf("three lines of board: %q", short)
	}
}
