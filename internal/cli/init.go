package cli

import (
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"os"
	"os/user"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/mew-protocol/mew/internal/templates"
	"github.com/mew-protocol/mew/space"
)

// defaultTemplate is what `mew init` uses without a name, as the
// reference does when it cannot ask.
const defaultTemplate = "coder-agent"

// initFlags are the flags of `mew init`.
type initFlags struct {
	dir, name, model, description string
	force, list                   bool
	vars                          []string
}

func newInitCmd(opts Options) *cobra.Command {
	var f initFlags
	cmd := &cobra.Command{
		Use:   "init [template]",
		Short: "Create a space in this directory from a template",
		Long: `Create .mew/space.yaml (and .mew/agents/) from a template: one of the space's
templates/ folder, of ~/.mew/templates/, or built in (coder-agent, note-taker,
cat-maze, demo). {{VAR}} placeholders are filled from --var, --name
(SPACE_NAME), --model (AGENT_MODEL), the environment variables the template
names, or the defaults. Without a template name, coder-agent.`,
		Args: cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			name := defaultTemplate
			if len(args) == 1 {
				name = args[0]
			}
			return runInit(cmd, opts, f, name)
		},
	}
	fl := cmd.Flags()
	fl.StringVarP(&f.dir, "space-dir", "d", ".", "the directory of the new space")
	fl.StringVar(&f.name, "name", "", "the space's name (SPACE_NAME; default: the directory's name)")
	fl.StringVar(&f.model, "model", "", "the agents' model (AGENT_MODEL)")
	fl.StringVar(&f.description, "description", "", "the space's description (SPACE_DESCRIPTION, when the template has it)")
	fl.BoolVar(&f.force, "force", false, "replace an existing .mew/space.yaml")
	fl.BoolVar(&f.list, "list-templates", false, "list the templates and exit")
	fl.StringArrayVar(&f.vars, "var", nil, "set a template variable: --var NAME=VALUE (repeatable)")
	return cmd
}

func runInit(cmd *cobra.Command, opts Options, f initFlags, name string) error {
	out := cmd.OutOrStdout()
	dir, err := filepath.Abs(f.dir)
	if err != nil {
		return err
	}
	home, _ := os.UserHomeDir()
	dirs := templates.Dirs(dir, home)
	if f.list {
		all, err := templates.List(dirs)
		for _, t := range all {
			fmt.Fprintf(out, "%-14s %-10s %s\n", t.Name, sourceLabel(t.Source), t.Description)
		}
		return err
	}
	target := filepath.Join(dir, ".mew", "space.yaml")
	if _, err := os.Stat(target); err == nil && !f.force {
		return fmt.Errorf("init: %s exists (use --force to replace it)", target)
	}
	t, err := templates.Find(name, dirs)
	if err != nil {
		return fmt.Errorf("init: %w", err)
	}
	values, warnings, err := templateValues(t, f, dir, opts.getenv())
	if err != nil {
		return fmt.Errorf("init: %w", err)
	}
	yaml, unset, err := t.Render(values)
	if err != nil {
		return fmt.Errorf("init: %w", err)
	}
	for _, name := range unset {
		warnings = append(warnings, fmt.Sprintf("{{%s}} is not a variable of template %s and was not given (--var %s=VALUE or the environment variable %s): left empty", name, t.Name, name, name))
	}
	for _, w := range warnings {
		fmt.Fprintf(cmd.ErrOrStderr(), "init: warning: %s\n", w)
	}
	if _, err := space.Parse(yaml, filepath.Join(t.Source, "space.yaml")); err != nil {
		return fmt.Errorf("init: the template renders an invalid space: %w", err)
	}
	mewDir := filepath.Join(dir, ".mew")
	if err := os.MkdirAll(mewDir, 0o755); err != nil {
		return fmt.Errorf("init: %w", err)
	}
	if err := os.WriteFile(target, yaml, 0o644); err != nil {
		return fmt.Errorf("init: %w", err)
	}
	if err := makeWorkDirs(target); err != nil {
		return fmt.Errorf("init: %w", err)
	}
	if err := t.CopyAgents(filepath.Join(mewDir, "agents")); err != nil {
		return fmt.Errorf("init: copying agents: %w", err)
	}
	if err := ensureTokenDir(filepath.Join(mewDir, "tokens")); err != nil {
		return fmt.Errorf("init: %w", err)
	}
	if err := appendGitignore(filepath.Join(dir, ".gitignore"), ".mew/tokens/", ".mew/logs/", ".mew/pids.json", "logs/"); err != nil {
		return fmt.Errorf("init: %w", err)
	}
	fmt.Fprintf(out, "created %s from template %s (%s)\n", target, t.Name, sourceLabel(t.Source))
	fmt.Fprintf(out, "start it with: mew space up -i   (or mew space up --detach, then mew space connect)\n")
	return nil
}

// makeWorkDirs creates the working directories (mcp_server.cwd) the
// participants of the space at path need and that are inside the space:
// the demo's files bridge runs in ./files, and a bridge whose directory is
// missing cannot start.
func makeWorkDirs(path string) error {
	cfg, err := space.Load(path)
	if err != nil {
		return err
	}
	for _, p := range cfg.Participants {
		if p.MCPServer == nil || p.MCPServer.Cwd == "" || strings.Contains(p.MCPServer.Cwd, "$") {
			continue
		}
		dir := cfg.Resolve(p.MCPServer.Cwd)
		if rel, err := filepath.Rel(cfg.SpaceDir(), dir); err != nil || rel == ".." || strings.HasPrefix(rel, ".."+string(filepath.Separator)) {
			continue // outside the space: not init's to create
		}
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return fmt.Errorf("participant %s: mcp_server.cwd: %w", p.ID, err)
		}
	}
	return nil
}

