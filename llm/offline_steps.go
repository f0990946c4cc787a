package llm

import (
	"encoding/json"
	"fmt"
	"regexp"
	"slices"
	"strings"
)

// This file is what the offline model does over several steps of one turn:
// a directory fetched from a tool before the tool that needs it, and plain
// wording of tool errors. Arithmetic (offline_arith.go) and notes
// (offline_notes.go) have steps of their own.

// turn is the conversation from the offline model's point of view: the
// last user message and what happened after it.
type turn struct {
	tools []Tool
	q     *query
	n     int       // the number of messages: it numbers the call ids
	all   []Message // the whole conversation
	after []Message // the messages after the last user message
}

func newTurn(req Request, last int) *turn {
	return &turn{
		tools: req.Tools,
		q:     analyze(req.Messages[last].Content),
		n:     len(req.Messages),
		all:   req.Messages,
		after: req.Messages[last+1:],
	}
}

// stepResult is one tool result of the turn with the call it answers.
type stepResult struct {
	name   string
	args   map[string]any // the call's arguments, nil when unreadable
	text   string
	failed bool
}

// results are the tool results of the turn, in order.
func (t *turn) results() []stepResult {
	calls := map[string]ToolCall{}
	for _, m := range t.after {
		for _, tc := range m.ToolCalls {
			calls[tc.ID] = tc
		}
	}
	var out []stepResult
	for _, m := range t.after {
		if m.Role != RoleTool {
			continue
		}
		text, failed := readToolResult(m.Content)
		c := calls[m.ToolCallID]
		var args map[string]any
		_ = json.Unmarshal(c.Arguments, &args)
		out = append(out, stepResult{c.Name, args, text, failed})
	}
	return out
}

// callNames maps the ids of the tool calls in msgs to the tools' names.
func callNames(msgs []Message) map[string]string {
	names := map[string]string{}
	for _, m := range msgs {
		for _, tc := range m.ToolCalls {
			names[tc.ID] = tc.Name
		}
	}
	return names
}

// called tells whether the turn already called name with args (any
// arguments when args is nil).
func (t *turn) called(name string, args map[string]any) bool {
	var want []byte
	if args != nil {
		want, _ = json.Marshal(args)
	}
	for _, m := range t.after {
		for _, tc := range m.ToolCalls {
			if tc.Name != name {
				continue
			}
			if args == nil {
				return true
			}
			var got map[string]any
			if json.Unmarshal(tc.Arguments, &got) == nil {
				if b, _ := json.Marshal(got); string(b) == string(want) {
					return true
				}
			}
		}
	}
	return false
}

// next decides what to do once tool results are in: the next operation of
// a calculation, the next step of a note or of a question about the notes,
// the tool that waited for a directory, or the answer.
func (t *turn) next() *Response {
	for _, plan := range []func() (*Response, bool){t.arithmetic, t.recall, t.noteDown} {
		if r, ok := plan(); ok {
			return r
		}
	}
	results := t.results()
	helpersOnly := len(results) > 0
	for _, r := range results {
		if r.failed {
			return &Response{Content: t.conclude()}
		}
		if !t.isDirHelper(r.name) {
			helpersOnly = false
		}
	}
	if helpersOnly {
		dirs := t.knownDirs()
		for _, c := range t.candidates() {
			if t.isDirHelper(c.tool.Name) {
				continue
			}
			args, missing := t.q.fill(c.tool, dirs)
			if len(missing) > 0 {
				return cannotFill(c.tool, missing)
			}
			if t.called(c.tool.Name, args) {
				break
			}
			return t.call(c.tool, args, fmt.Sprintf("The request shares the words %s with the tool %s, and the directory comes from %s",
				strings.Join(c.words, ", "), c.tool.Name, results[len(results)-1].name))
		}
	}
	return &Response{Content: t.conclude()}
}

// isDirHelper tells a tool that takes no arguments and names directories,
// such as list_allowed_directories.
func (t *turn) isDirHelper(name string) bool {
	i := slices.IndexFunc(t.tools, func(tl Tool) bool { return tl.Name == name })
	if i < 0 {
		return false
	}
	words := ownWords(name)
	if !slices.Contains(words, "directory") && !slices.Contains(words, "root") {
		return false
	}
	return len(parseSchema(t.tools[i].Parameters).required) == 0
}

