package toolsagent

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/mew-protocol/mew/agent"
	"github.com/mew-protocol/mew/internal/clip"
	"github.com/mew-protocol/mew/internal/yamlx"
)

// Defaults of a Definition.
const (
	DefaultTimeout            = 5 * time.Minute
	DefaultMaxConcurrentCalls = 4
	DefaultVersion            = "0.0.0"
)

// Limits of a definition file.
const (
	// MaxFileBytes bounds a definition file.
	MaxFileBytes = 1 << 20
	// maxSchemaDepth bounds the nesting of parameter schemas.
	maxSchemaDepth = 16
	// maxToolNameBytes is MCP's limit on tool names.
	maxToolNameBytes = 128
)

// limits bound what a definition may expand to, aliases followed.
var limits = yamlx.Limits{Depth: 64, Nodes: 100_000, Bytes: 4 * MaxFileBytes, Indicators: 1 << 18}

// ModeTools is the value of a tools agent's "mode".
const ModeTools = "tools"

// Permission says whether a tool source needs approval for each call.
type Permission string

// Permissions of MCP servers and participants.
const (
	// PermissionNever: its tools may be called without approval, so the
	// tools agent offers them to its model.
	PermissionNever Permission = "never"
	// PermissionAlways: each call needs approval, which nobody can give in
	// a headless run, so the tools agent never uses it.
	PermissionAlways Permission = "always"
)

// Definition is a tools agent: what it tells MCP clients, its tools, its
// model settings and the tool sources it may use.
type Definition struct {
	// Name and Version are the MCP serverInfo; Description its
	// instructions.
	Name, Version, Description string
	// Model holds the model settings, with agent.Config's keys (model,
	// systemPrompt, maxIterations, mockLLM, apiKey, baseURL,
	// reasoningFormat, conversationHistoryLength, contextTokenLimit,
	// discoveryWaitMs, prompts.system/act/respond).
	Model agent.Config
	// Reasoning sends the steps of each call as reasoning/* envelopes in a
	// space (reasoningEnabled; default true).
	Reasoning bool
	// Gateway, Space, Token and ParticipantID connect the agent to a space
	// (as written: ${VAR} is not expanded).
	Gateway, Space, Token, ParticipantID string
	// Timeout bounds one call (timeout; default 5 minutes).
	Timeout time.Duration
	// SharedHistory gives each call the earlier calls' prompts and answers
	// (the latest Model.HistoryLength messages); by default each call
	// starts afresh.
	SharedHistory bool
	// MaxConcurrentCalls bounds the calls run at once; others wait
	// (default 4).
	MaxConcurrentCalls int
	// Servers are the MCP servers the agent may use (mcpServers), in the
	// order of the file.
	Servers []ServerConfig
	// Participants say which participants of a space the agent may use.
	// The ID "*" stands for the participants not listed; without a
	// participants section it is the only entry, with PermissionNever.
	Participants []ParticipantConfig
	// Tools are the tools the agent serves, in the order of the file.
	Tools []*Tool
	// Warnings are the problems that did not stop the loading.
	Warnings []Problem
	// Dir is the directory of the file, against which the servers'
	// relative commands and working directories are resolved ("" means
	// the process's working directory).
	Dir string
}

// ServerConfig is an MCP server a tools agent may use: a command speaking
// MCP over stdio, or a streamable HTTP endpoint.
type ServerConfig struct {
	// Name names the server; its tools are offered to the model as
	// "<name>/<tool>".
	Name string
	// Command, Args, Env (added to the agent's environment; ${VAR} is
	// replaced from it) and Cwd start a stdio server.
	Command string            `yaml:"command"`
	Args    []string          `yaml:"args"`
	Env     map[string]string `yaml:"env"`
	Cwd     string            `yaml:"cwd"`
	// URL is a streamable HTTP endpoint, with Headers sent on each request.
	URL     string            `yaml:"url"`
	Headers map[string]string `yaml:"headers"`
	// Permission says whether its calls need approval.
	Permission Permission `yaml:"permission"`
	// Tools, when not empty, are the only tools of the server offered.
	Tools []string `yaml:"tools"`
}

