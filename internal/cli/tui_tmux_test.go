//go:build unix

package cli

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/mew-protocol/mew/gateway"
	"github.com/mew-protocol/mew/internal/testutil"
)

// TestTUITmux drives the full-screen UI of the built binary in a real
// terminal (tmux): mew space up -i on the demo template with the offline
// model, a question answered once, a helper's proposal granted for 10
// minutes, the next identical call let through by the gateway without a
// dialog, /grants listing the grant, /revoke ending it, and the next call
// asking again. Every check reads the screen with capture-pane.
func TestTUITmux(t *testing.T) {
	tm := startTmux(t, 160, 48)
	dir := tmplInit(t, "demo")
	t.Cleanup(func() {
		// Ctrl-C ends the space when the test gets that far; after a
		// failure this stops what is left.
		ctx, cancel := context.WithTimeout(context.Background(), tmplWait)
		defer cancel()
		c := exec.CommandContext(ctx, mewBinary(t), "space", "down")
		c.Dir, c.Env = dir, cleanEnv()
		_ = c.Run()
	})
	tm.run(dir, mewBinary(t), "space", "up", "-i", "-p", "0")
	tm.wait("the space joined", func(s string) bool {
		return strings.Contains(s, "joined demo as you") && strings.Contains(s, "* files joined") &&
			strings.Contains(s, "* helper joined") && strings.Contains(s, "* calculator joined")
	})

	tm.typeLine("what is 2 plus 3")
	answer := "assistant → you: 2 + 3 = 5. (offline model)"
	s := tm.wait("the answer", func(s string) bool { return strings.Contains(s, answer) })
	if n := strings.Count(s, answer); n != 1 {
		t.Fatalf("the answer is on the screen %d times:\n%s", n, s)
	}

	// The helper may only read: its write is a proposal, which opens the
	// dialog.
	tm.typeLine("@helper write hello to notes.txt")
	tm.wait("the dialog of proposal #1", func(s string) bool {
		return strings.Contains(s, "╭─ proposal #1") && strings.Contains(s, "1 Yes") && strings.Contains(s, "2 Grant")
	})
	tm.keys("g")
	tm.wait("the grant's scopes", func(s string) bool {
		return strings.Contains(s, "1 write_file with these exact arguments")
	})
	tm.keys("1")
	tm.wait("the grant's lifetimes", func(s string) bool { return strings.Contains(s, "2 10 minutes") })
	tm.keys("2")
	tm.wait("the write done and the grant made", func(s string) bool {
		return strings.Contains(s, "granted: helper may call write_file with these exact arguments, 10 minutes") &&
			strings.Contains(s, "(proposal #1)") && strings.Contains(s, "files → you: wrote 5 bytes to notes.txt") &&
			!strings.Contains(s, "╭─ proposal")
	})
	tm.file(filepath.Join(dir, "files", "notes.txt"), "hello")
	// The side board (docked at 160 columns) reads the gateway's ledger.
	tm.wait("the grant on the board", func(s string) bool {
		return strings.Contains(s, "GRANTS IN FORCE") && strings.Contains(s, "│ helper · 9m left") &&
			strings.Contains(s, "│   write_file with these exact arguments")
	})

	// The same call again: the gateway lets it through under the grant, so
	// the helper calls the files itself and nobody is asked.
	tm.typeLine("@helper write hello to notes.txt")
	s = tm.wait("the granted call", func(s string) bool {
		return strings.Contains(s, "helper → files: write_file(content: hello, path: notes.txt)") &&
			strings.Contains(s, "files → helper: wrote 5 bytes to notes.txt")
	})
	if strings.Contains(s, "#2 helper proposes") || strings.Contains(s, "╭─ proposal") || strings.Contains(s, "pending") {
		t.Fatalf("the granted call asked for approval:\n%s", s)
	}

	tm.typeLine("/grants")
	tm.wait("the grants listed", func(s string) bool {
		return tmuxLedgerLine.MatchString(s)
	})
	tm.typeLine("/revoke 1")
	tm.wait("the grant revoked", func(s string) bool {
		return strings.Contains(s, "revoked grant 1: helper may no longer use write_file with these exact arguments") &&
			!strings.Contains(s, "GRANTS IN FORCE")
	})

	// Without the grant the gateway turns the helper's call back into a
	// proposal, and the dialog opens again.
	tm.typeLine("@helper write hello to notes.txt")
	// The file exists now: the dialog read it through the files bridge and
	// compares.
	tm.wait("the dialog of proposal #2", func(s string) bool {
		return strings.Contains(s, "#2 helper proposes → files: write_file") && strings.Contains(s, "╭─ proposal #2") &&
			strings.Contains(s, "│   content: the same as the file's")
	})
	// Edit: the arguments as JSON; "hello" becomes "bye", and the helper
	// gets the answer of the edited call.
	tm.keys("e")
	tm.wait("the editor", func(s string) bool {
		return strings.Contains(s, "Edit the arguments (a JSON object)") && strings.Contains(s, `"content": "hello",`)
	})
	tm.keys("Down", "End", "Left", "Left", "BSpace", "BSpace", "BSpace", "BSpace", "BSpace")
	tm.must("send-keys", "-l", "bye")
	tm.keys("Enter")
	tm.wait("the edited write", func(s string) bool {
		return strings.Contains(s, "approved by you with edited arguments") &&
			strings.Contains(s, "you → files: write_file(content: bye, path: notes.txt)  (proposal #2)") &&
			strings.Contains(s, "helper → you: You asked: write hello to notes.txt. files/write_file returned: wrote 3 bytes")
	})
	tm.file(filepath.Join(dir, "files", "notes.txt"), "bye")

	// No, with a reason and words: the helper hears them.
	tm.typeLine("@helper write hello to notes.txt")
	tm.wait("the dialog of proposal #3", func(s string) bool {
		return strings.Contains(s, "╭─ proposal #3") && strings.Contains(s, "-bye") && strings.Contains(s, "+hello")
	})
	tm.keys("3")
	tm.wait("the reasons of No", func(s string) bool { return strings.Contains(s, "Reject it because") })
	tm.keys("Enter")
	tm.wait("the words of No", func(s string) bool { return strings.Contains(s, "Your words to helper") })
	tm.typeLine("once is enough")
	tm.wait("the proposal rejected", func(s string) bool {
		return strings.Contains(s, "rejected by you: disagree (once is enough)")
	})

	tm.keys("C-c")
	tm.waitExit()
}

