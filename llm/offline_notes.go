package llm

import (
	"fmt"
	"path"
	"slices"
	"strings"
)

// This file is the offline model's notebook: what a person asks of an agent
// that keeps notes with file tools. "remember that X" with no file named
// adds "- X" to notes.md (read first, so that the notes before it stay);
// "what did I say about X" lists the notes folder, reads its text files and
// answers with the lines that speak of X; "read my notes" answers with all
// of them.

// notesFile is where a note goes when the request names no file.
const notesFile = "notes.md"

// maxNoteFiles bounds the files read to answer a question about the notes.
const maxNoteFiles = 10

// noteExts are the extensions of the files a question about the notes
// reads.
var noteExts = []string{".md", ".txt", ".markdown", ".text", ".org", ".rst"}

// fileTool finds the tool that does action to one file or directory: its
// own name says action (and object, when given), and it takes a path. A
// write tool must also take a text. The one with the fewest properties
// wins, then the first by name.
func (t *turn) fileTool(action, object string) (Tool, schemaProp, bool) {
	var best Tool
	var bestPath schemaProp
	bestProps := -1
	for _, tl := range t.tools {
		words := ownWords(tl.Name)
		if !slices.Contains(words, action) || object != "" && !slices.Contains(words, object) {
			continue
		}
		s := parseSchema(tl.Parameters)
		p, ok := pathProp(s)
		if !ok || action == "write" && !slices.ContainsFunc(s.props, func(q schemaProp) bool { return q.typ == "string" && q.name != p.name }) {
			continue
		}
		if bestProps < 0 || len(s.props) < bestProps || len(s.props) == bestProps && tl.Name < best.Name {
			best, bestPath, bestProps = tl, p, len(s.props)
		}
	}
	return best, bestPath, bestProps >= 0
}

// pathProp is the first string property of s that wants a path.
func pathProp(s toolSchema) (schemaProp, bool) {
	i := slices.IndexFunc(s.props, func(p schemaProp) bool { return p.typ == "string" && pathish(p.name) })
	if i < 0 {
		return schemaProp{}, false
	}
	return s.props[i], true
}

// noteDown adds the request's note to notesFile: it reads the file, then
// writes it back with the note as a last line. It reports false when the
// request is no such note or the tools for it are missing.
func (t *turn) noteDown() (*Response, bool) {
	if t.q.noteText == "" {
		return nil, false
	}
	write, wpath, okW := t.fileTool("write", "")
	read, rpath, okR := t.fileTool("read", "")
	if !okW || !okR {
		return nil, false
	}
	rs := t.results()
	switch {
	case len(rs) == 0:
		return t.call(read, map[string]any{rpath.name: notesFile},
			fmt.Sprintf("The request asks to remember something and names no file, so it goes to %s; %s reads what the file holds, so that the earlier notes stay", notesFile, read.Name)), true
	case len(rs) == 1:
		existing := rs[0].text
		if rs[0].failed {
			if !noSuchFile(rs[0].text) {
				return &Response{Content: t.conclude()}, true
			}
			existing = ""
		}
		if existing != "" {
			existing += "\n"
		}
		args := map[string]any{wpath.name: notesFile}
		for _, p := range parseSchema(write.Parameters).props {
			if p.typ == "string" && p.name != wpath.name {
				args[p.name] = existing + "- " + t.q.noteText + "\n"
				break
			}
		}
		return t.call(write, args, fmt.Sprintf("%s writes %s back with the note as its last line", write.Name, notesFile)), true
	}
	if last := rs[len(rs)-1]; last.failed {
		return &Response{Content: t.state(rs[len(rs)-1:])}, true
	}
	return &Response{Content: labelled(fmt.Sprintf("Noted in %s: %s", notesFile, sentence(t.q.noteText)))}, true
}

// noSuchFile tells a tool error that says the file is not there.
func noSuchFile(text string) bool {
	s := strings.ToLower(plainError(text))
	return strings.HasPrefix(s, "no such file") || strings.Contains(s, "not found") ||
		strings.Contains(s, "does not exist") || strings.Contains(s, "enoent")
}