// ParticipantConfig says whether a participant's tools may be used in a
// space.
type ParticipantConfig struct {
	// ID is the participant's id, or "*" for every participant not listed.
	ID string
	// Permission says whether its calls need approval. Even with
	// PermissionNever a call is made only when the agent's capabilities
	// let it send the mcp/request itself: a tools agent never proposes.
	Permission Permission `yaml:"permission"`
	// Tools, when not empty, are the only tools of the participant offered.
	Tools []string `yaml:"tools"`
}

// Tool returns the tool called name.
func (d *Definition) Tool(name string) (*Tool, bool) {
	for _, t := range d.Tools {
		if t.Name == name {
			return t, true
		}
	}
	return nil, false
}

// participant returns the configuration that applies to participant id.
func (d *Definition) participant(id string) (ParticipantConfig, bool) {
	var star *ParticipantConfig
	for i, p := range d.Participants {
		if p.ID == id {
			return p, true
		}
		if p.ID == "*" {
			star = &d.Participants[i]
		}
	}
	if star != nil {
		return *star, true
	}
	return ParticipantConfig{}, false
}

// Problem is an error or a warning found in a definition, with where it is.
type Problem struct {
	// Path locates the value: "tools[0].parameters.properties.date.default";
	// empty for the file as a whole.
	Path string
	// Line is the line in the file, when known (from 1).
	Line int
	// Message says what is wrong.
	Message string
	// Warning is set for a problem that does not stop the loading.
	Warning bool
}

func (p Problem) String() string {
	var b strings.Builder
	if p.Warning {
		b.WriteString("warning: ")
	}
	if p.Path != "" {
		b.WriteString(p.Path)
		if p.Line > 0 {
			fmt.Fprintf(&b, " (line %d)", p.Line)
		}
		b.WriteString(": ")
	} else if p.Line > 0 {
		fmt.Fprintf(&b, "line %d: ", p.Line)
	}
	b.WriteString(p.Message)
	return b.String()
}

// LoadError is a definition that cannot be used: every problem found,
// errors and warnings.
type LoadError struct {
	// File is the file's path, empty for Parse.
	File     string
	Problems []Problem
}

func (e *LoadError) Error() string {
	var b strings.Builder
	b.WriteString("toolsagent: ")
	if e.File != "" {
		b.WriteString(e.File + ": ")
	}
	var errs []string
	for _, p := range e.Problems {
		if !p.Warning {
			errs = append(errs, p.String())
		}
	}
	if len(errs) == 1 {
		b.WriteString(errs[0])
		return b.String()
	}
	fmt.Fprintf(&b, "%d problems:", len(errs))
	for _, s := range errs {
		b.WriteString("\n  " + s)
	}
	return b.String()
}

// Load reads a definition file (YAML or JSON) and checks all of it; see
// Parse. Relative commands and working directories of its servers are
// resolved against the file's directory.
func Load(path string) (*Definition, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("toolsagent: %w", err)
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, MaxFileBytes+1))
	if err != nil {
		return nil, fmt.Errorf("toolsagent: %s: %w", path, err)
	}
	d, err := Parse(data)
	if le, ok := err.(*LoadError); ok {
		le.File = path
		return nil, le
	}
	if err != nil {
		return nil, err
	}
	abs, err := filepath.Abs(path)
	if err != nil {
		return nil, fmt.Errorf("toolsagent: %w", err)
	}
	d.Dir = filepath.Dir(abs)
	return d, nil
}

