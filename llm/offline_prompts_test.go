package llm_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mew-protocol/mew/internal/mcpserver"
	"github.com/mew-protocol/mew/internal/mcptest"
	"github.com/mew-protocol/mew/llm"
)

// The prompts that mew's demo, templates, docs and examples suggest, run on
// the offline model against the real MCP servers of those spaces (mew mcp
// calculator, filesystem and cat-maze, in memory), with the tools named and
// described as a mew agent offers them to its model. Each must call the
// right tools with the right arguments and end with an answer that says
// what the person asked and what came of it.

// space is the servers one agent of a space sees, by participant id.
type space struct {
	t        *testing.T
	dir      string // the filesystem server's directory, when there is one
	sessions map[string]*mcp.ClientSession
	tools    []llm.Tool
}

// newSpace serves the named servers in memory: "calculator", "cat-maze",
// or any other id for a filesystem server of a temporary directory holding
// files.
func newSpace(t *testing.T, files map[string]string, ids ...string) *space {
	t.Helper()
	s := &space{t: t, sessions: map[string]*mcp.ClientSession{}}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	for _, id := range ids {
		var srv *mcp.Server
		switch id {
		case "calculator":
			srv = mcpserver.Calculator()
		case "cat-maze":
			srv = mcpserver.CatMaze()
		default:
			s.dir = t.TempDir()
			for name, content := range files {
				if err := os.WriteFile(filepath.Join(s.dir, name), []byte(content), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			fs, closeRoot, err := mcpserver.Filesystem(s.dir)
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { _ = closeRoot() })
			srv = fs
		}
		cs := mcptest.Connect(t, srv, "offline-test")
		s.sessions[id] = cs
		list, err := cs.ListTools(ctx, nil)
		if err != nil {
			t.Fatal(err)
		}
		for _, tl := range list.Tools {
			params, err := json.Marshal(tl.InputSchema)
			if err != nil {
				t.Fatal(err)
			}
			// As agent.modelTools names and describes them.
			s.tools = append(s.tools, llm.Tool{Name: id + "/" + tl.Name,
				Description: fmt.Sprintf("%s (tool %q of participant %q)", tl.Description, tl.Name, id), Parameters: params})
		}
	}
	return s
}

// call runs a tool call and returns what the agent tells the model: the
// text of the result, "Error: " first when it failed.
func (s *space) call(name string, args map[string]any) string {
	id, tool, _ := strings.Cut(name, "/")
	cs := s.sessions[id]
	if cs == nil {
		return fmt.Sprintf("Error: unknown tool %q", name)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: tool, Arguments: args})
	if err != nil {
		return "Error: " + err.Error()
	}
	if res.IsError {
		return "Error: " + mcptest.Text(res)
	}
	return mcptest.Text(res)
}

// rejected is what a mew agent tells its model when a person rejects the
// proposal of a call (agent.callTool).
const rejected = `Error: you rejected the proposal to call write_file on files (reason: disagree): "once is enough"`

