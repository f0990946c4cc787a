package mcpserver

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"go.uber.org/goleak"

	"github.com/mew-protocol/mew/internal/mcptest"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// connect serves s over in-memory transports and returns a client session.
func connect(t *testing.T, s *mcp.Server) *mcp.ClientSession {
	t.Helper()
	return mcptest.Connect(t, s, "test")
}

// call calls a tool and returns its text and whether it failed.
func call(t *testing.T, cs *mcp.ClientSession, name string, args map[string]any) (string, bool) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: name, Arguments: args})
	if err != nil {
		return err.Error(), true
	}
	return mcptest.Text(res), res.IsError
}

func TestCalculator(t *testing.T) {
	cs := connect(t, Calculator())
	for _, tc := range []struct {
		tool  string
		a, b  float64
		want  string
		isErr bool
	}{
		{"add", 2, 3, "5", false},
		{"subtract", 10, 3, "7", false},
		{"multiply", 7, 6, "42", false},
		{"divide", 1, 4, "0.25", false},
		{"divide", 1, 0, "division by zero", true},
	} {
		got, isErr := call(t, cs, tc.tool, map[string]any{"a": tc.a, "b": tc.b})
		if got != tc.want || isErr != tc.isErr {
			t.Errorf("%s(%v, %v) = %q (error %v), want %q", tc.tool, tc.a, tc.b, got, isErr, tc.want)
		}
	}
	if got, isErr := call(t, cs, "add", map[string]any{"a": "two", "b": 3}); !isErr {
		t.Errorf("a string operand accepted: %s", got)
	}
}

