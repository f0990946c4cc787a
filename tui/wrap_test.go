package tui

import (
	"fmt"
	"strings"
	"testing"
	"time"

	tea "charm.land/bubbletea/v2"
)

// TestWrapBesideTheBoard: with the side board docked (from 120 columns),
// every character of a long chat reaches the screen, at several widths,
// for unbroken text, wide runes and /verbose JSON: joined back, the
// transcript's column holds the whole text. (Lines drawn to the column's
// full width once lost their last character to the gap before the board.)
func TestWrapBesideTheBoard(t *testing.T) {
	texts := []string{
		strings.Repeat("0123456789", 40),
		strings.Repeat("漢字かなカナ", 30),
		strings.Repeat("ab漢", 70),
		strings.Repeat("word ", 80),
	}
	for _, width := range []int{120, 121, 123, 150, 201} {
		for i, text := range texts {
			h := newHarness(t)
			h.send(tea.WindowSizeMsg{Width: width, Height: 60})
			if !h.m.board.docked(h.m.width) {
				t.Fatalf("width %d: the board is not docked", width)
			}
			h.recv(chat("assistant", "c1", text))
			got := transcriptColumn(h.screen())
			if !strings.Contains(got, strings.ReplaceAll(text, " ", "")) {
				t.Errorf("width %d, text %d: characters lost at the wraps:\n%s", width, i, h.screen())
			}
		}
		// /verbose draws envelopes as JSON, wrapped the same way.
		h := newHarness(t)
		h.send(tea.WindowSizeMsg{Width: width, Height: 60})
		h.typeLine("/verbose")
		h.recv(chat("assistant", "c2", strings.Repeat("x", 150)+"END"))
		if got := transcriptColumn(h.screen()); !strings.Contains(got, strings.Repeat("x", 150)+"END") {
			t.Errorf("width %d, /verbose: characters lost at the wraps:\n%s", width, h.screen())
		}
	}
}

// transcriptColumn joins what the screen shows left of the board's
// separator, with the indentation and spaces taken out.
func transcriptColumn(screen string) string {
	var b strings.Builder
	for _, l := range strings.Split(screen, "\n") {
		left, _, _ := strings.Cut(l, "│")
		b.WriteString(strings.ReplaceAll(left, " ", ""))
	}
	return b.String()
}

// TestIntroShown: the lines a newcomer should read (mew demo's "what to
// try") are the first lines of the transcript, inside the full-screen UI,
// and /help shows them again.
func TestIntroShown(t *testing.T) {
	sp := newFake()
	h := &harness{t: t}
	h.m = New(Options{Space: sp, SpaceName: "demo", Context: t.Context(), Intro: []string{"Try:", "  what is 2 plus 3   the calculator answers"},
		Tick: func(time.Duration, func(time.Time) tea.Msg) tea.Cmd { return nil }})
	h.sp = sp
	h.send(tea.WindowSizeMsg{Width: 80, Height: 24})
	h.recv(welcome("you", "assistant"))
	if s := h.screen(); !strings.Contains(s, "Try:") || !strings.Contains(s, "what is 2 plus 3   the calculator answers") {
		t.Fatalf("the intro is not on the first screen:\n%s", s)
	}
	for range 30 {
		h.recv(chat("assistant", "", "filler"))
	}
	if strings.Contains(h.screen(), "Try:") {
		t.Fatal("the intro should have scrolled away for this check to mean anything")
	}
	h.typeLine("/help")
	if s := h.screen(); !strings.Contains(s, "what is 2 plus 3") {
		t.Errorf("/help does not repeat the intro:\n%s", s)
	}
}

// TestTranscriptBoundedByBytes: 400 chats of 100 KB, and /verbose's raw
// envelopes of them (51 MB once folded), hold no more than the
// transcript's byte bound; each long chat is folded with a note that says
// how to read the whole, and the newest stay. (500 chats of 900 KB once
// took the UI to 1 GB.)
func TestTranscriptBoundedByBytes(t *testing.T) {
	h := newHarness(t)
	h.typeLine("/verbose")
	big := strings.Repeat("0123456789abcdef", 100<<10/16)
	for i := range 400 {
		h.recv(chat("assistant", fmt.Sprintf("big-%d", i), big))
	}
	if h.m.tr.textBytes > maxTranscriptBytes || h.m.tr.textBytes != h.m.tr.droppedBytes(len(h.m.tr.entries)) {
		t.Fatalf("the transcript holds %d bytes of text (counted %d), bound %d", h.m.tr.droppedBytes(len(h.m.tr.entries)), h.m.tr.textBytes, maxTranscriptBytes)
	}
	last, ok := h.m.tr.entries[len(h.m.tr.entries)-1].(*chatEntry)
	if !ok || last.id != "big-399" || last.folded != len(big)-maxEntryBytes || len(h.m.tr.entries) >= 800 {
		t.Fatalf("the newest entry: %#v", h.m.tr.entries[len(h.m.tr.entries)-1])
	}
	if s := strings.Join(strings.Fields(h.screen()), ""); !strings.Contains(s, "KBmore,foldedtokeepthetranscriptsmall;mewlogquery--idbig-399showsit") {
		t.Errorf("the folded chat does not say where the whole is:\n%s", s)
	}
}
