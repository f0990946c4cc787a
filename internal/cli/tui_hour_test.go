package cli

import (
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/mew-protocol/mew/space"
)

// TestTUITmuxHour drives the full-screen UI as a person uses it for a
// while, on the demo space run in the background: a proposal read for a
// minute and then approved goes through (no 30 s deadline cuts it off); a
// grant "for this session" ends when the person's terminal UI is gone,
// killed so that nothing of it runs: the gateway ends it, after its grace.
func TestTUITmuxHour(t *testing.T) {
	if testing.Short() {
		t.Skip("a minute of waiting: not with -short")
	}
	tm := startTmux(t, 160, 48)
	dir := tmplInit(t, "demo")
	s := &tmplSpace{t: t, dir: dir}
	t.Cleanup(s.cleanup)
	tmplRun(t, dir, "space", "up", "--detach", "-p", "0")
	st, err := space.ReadRunState(s.mewDir())
	if err != nil {
		t.Fatal(err)
	}
	s.pids = st.PIDs()
	tm.run(dir, mewBinary(t), "space", "connect")
	tm.wait("joined", func(s string) bool { return strings.Contains(s, "joined demo as you") })

	tm.typeLine("@helper write hello to notes.txt")
	tm.wait("the dialog of proposal #1", func(s string) bool { return strings.Contains(s, "╭─ proposal #1") })
	time.Sleep(61 * time.Second) // the person reads it
	if s := tm.capture(); !strings.Contains(s, "╭─ proposal #1") {
		t.Fatalf("the proposal left the screen while the person read it:\n%s", s)
	}
	tm.keys("1")
	tm.wait("the write done after a minute", func(s string) bool {
		return strings.Contains(s, "files → you: wrote 5 bytes to notes.txt") && !strings.Contains(s, "timed out")
	})
	tm.file(filepath.Join(dir, "files", "notes.txt"), "hello")

	// A grant for this session.
	tm.typeLine("@helper write bye to notes.txt")
	tm.wait("the dialog of proposal #2", func(s string) bool { return strings.Contains(s, "╭─ proposal #2") })
	tm.keys("g")
	tm.wait("the grant's scopes", func(s string) bool { return strings.Contains(s, "1 write_file with these exact arguments") })
	tm.keys("1")
	tm.wait("the grant's lifetimes", func(s string) bool { return strings.Contains(s, "3 this session") })
	tm.keys("3")
	tm.wait("the session grant made", func(s string) bool {
		return strings.Contains(s, "granted: helper may call write_file with these exact arguments, this session")
	})
	grants := func() []map[string]any {
		tok, err := os.ReadFile(filepath.Join(s.mewDir(), "tokens", "you.token"))
		if err != nil {
			t.Fatal(err)
		}
		req, _ := http.NewRequest(http.MethodGet, "http://127.0.0.1:"+strconv.Itoa(st.Port)+"/participants/you/grants", nil)
		req.Header.Set("Authorization", "Bearer "+strings.TrimSpace(string(tok)))
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var body struct {
			Grants []map[string]any `json:"grants"`
		}
		if err := json.NewDecoder(resp.Body).Decode(&body); err != nil {
			t.Fatal(err)
		}
		return body.Grants
	}
	if g := grants(); len(g) != 1 || g[0]["session"] != true {
		t.Fatalf("the ledger after the session grant: %v", g)
	}
	// The terminal UI dies: SIGKILL, so it revokes nothing itself.
	tm.signal(syscall.SIGKILL)
	deadline := time.Now().Add(30 * time.Second)
	for len(grants()) > 0 {
		if time.Now().After(deadline) {
			t.Fatalf("the session grant outlived its granter by 30 s: %v", grants())
		}
		time.Sleep(250 * time.Millisecond)
	}
}
