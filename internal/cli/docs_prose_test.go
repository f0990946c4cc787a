package cli

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/spf13/cobra"
)

// codeSpanRe finds the code spans of a line of Markdown prose.
var codeSpanRe = regexp.MustCompile("`([^`]+)`")

// fileExt is the extension of a name that is a file of ours.
var fileExt = regexp.MustCompile(`\.(go|md|ya?ml|json|jsonl|js|mjs|html|css|sh|py|txt|mod|sum|toml)$`)

// goIdent is a qualified Go name: a package path, a dot, an exported name.
var goIdent = regexp.MustCompile(`\.[A-Z][A-Za-z0-9_]*(\.[A-Za-z0-9_]+)*(\(\))?$`)

// kindNamespaces are top-level directories whose names are also envelope
// kind namespaces (`capability/grant`, `participant/pause`, `space/invite`):
// a span under one of them names a path only when it looks like a file or a
// directory (an extension, a trailing slash).
var kindNamespaces = map[string]bool{"capability": true, "participant": true, "space": true}

// checkPaths checks the repository paths that line (prose of file, line n)
// names in code spans, and returns how many it checked. A span names a
// repository path when its first segment is an entry at the repository's
// top; globs must match something; "…" and placeholders are not paths.
func checkPaths(errorf func(string, ...any), root, file string, n int, line string) int {
	checked := 0
	for _, m := range codeSpanRe.FindAllStringSubmatch(line, -1) {
		p, ok := repoPath(root, m[1])
		if !ok {
			continue
		}
		checked++
		if strings.ContainsAny(p, "*?[") {
			if matches, err := filepath.Glob(filepath.Join(root, p)); err != nil || len(matches) == 0 {
				errorf("%s:%d: `%s` matches nothing in the repository", rel(root, file), n, m[1])
			}
			continue
		}
		if _, err := os.Stat(filepath.Join(root, p)); err != nil {
			errorf("%s:%d: `%s` names nothing in the repository", rel(root, file), n, m[1])
		}
	}
	return checked
}

// repoPath reports whether span names a path in the repository, and which.
func repoPath(root, span string) (string, bool) {
	if strings.ContainsAny(span, " <>{}$=…,|()\"'") || strings.Contains(span, "...") || strings.Contains(span, "://") {
		return "", false
	}
	if loc := goIdent.FindStringIndex(span); loc != nil {
		span = span[:loc[0]] // internal/testutil.StartGateway: the package
	}
	first, rest, slash := strings.Cut(span, "/")
	if !slash || first == "" || first == "." || first == ".." || rest == "" && !strings.HasSuffix(span, "/") {
		return "", false
	}
	if fi, err := os.Stat(filepath.Join(root, first)); err != nil || !fi.IsDir() {
		return "", false
	}
	if kindNamespaces[first] && !fileExt.MatchString(span) && !strings.HasSuffix(span, "/") {
		return "", false
	}
	// A place in a file: gateway/pipeline.go:182.
	if i := strings.LastIndex(span, ":"); i > 0 && fileExt.MatchString(span[:i]) {
		span = span[:i]
	}
	return span, true
}

// TestDocsPathChecker: the path check takes what names a path and leaves
// kinds, URLs and placeholders alone.
func TestDocsPathChecker(t *testing.T) {
	root := filepath.Join("..", "..")
	for span, want := range map[string]bool{
		"gateway/doc.go": true, "docs/audit.md": true, "examples/": true, "gateway/internal/audit/*.go": true,
		"gateway/pipeline.go:182": true, "space/doc.go": true, "space/": true,
		"capability/grant": false, "participant/pause": false, "space/invite": false, "mcp/request": false,
		"examples/…": false, "https://x/y": false, ".mew/logs": false, "/console/": false, "gateway": false,
		"docs/<name>.md": false, "internal/testutil.StartGateway": true, "internal/nothing.Func": true, "llm.Config.Header": false,
	} {
		if _, got := repoPath(root, span); got != want {
			t.Errorf("repoPath(%q) = %v, want %v", span, got, want)
		}
	}
	// A missing file and a glob that matches nothing are reported.
	var reported []string
	errorf := func(format string, args ...any) { reported = append(reported, format) }
	n := checkPaths(errorf, root, "README.md", 1, "see `gateway/no-such-file.go`, `docs/none-*.md` and `gateway/doc.go`")
	if n != 3 || len(reported) != 2 {
		t.Errorf("%d paths checked, %d reported, want 3 and 2", n, len(reported))
	}
}

// checkMewSpans checks the `mew …` spans of a line of prose, which name a
// command and some of its flags rather than a whole command line: the
// command must exist and each flag named must be one it takes. Alternatives
// ("log verify|query") are each checked; arguments and values are not.
func checkMewSpans(errorf func(string, ...any), root, file string, n int, line string) int {
	checked := 0
	for _, m := range codeSpanRe.FindAllStringSubmatch(line, -1) {
		if !strings.HasPrefix(m[1], "mew ") || strings.ContainsAny(m[1], "<") {
			continue
		}
		for _, words := range alternatives(shellWords(m[1])[1:]) {
			checked++
			if err := namesMew(words); err != nil {
				errorf("%s:%d: `%s`: %v", rel(root, file), n, m[1], err)
			}
		}
	}
	return checked
}