func TestOfflineSuggestedPrompts(t *testing.T) {
	demo := []string{"calculator", "files"}
	for _, tc := range []struct {
		name    string
		servers []string
		files   map[string]string
		request string
		reject  string // a tool whose call is rejected as `rejected` says
		calls   []call // {"", ""} stands for the list_allowed_directories answer
		answer  string // exact; "~" first: the answer contains the rest
	}{
		// mew demo and the demo template: the lines the demo prints.
		{"demo add", demo, nil, "what is 2 plus 3", "",
			[]call{{"calculator/add", `{"a":2,"b":3}`}}, "2 + 3 = 5. (offline model)"},
		{"demo write", demo, nil, "@helper write hello to notes.txt", "",
			[]call{{"files/write_file", `{"content":"hello","path":"notes.txt"}`}},
			"You asked: write hello to notes.txt. files/write_file returned: wrote 5 bytes to notes.txt. (offline model)"},
		{"demo read", demo, map[string]string{"notes.txt": "hello"}, "@assistant read notes.txt", "",
			[]call{{"files/read_file", `{"path":"notes.txt"}`}},
			"You asked: read notes.txt. files/read_file returned: hello. (offline model)"},
		{"demo rejected write", demo, nil, "@helper write hello to notes.txt", "files/write_file",
			[]call{{"files/write_file", `{"content":"hello","path":"notes.txt"}`}},
			`You asked: write hello to notes.txt. I proposed files/write_file (content: hello, path: notes.txt), and you rejected it (disagree): "once is enough". So it was not done. (offline model)`},

		// Arithmetic: precedence, parentheses, unary minus, decimals, and
		// division by zero said plainly.
		{"precedence", demo, nil, "what is 2+3*4", "",
			[]call{{"calculator/multiply", `{"a":3,"b":4}`}, {"calculator/add", `{"a":2,"b":12}`}},
			"2 + 3 × 4 = 14 (3 × 4 = 12, then 2 + 12 = 14). (offline model)"},
		{"parentheses", demo, nil, "what is (2+3)*4?", "",
			[]call{{"calculator/add", `{"a":2,"b":3}`}, {"calculator/multiply", `{"a":5,"b":4}`}},
			"(2 + 3) × 4 = 20 (2 + 3 = 5, then 5 × 4 = 20). (offline model)"},
		{"words", demo, nil, "what is 12 times 7 minus 4", "",
			[]call{{"calculator/multiply", `{"a":12,"b":7}`}, {"calculator/subtract", `{"a":84,"b":4}`}},
			"12 × 7 - 4 = 80 (12 × 7 = 84, then 84 - 4 = 80). (offline model)"},
		{"words precedence", demo, nil, "calculate 1 plus 2 times 3", "",
			[]call{{"calculator/multiply", `{"a":2,"b":3}`}, {"calculator/add", `{"a":1,"b":6}`}},
			"1 + 2 × 3 = 7 (2 × 3 = 6, then 1 + 6 = 7). (offline model)"},
		{"unary minus", demo, nil, "what's -3 + 5", "",
			[]call{{"calculator/add", `{"a":-3,"b":5}`}}, "-3 + 5 = 2. (offline model)"},
		{"minus a negative", demo, nil, "2 - -3 = ?", "",
			[]call{{"calculator/subtract", `{"a":2,"b":-3}`}}, "2 - -3 = 5. (offline model)"},
		{"negated group", demo, nil, "what is -(2+3)*2", "",
			[]call{{"calculator/add", `{"a":2,"b":3}`}, {"calculator/multiply", `{"a":-5,"b":2}`}},
			"-(2 + 3) × 2 = -10 (2 + 3 = 5, then -5 × 2 = -10). (offline model)"},
		{"decimals", demo, nil, "what is 1.5 * 4 / 0.5", "",
			[]call{{"calculator/multiply", `{"a":1.5,"b":4}`}, {"calculator/divide", `{"a":6,"b":0.5}`}},
			"1.5 × 4 ÷ 0.5 = 12 (1.5 × 4 = 6, then 6 ÷ 0.5 = 12). (offline model)"},
		{"division by zero", demo, nil, "what is 10 / 0", "", nil,
			"10 ÷ 0 has no value: it divides 10 by zero, and division by zero is undefined. (offline model)"},
		{"division by a zero result", demo, nil, "what is (1+2)/(3-3)", "",
			[]call{{"calculator/add", `{"a":1,"b":2}`}, {"calculator/subtract", `{"a":3,"b":3}`}},
			"(1 + 2) ÷ (3 - 3) has no value: it divides 3 by zero, and division by zero is undefined. (offline model)"},
		{"no tool for power", demo, nil, "what is 2^10", "", nil,
			"2 ^ 10 = 1024. No tool here does ^, so the offline model worked it out itself. (offline model)"},
		{"prefix words", demo, nil, "subtract 3 from 10", "",
			[]call{{"calculator/subtract", `{"a":10,"b":3}`}}, "10 - 3 = 7. (offline model)"},

		// Files: the tool is the one whose action the request names.
		{"what files", demo, map[string]string{"notes.txt": "hello"}, "what files are there?", "",
			[]call{{"files/list_allowed_directories", `{}`}, {"files/list_directory", `{"path":"DIR"}`}},
			"You asked: what files are there? files/list_directory returned: [FILE] notes.txt. (offline model)"},
		{"list the files", demo, map[string]string{"a.txt": "1", "b.txt": "2"}, "list the files", "",
			[]call{{"files/list_allowed_directories", `{}`}, {"files/list_directory", `{"path":"DIR"}`}},
			"You asked: list the files. files/list_directory returned:\n\n[FILE] a.txt\n[FILE] b.txt\n\n(offline model)"},
		{"write a stopword", demo, nil, "write s to s.txt", "",
			[]call{{"files/write_file", `{"content":"s","path":"s.txt"}`}},
			"You asked: write s to s.txt. files/write_file returned: wrote 1 bytes to s.txt. (offline model)"},
		{"write words as written", demo, nil, "write I am here to me.txt", "",
			[]call{{"files/write_file", `{"content":"I am here","path":"me.txt"}`}},
			"You asked: write I am here to me.txt. files/write_file returned: wrote 9 bytes to me.txt. (offline model)"},
		{"content question", demo, map[string]string{"notes.txt": "hello"}, "what is in notes.txt?", "",
			[]call{{"files/read_file", `{"path":"notes.txt"}`}},
			"You asked: what is in notes.txt? files/read_file returned: hello. (offline model)"},
		{"what's in the folder", demo, map[string]string{"notes.txt": "hello"}, "what's in the folder?", "",
			[]call{{"files/list_allowed_directories", `{}`}, {"files/list_directory", `{"path":"DIR"}`}},
			"You asked: what's in the folder? files/list_directory returned: [FILE] notes.txt. (offline model)"},
		{"tree", demo, map[string]string{"notes.txt": "hello"}, "show the directory tree", "",
			[]call{{"files/list_allowed_directories", `{}`}, {"files/directory_tree", `{"path":"DIR"}`}},
			"You asked: show the directory tree. files/directory_tree returned: notes.txt. (offline model)"},
		{"rename", demo, map[string]string{"notes.txt": "hello"}, "rename notes.txt to old.txt", "",
			[]call{{"files/move_file", `{"destination":"old.txt","source":"notes.txt"}`}},
			"You asked: rename notes.txt to old.txt. files/move_file returned: moved notes.txt to old.txt. (offline model)"},
		{"no tool does it", demo, map[string]string{"notes.txt": "hello"}, "delete notes.txt", "", nil,
			"~You asked: delete notes.txt. That is beyond me"},
		{"missing file", demo, nil, "read missing.txt", "",
			[]call{{"files/read_file", `{"path":"missing.txt"}`}},
			"You asked: read missing.txt. files/read_file failed: no such file: missing.txt. (offline model)"},

		// Beyond the offline model: said plainly, no tool called.
		{"compose", demo, nil, "write a hello world program to hello.py", "", nil,
			"~You asked: write a hello world program to hello.py. That is beyond me: I am the offline rule-based model, not a language model."},
		{"fix", []string{"mcp-fs-bridge"}, map[string]string{"main.go": "package main"}, "fix the bug in main.go", "", nil,
			"~You asked: fix the bug in main.go. That is beyond me: I am the offline rule-based model, not a language model."},
		{"greeting", demo, nil, "hello", "", nil, "~I am the offline rule-based model"},

		// coder-agent.
		{"coder read", []string{"mcp-fs-bridge"}, map[string]string{"README.md": "# greeter"}, "what is in README.md?", "",
			[]call{{"mcp-fs-bridge/read_file", `{"path":"README.md"}`}},
			"You asked: what is in README.md? mcp-fs-bridge/read_file returned: # greeter. (offline model)"},
		{"coder write", []string{"mcp-fs-bridge"}, nil, "write hello world to hello.txt", "",
			[]call{{"mcp-fs-bridge/write_file", `{"content":"hello world","path":"hello.txt"}`}},
			"You asked: write hello world to hello.txt. mcp-fs-bridge/write_file returned: wrote 11 bytes to hello.txt. (offline model)"},

		// note-taker: notes without a file go to notes.md, after what it
		// holds; a question about a topic reads the notes.
		{"remember", []string{"notebook"}, nil, "remember that the dentist is on Friday", "",
			[]call{{"notebook/read_file", `{"path":"notes.md"}`}, {"notebook/write_file", `{"content":"- the dentist is on Friday\n","path":"notes.md"}`}},
			"Noted in notes.md: the dentist is on Friday. (offline model)"},
		{"remember more", []string{"notebook"}, map[string]string{"notes.md": "- the dentist is on Friday\n"}, "Remember to buy milk.", "",
			[]call{{"notebook/read_file", `{"path":"notes.md"}`}, {"notebook/write_file", `{"content":"- the dentist is on Friday\n- buy milk\n","path":"notes.md"}`}},
			"Noted in notes.md: buy milk. (offline model)"},
		{"note a file", []string{"notebook"}, nil, "note in groceries.md: buy milk and eggs", "",
			[]call{{"notebook/write_file", `{"content":"buy milk and eggs","path":"groceries.md"}`}},
			"You asked: note in groceries.md: buy milk and eggs. notebook/write_file returned: wrote 17 bytes to groceries.md. (offline model)"},
		{"recall", []string{"notebook"}, map[string]string{"notes.md": "- the dentist is on Friday\n- buy milk\n", "groceries.md": "eggs"},
			"what did I say about the dentist?", "",
			[]call{{"notebook/list_allowed_directories", `{}`}, {"notebook/list_directory", `{"path":"DIR"}`},
				{"notebook/read_file", `{"path":"DIR/groceries.md"}`}, {"notebook/read_file", `{"path":"DIR/notes.md"}`}},
			"You asked: what did I say about the dentist? In notes.md: the dentist is on Friday. (offline model)"},
		{"recall nothing", []string{"notebook"}, map[string]string{"notes.md": "- buy milk\n"}, "what do you remember about the dentist?", "",
			[]call{{"notebook/list_allowed_directories", `{}`}, {"notebook/list_directory", `{"path":"DIR"}`}, {"notebook/read_file", `{"path":"DIR/notes.md"}`}},
			"You asked: what do you remember about the dentist? The notes (notes.md) say nothing about the dentist. (offline model)"},
		{"read my notes", []string{"notebook"}, map[string]string{"notes.md": "- buy milk\n"}, "read my notes", "",
			[]call{{"notebook/list_allowed_directories", `{}`}, {"notebook/list_directory", `{"path":"DIR"}`}, {"notebook/read_file", `{"path":"DIR/notes.md"}`}},
			"You asked: read my notes. In notes.md: buy milk. (offline model)"},
		{"what notes", []string{"notebook"}, map[string]string{"notes.md": "x"}, "what notes do I have?", "",
			[]call{{"notebook/list_allowed_directories", `{}`}, {"notebook/list_directory", `{"path":"DIR"}`}},
			"You asked: what notes do I have? notebook/list_directory returned: [FILE] notes.md. (offline model)"},

		// cat-maze.
		{"maze view", []string{"cat-maze"}, nil, "show the maze", "",
			[]call{{"cat-maze/view", `{}`}}, "~You asked: show the maze. cat-maze/view returned:\n\nLevel 1/10: First Pounce\n⬛⬛⬛⬛⬛⬛⬛\n⬛🐈🟩"},
		{"maze move", []string{"cat-maze"}, nil, "move right", "",
			[]call{{"cat-maze/right", `{}`}}, "~You asked: move right. cat-maze/right returned:\n\nThe cat moves right (east)."},
		{"maze move the cat", []string{"cat-maze"}, nil, "move the cat down", "",
			[]call{{"cat-maze/down", `{}`}}, "~You asked: move the cat down. cat-maze/down returned:\n\nBump!"},
		{"maze go", []string{"cat-maze"}, nil, "go east", "",
			[]call{{"cat-maze/right", `{}`}}, "~cat-maze/right returned"},
		{"maze restart", []string{"cat-maze"}, nil, "restart the game", "",
			[]call{{"cat-maze/restart", `{}`}}, "~You asked: restart the game. cat-maze/restart returned:\n\nBack to the start"},
		{"maze solve", []string{"cat-maze"}, nil, "solve the maze for me", "", nil,
			"~You asked: solve the maze for me. That is beyond me"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := newSpace(t, tc.files, tc.servers...)
			exec := func(name string, args map[string]any) string {
				if name == tc.reject {
					return rejected
				}
				return s.call(name, args)
			}
			calls, resp, _ := runOffline(t, s.tools, nil, tc.request, exec)
			want := make([]call, len(tc.calls))
			for i, c := range tc.calls {
				want[i] = call{c.Name, strings.ReplaceAll(c.Args, "DIR", s.dir)}
			}
			if diff := cmp.Diff(want, calls, cmpopts.EquateEmpty()); diff != "" {
				t.Errorf("calls (-want +got):\n%s", diff)
			}
			if rest, contains := strings.CutPrefix(tc.answer, "~"); contains {
				if !strings.Contains(resp.Content, rest) || !strings.HasSuffix(resp.Content, llm.OfflineLabel) {
					t.Errorf("answer %q\nlacks %q", resp.Content, rest)
				}
			} else if resp.Content != tc.answer {
				t.Errorf("answer %q\nwant   %q", resp.Content, tc.answer)
			}
		})
	}
}