// tmuxLedgerLine is the grant as /grants lists it from the gateway's
// ledger, with its time left.
var tmuxLedgerLine = regexp.MustCompile(`1\. you → helper: write_file with these exact arguments · expires in (10m0|9m[0-5]\d)s`)

// tmuxTerm is a tmux server of one test, on a socket of its own, with one
// window.
type tmuxTerm struct {
	t        *testing.T
	sock     string
	env      []string
	geometry [2]int // width, height
}

// startTmux starts a tmux server for the test, skipped where tmux is
// missing unless under CI (CI installs it; there a missing tmux fails).
func startTmux(t *testing.T, width, height int) *tmuxTerm {
	t.Helper()
	if _, err := exec.LookPath("tmux"); err != nil {
		if os.Getenv("CI") != "" {
			t.Fatal("tmux not found; under CI the terminal UI's tmux test must run (apt-get install tmux)")
		}
		t.Skip("tmux not found: install Debian's tmux to run the terminal UI's end-to-end test")
	}
	tmp := t.TempDir()
	home := filepath.Join(tmp, "home") // the UI's history goes here, not in the user's home
	if err := os.Mkdir(home, 0o755); err != nil {
		t.Fatal(err)
	}
	tm := &tmuxTerm{t: t, sock: filepath.Join(tmp, "tmux.sock"),
		env: append(cleanEnv(), "HOME="+home, "TERM=xterm-256color", "TMUX=")}
	tm.geometry = [2]int{width, height}
	t.Cleanup(func() { _, _ = tm.tmux("kill-server") })
	return tm
}

// tmux runs a tmux command against the test's server.
func (tm *tmuxTerm) tmux(args ...string) (string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	c := exec.CommandContext(ctx, "tmux", append([]string{"-S", tm.sock}, args...)...)
	c.Env = tm.env
	out, err := c.CombinedOutput()
	if err != nil {
		return string(out), fmt.Errorf("tmux %s: %w: %s", strings.Join(args, " "), err, out)
	}
	return string(out), nil
}

// must runs a tmux command and fails the test when it fails.
func (tm *tmuxTerm) must(args ...string) string {
	tm.t.Helper()
	out, err := tm.tmux(args...)
	if err != nil {
		tm.t.Fatal(err)
	}
	return out
}

// run starts the window's program: argv in dir, through a shell that
// writes "[exited STATUS]" when it ends and keeps the window open.
func (tm *tmuxTerm) run(dir string, argv ...string) {
	tm.t.Helper()
	w, h := tm.geometry[0], tm.geometry[1]
	args := []string{"-f", "/dev/null", "new-session", "-d", "-x", fmt.Sprint(w), "-y", fmt.Sprint(h), "-c", dir, "--",
		"sh", "-c", `"$0" "$@"; echo "[exited $?]"; exec sleep 600`}
	tm.must(append(args, argv...)...)
}

