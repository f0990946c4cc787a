package llm_test

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/mew-protocol/mew/llm"
)

// serverTools are the tools of mew's filesystem MCP server (mew mcp
// filesystem) as an agent offers them, "<server>/<tool>", with the
// properties in the order the server lists them.
func serverTools(server string) []llm.Tool {
	path := `{"type":"object","properties":{"path":{"type":"string","description":"a path inside the allowed directory, relative to it or absolute"}},"required":["path"]}`
	tools := []llm.Tool{
		{Name: "read_text_file", Description: "Read a text file", Parameters: schema(path)},
		{Name: "read_file", Description: "Read a text file (the same as read_text_file)", Parameters: schema(path)},
		{Name: "write_file", Description: "Create a file, or replace its content, with the given text",
			Parameters: schema(`{"type":"object","properties":{"content":{"type":"string","description":"the file's new content"},` +
				`"path":{"type":"string","description":"the file to write, inside the allowed directory"}},"required":["path","content"]}`)},
		{Name: "list_directory", Description: "List a directory: [DIR] and [FILE] entries", Parameters: schema(path)},
		{Name: "directory_tree", Description: "The tree of files under a directory, one path a line", Parameters: schema(path)},
		{Name: "search_files", Description: "Find files under a directory whose name matches a glob or contains a text",
			Parameters: schema(`{"type":"object","properties":{"path":{"type":"string","description":"the directory to search in"},` +
				`"pattern":{"type":"string","description":"a glob (such as *.md) or a part of the name to look for"}},"required":["path","pattern"]}`)},
		{Name: "create_directory", Description: "Create a directory (and its parents)", Parameters: schema(path)},
		{Name: "move_file", Description: "Move or rename a file or directory",
			Parameters: schema(`{"type":"object","properties":{"destination":{"type":"string"},"source":{"type":"string"}},"required":["source","destination"]}`)},
		{Name: "get_file_info", Description: "Size, kind, permissions and modification time of a path", Parameters: schema(path)},
		{Name: "list_allowed_directories", Description: "The directory this server may touch", Parameters: schema(`{"type":"object","properties":{}}`)},
	}
	for i := range tools {
		tools[i].Name = server + "/" + tools[i].Name
	}
	return tools
}

// TestOfflineFileRequests: what a person asks of a folder of files, whatever
// the filesystem server is called. The server's name ("files", which every
// one of its tools carries) does not decide the tool; a question about what
// a named file holds reads it; "note" and "remember" write.
func TestOfflineFileRequests(t *testing.T) {
	for _, server := range []string{"files", "notebook", "mcp-fs-bridge"} {
		for _, tc := range []struct {
			request, tool, args string
		}{
			{"what is in notes.txt?", "read_file", `{"path":"notes.txt"}`},
			{"What's inside ./src/main.go", "read_file", `{"path":"./src/main.go"}`},
			{"what does todo.md contain?", "read_file", `{"path":"todo.md"}`},
			{"read notes.txt", "read_file", `{"path":"notes.txt"}`},
			{"show me readme.txt", "read_file", `{"path":"readme.txt"}`},
			{"how big is notes.txt, and when was it modified", "get_file_info", `{"path":"notes.txt"}`},
			{"write hello to notes.txt", "write_file", `{"content":"hello","path":"notes.txt"}`},
			{"note 'buy milk' in groceries.md", "write_file", `{"content":"buy milk","path":"groceries.md"}`},
			{"Please note in dentist.md that the appointment is on Friday", "write_file", `{"content":"appointment is on Friday","path":"dentist.md"}`},
			{"remember in ideas.md: a bike shed", "write_file", `{"content":"a bike shed","path":"ideas.md"}`},
			{"make a note in todo.md: call Bob", "write_file", `{"content":"call Bob","path":"todo.md"}`},
		} {
			t.Run(server+"/"+tc.request, func(t *testing.T) {
				resp := complete(t, llm.Request{Messages: []llm.Message{{Role: llm.RoleUser, Content: tc.request}}, Tools: serverTools(server)})
				if len(resp.ToolCalls) != 1 {
					t.Fatalf("no tool call; answer %q", resp.Content)
				}
				want := server + "/" + tc.tool
				if c := resp.ToolCalls[0]; c.Name != want || string(c.Arguments) != tc.args {
					t.Errorf("called %s(%s), want %s(%s)", c.Name, c.Arguments, want, tc.args)
				}
			})
		}
	}
}

// TestOfflineNotesNeedAFile: "note" as a noun writes nothing, nor is a
// file read from a directory: the model says which field it lacks, and asks
// no directory of the server for a tool that works on one file. (A note
// with no file named goes to notes.md: TestOfflineSuggestedPrompts.)
func TestOfflineNotesNeedAFile(t *testing.T) {
	tools := serverTools("notebook")
	exec := func(name string, _ map[string]any) string {
		switch name {
		case "notebook/list_allowed_directories":
			return "/srv/notes"
		case "notebook/list_directory":
			return "[FILE] groceries.md"
		}
		return "Error: unexpected call"
	}
	calls, resp, _ := runOffline(t, tools, nil, "list my notes", exec)
	want := []call{{"notebook/list_allowed_directories", `{}`}, {"notebook/list_directory", `{"path":"/srv/notes"}`}}
	if diff := cmp.Diff(want, calls); diff != "" {
		t.Errorf("list my notes: calls (-want +got):\n%s", diff)
	}
	if !strings.Contains(resp.Content, "groceries.md") {
		t.Errorf("list my notes: answer %q", resp.Content)
	}
	for _, tc := range []struct{ request, tool string }{
		{"read the file", "notebook/read_file"},
		{"write the notes", "notebook/write_file"},
	} {
		calls, resp, _ := runOffline(t, tools, nil, tc.request, exec)
		if len(calls) != 0 {
			t.Errorf("%q: calls %v, want none", tc.request, calls)
		}
		if resp.FinishReason != llm.FinishIncomplete || !strings.Contains(resp.Content, "the tool "+tc.tool+",") ||
			!strings.Contains(resp.Content, "could not fill the field path") || !strings.Contains(resp.Content, "a file by its name, such as notes.md") {
			t.Errorf("%q: finish %q, answer %q", tc.request, resp.FinishReason, resp.Content)
		}
	}
}
