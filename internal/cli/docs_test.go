package cli

import (
	"bufio"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// TestDocsCommandsParse keeps the docs honest: every `mew …` command line in
// a shell block or a block without a language (a "$ " prompt removed) of
// README.md and docs/*.md names a command that exists and flags it takes
// (parsed as the command would parse them), and every repository path the
// docs link to or name in prose (`gateway/doc.go`) exists.
func TestDocsCommandsParse(t *testing.T) {
	root := filepath.Join("..", "..")
	files, err := filepath.Glob(filepath.Join(root, "docs", "*.md"))
	if err != nil {
		t.Fatal(err)
	}
	files = append(files, filepath.Join(root, "README.md"))
	checked, checkedPaths, checkedSpans := 0, 0, 0
	for _, file := range files {
		f, err := os.Open(file)
		if err != nil {
			t.Fatal(err)
		}
		sc := bufio.NewScanner(f)
		sc.Buffer(make([]byte, 1<<20), 1<<20)
		inBlock, inShell, n := false, false, 0
		for sc.Scan() {
			n++
			line := sc.Text()
			trimmed := strings.TrimSpace(line)
			if strings.HasPrefix(trimmed, "```") {
				// Shell blocks, and blocks without a language (which show
				// sessions: "$ mew log verify" and its output).
				lang := strings.TrimPrefix(trimmed, "```")
				inBlock = !inBlock
				inShell = inBlock && (lang == "" || lang == "sh" || lang == "bash" || lang == "shell" || lang == "console")
				continue
			}
			if !inBlock {
				checkedPaths += checkPaths(t.Errorf, root, file, n, line)
				checkedSpans += checkMewSpans(t.Errorf, root, file, n, line)
			}
			for _, m := range linkRe.FindAllStringSubmatch(line, -1) {
				target := m[1]
				if strings.Contains(target, "://") || strings.HasPrefix(target, "#") || strings.HasPrefix(target, "mailto:") {
					continue
				}
				target, _, _ = strings.Cut(target, "#")
				if _, err := os.Stat(filepath.Join(filepath.Dir(file), target)); err != nil {
					t.Errorf("%s:%d: the link %s names nothing in the repository", rel(root, file), n, m[1])
				}
			}
			if !inShell {
				continue
			}
			args, ok := mewCommand(strings.TrimPrefix(trimmed, "$ "))
			if !ok {
				continue
			}
			checked++
			if err := parsesAsMew(args); err != nil {
				t.Errorf("%s:%d: %q: %v", rel(root, file), n, trimmed, err)
			}
		}
		f.Close()
	}
	t.Logf("%d mew command lines, %d mew commands named in prose and %d repository paths checked", checked, checkedSpans, checkedPaths)
	if checked < 20 {
		t.Fatalf("only %d mew command lines found in the docs", checked)
	}
	if checkedSpans < 100 {
		t.Fatalf("only %d mew commands named in the docs' prose", checkedSpans)
	}
	if checkedPaths < 50 {
		t.Fatalf("only %d repository paths found in the docs", checkedPaths)
	}
}

var linkRe = regexp.MustCompile(`\]\(([^)\s]+)\)`)

func rel(root, path string) string {
	r, err := filepath.Rel(root, path)
	if err != nil {
		return path
	}
	return r
}

// mewCommand returns the arguments of a shell line that runs mew (after
// environment assignments; `go run ./cmd/mew` counts as mew), up to a
// comment, a pipe or the next command.
func mewCommand(line string) ([]string, bool) {
	words := shellWords(line)
	for len(words) > 0 && strings.Contains(words[0], "=") && !strings.HasPrefix(words[0], "-") {
		words = words[1:]
	}
	switch {
	case len(words) >= 3 && words[0] == "go" && words[1] == "run" && words[2] == "./cmd/mew":
		words = words[3:]
	case len(words) >= 1 && words[0] == "mew":
		words = words[1:]
	default:
		return nil, false
	}
	// "..." stands for a flag's value after a flag, for "the usual flags"
	// elsewhere.
	for i, w := range words {
		if (w == "..." || w == "…") && i > 0 && strings.HasPrefix(words[i-1], "-") && !strings.Contains(words[i-1], "=") {
			words[i] = "x"
		}
	}
	words = slices.DeleteFunc(words, func(w string) bool { return w == "..." || w == "…" })
	for i, w := range words {
		if w == "|" || w == "&&" || w == ";" || w == "||" || w == "&" || strings.HasPrefix(w, "#") || w == ">" || w == "2>&1" {
			return words[:i], true
		}
	}
	return words, true
}

// shellWords splits a line as a shell would, for the simple lines docs
// hold: quotes group, a backslash escapes; nothing is expanded.
func shellWords(s string) []string {
	var out []string
	var cur strings.Builder
	in, quote, esc := false, rune(0), false
	for _, r := range s {
		switch {
		case esc:
			cur.WriteRune(r)
			esc, in = false, true
		case r == '\\' && quote != '\'':
			esc = true
		case quote != 0:
			if r == quote {
				quote = 0
			} else {
				cur.WriteRune(r)
			}
		case r == '\'' || r == '"':
			quote, in = r, true
		case r == ' ' || r == '\t':
			if in {
				out = append(out, cur.String())
				cur.Reset()
				in = false
			}
		default:
			cur.WriteRune(r)
			in = true
		}
	}
	if in {
		out = append(out, cur.String())
	}
	return out
}

// parsesAsMew finds the command args name and parses its flags, as cobra
// would before running it.
func parsesAsMew(args []string) error {
	root := NewRoot(Options{})
	cmd, rest, err := root.Find(args)
	if err != nil {
		return err
	}
	if err := cmd.ParseFlags(rest); err != nil {
		return err
	}
	return cmd.ValidateArgs(cmd.Flags().Args())
}

// TestDocsCheckerCatches: the docs check refuses what it should.
func TestDocsCheckerCatches(t *testing.T) {
	for _, line := range []string{"mew space up --no-such-flag", "mew spaec up", "mew space up -p notaport", "MEW_X=1 mew token revoke extra-arg"} {
		args, ok := mewCommand(line)
		if !ok || parsesAsMew(args) == nil {
			t.Errorf("%q passed the docs check", line)
		}
	}
	for _, line := range []string{`mew space up --detach -p 0   # in the background`, `OPENAI_API_KEY=sk mew agent run -g ws://localhost:8080 -s demo -t "$TOKEN"`, "go run ./cmd/mew demo"} {
		args, ok := mewCommand(line)
		if !ok {
			t.Errorf("%q is not seen as a mew command", line)
		} else if err := parsesAsMew(args); err != nil {
			t.Errorf("%q: %v", line, err)
		}
	}
}
