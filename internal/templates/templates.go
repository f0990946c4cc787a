package templates

import (
	"bytes"
	"embed"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
)

//go:embed all:builtin
var builtin embed.FS

// Template is one template.
type Template struct {
	// Name is the folder's name, what `mew init NAME` takes.
	Name string
	// Description and Variables come from template.json.
	Description string
	Variables   []Variable
	// Source is where the template was found: "built-in" or a folder.
	Source string
	// Extra holds the members of template.json this package does not use
	// (the reference's license, author, version, tags and whatever a later
	// one adds), kept as written and otherwise ignored.
	Extra map[string]json.RawMessage

	fsys fs.FS // the template's folder
}

// Variable is one variable of template.json.
type Variable struct {
	Name        string   `json:"name"`
	Description string   `json:"description"`
	Default     string   `json:"default"`
	Prompt      bool     `json:"prompt"`
	Sensitive   bool     `json:"sensitive"`
	EnvSources  []string `json:"env_sources"`
	Required    bool     `json:"required"`
}

// manifest is what template.json says that this package uses. Every other
// member is tolerated, so that the reference's templates (and later ones)
// load as they are.
type manifest struct {
	Name        string     `json:"name"`
	Description string     `json:"description"`
	Variables   []Variable `json:"variables"`
}

// maxFile bounds a template file read.
const maxFile = 1 << 20

// Dirs returns the folders searched for templates, the first winning:
// <spaceDir>/templates, then ~/.mew/templates (when home is known).
func Dirs(spaceDir, home string) []string {
	dirs := []string{filepath.Join(spaceDir, "templates")}
	if home != "" {
		dirs = append(dirs, filepath.Join(home, ".mew", "templates"))
	}
	return dirs
}

// List returns the templates of dirs and the built-in ones, by name; a
// name found in several places is the first's (dirs in order, then
// built-in). A folder that is not a valid template is reported as an
// error.
func List(dirs []string) ([]*Template, error) {
	byName := map[string]*Template{}
	var errs []error
	add := func(fsys fs.FS, source string) {
		entries, err := fs.ReadDir(fsys, ".")
		if err != nil {
			if !errors.Is(err, fs.ErrNotExist) {
				errs = append(errs, err)
			}
			return
		}
		for _, e := range entries {
			if !e.IsDir() || byName[e.Name()] != nil {
				continue
			}
			sub, _ := fs.Sub(fsys, e.Name())
			t, err := load(e.Name(), sub, path.Join(source, e.Name()))
			if err != nil {
				errs = append(errs, err)
				continue
			}
			byName[t.Name] = t
		}
	}
	for _, d := range dirs {
		add(os.DirFS(d), d)
	}
	sub, _ := fs.Sub(builtin, "builtin")
	add(sub, "built-in")
	names := make([]string, 0, len(byName))
	for n := range byName {
		names = append(names, n)
	}
	slices.Sort(names)
	out := make([]*Template, len(names))
	for i, n := range names {
		out[i] = byName[n]
	}
	return out, errors.Join(errs...)
}