// dirHelper returns a directory tool to ask first when what tool misses is
// only paths, tool works on a directory, and the turn has not asked it yet.
func (t *turn) dirHelper(tool Tool, missing []schemaProp) (Tool, bool) {
	if len(missing) == 0 || !fromDirectory(tool) || slices.ContainsFunc(missing, func(p schemaProp) bool { return !pathish(p.name) }) {
		return Tool{}, false
	}
	for _, tl := range t.tools {
		if t.isDirHelper(tl.Name) && !t.called(tl.Name, nil) {
			return tl, true
		}
	}
	return Tool{}, false
}

// knownDirs are the absolute paths that directory tools returned anywhere
// in the conversation, so that a second request needs no second look-up.
func (t *turn) knownDirs() []string {
	names := callNames(t.all)
	var dirs []string
	for _, m := range t.all {
		if m.Role != RoleTool || !t.isDirHelper(names[m.ToolCallID]) {
			continue
		}
		text, failed := readToolResult(m.Content)
		if failed {
			continue
		}
		for _, f := range strings.Fields(text) {
			f = strings.TrimRight(f, ",;")
			if (strings.HasPrefix(f, "/") || winAbs.MatchString(f)) && !slices.Contains(dirs, f) {
				dirs = append(dirs, f)
			}
		}
	}
	return dirs
}

var winAbs = regexp.MustCompile(`^[A-Za-z]:[\\/]`)

// goPathError is a Go *fs.PathError as it reads ("statat notes.txt: no such
// file or directory"), the op being a system call's name; nodeError is
// Node's ("ENOENT: no such file or directory, open '/x/notes.txt'").
var (
	goPathError = regexp.MustCompile(`(?:^|[\s:])(?:open|openat|stat|statat|lstat|lstatat|fstatat|readlink|readlinkat|mkdir|mkdirat|` +
		`remove|removeat|unlinkat|rename|renameat|chmod|chdir|opendir|readdir|readdirent|fdopendir|read|write|truncate|symlink|link)` +
		`\s+(.+?):\s+(.+)$`)
	nodeError = regexp.MustCompile(`^E[A-Z]+:\s+([^,]+),\s+\w+\s+'(.*)'`)
)

// PlainToolError rewords the text of a failed tool call for a person: it
// drops a leading "Error:" and turns the file system's errors of Go ("statat
// x: no such file or directory") and Node ("ENOENT: ..., open 'x'") into
// "no such file: x". Other text is returned as it is.
func PlainToolError(s string) string { return plainError(s) }

func plainError(s string) string {
	s = strings.TrimSpace(s)
	for {
		lower := strings.ToLower(s)
		if !strings.HasPrefix(lower, "error:") {
			break
		}
		s = strings.TrimSpace(s[len("error:"):])
	}
	if m := goPathError.FindStringSubmatch(s); m != nil {
		return fileProblem(m[1], m[2])
	}
	if m := nodeError.FindStringSubmatch(s); m != nil {
		return fileProblem(m[2], m[1])
	}
	// mew's filesystem server: "no such file or directory: notes.txt".
	if msg, path, ok := strings.Cut(s, ": "); ok && fileProblem(path, msg) != msg+": "+path {
		return fileProblem(path, msg)
	}
	return s
}

// fileProblem words an operating system's error about path.
func fileProblem(path, msg string) string {
	switch strings.ToLower(strings.TrimSpace(msg)) {
	case "no such file or directory":
		return "no such file: " + path
	case "permission denied", "operation not permitted":
		return "permission denied: " + path
	case "not a directory":
		return "not a directory: " + path
	case "is a directory", "illegal operation on a directory":
		return path + " is a directory"
	case "file exists":
		return path + " already exists"
	case "directory not empty":
		return "directory not empty: " + path
	case "outside the allowed directory", "path escapes from parent":
		return path + " is outside the allowed directory"
	}
	return msg + ": " + path
}