// alternatives expands the first word holding "|" into one line per
// alternative.
func alternatives(words []string) [][]string {
	for i, w := range words {
		if !strings.Contains(w, "|") || w == "|" {
			continue
		}
		var out [][]string
		for _, alt := range strings.Split(w, "|") {
			out = append(out, append(append(append([]string{}, words[:i]...), alt), words[i+1:]...))
		}
		return out
	}
	return [][]string{words}
}

// namesMew reports whether words name a mew command and flags it has.
func namesMew(words []string) error {
	var path []string
	for _, w := range words {
		if strings.HasPrefix(w, "-") || strings.HasPrefix(w, "[") {
			break
		}
		path = append(path, w)
	}
	cmd, rest, err := NewRoot(Options{}).Find(path)
	if err != nil {
		return err
	}
	// Words that are not flags after the command are its arguments, or a
	// subcommand that does not exist.
	if len(rest) > 0 && cmd.HasSubCommands() && !cmd.Runnable() {
		return fmt.Errorf("%q has no subcommand %q", cmd.CommandPath(), rest[0])
	}
	for _, w := range words[len(path):] {
		w = strings.Trim(w, "[]")
		if !strings.HasPrefix(w, "-") || w == "-" || w == "--" {
			continue
		}
		name, _, _ := strings.Cut(strings.TrimLeft(w, "-"), "=")
		var found bool
		if strings.HasPrefix(w, "--") {
			found = cmd.Flag(name) != nil
		} else {
			found = cmd.Flags().ShorthandLookup(name) != nil || cmd.InheritedFlags().ShorthandLookup(name) != nil
		}
		if !found {
			return fmt.Errorf("%q has no flag %s", cmd.CommandPath(), w)
		}
	}
	return nil
}

// TestDocsMewSpanChecker: the prose check refuses unknown commands and
// flags, and takes a command named with some of its flags.
func TestDocsMewSpanChecker(t *testing.T) {
	for span, ok := range map[string]bool{
		"mew bridge start --a2a-url":                          true,
		"mew token create -p ID [-d DIR] [--rotate]":          true,
		"mew log verify|query|why|replay":                     true,
		"mew space up --nodes N":                              true,
		"mew bench --no-such-flag":                            false,
		"mew log verify|nothing":                              false,
		"mew spaec up":                                        false,
		"mew token create -Z":                                 false,
		"mew agent studio --config FILE [--no-such-listen 1]": false,
	} {
		var reported int
		checkMewSpans(func(string, ...any) { reported++ }, ".", "x.md", 1, "`"+span+"`")
		if (reported == 0) != ok {
			t.Errorf("%q: %d reported, want ok=%v", span, reported, ok)
		}
	}
}

// TestDocsNameEveryCommand: the pages that list the commands list them
// all: docs/cli.md names every command of the tree ("mew space up"), and
// this package's doc, the README's status and docs/architecture.md name
// every top-level one. A command added without its docs fails here.
func TestDocsNameEveryCommand(t *testing.T) {
	root := filepath.Join("..", "..")
	read := func(p string) string {
		b, err := os.ReadFile(filepath.Join(root, p))
		if err != nil {
			t.Fatal(err)
		}
		return string(b)
	}
	cliMD := read("docs/cli.md")
	tops := map[string]string{
		"internal/cli/doc.go":  read("internal/cli/doc.go"),
		"README.md":            section(read("README.md"), "- The `mew` command"),
		"docs/architecture.md": section(read("docs/architecture.md"), "| commands |"),
	}
	var walk func(c *cobra.Command, depth int)
	n := 0
	walk = func(c *cobra.Command, depth int) {
		for _, sub := range c.Commands() {
			if sub.Hidden || sub.Name() == "help" || sub.Name() == "completion" {
				continue
			}
			n++
			if !strings.Contains(cliMD, sub.CommandPath()) {
				t.Errorf("docs/cli.md does not name %q", sub.CommandPath())
			}
			if depth == 0 {
				for page, text := range tops {
					if !strings.Contains(text, "`"+sub.Name()) && !strings.Contains(text, " "+sub.Name()+",") && !strings.Contains(text, " "+sub.Name()+" ") {
						t.Errorf("%s does not name the command %q", page, sub.Name())
					}
				}
			}
			walk(sub, depth+1)
		}
	}
	walk(NewRoot(Options{}), 0)
	if n < 20 {
		t.Fatalf("only %d commands", n)
	}
}

// section is the paragraph or table row of text that starts with start.
func section(text, start string) string {
	i := strings.Index(text, start)
	if i < 0 {
		return ""
	}
	s := text[i:]
	if j := strings.Index(s, "\n\n"); j >= 0 {
		s = s[:j]
	}
	if strings.HasPrefix(start, "|") {
		s, _, _ = strings.Cut(s, "\n")
	}
	return s
}