// Parse reads a definition (YAML or JSON) and checks all of it, reporting
// every problem with its path in a *LoadError: unknown keys, values of the
// wrong type, unknown schema types, defaults, enums and examples that do
// not fit their schema, duplicate tool names, prompt placeholders that
// name neither a parameter nor a tool property, servers without a command
// or a URL, missing permissions. Warnings (a required parameter the prompt
// never uses, a server that needs approval...) are in
// Definition.Warnings.
func Parse(data []byte) (*Definition, error) {
	l := &loader{}
	if len(data) > MaxFileBytes {
		l.problems = append(l.problems, Problem{Message: fmt.Sprintf("the file is larger than %d bytes", MaxFileBytes)})
		return nil, &LoadError{Problems: l.problems}
	}
	doc, err := yamlx.Decode(data, limits, true)
	if err != nil {
		l.report(err)
		return nil, &LoadError{Problems: l.problems}
	}
	if doc == nil || len(doc.Content) == 0 {
		l.problems = append(l.problems, Problem{Message: "the file is empty"})
		return nil, &LoadError{Problems: l.problems}
	}
	d := l.definition(doc.Content[0])
	for _, p := range l.problems {
		if !p.Warning {
			return nil, &LoadError{Problems: l.problems}
		}
	}
	d.Warnings = l.problems
	return d, nil
}

// loader reads a definition from YAML nodes, collecting problems.
type loader struct {
	problems []Problem
}

func (l *loader) add(n *yaml.Node, path string, warning bool, format string, args ...any) {
	p := Problem{Path: path, Message: fmt.Sprintf(format, args...), Warning: warning}
	if n != nil {
		p.Line = n.Line
	}
	l.problems = append(l.problems, p)
}

func (l *loader) errorf(n *yaml.Node, path, format string, args ...any) {
	l.add(n, path, false, format, args...)
}

func (l *loader) warnf(n *yaml.Node, path, format string, args ...any) {
	l.add(n, path, true, format, args...)
}

// report records err, a *yamlx.Error from a reader, as a problem; it
// reports whether err was nil.
func (l *loader) report(err error) bool {
	if err == nil {
		return true
	}
	var ye *yamlx.Error
	if errors.As(err, &ye) {
		l.problems = append(l.problems, Problem{Path: ye.Path, Line: ye.Line, Message: ye.Err.Error()})
	} else {
		l.problems = append(l.problems, Problem{Message: err.Error()})
	}
	return false
}

// fields reads the mapping at n into dst (see yamlx.Fields), reporting
// every problem; a key dst has no field for is refused, naming what is
// allowed in where. It returns the value nodes of the members read, nil
// when n is no mapping.
func (l *loader) fields(n *yaml.Node, path string, dst any, where string) map[string]*yaml.Node {
	nodes, errs := yamlx.Fields(n, path, dst, yamlx.FieldOptions{Join: joinPath, Unknown: func(p yamlx.Pair, k string, known []string) error {
		return l.unknown(p, k, where, known)
	}})
	for _, err := range errs {
		l.report(err)
	}
	return nodes
}

// unknown is the error of a key that is not allowed, naming those that
// are, and the one it is likely a typo of.
func (l *loader) unknown(p yamlx.Pair, path, where string, allowed []string) error {
	return yamlx.Errorf(p.KeyNode, path, "unknown key in %s (allowed: %s)%s", where, strings.Join(allowed, ", "), yamlx.DidYouMean(p.Key, allowed))
}

// Keys of a definition.
var (
	// agentKeys are agent.Config's keys that a tools agent uses.
	// (logLevel and requestTimeout are accepted and ignored, as the agent
	// does.)
	agentKeys = []string{"model", "systemPrompt", "apiKey", "baseURL", "mockLLM", "maxIterations", "reasoningFormat",
		"conversationHistoryLength", "contextTokenLimit", "discoveryWaitMs", "prompts"}
	ignoredKeys = []string{"logLevel", "requestTimeout"}
	// connectionKeys connect the agent to a space.
	connectionKeys = []string{"gateway", "space", "token", "participant_id"}
	// chatKeys are agent.Config's keys about chats, which a tools agent
	// does not answer.
	chatKeys   = []string{"autoRespond", "chatResponse", "floorControl", "messageQueue"}
	promptKeys = []string{"system", "act", "respond"}
)