// sourceLabel shortens a template's source for listings.
func sourceLabel(s string) string {
	if s == "built-in" {
		return s
	}
	return filepath.Dir(s)
}

// templateValues resolves every variable: --var, then --name/--model/
// --description for SPACE_NAME/AGENT_MODEL/SPACE_DESCRIPTION, then the
// first of its env_sources that is set, then its default (where
// ${dirname}, ${username} and ${date} are replaced). Sensitive values are
// never written into the space: they render empty, and the space reads
// them from the environment when it runs.
//
// A placeholder the template does not declare (the reference's templates
// have them) is filled the same way, from --var or the flags, else from
// the environment variable of its name; an undeclared SPACE_NAME falls
// back to the directory's name, and one named like a secret (_API_KEY,
// _SECRET, _PASSWORD) is left empty, as the reference does. What
// stays unset is rendered empty, and the returned warnings say so.
func templateValues(t *templates.Template, f initFlags, dir string, getenv func(string) string) (map[string]string, []string, error) {
	given := map[string]string{}
	for _, kv := range f.vars {
		k, v, ok := strings.Cut(kv, "=")
		if !ok || k == "" {
			return nil, nil, fmt.Errorf("--var %q: want NAME=VALUE", kv)
		}
		given[k] = v
	}
	for k, v := range map[string]string{"SPACE_NAME": f.name, "AGENT_MODEL": f.model, "SPACE_DESCRIPTION": f.description} {
		if _, set := given[k]; !set && v != "" {
			given[k] = v
		}
	}
	username := "user"
	if u, err := user.Current(); err == nil && u.Username != "" {
		username = u.Username
	}
	defaults := strings.NewReplacer("${dirname}", filepath.Base(dir), "${username}", username, "${date}", time.Now().Format(time.DateOnly))
	values := map[string]string{}
	var missing []string
	for _, v := range t.Variables {
		val, ok := given[v.Name]
		if !ok {
			for _, e := range v.EnvSources {
				if s := getenv(e); s != "" {
					val, ok = s, true
					break
				}
			}
		}
		if !ok {
			val = defaults.Replace(v.Default)
		}
		if v.Required && val == "" {
			missing = append(missing, v.Name)
		}
		if v.Sensitive {
			val = ""
		}
		values[v.Name] = val
	}
	if len(missing) > 0 {
		return nil, nil, fmt.Errorf("template %s needs %s: set with --var NAME=VALUE", t.Name, strings.Join(missing, ", "))
	}
	used, err := t.Placeholders()
	if err != nil {
		return nil, nil, err
	}
	var warnings []string
	for _, name := range used {
		if _, ok := values[name]; ok {
			continue
		}
		if base, isJSON := strings.CutSuffix(name, "_JSON"); isJSON {
			if _, ok := values[base]; ok {
				continue
			}
			if _, ok := given[name]; !ok {
				name = base // {{X_JSON}} of an undeclared X: resolve X
			}
		}
		switch val, ok := given[name]; {
		case ok:
			values[name] = val
		case secretName(name):
			values[name] = ""
		case getenv(name) != "":
			values[name] = getenv(name)
		case name == "SPACE_NAME":
			values[name] = filepath.Base(dir)
		}
	}
	if v, ok := values["SPACE_NAME"]; ok {
		values["SPACE_NAME"] = spaceID(v)
	}
	for _, k := range slices.Sorted(maps.Keys(given)) {
		if _, ok := values[k]; !ok && k != "SPACE_DESCRIPTION" {
			warnings = append(warnings, fmt.Sprintf("--var %s: template %s neither declares nor uses it", k, t.Name))
		}
	}
	return values, warnings, nil
}

// secretName reports whether a placeholder is named like a secret, which
// `mew init` never writes into the space.
func secretName(name string) bool {
	for _, suffix := range []string{"_API_KEY", "_SECRET", "_PASSWORD"} {
		if strings.HasSuffix(name, suffix) {
			return true
		}
	}
	return false
}

// spaceID turns a name (a directory's, often) into a valid space id.
func spaceID(s string) string {
	var b strings.Builder
	for _, r := range strings.ToLower(s) {
		switch {
		case r >= 'a' && r <= 'z', r >= '0' && r <= '9', r == '-', r == '_', r == '.':
			b.WriteRune(r)
		default:
			b.WriteByte('-')
		}
	}
	id := strings.Trim(b.String(), "-.")
	if id == "" {
		id = "space"
	}
	return id
}

// ensureTokenDir creates the token folder, private, with a .gitignore.
func ensureTokenDir(dir string) error {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return err
	}
	gi := filepath.Join(dir, ".gitignore")
	if _, err := os.Stat(gi); errors.Is(err, fs.ErrNotExist) {
		return os.WriteFile(gi, []byte("*\n"), 0o644)
	}
	return nil
}

// appendGitignore adds the lines .gitignore lacks.
func appendGitignore(path string, lines ...string) error {
	data, err := os.ReadFile(path)
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	have := map[string]bool{}
	for _, l := range strings.Split(string(data), "\n") {
		have[strings.TrimSpace(l)] = true
	}
	var add []string
	for _, l := range lines {
		if !have[l] {
			add = append(add, l)
		}
	}
	if len(add) == 0 {
		return nil
	}
	prefix := ""
	if len(data) > 0 && !strings.HasSuffix(string(data), "\n") {
		prefix = "\n"
	}
	f, err := os.OpenFile(path, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return err
	}
	_, werr := f.WriteString(prefix + "# mew\n" + strings.Join(add, "\n") + "\n")
	return errors.Join(werr, f.Close())
}
