package llm

import (
	"encoding/json"
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"
)

// This file is what the offline model does over several steps of one turn:
// arithmetic with more than one operation (one tool call per operation,
// left to right, each result fed into the next), a directory fetched from a
// tool before the tool that needs it, and plain wording of tool errors.

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
	text   string
	failed bool
}

// results are the tool results of the turn, in order.
func (t *turn) results() []stepResult {
	names := callNames(t.after)
	var out []stepResult
	for _, m := range t.after {
		if m.Role != RoleTool {
			continue
		}
		text, failed := readToolResult(m.Content)
		out = append(out, stepResult{names[m.ToolCallID], text, failed})
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
// a calculation, the tool that waited for a directory, or the answer.
func (t *turn) next() *Response {
	if r, ok := t.arithmetic(); ok {
		return r
	}
	results := t.results()
	helpersOnly := len(results) > 0
	for _, r := range results {
		if r.failed {
			return &Response{Content: conclude(t.after)}
		}
		if !t.isDirHelper(r.name) {
			helpersOnly = false
		}
	}
	if helpersOnly {
		dirs := t.knownDirs()
		for _, c := range t.q.candidates(t.tools) {
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
	return &Response{Content: conclude(t.after)}
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
	if len(missing) == 0 || !wantsDirectory(tool) || slices.ContainsFunc(missing, func(p schemaProp) bool { return !pathish(p.name) }) {
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

// chainExpr is arithmetic with its operations in the order written:
// nums[0] ops[0] nums[1] ops[1] nums[2] ...
type chainExpr struct {
	nums []float64
	ops  []string
}

var arithmetic = map[string]string{"add": "+", "subtract": "-", "multiply": "*", "divide": "/", "power": "^"}

// chain finds the longest run of numbers joined by operations ("1.5 minus
// 4 plus 2", "2+3*4", "10 divided by 4 times 3"); filler words between
// them ("by", "the") are skipped, anything else ends the run.
func (q *query) chain() chainExpr {
	var best, cur chainExpr
	wantOp, pending := false, ""
	end := func() {
		if len(cur.ops) > len(best.ops) {
			best = cur
		}
		cur, wantOp, pending = chainExpr{}, false, ""
	}
	for _, t := range q.tokens {
		switch {
		case t.kind == tokNumber:
			if wantOp { // two numbers in a row: a new run starts here
				end()
			}
			if pending != "" {
				cur.ops = append(cur.ops, pending)
				pending = ""
			}
			cur.nums = append(cur.nums, t.num)
			wantOp = true
		case (t.kind == tokOp || t.kind == tokWord) && arithmetic[t.canon] != "":
			if !wantOp {
				end()
				continue
			}
			pending, wantOp = t.canon, false
		case t.kind == tokWord && t.canon == "":
		default:
			end()
		}
	}
	end()
	return best
}

// opTool finds the tool for one operation: its name says the operation,
// and two numbers fill it.
func (t *turn) opTool(op string) (Tool, bool) {
	tools := slices.Clone(t.tools)
	slices.SortStableFunc(tools, func(a, b Tool) int { return strings.Compare(a.Name, b.Name) })
	for _, tl := range tools {
		if !slices.Contains(ownWords(tl.Name), op) {
			continue
		}
		if _, missing := (&query{numbers: []float64{1, 2}}).fill(tl, nil); len(missing) == 0 {
			return tl, true
		}
	}
	return Tool{}, false
}

// arithmetic runs a calculation with two or more operations as one tool
// call per operation, strictly left to right ("1 plus 2 times 3" is 9, as
// a pocket calculator reads it), each call given the previous result. It
// reports false when the request is no such calculation or a tool for one
// of its operations is missing.
func (t *turn) arithmetic() (*Response, bool) {
	ch := t.q.chain()
	if len(ch.ops) < 2 {
		return nil, false
	}
	tools := make([]Tool, len(ch.ops))
	for i, op := range ch.ops {
		tl, ok := t.opTool(op)
		if !ok {
			return nil, false
		}
		tools[i] = tl
	}
	var got []float64
	for i, r := range t.results() {
		if i >= len(tools) || r.name != tools[i].Name {
			return &Response{Content: conclude(t.after)}, true
		}
		x, err := strconv.ParseFloat(strings.TrimSpace(r.text), 64)
		if r.failed || err != nil {
			// A failure, or a result that is not a number: say what came back.
			return &Response{Content: conclude(t.after)}, true
		}
		got = append(got, x)
	}
	num := func(x float64) string { return strconv.FormatFloat(x, 'f', -1, 64) }
	k := len(got)
	if k == len(ch.ops) {
		var b strings.Builder
		acc := ch.nums[0]
		for i, op := range ch.ops {
			if i > 0 {
				b.WriteString("; ")
			}
			fmt.Fprintf(&b, "%s %s %s = %s", num(acc), arithmetic[op], num(ch.nums[i+1]), num(got[i]))
			acc = got[i]
		}
		return &Response{Content: labelled(fmt.Sprintf("Left to right: %s. The result is %s.", b.String(), num(acc)))}, true
	}
	acc := ch.nums[0]
	if k > 0 {
		acc = got[k-1]
	}
	args, _ := (&query{numbers: []float64{acc, ch.nums[k+1]}}).fill(tools[k], nil)
	why := fmt.Sprintf("Operation %d of %d, left to right, is %s %s %s with the tool %s", k+1, len(ch.ops), num(acc), arithmetic[ch.ops[k]], num(ch.nums[k+1]), tools[k].Name)
	return t.call(tools[k], args, why), true
}

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