// settings are the tools agent's own keys; the root's others are model
// settings.
type settings struct {
	Name               string     `yaml:"name"`
	Version            yamlx.Text `yaml:"version"`
	Description        string     `yaml:"description"`
	Mode               string     `yaml:"mode"`
	Tools              *yaml.Node `yaml:"tools"`
	MCPServers         *yaml.Node `yaml:"mcpServers"`
	Participants       *yaml.Node `yaml:"participants"`
	Timeout            *timeout   `yaml:"timeout"`
	SharedHistory      bool       `yaml:"sharedHistory"`
	MaxConcurrentCalls *int       `yaml:"maxConcurrentCalls"`
	ReasoningEnabled   *bool      `yaml:"reasoningEnabled"`
	ThinkingEnabled    *bool      `yaml:"thinkingEnabled"` // the older name of reasoningEnabled
}

// definition reads the document's root.
func (l *loader) definition(root *yaml.Node) *Definition {
	d := &Definition{Reasoning: true, Timeout: DefaultTimeout, MaxConcurrentCalls: DefaultMaxConcurrentCalls}
	model := map[string]any{}
	var s settings
	nodes, errs := yamlx.Fields(root, "", &s, yamlx.FieldOptions{Join: joinPath, Unknown: func(p yamlx.Pair, _ string, own []string) error {
		l.otherKey(p, model, own)
		return nil
	}})
	for _, err := range errs {
		l.report(err)
	}
	if nodes == nil {
		return d
	}
	d.Name, d.Version, d.Description, d.SharedHistory = s.Name, string(s.Version), s.Description, s.SharedHistory
	if nodes["name"] == nil {
		l.errorf(root, "name", "required: the MCP server's name")
	} else if strings.TrimSpace(d.Name) == "" {
		l.errorf(nodes["name"], "name", "must not be empty")
	}
	if nodes["mode"] == nil {
		l.errorf(root, "mode", "required: write mode: %s", ModeTools)
	} else if s.Mode != ModeTools {
		l.errorf(nodes["mode"], "mode", "%q: a tools agent has mode %q (other modes run with mew agent run)", s.Mode, ModeTools)
	}
	if d.Version == "" {
		d.Version = DefaultVersion
		l.warnf(root, "version", "missing: the server reports version %s", DefaultVersion)
	}
	if d.Description == "" {
		l.warnf(root, "description", "missing: MCP clients get no instructions")
	}
	if s.Timeout != nil {
		d.Timeout = time.Duration(*s.Timeout)
	}
	if n := s.MaxConcurrentCalls; n != nil && *n < 1 {
		l.errorf(nodes["maxConcurrentCalls"], "maxConcurrentCalls", "want at least 1")
	} else if n != nil {
		d.MaxConcurrentCalls = *n
	}
	for _, b := range []*bool{s.ReasoningEnabled, s.ThinkingEnabled} {
		if b != nil {
			d.Reasoning = *b
		}
	}
	if nodes["mcpServers"] != nil {
		d.Servers = l.servers(s.MCPServers, "mcpServers")
	}
	d.Participants = l.participants(s.Participants, "participants")
	for _, sc := range d.Servers {
		if slices.ContainsFunc(d.Participants, func(p ParticipantConfig) bool { return p.ID == sc.Name }) {
			l.errorf(s.Participants, joinPath("participants", sc.Name), "also the name of an MCP server: the tool names would be ambiguous")
		}
	}
	if nodes["tools"] != nil {
		d.Tools = l.tools(s.Tools, "tools")
	} else {
		l.errorf(root, "tools", "required: the tools the agent serves")
	}
	l.agentConfig(d, model)
	return d
}