// typeLine types text and Enter.
func (tm *tmuxTerm) typeLine(text string) {
	tm.t.Helper()
	tm.must("send-keys", "-l", text)
	tm.must("send-keys", "Enter")
}

// keys presses keys, named as tmux names them (Enter, C-c, …).
func (tm *tmuxTerm) keys(keys ...string) {
	tm.t.Helper()
	tm.must(append([]string{"send-keys"}, keys...)...)
}

// capture returns the screen as text.
func (tm *tmuxTerm) capture() string {
	tm.t.Helper()
	return tm.must("capture-pane", "-p")
}

// wait reads the screen until ok holds, and returns it; the test fails
// with the screen after tmplWait.
func (tm *tmuxTerm) wait(what string, ok func(string) bool) string {
	tm.t.Helper()
	deadline := time.Now().Add(tmplWait)
	for {
		s := tm.capture()
		if ok(s) {
			return s
		}
		if strings.Contains(s, "[exited ") {
			tm.t.Fatalf("waiting for %s: the program ended; its screen:\n%s", what, s)
		}
		if time.Now().After(deadline) {
			tm.t.Fatalf("waiting for %s: not on the screen after %v:\n%s", what, tmplWait, s)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// waitExit waits for the window's program to end, with status 0.
func (tm *tmuxTerm) waitExit() {
	tm.t.Helper()
	s := tm.wait("the program's end", func(s string) bool { return strings.Contains(s, "[exited ") })
	if !strings.Contains(s, "[exited 0]") {
		tm.t.Fatalf("the program failed:\n%s", s)
	}
}

// file checks that path holds want.
func (tm *tmuxTerm) file(path, want string) {
	tm.t.Helper()
	got, err := os.ReadFile(path)
	if err != nil || string(got) != want {
		tm.t.Fatalf("%s: %q, %v; want %q", path, got, err, want)
	}
}

// TestTUITmuxColour: the UI draws in colour on a terminal that has it, and
// in none when NO_COLOR is set (capture-pane -e shows the attributes).
func TestTUITmuxColour(t *testing.T) {
	g := testutil.StartGateway(t, clientSpace, gateway.Options{})
	friend := joinCLI(t, g, "friend-token")
	for _, c := range []struct {
		name   string
		env    []string
		colour bool
	}{{"colour", nil, true}, {"NO_COLOR", []string{"NO_COLOR=1"}, false}} {
		t.Run(c.name, func(t *testing.T) {
			tm := startTmux(t, 100, 30)
			argv := append(append([]string{"env"}, c.env...), mewBinary(t), "client", "connect",
				"-g", "ws://"+g.Addr, "-s", "cli-client", "-t", "human-token")
			tm.run(t.TempDir(), argv...)
			tm.wait("the UI", func(s string) bool { return strings.Contains(s, "connected") && strings.Contains(s, "joined") })
			if _, err := friend.Chat(t.Context(), "hello "+c.name); err != nil {
				t.Fatal(err)
			}
			tm.wait("the chat", func(s string) bool { return strings.Contains(s, "friend: hello "+c.name) })
			raw := tm.must("capture-pane", "-e", "-p")
			// SGR colours: 3x/4x (8 colours), 38;/48; (256 and true colour), 9x/10x (bright).
			coloured := regexp.MustCompile(`\x1b\[[0-9;]*(3[0-7]|4[0-7]|38;[25]|48;[25]|9[0-7]|10[0-7])[;m]`).MatchString(raw)
			if coloured != c.colour {
				t.Errorf("colour on the screen: %v, want %v:\n%q", coloured, c.colour, raw)
			}
			if c.colour {
				tm.typeLine("/exit")
				tm.waitExit()
				return
			}
			// SIGTERM ends it as well (mew cancels its context; the UI must
			// not race that with a signal handler of its own).
			tm.signal(syscall.SIGTERM)
			tm.waitExit()
		})
	}
}

// signal sends sig to the program the window's shell runs.
func (tm *tmuxTerm) signal(sig syscall.Signal) {
	tm.t.Helper()
	shell := strings.TrimSpace(tm.must("display-message", "-p", "#{pane_pid}"))
	children, err := os.ReadFile("/proc/" + shell + "/task/" + shell + "/children")
	if err != nil {
		tm.t.Skipf("finding the program's pid: %v", err)
	}
	f := strings.Fields(string(children))
	if len(f) != 1 {
		tm.t.Fatalf("the shell %s has children %q", shell, children)
	}
	pid, err := strconv.Atoi(f[0])
	if err != nil {
		tm.t.Fatal(err)
	}
	if err := syscall.Kill(pid, sig); err != nil {
		tm.t.Fatal(err)
	}
}
