//go:build unix

package cli

import (
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/mew-protocol/mew/internal/proc"
	"github.com/mew-protocol/mew/space"
)

// demoHints are the commands the demo tells a newcomer to try, each followed
// by TestNewcomerDemoTmux. A hint the demo adds needs its check there.
var demoHints = []string{
	"what is 2 plus 3",
	"@helper write hello to notes.txt",
	"@assistant read notes.txt",
}

// TestNewcomerDemoTmux is a newcomer's first minutes: the README's first
// command (go run ./cmd/mew demo; here the built binary's mew demo, with no
// flags) in a 160×48 terminal, on the offline model. The demo's "what to
// try" lines must be inside the full-screen UI, and every hint they give
// must get its right answer: the sum from the calculator, the helper's
// write as a proposal that 1 approves (the file then holds hello), the
// assistant reading the file back, /help showing the hints again, and /quit
// ending the demo, its processes and its temporary directory.
func TestNewcomerDemoTmux(t *testing.T) {
	tmp := t.TempDir() // the demo's temporary directory goes here (TMPDIR)
	var pids []int
	t.Cleanup(func() { // after tmux is gone: whatever the demo left
		for _, pid := range pids {
			proc.Terminate(pid, true)
		}
	})
	tm := startTmux(t, 160, 48)
	tm.env = append(tm.env, "TMPDIR="+tmp)
	tm.run(t.TempDir(), mewBinary(t), "demo")

	s := tm.wait("the demo's UI with what to try", func(s string) bool {
		return strings.Contains(s, "● connected · demo") && strings.Contains(s, "joined demo as you") &&
			strings.Contains(s, "Try:") && strings.Contains(s, "Ctrl-C or /quit stops the space")
	})
	if got := newcomerHints(s); !slices.Equal(got, demoHints) {
		t.Fatalf("the demo's hints are %q, the test follows %q:\n%s", got, demoHints, s)
	}
	if !strings.Contains(s, "offline rule-based model") {
		t.Errorf("the demo does not say it runs the offline model:\n%s", s)
	}
	// Before the UI: only the line saying where the space starts.
	if before, _, ok := strings.Cut(s, "mew demo: you, an assistant"); !ok || strings.TrimSpace(before) != "" {
		t.Errorf("the hints are not the UI's first lines:\n%s", s)
	}
	dirs, _ := filepath.Glob(filepath.Join(tmp, "mew-demo-*"))
	if len(dirs) != 1 {
		t.Fatalf("the demo's directories in TMPDIR: %q", dirs)
	}
	demoDir := dirs[0]
	if st, err := space.ReadRunState(filepath.Join(demoDir, ".mew")); err == nil {
		pids = st.PIDs()
	}
	if !strings.Contains(strings.Join(transcript(s), "\n"), filepath.Join(demoDir, "files")) {
		t.Errorf("the demo does not say where its files are (%s):\n%s", filepath.Join(demoDir, "files"), s)
	}

	// what is 2 plus 3: the assistant calls the calculator and answers 5.
	tm.typeLine(demoHints[0])
	tm.wait("the sum from the calculator", func(s string) bool {
		return hasLine(s, `^assistant → calculator: add\(a: 2, b: 3\)$`) && hasLine(s, `^  calculator → assistant: 5$`) &&
			hasLine(s, `^assistant → you: .*\b5\b`)
	})

	// @helper write hello to notes.txt: a proposal, approved with 1.
	tm.typeLine(demoHints[1])
	tm.wait("the dialog of proposal #1", func(s string) bool {
		return strings.Contains(s, "╭─ proposal #1") && strings.Contains(s, "│ helper → files: write_file") &&
			strings.Contains(s, "content: hello") && strings.Contains(s, "1 Yes")
	})
	tm.keys("1")
	tm.wait("the write done", func(s string) bool {
		// Ours says "wrote 5 bytes", the npm filesystem server (which the
		// demo prefers when it is installed, as in CI) "Successfully wrote".
		return hasLine(s, `^  files → you: (wrote 5 bytes to|Successfully wrote to) notes\.txt$`) && hasLine(s, `^helper → you: .*(wrote 5 bytes|Successfully wrote)`) &&
			!strings.Contains(s, "╭─ proposal")
	})
	tm.file(filepath.Join(demoDir, "files", "notes.txt"), "hello")

	// @assistant read notes.txt: the file read back.
	tm.typeLine(demoHints[2])
	tm.wait("the file read back", func(s string) bool {
		return hasLine(s, `^assistant → files: read_(text_)?file\(path: notes\.txt\)$`) && hasLine(s, `^  files → assistant: hello$`) &&
			hasLine(s, `^assistant → you: .*\bhello\b`)
	})

	// /help: the commands, then the hints again.
	tm.typeLine("/help")
	tm.wait("the hints in /help", func(s string) bool {
		_, after, ok := strings.Cut(s, "/exit                      leave")
		return ok && slices.Equal(newcomerHints(after), demoHints)
	})

	// /quit: the demo ends, and with it its processes and its directory.
	tm.typeLine("/quit")
	tm.waitExit()
	for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		alive := slices.DeleteFunc(slices.Clone(pids), func(pid int) bool { return !proc.Alive(pid) })
		if len(alive) == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("processes %v of the demo outlived /quit", alive)
		}
	}
	if len(pids) < 5 {
		t.Errorf("the demo's state named %d processes", len(pids))
	}
	if _, err := os.Stat(demoDir); !os.IsNotExist(err) {
		t.Errorf("the demo's directory %s is still there after /quit (%v)", demoDir, err)
	}
}

// transcript is the screen's transcript column: the side board cut off, a
// wrapped line (continued with four spaces) joined to its start, the dialog
// and the input and status lines left out.
func transcript(screen string) []string {
	var lines []string
	for _, l := range strings.Split(screen, "\n") {
		if strings.HasPrefix(l, "│") || strings.HasPrefix(l, "╭") || strings.HasPrefix(l, "╰") ||
			strings.HasPrefix(l, ">") || strings.HasPrefix(l, " ● ") {
			continue
		}
		if i := strings.Index(l, "│"); i >= 0 {
			l = l[:i]
		}
		l = strings.TrimRight(l, " ")
		if rest, ok := strings.CutPrefix(l, "    "); ok && len(lines) > 0 && !strings.HasPrefix(rest, " ") {
			lines[len(lines)-1] += " " + rest
			continue
		}
		lines = append(lines, l)
	}
	return lines
}

// hasLine reports whether a line of the screen's transcript matches re.
func hasLine(screen, re string) bool {
	r := regexp.MustCompile(re)
	return slices.ContainsFunc(transcript(screen), r.MatchString)
}

// newcomerHints are the commands of the first "Try:" block on the screen:
// the indented lines after it, each command up to the gap before its
// explanation, until the line naming /help.
func newcomerHints(screen string) []string {
	lines := transcript(screen)
	i := slices.Index(lines, "Try:")
	if i < 0 {
		return nil
	}
	var hints []string
	for _, l := range lines[i+1:] {
		cmd, _, _ := strings.Cut(strings.TrimSpace(l), "  ")
		if !strings.HasPrefix(l, "  ") || strings.HasPrefix(cmd, "/help") {
			break
		}
		hints = append(hints, cmd)
	}
	return hints
}