func TestFilesystem(t *testing.T) {
	dir := t.TempDir()
	root := filepath.Join(dir, "files")
	s, closeRoot, err := Filesystem(root)
	if err != nil {
		t.Fatal(err)
	}
	defer closeRoot()
	cs := connect(t, s)
	outside := filepath.Join(dir, "secret.txt")
	if err := os.WriteFile(outside, []byte("secret"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(outside, filepath.Join(root, "link.txt")); err != nil {
		t.Fatal(err)
	}

	steps := []struct {
		tool  string
		args  map[string]any
		want  string
		isErr bool
	}{
		{"write_file", map[string]any{"path": "notes/a.md", "content": "hello"}, "wrote 5 bytes to notes/a.md", false},
		{"read_text_file", map[string]any{"path": "notes/a.md"}, "hello", false},
		{"read_file", map[string]any{"path": filepath.Join(root, "notes", "a.md")}, "hello", false},
		{"list_directory", map[string]any{"path": "."}, "[FILE] link.txt\n[DIR] notes", false},
		{"search_files", map[string]any{"path": ".", "pattern": "*.md"}, "notes/a.md", false},
		{"move_file", map[string]any{"source": "notes/a.md", "destination": "b.md"}, "moved notes/a.md to b.md", false},
		{"directory_tree", map[string]any{"path": ""}, "b.md\nlink.txt\nnotes/", false},
		{"create_directory", map[string]any{"path": "x/y"}, "created x/y", false},
		{"list_allowed_directories", map[string]any{}, root, false},
		// Escapes are refused.
		{"read_text_file", map[string]any{"path": "../secret.txt"}, "outside the allowed directory", true},
		{"read_text_file", map[string]any{"path": outside}, "outside the allowed directory", true},
		{"read_text_file", map[string]any{"path": "link.txt"}, "outside the allowed directory", true},
		{"write_file", map[string]any{"path": "../../evil", "content": "x"}, "outside the allowed directory", true},
		{"write_file", map[string]any{"path": "link.txt", "content": "x"}, "outside the allowed directory", true},
		{"read_text_file", map[string]any{"path": "a\x00b"}, "NUL", true},
		{"read_text_file", map[string]any{"path": "missing.txt"}, "no such file or directory: missing.txt", true},
		{"move_file", map[string]any{"source": "b.md", "destination": "x"}, "x exists", true},
		{"write_file", map[string]any{"path": ".", "content": "x"}, "needs a file name", true},
	}
	for _, st := range steps {
		got, isErr := call(t, cs, st.tool, st.args)
		if isErr != st.isErr || !strings.Contains(got, st.want) {
			t.Errorf("%s %v = %q (error %v), want %q (error %v)", st.tool, st.args, got, isErr, st.want, st.isErr)
		}
	}
	if data, _ := os.ReadFile(outside); string(data) != "secret" {
		t.Errorf("the file outside changed: %q", data)
	}
	big := filepath.Join(root, "big")
	if err := os.WriteFile(big, make([]byte, maxRead+1), 0o644); err != nil {
		t.Fatal(err)
	}
	if got, isErr := call(t, cs, "read_text_file", map[string]any{"path": "big"}); !isErr || !strings.Contains(got, "larger than") {
		t.Errorf("big file: %.80q %v", got, isErr)
	}
}

// TestFilesystemRefusesSpecialFiles: a FIFO in the served directory is
// refused at once by every tool that would open it; opening it would block
// the server until someone wrote to the pipe.
func TestFilesystemRefusesSpecialFiles(t *testing.T) {
	root := t.TempDir()
	s, closeRoot, err := Filesystem(root)
	if err != nil {
		t.Fatal(err)
	}
	defer closeRoot()
	cs := connect(t, s)
	if err := syscall.Mkfifo(filepath.Join(root, "pipe"), 0o644); err != nil {
		t.Skipf("no FIFOs here: %v", err)
	}
	if err := os.Symlink("pipe", filepath.Join(root, "to-pipe")); err != nil {
		t.Fatal(err)
	}
	for _, st := range []struct {
		tool string
		args map[string]any
	}{
		{"read_file", map[string]any{"path": "pipe"}},
		{"read_text_file", map[string]any{"path": "to-pipe"}},
		{"write_file", map[string]any{"path": "pipe", "content": "x"}},
		{"list_directory", map[string]any{"path": "pipe"}},
		{"directory_tree", map[string]any{"path": "pipe"}},
	} {
		start := time.Now()
		got, isErr := call(t, cs, st.tool, st.args)
		if !isErr || !strings.Contains(got, "FIFO") {
			t.Errorf("%s %v = %q (error %v), want a FIFO refusal", st.tool, st.args, got, isErr)
		}
		// call gives up after 10 s; a refusal is immediate.
		if d := time.Since(start); d > 2*time.Second {
			t.Errorf("%s %v took %v", st.tool, st.args, d)
		}
	}
	// The server still works, and the listing shows the pipe without opening it.
	if got, isErr := call(t, cs, "list_directory", map[string]any{"path": "."}); isErr || !strings.Contains(got, "pipe") {
		t.Errorf("list_directory . = %q (error %v)", got, isErr)
	}
	if got, isErr := call(t, cs, "read_file", map[string]any{"path": "."}); !isErr || !strings.Contains(got, "is a directory") {
		t.Errorf("read_file . = %q (error %v)", got, isErr)
	}
	if got, isErr := call(t, cs, "write_file", map[string]any{"path": "new.txt", "content": "longer text"}); isErr {
		t.Fatalf("write_file: %s", got)
	}
	if got, isErr := call(t, cs, "write_file", map[string]any{"path": "new.txt", "content": "short"}); isErr {
		t.Fatalf("write_file again: %s", got)
	}
	if got, _ := call(t, cs, "read_file", map[string]any{"path": "new.txt"}); got != "short" {
		t.Errorf("rewritten file reads %q, want it truncated to \"short\"", got)
	}
}

// TestFilesystemHidesPrivateState: a space's .mew directory (tokens, run
// state, logs) is never read, written, listed or found, by any spelling of
// its path, even when the served directory is the space itself.
func TestFilesystemHidesPrivateState(t *testing.T) {
	root := t.TempDir()
	if err := os.MkdirAll(filepath.Join(root, ".mew", "tokens"), 0o700); err != nil {
		t.Fatal(err)
	}
	const token = "very-secret-token-of-the-human"
	if err := os.WriteFile(filepath.Join(root, ".mew", "tokens", "human.token"), []byte(token), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(root, "README.md"), []byte("hello"), 0o644); err != nil {
		t.Fatal(err)
	}
	s, closeRoot, err := Filesystem(root)
	if err != nil {
		t.Fatal(err)
	}
	defer closeRoot()
	cs := connect(t, s)
	for _, c := range []struct {
		tool string
		args map[string]any
	}{
		{"read_file", map[string]any{"path": ".mew/tokens/human.token"}},
		{"read_text_file", map[string]any{"path": "./.mew/../.mew/tokens/human.token"}},
		{"read_file", map[string]any{"path": filepath.Join(root, ".mew", "tokens", "human.token")}},
		{"read_file", map[string]any{"path": ".MEW/tokens/human.token"}},
		{"list_directory", map[string]any{"path": ".mew"}},
		{"list_directory", map[string]any{"path": ".mew/tokens"}},
		{"directory_tree", map[string]any{"path": ".mew"}},
		{"write_file", map[string]any{"path": ".mew/tokens/agent.token", "content": "x"}},
		{"get_file_info", map[string]any{"path": ".mew/tokens/human.token"}},
		{"move_file", map[string]any{"source": ".mew", "destination": "stolen"}},
		{"move_file", map[string]any{"source": "README.md", "destination": ".mew/README.md"}},
		{"create_directory", map[string]any{"path": ".mew/x"}},
	} {
		out, failed := call(t, cs, c.tool, c.args)
		if !failed || strings.Contains(out, token) || !strings.Contains(out, "private") {
			t.Errorf("%s %v: failed=%v %q", c.tool, c.args, failed, out)
		}
	}
	for _, c := range []struct {
		tool string
		args map[string]any
	}{
		{"list_directory", map[string]any{"path": "."}},
		{"directory_tree", map[string]any{"path": "."}},
		{"search_files", map[string]any{"path": ".", "pattern": "token"}},
		{"search_files", map[string]any{"path": ".", "pattern": ".mew"}},
	} {
		out, failed := call(t, cs, c.tool, c.args)
		if failed || strings.Contains(out, ".mew") || strings.Contains(out, "human.token") {
			t.Errorf("%s %v shows the private directory: %q", c.tool, c.args, out)
		}
	}
	if _, err := os.Stat(filepath.Join(root, ".mew", "tokens", "agent.token")); err == nil {
		t.Error("a token file was written")
	}
}

// TestRevisions: the calculator and the filesystem agree on every revision
// mew speaks, and on the right one for revisions it does not.
func TestRevisions(t *testing.T) {
	inMemory := func(s *mcp.Server) func(t *testing.T) mcp.Transport {
		return func(t *testing.T) mcp.Transport {
			ct, st := mcp.NewInMemoryTransports()
			ss, err := s.Connect(context.Background(), st, nil)
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { _ = ss.Close() })
			return ct
		}
	}
	t.Run("calculator", func(t *testing.T) { mcptest.CheckRevisions(t, inMemory(Calculator()), "add") })
	t.Run("filesystem", func(t *testing.T) {
		fs, closeRoot, err := Filesystem(t.TempDir())
		if err != nil {
			t.Fatal(err)
		}
		defer closeRoot()
		mcptest.CheckRevisions(t, inMemory(fs), "read_text_file")
	})
}

// mazeCall calls a cat-maze tool and returns its text and state.
func mazeCall(t *testing.T, cs *mcp.ClientSession, name string) (string, MazeState) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: name, Arguments: map[string]any{}})
	if err != nil || res.IsError || len(res.Content) != 1 {
		t.Fatalf("%s: %+v, %v", name, res, err)
	}
	raw, err := json.Marshal(res.StructuredContent)
	if err != nil {
		t.Fatal(err)
	}
	var st MazeState
	if err := json.Unmarshal(raw, &st); err != nil {
		t.Fatalf("%s: structured content %s: %v", name, raw, err)
	}
	return res.Content[0].(*mcp.TextContent).Text, st
}

