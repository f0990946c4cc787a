package tui

import (
	"fmt"
	"strings"
	"testing"
	"time"

	tea "charm.land/bubbletea/v2"
	"github.com/charmbracelet/x/ansi"
	teatest "github.com/charmbracelet/x/exp/teatest/v2"
	"go.uber.org/goleak"
)

// TestMain checks that no test leaves a goroutine behind, but teatest's
// own: it waits for a SIGINT for as long as the process lives.
func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m, goleak.IgnoreAnyFunction("github.com/charmbracelet/x/exp/teatest/v2.NewTestModel.func2"))
}

// TestProgram runs the model in a real Bubble Tea program (teatest) at
// 80×24 and 160×48: the terminal's size, the space's envelopes and the
// keys arrive as the program delivers them, commands run on the program's
// goroutines, and the screen it draws shows the dialog and, once Yes is
// pressed, the outcome. The last frame is a golden one.
func TestProgram(t *testing.T) {
	for _, size := range [][2]int{{80, 24}, {160, 48}} {
		name := fmt.Sprintf("%dx%d", size[0], size[1])
		t.Run(name, func(t *testing.T) {
			sp := newFake()
			at := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
			sp.now = func() time.Time { return at }
			m := New(Options{
				Space: sp, SpaceName: "demo", Context: t.Context(), Now: sp.now,
				Tick: func(time.Duration, func(time.Time) tea.Msg) tea.Cmd { return nil },
			})
			tm := teatest.NewTestModel(t, m, teatest.WithInitialTermSize(size[0], size[1]))
			for _, env := range []*Envelope{
				{welcome("you", "assistant", "files")},
				{chat("assistant", "c1", "I will write **the notes** now", "you")},
				{propose("assistant", "pr1", "files", "write_file", map[string]any{"path": "notes.txt", "content": "buy milk"})},
			} {
				tm.Send(*env)
			}
			waitScreen(t, tm, "╭─ proposal #1")
			tm.Type("y")
			waitScreen(t, tm, "approved by you")
			tm.Send(tea.KeyPressMsg{Code: 'c', Mod: tea.ModCtrl})
			final, ok := tm.FinalModel(t, teatest.WithFinalTimeout(10*time.Second)).(*Model)
			if !ok {
				t.Fatal("the program ended with another model")
			}
			if len(sp.fulfilled) != 1 || sp.fulfilled[0] != "pr1" {
				t.Errorf("fulfilled %v", sp.fulfilled)
			}
			content, _ := final.frame()
			lines := strings.Split(ansi.Strip(content), "\n")
			for i, l := range lines {
				lines[i] = strings.TrimRight(l, " ")
			}
			if len(lines) != size[1] {
				t.Errorf("the frame has %d lines", len(lines))
			}
			compareGolden(t, "program."+name, strings.Join(lines, "\n")+"\n")
		})
	}
}

// waitScreen waits until the program's output, escape sequences removed,
// holds text.
func waitScreen(t *testing.T, tm *teatest.TestModel, text string) {
	t.Helper()
	teatest.WaitFor(t, tm.Output(), func(b []byte) bool {
		return strings.Contains(ansi.Strip(string(b)), text)
	}, teatest.WithDuration(10*time.Second), teatest.WithCheckInterval(20*time.Millisecond))
}