// otherKey reads a key of the root that is not one of the tools agent's
// own: a model setting (into model), an ignored key, or a mistake.
func (l *loader) otherKey(p yamlx.Pair, model map[string]any, own []string) {
	switch {
	case slices.Contains(ignoredKeys, p.Key), strings.HasPrefix(p.Key, "x-"):
	case slices.Contains(agentKeys, p.Key), slices.Contains(connectionKeys, p.Key):
		if p.Key == "prompts" {
			l.checkPrompts(p.Value, p.Key)
		}
		var v any
		if err := p.Value.Decode(&v); err != nil {
			l.errorf(p.Value, p.Key, "%s", strings.TrimPrefix(err.Error(), "yaml: "))
			return
		}
		model[p.Key] = v
	case slices.Contains(chatKeys, p.Key):
		l.errorf(p.KeyNode, p.Key, "not a setting of a tools agent: it answers tool calls, not chats")
	default:
		// own[:len(own)-1]: thinkingEnabled, last, is not advertised.
		l.errorf(p.KeyNode, p.Key, "unknown key (a tools agent has %s; model settings %s; in a space %s)%s",
			strings.Join(own[:len(own)-1], ", "), strings.Join(agentKeys, ", "), strings.Join(connectionKeys, ", "),
			yamlx.DidYouMean(p.Key, slices.Concat(own, agentKeys, connectionKeys)))
	}
}

// checkPrompts refuses the prompts a tools agent does not use.
func (l *loader) checkPrompts(n *yaml.Node, path string) {
	pairs, err := yamlx.StrictMapping(n, path)
	l.report(err)
	for _, p := range pairs {
		if !slices.Contains(promptKeys, p.Key) {
			l.errorf(p.KeyNode, joinPath(path, p.Key), "not used by a tools agent (allowed: %s): the tool's prompt is the question", strings.Join(promptKeys, ", "))
		}
	}
}

// agentConfig reads the model settings with the agent package, which
// names the key of a value of the wrong type.
func (l *loader) agentConfig(d *Definition, model map[string]any) {
	if p, ok := model["prompts"].(map[string]any); ok {
		for k := range p {
			if !slices.Contains(promptKeys, k) {
				delete(p, k) // reported by checkPrompts
			}
		}
	}
	data, err := json.Marshal(model)
	if err != nil {
		l.errorf(nil, "", "model settings: %v", err)
		return
	}
	f, err := agent.ParseFile(data)
	if err != nil {
		l.errorf(nil, "", "model settings: %s", strings.TrimPrefix(err.Error(), "agent: config: "))
		return
	}
	d.Model = f.Config
	d.Model.Name = d.Name
	d.Gateway, d.Space, d.Token, d.ParticipantID = f.Gateway, f.Space, f.Token, f.ParticipantID
}

// timeout is a Go duration ("90s", "2m") or a number of seconds.
type timeout time.Duration

// UnmarshalYAMLAt implements yamlx.Unmarshaler.
func (t *timeout) UnmarshalYAMLAt(n *yaml.Node, path string) error {
	const want = "want a duration such as 90s or 2m, or a number of seconds, got %s"
	v := yamlx.Deref(n)
	var d time.Duration
	switch {
	case v == nil || v.Kind != yaml.ScalarNode:
		return yamlx.Errorf(n, path, want, yamlx.Describe(v))
	case v.ShortTag() == yamlx.TagInt || v.ShortTag() == yamlx.TagFloat:
		f, err := yamlx.Number(n, path)
		if err != nil {
			return err
		}
		d = time.Duration(f * float64(time.Second))
	case v.ShortTag() == yamlx.TagStr:
		var err error
		if d, err = time.ParseDuration(v.Value); err != nil {
			return yamlx.Errorf(n, path, want, yamlx.Describe(v))
		}
	default:
		return yamlx.Errorf(n, path, want, yamlx.Describe(v))
	}
	if d <= 0 {
		return yamlx.Errorf(n, path, "want a positive duration")
	}
	*t = timeout(d)
	return nil
}

// UnmarshalYAMLAt implements yamlx.Unmarshaler: a permission is one of
// two words.
func (p *Permission) UnmarshalYAMLAt(n *yaml.Node, path string) error {
	s, err := yamlx.StrictString(n, path)
	if err != nil {
		return err
	}
	switch Permission(s) {
	case PermissionNever, PermissionAlways:
		*p = Permission(s)
		return nil
	}
	return yamlx.Errorf(n, path, "%q: want %q (its tools may be used without approval) or %q (each call needs approval: never used)",
		clip.Mark(s, 40), PermissionNever, PermissionAlways)
}