// mazeRoute finds the moves from the cat to its home on a board as a
// player reads it: tiles are ⬛ walls, anything else can be walked on.
func mazeRoute(t *testing.T, board string) []string {
	t.Helper()
	var grid [][]string
	var cat, home MazePos
	for r, line := range strings.Split(board, "\n") {
		var row []string
		for c, tile := range strings.Split(line, "") {
			// Every tile is one rune, so Split by "" yields whole tiles.
			switch tile {
			case "🐈":
				cat = MazePos{r, c}
			case "🏡":
				home = MazePos{r, c}
			}
			row = append(row, tile)
		}
		grid = append(grid, row)
	}
	type step struct {
		from MazePos
		dir  string
	}
	prev := map[MazePos]step{cat: {}}
	queue := []MazePos{cat}
	for len(queue) > 0 && queue[0] != home {
		p := queue[0]
		queue = queue[1:]
		for _, d := range []struct {
			name   string
			dr, dc int
		}{{"up", -1, 0}, {"down", 1, 0}, {"left", 0, -1}, {"right", 0, 1}} {
			n := MazePos{p.Row + d.dr, p.Col + d.dc}
			if n.Row < 0 || n.Row >= len(grid) || n.Col < 0 || n.Col >= len(grid[n.Row]) || grid[n.Row][n.Col] == "⬛" {
				continue
			}
			if _, seen := prev[n]; !seen {
				prev[n] = step{p, d.name}
				queue = append(queue, n)
			}
		}
	}
	if _, ok := prev[home]; !ok {
		t.Fatalf("no way home on\n%s", board)
	}
	var route []string
	for p := home; p != cat; p = prev[p].from {
		route = append([]string{prev[p].dir}, route...)
	}
	return route
}