// Find returns the template called name, searched as List does.
func Find(name string, dirs []string) (*Template, error) {
	if name == "" || strings.ContainsAny(name, `/\`) || name == "." || name == ".." {
		return nil, fmt.Errorf("template %q: not a template name", name)
	}
	for _, d := range dirs {
		if fi, err := os.Stat(filepath.Join(d, name)); err == nil && fi.IsDir() {
			return load(name, os.DirFS(filepath.Join(d, name)), filepath.Join(d, name))
		}
	}
	if sub, err := fs.Sub(builtin, "builtin/"+name); err == nil {
		if _, err := fs.Stat(sub, "template.json"); err == nil {
			return load(name, sub, "built-in")
		}
	}
	var known []string
	all, _ := List(dirs) // the valid ones, whatever else is broken
	for _, t := range all {
		known = append(known, t.Name)
	}
	return nil, fmt.Errorf("no template %q (known: %s; mew init --list-templates)", name, strings.Join(known, ", "))
}

// load reads a template folder.
func load(name string, fsys fs.FS, source string) (*Template, error) {
	where := path.Join(source, "template.json")
	data, err := readFile(fsys, "template.json")
	if err != nil {
		return nil, fmt.Errorf("template %s: %w", where, err)
	}
	var m manifest
	if err := json.Unmarshal(data, &m); err != nil {
		return nil, fmt.Errorf("template %s: %w", where, err)
	}
	var all map[string]json.RawMessage
	if err := json.Unmarshal(data, &all); err != nil {
		return nil, fmt.Errorf("template %s: %w", where, err)
	}
	for _, k := range []string{"name", "description", "variables"} {
		delete(all, k)
	}
	seen := map[string]bool{}
	for i, v := range m.Variables {
		if !validVar(v.Name) {
			return nil, fmt.Errorf("template %s: variables[%d].name %q: want letters, digits and _", where, i, v.Name)
		}
		if seen[v.Name] {
			return nil, fmt.Errorf("template %s: variables[%d]: %s is declared twice", where, i, v.Name)
		}
		seen[v.Name] = true
	}
	if _, err := fs.Stat(fsys, "space.yaml"); err != nil {
		return nil, fmt.Errorf("template %s: no space.yaml", source)
	}
	return &Template{Name: name, Description: m.Description, Variables: m.Variables, Source: source, Extra: all, fsys: fsys}, nil
}

// readFile reads a file of at most maxFile bytes.
func readFile(fsys fs.FS, name string) ([]byte, error) {
	f, err := fsys.Open(name)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var buf bytes.Buffer
	if _, err := buf.ReadFrom(&limited{f: f, n: maxFile + 1}); err != nil {
		return nil, err
	}
	if buf.Len() > maxFile {
		return nil, fmt.Errorf("%s: larger than %d bytes", name, maxFile)
	}
	return buf.Bytes(), nil
}

type limited struct {
	f interface{ Read([]byte) (int, error) }
	n int
}

func (l *limited) Read(p []byte) (int, error) {
	if l.n <= 0 {
		return 0, errors.New("too large")
	}
	if len(p) > l.n {
		p = p[:l.n]
	}
	n, err := l.f.Read(p)
	l.n -= n
	return n, err
}

var varName = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)

func validVar(s string) bool { return varName.MatchString(s) }

// placeholder matches {{NAME}}.
var placeholder = regexp.MustCompile(`\{\{\s*([A-Za-z_][A-Za-z0-9_]*)\s*\}\}`)

// Placeholders returns the names of the template's {{NAME}} placeholders,
// each once, in the order they first appear.
func (t *Template) Placeholders() ([]string, error) {
	data, err := readFile(t.fsys, "space.yaml")
	if err != nil {
		return nil, fmt.Errorf("template %s: %w", t.Source, err)
	}
	var names []string
	for _, m := range placeholder.FindAllSubmatch(data, -1) {
		if n := string(m[1]); !slices.Contains(names, n) {
			names = append(names, n)
		}
	}
	return names, nil
}

// Render returns the template's space.yaml with every {{NAME}} replaced by
// values[NAME], and {{NAME_JSON}} (unless values has NAME_JSON itself) by
// the JSON string of values[NAME]. A placeholder whose name values lacks
// renders empty ("" for a _JSON one) and is listed in unset, so that the
// caller can say so: the reference's templates use placeholders they do not
// declare, and rendering them must not fail.
func (t *Template) Render(values map[string]string) (out []byte, unset []string, err error) {
	data, err := readFile(t.fsys, "space.yaml")
	if err != nil {
		return nil, nil, fmt.Errorf("template %s: %w", t.Source, err)
	}
	note := func(name string) {
		if !slices.Contains(unset, name) {
			unset = append(unset, name)
		}
	}
	out = placeholder.ReplaceAllFunc(data, func(m []byte) []byte {
		name := string(placeholder.FindSubmatch(m)[1])
		if v, ok := values[name]; ok {
			return []byte(v)
		}
		base, isJSON := strings.CutSuffix(name, "_JSON")
		if !isJSON {
			note(name)
			return nil
		}
		v, ok := values[base]
		if !ok {
			note(base)
		}
		j, _ := json.Marshal(v)
		return j
	})
	return out, unset, nil
}

// CopyAgents copies the template's agents/ folder, if any, into dst.
func (t *Template) CopyAgents(dst string) error {
	if _, err := fs.Stat(t.fsys, "agents"); err != nil {
		return nil
	}
	return fs.WalkDir(t.fsys, "agents", func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		target := filepath.Join(dst, filepath.FromSlash(strings.TrimPrefix(p, "agents")))
		if d.IsDir() {
			return os.MkdirAll(target, 0o755)
		}
		data, err := readFile(t.fsys, p)
		if err != nil {
			return err
		}
		mode := os.FileMode(0o644)
		if fi, err := d.Info(); err == nil && fi.Mode()&0o111 != 0 || strings.HasSuffix(p, ".sh") {
			mode = 0o755
		}
		return os.WriteFile(target, data, mode)
	})
}