// servers reads mcpServers.
func (l *loader) servers(n *yaml.Node, path string) []ServerConfig {
	pairs, err := yamlx.StrictMapping(n, path)
	if !l.report(err) {
		return nil
	}
	var out []ServerConfig
	for _, p := range pairs {
		sp := joinPath(path, p.Key)
		if !plainName(p.Key) {
			l.errorf(p.KeyNode, sp, "a server name is letters, digits, '_', '-' and '.' (it prefixes its tools' names)")
			continue
		}
		s := ServerConfig{Name: p.Key}
		nodes := l.fields(p.Value, sp, &s, "an MCP server")
		if nodes == nil {
			continue
		}
		if un := nodes["url"]; un != nil && !webURL(s.URL) {
			l.errorf(un, joinPath(sp, "url"), "want an http:// or https:// URL, got %q", clip.Mark(s.URL, 60))
		}
		switch {
		case s.Command == "" && s.URL == "":
			l.errorf(p.Value, sp, "needs a command (a stdio server) or a url (a streamable HTTP server)")
		case s.Command != "" && s.URL != "":
			l.errorf(p.Value, sp, "has both a command and a url: give one")
		case s.URL != "" && (s.Args != nil || s.Env != nil || s.Cwd != ""):
			l.errorf(p.Value, sp, "args, env and cwd belong to a command, not to a url")
		case s.Command != "" && s.Headers != nil:
			l.errorf(p.Value, sp, "headers belong to a url, not to a command")
		}
		switch s.Permission {
		case "":
			l.errorf(p.Value, joinPath(sp, "permission"), "required: %q (its tools may be used without approval) or %q (never used by a tools agent)",
				PermissionNever, PermissionAlways)
		case PermissionAlways:
			l.warnf(p.Value, sp, "every call needs approval, which a tools agent cannot ask for: it will not use this server")
		}
		out = append(out, s)
	}
	return out
}

// webURL reports whether u is an http:// or https:// URL with a host.
func webURL(u string) bool {
	pu, err := url.Parse(u)
	return err == nil && (pu.Scheme == "http" || pu.Scheme == "https") && pu.Host != ""
}

// participants reads participants; without the section, every
// participant may be used (as far as the capabilities allow).
func (l *loader) participants(n *yaml.Node, path string) []ParticipantConfig {
	if n == nil {
		return []ParticipantConfig{{ID: "*", Permission: PermissionNever}}
	}
	pairs, err := yamlx.StrictMapping(n, path)
	if !l.report(err) {
		return nil
	}
	out := []ParticipantConfig{}
	for _, p := range pairs {
		pp := joinPath(path, p.Key)
		if p.Key == "" || strings.Contains(p.Key, "/") {
			l.errorf(p.KeyNode, pp, "a participant id must not be empty nor contain '/'")
			continue
		}
		c := ParticipantConfig{ID: p.Key}
		if l.fields(p.Value, pp, &c, "a participant") == nil {
			continue
		}
		if c.Permission == "" {
			l.errorf(p.Value, joinPath(pp, "permission"), "required: %q or %q", PermissionNever, PermissionAlways)
		}
		out = append(out, c)
	}
	return out
}

// toolProperties are the tool's own members a prompt may name.
var toolProperties = []string{"name", "description"}

// tools reads the tools and checks their prompts against their
// parameters.
func (l *loader) tools(n *yaml.Node, path string) []*Tool {
	items, err := yamlx.List(n, path)
	if !l.report(err) {
		return nil
	}
	if len(items) == 0 {
		l.errorf(n, path, "no tools: give at least one")
	}
	var out []*Tool
	where := map[string]string{}
	for i, it := range items {
		tp := indexPath(path, i)
		t := l.tool(it, tp)
		if t == nil {
			continue
		}
		if t.Name != "" {
			if first, dup := where[t.Name]; dup {
				l.errorf(it, joinPath(tp, "name"), "duplicate tool name %q (also %s)", t.Name, first)
			} else {
				where[t.Name] = tp
			}
		}
		out = append(out, t)
	}
	return out
}