// TestCatMaze plays the game through: every level is solvable from what
// view shows, a wall stops the cat, home starts the next level, the last
// home completes a run and starts over, and restart resets the moves.
func TestCatMaze(t *testing.T) {
	cs := connect(t, CatMaze())
	tools, err := cs.ListTools(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, tl := range tools.Tools {
		names = append(names, tl.Name)
	}
	if want := "down left restart right up view"; strings.Join(sortedCopy(names), " ") != want {
		t.Errorf("tools %v, want %s", names, want)
	}

	text, st := mazeCall(t, cs, "view")
	if st.Event != "view" || st.Level != 1 || st.TotalLevels != 10 || st.Cat != (MazePos{1, 1}) ||
		st.Width != 7 || st.Height != 5 || !strings.Contains(st.Board, "🟩") || !strings.Contains(text, "Level 1/10: First Pounce\n"+st.Board) {
		t.Fatalf("view: %+v\n%s", st, text)
	}
	// The top-left tile is always a wall: up from the start bumps into it.
	text, st = mazeCall(t, cs, "up")
	if st.Event != "blocked" || st.Cat != (MazePos{1, 1}) || st.MovesThisLevel != 0 || !strings.Contains(text, "Bump! A wall is up of the cat") {
		t.Errorf("up into the wall: %+v\n%s", st, text)
	}

	total := 0
	for level := 1; level <= 10; level++ {
		_, st = mazeCall(t, cs, "view")
		if st.Level != level {
			t.Fatalf("level %d, want %d", st.Level, level)
		}
		route := mazeRoute(t, st.Board)
		for i, dir := range route {
			text, st = mazeCall(t, cs, dir)
			if i < len(route)-1 && (st.Event != "moved" || st.MovesThisLevel != i+1) {
				t.Fatalf("level %d move %d %s: %+v", level, i+1, dir, st)
			}
		}
		total += len(route)
		want := "level-complete"
		if level == 10 {
			want = "game-complete"
		}
		if st.Event != want || !strings.Contains(text, fmt.Sprintf("is home! 🎉 Level %d", level)) {
			t.Fatalf("level %d home: %+v\n%s", level, st, text)
		}
	}
	if st.Level != 1 || st.RunsCompleted != 1 || st.TotalMoves != 0 || st.MovesThisLevel != 0 ||
		!strings.Contains(text, fmt.Sprintf("All 10 levels done in %d moves", total)) {
		t.Errorf("after the last level: %+v\n%s", st, text)
	}

	mazeCall(t, cs, mazeRoute(t, st.Board)[0])
	text, st = mazeCall(t, cs, "restart")
	if st.Event != "restart" || st.Level != 1 || st.TotalMoves != 0 || st.RunsCompleted != 1 || st.Cat != (MazePos{1, 1}) ||
		!strings.HasPrefix(text, "Back to the start") {
		t.Errorf("restart: %+v\n%s", st, text)
	}
}

func sortedCopy(s []string) []string {
	c := slices.Clone(s)
	slices.Sort(c)
	return c
}

// TestComplete: every server declares completions and answers
// completion/complete with an empty list (it has nothing to complete).
func TestComplete(t *testing.T) {
	fs, closeRoot, err := Filesystem(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	defer closeRoot()
	for name, s := range map[string]*mcp.Server{"calculator": Calculator(), "filesystem": fs, "cat-maze": CatMaze()} {
		cs := connect(t, s)
		if cs.InitializeResult().Capabilities.Completions == nil {
			t.Errorf("%s: no completions capability", name)
		}
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		res, err := cs.Complete(ctx, &mcp.CompleteParams{Ref: &mcp.CompleteReference{Type: "ref/prompt", Name: "p"}, Argument: mcp.CompleteParamsArgument{Name: "a", Value: "x"}})
		cancel()
		if err != nil || res.Completion.Values == nil || len(res.Completion.Values) != 0 {
			t.Errorf("%s: %+v, %v", name, res, err)
		}
	}
}