// recall answers a question about the notes: it finds the directory (asking
// a directory tool once), lists it, reads its text files in one round of
// calls and answers with the lines about the topic, or with all of them
// when the question names none. It reports false when the request is no
// such question or the tools for it are missing.
func (t *turn) recall() (*Response, bool) {
	if !t.q.recall {
		return nil, false
	}
	list, lpath, okL := t.fileTool("list", "directory")
	read, rpath, okR := t.fileTool("read", "")
	if !okL || !okR {
		return nil, false
	}
	rs := t.results()
	li := slices.IndexFunc(rs, func(r stepResult) bool { return r.name == list.Name })
	if li < 0 {
		dirs := t.knownDirs()
		if len(dirs) == 0 {
			for _, tl := range t.tools {
				if t.isDirHelper(tl.Name) && !t.called(tl.Name, nil) {
					return t.call(tl, map[string]any{}, fmt.Sprintf("The question is about the notes: %s tells where they are", tl.Name)), true
				}
			}
			dirs = []string{"."}
		}
		return t.call(list, map[string]any{lpath.name: dirs[0]}, fmt.Sprintf("The question is about the notes: %s lists them", list.Name)), true
	}
	if rs[li].failed {
		return &Response{Content: t.conclude()}, true
	}
	dir, _ := rs[li].args[lpath.name].(string)
	var files []string
	for line := range strings.SplitSeq(rs[li].text, "\n") {
		name, ok := strings.CutPrefix(strings.TrimSpace(line), "[FILE] ")
		if ok && slices.Contains(noteExts, strings.ToLower(path.Ext(name))) && len(files) < maxNoteFiles {
			files = append(files, name)
		}
	}
	if len(files) == 0 {
		return &Response{Content: labelled(t.askedPrefix() + "There are no notes yet.")}, true
	}
	if !slices.ContainsFunc(rs, func(r stepResult) bool { return r.name == read.Name }) {
		var calls []ToolCall
		for i, f := range files {
			p := f
			if dir != "" && dir != "." {
				p = strings.TrimRight(dir, "/") + "/" + f
			}
			calls = append(calls, t.toolCall(read, map[string]any{rpath.name: p}, i))
		}
		return &Response{
			Reasoning: fmt.Sprintf("The question is about the notes, so the offline model reads %s with %s. %s", strings.Join(files, ", "), read.Name, OfflineLabel),
			ToolCalls: calls,
		}, true
	}
	return &Response{Content: labelled(t.askedPrefix() + recallAnswer(t.q.topic, files, rs, read.Name, rpath.name))}, true
}

// recallAnswer says what the notes that the tool read read in rs (its path
// argument named pathArg) say about topic, or everything when topic is
// empty.
func recallAnswer(topic string, files []string, rs []stepResult, read, pathArg string) string {
	want := textWords(topic)
	type found struct{ file, line string }
	var lines []found
	for _, r := range rs {
		p, _ := r.args[pathArg].(string)
		if r.name != read || r.failed || p == "" {
			continue
		}
		file := path.Base(p)
		for line := range strings.SplitSeq(r.text, "\n") {
			line = strings.TrimSpace(strings.TrimLeft(strings.TrimSpace(line), "-*•"))
			if line == "" || strings.HasPrefix(line, "#") {
				continue
			}
			if len(want) == 0 || slices.ContainsFunc(textWords(line), func(w string) bool { return slices.Contains(want, w) }) {
				lines = append(lines, found{file, line})
			}
		}
	}
	switch {
	case len(lines) == 0 && topic == "":
		return fmt.Sprintf("The notes (%s) are empty.", strings.Join(files, ", "))
	case len(lines) == 0:
		return fmt.Sprintf("The notes (%s) say nothing about %s.", strings.Join(files, ", "), topic)
	case len(lines) == 1:
		return fmt.Sprintf("In %s: %s", lines[0].file, sentence(lines[0].line))
	}
	var b strings.Builder
	b.WriteString("From the notes:")
	for _, l := range lines {
		fmt.Fprintf(&b, "\n- %s: %s", l.file, l.line)
	}
	return b.String()
}