// tool reads one tool.
func (l *loader) tool(n *yaml.Node, path string) *Tool {
	t := &Tool{}
	nodes := l.fields(n, path, t, "a tool")
	if nodes == nil {
		return nil
	}
	if msg := checkToolName(t.Name); nodes["name"] != nil && msg != "" {
		l.errorf(nodes["name"], joinPath(path, "name"), "%s", msg)
	}
	paramsNode, outputNode, promptNode := nodes["parameters"], nodes["output"], nodes["prompt"]
	t.Parameters = l.rootSchema(paramsNode, path, "parameters", "MCP tools take an object of arguments")
	t.Output = l.rootSchema(outputNode, path, "output", "an MCP tool's structured content is an object")
	if t.Name == "" {
		l.errorf(n, joinPath(path, "name"), "required")
	}
	if t.Description == "" {
		l.warnf(n, joinPath(path, "description"), "missing: MCP clients' models choose tools by their description")
	}
	if t.Parameters == nil {
		t.Parameters = &ObjectSchema{}
	}
	if compiled, err := compileParameters(t.Name, t.Parameters); err != nil {
		l.errorf(paramsNode, joinPath(path, "parameters"), "%v", err)
	} else {
		t.compiled = compiled
	}
	if t.Output != nil {
		if compiled, err := compileOutput(t.Name, t.Output); err != nil {
			l.errorf(outputNode, joinPath(path, "output"), "%v", err)
		} else {
			t.outCompiled = compiled
		}
	}
	if promptNode == nil {
		l.errorf(n, joinPath(path, "prompt"), "required: the template a call fills")
		return t
	}
	l.checkPrompt(t, promptNode, paramsNode, path)
	return t
}

// rootSchema reads the schema of a tool's parameters or output (key),
// whose root must be an object (why); nil when n is.
func (l *loader) rootSchema(n *yaml.Node, path, key, why string) *ObjectSchema {
	if n == nil {
		return nil
	}
	path = joinPath(path, key)
	switch s := l.schema(n, path, 1).(type) {
	case nil:
	case *ObjectSchema:
		return s
	default:
		l.errorf(n, joinPath(path, "type"), "the root of %s must be an object (%s), got %s", key, why, s.Type())
	}
	return nil
}

// checkToolName says what is wrong with an MCP tool name, or "".
func checkToolName(name string) string {
	if name == "" || len(name) > maxToolNameBytes {
		return fmt.Sprintf("a tool name has 1 to %d characters", maxToolNameBytes)
	}
	for _, r := range name {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '_' || r == '-' || r == '.') {
			return fmt.Sprintf("%q: a tool name is letters, digits, '_', '-' and '.'", clip.Mark(name, 40))
		}
	}
	return ""
}

// checkPrompt parses the prompt and checks its placeholders against the
// parameters.
func (l *loader) checkPrompt(t *Tool, promptNode, paramsNode *yaml.Node, path string) {
	pp := joinPath(path, "prompt")
	tmpl, errs := parseTemplate(t.Prompt)
	for _, e := range errs {
		l.errorf(promptNode, pp, "%s", e)
	}
	t.tmpl = tmpl
	if strings.TrimSpace(t.Prompt) == "" {
		l.errorf(promptNode, pp, "empty: the template a call fills")
	}
	params := t.Parameters
	for _, name := range tmpl.names() {
		if _, ok := params.Property(name); ok || slices.Contains(toolProperties, name) {
			continue
		}
		l.errorf(promptNode, pp, "{%s} names neither a parameter (%s) nor a tool property (%s)",
			name, params.propertyNames(), strings.Join(toolProperties, ", "))
	}
	for _, p := range params.Properties {
		if slices.Contains(toolProperties, p.Name) && tmpl.uses(p.Name) {
			l.warnf(paramsNode, joinPath(joinPath(path, "parameters.properties"), p.Name),
				"the parameter hides the tool's own %s: {%s} in the prompt is the argument", p.Name, p.Name)
		}
	}
	for _, name := range params.Required {
		if !tmpl.uses(name) {
			l.warnf(promptNode, pp, "the required parameter %s is not used: write {%s} where it belongs", name, name)
		}
	}
}
