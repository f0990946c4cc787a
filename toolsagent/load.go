package toolsagent

import (
	"encoding/json"
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
	Command string
	Args    []string
	Env     map[string]string
	Cwd     string
	// URL is a streamable HTTP endpoint, with Headers sent on each request.
	URL     string
	Headers map[string]string
	// Permission says whether its calls need approval.
	Permission Permission
	// Tools, when not empty, are the only tools of the server offered.
	Tools []string
}

// ParticipantConfig says whether a participant's tools may be used in a
// space.
type ParticipantConfig struct {
	// ID is the participant's id, or "*" for every participant not listed.
	ID string
	// Permission says whether its calls need approval. Even with
	// PermissionNever a call is made only when the agent's capabilities
	// let it send the mcp/request itself: a tools agent never proposes.
	Permission Permission
	// Tools, when not empty, are the only tools of the participant offered.
	Tools []string
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
	chatKeys = []string{"autoRespond", "chatResponse", "floorControl", "messageQueue"}
	// ownKeys are the tools agent's own keys (thinkingEnabled, the
	// older name of reasoningEnabled, is accepted too).
	ownKeys = []string{"name", "version", "description", "mode", "tools", "mcpServers", "participants", "timeout",
		"sharedHistory", "maxConcurrentCalls", "reasoningEnabled"}
	promptKeys = []string{"system", "act", "respond"}
)

// definition reads the document's root.
func (l *loader) definition(root *yaml.Node) *Definition {
	d := &Definition{Reasoning: true, Timeout: DefaultTimeout, MaxConcurrentCalls: DefaultMaxConcurrentCalls}
	pairs, ok := l.mapping(root, "")
	if !ok {
		return d
	}
	model := map[string]any{}
	var haveName, haveMode, haveTools, haveVersion bool
	var toolsNode, participantsNode *yaml.Node
	for _, p := range pairs {
		switch p.key {
		case "name":
			d.Name, haveName = l.str(p.val, p.key)
			if haveName && strings.TrimSpace(d.Name) == "" {
				l.errorf(p.val, p.key, "must not be empty")
			}
		case "version":
			d.Version, haveVersion = l.text(p.val, p.key)
		case "description":
			d.Description, _ = l.str(p.val, p.key)
		case "mode":
			if mode, ok := l.str(p.val, p.key); ok {
				haveMode = true
				if mode != ModeTools {
					l.errorf(p.val, p.key, "%q: a tools agent has mode %q (other modes run with mew agent run)", mode, ModeTools)
				}
			}
		case "tools":
			toolsNode, haveTools = p.val, true
		case "mcpServers":
			d.Servers = l.servers(p.val, p.key)
		case "participants":
			participantsNode = p.val
		case "timeout":
			d.Timeout = l.duration(p.val, p.key, d.Timeout)
		case "sharedHistory":
			d.SharedHistory, _ = l.boolean(p.val, p.key)
		case "maxConcurrentCalls":
			if n, ok := l.count(p.val, p.key); ok {
				if *n < 1 {
					l.errorf(p.val, p.key, "want at least 1")
				} else {
					d.MaxConcurrentCalls = *n
				}
			}
		case "reasoningEnabled", "thinkingEnabled":
			if b, ok := l.boolean(p.val, p.key); ok {
				d.Reasoning = b
			}
		default:
			switch {
			case slices.Contains(ignoredKeys, p.key), strings.HasPrefix(p.key, "x-"):
			case slices.Contains(agentKeys, p.key), slices.Contains(connectionKeys, p.key):
				if p.key == "prompts" {
					l.checkPrompts(p.val, p.key)
				}
				var v any
				if err := p.val.Decode(&v); err != nil {
					l.errorf(p.val, p.key, "%s", strings.TrimPrefix(err.Error(), "yaml: "))
					continue
				}
				model[p.key] = v
			case slices.Contains(chatKeys, p.key):
				l.errorf(p.kn, p.key, "not a setting of a tools agent: it answers tool calls, not chats")
			default:
				l.errorf(p.kn, p.key, "unknown key (a tools agent has %s; model settings %s; in a space %s)",
					strings.Join(ownKeys, ", "), strings.Join(agentKeys, ", "), strings.Join(connectionKeys, ", "))
			}
		}
	}
	if !haveName {
		l.errorf(root, "name", "required: the MCP server's name")
	}
	if !haveMode {
		l.errorf(root, "mode", "required: write mode: %s", ModeTools)
	}
	if !haveVersion || d.Version == "" {
		d.Version = DefaultVersion
		l.warnf(root, "version", "missing: the server reports version %s", DefaultVersion)
	}
	if d.Description == "" {
		l.warnf(root, "description", "missing: MCP clients get no instructions")
	}
	d.Participants = l.participants(participantsNode, "participants")
	for _, s := range d.Servers {
		if slices.ContainsFunc(d.Participants, func(p ParticipantConfig) bool { return p.ID == s.Name }) {
			l.errorf(participantsNode, joinPath("participants", s.Name), "also the name of an MCP server: the tool names would be ambiguous")
		}
	}
	if haveTools {
		d.Tools = l.tools(toolsNode, "tools")
	} else {
		l.errorf(root, "tools", "required: the tools the agent serves")
	}
	l.agentConfig(d, model)
	return d
}

// checkPrompts refuses the prompts a tools agent does not use.
func (l *loader) checkPrompts(n *yaml.Node, path string) {
	pairs, ok := l.mapping(n, path)
	if !ok {
		return
	}
	for _, p := range pairs {
		if !slices.Contains(promptKeys, p.key) {
			l.errorf(p.kn, joinPath(path, p.key), "not used by a tools agent (allowed: %s): the tool's prompt is the question", strings.Join(promptKeys, ", "))
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

// duration reads a Go duration ("90s", "2m") or a number of seconds.
func (l *loader) duration(n *yaml.Node, path string, def time.Duration) time.Duration {
	s, ok := l.scalar(n, path, "a duration")
	if !ok {
		return def
	}
	var d time.Duration
	switch s.ShortTag() {
	case "!!int", "!!float":
		f, ok := l.number(s, path)
		if !ok {
			return def
		}
		d = time.Duration(f * float64(time.Second))
	case "!!str":
		var err error
		if d, err = time.ParseDuration(s.Value); err != nil {
			l.errorf(s, path, "want a duration such as 90s or 2m, or a number of seconds, got %q", clip(s.Value, 40))
			return def
		}
	default:
		l.errorf(s, path, "want a duration such as 90s or 2m, or a number of seconds, got %s", kindOf(s))
		return def
	}
	if d <= 0 {
		l.errorf(s, path, "want a positive duration")
		return def
	}
	return d
}

// permission reads a permission flag.
func (l *loader) permission(n *yaml.Node, path string) (Permission, bool) {
	s, ok := l.str(n, path)
	if !ok {
		return "", false
	}
	switch p := Permission(s); p {
	case PermissionNever, PermissionAlways:
		return p, true
	}
	l.errorf(n, path, "%q: want %q (its tools may be used without approval) or %q (each call needs approval: never used)",
		clip(s, 40), PermissionNever, PermissionAlways)
	return "", false
}

var serverKeys = []string{"command", "args", "env", "cwd", "url", "headers", "permission", "tools"}

// servers reads mcpServers.
func (l *loader) servers(n *yaml.Node, path string) []ServerConfig {
	pairs, ok := l.mapping(n, path)
	if !ok {
		return nil
	}
	var out []ServerConfig
	for _, p := range pairs {
		sp := joinPath(path, p.key)
		if !plainName(p.key) {
			l.errorf(p.kn, sp, "a server name is letters, digits, '_', '-' and '.' (it prefixes its tools' names)")
			continue
		}
		s := ServerConfig{Name: p.key}
		fields, ok := l.mapping(p.val, sp)
		if !ok {
			continue
		}
		var havePermission bool
		for _, f := range fields {
			fp := joinPath(sp, f.key)
			switch f.key {
			case "command":
				s.Command, _ = l.str(f.val, fp)
			case "args":
				s.Args, _ = l.strList(f.val, fp)
			case "env":
				s.Env, _ = l.textMap(f.val, fp)
			case "cwd":
				s.Cwd, _ = l.str(f.val, fp)
			case "url":
				if u, ok := l.str(f.val, fp); ok {
					if pu, err := url.Parse(u); err != nil || (pu.Scheme != "http" && pu.Scheme != "https") || pu.Host == "" {
						l.errorf(f.val, fp, "want an http:// or https:// URL, got %q", clip(u, 60))
					}
					s.URL = u
				}
			case "headers":
				s.Headers, _ = l.textMap(f.val, fp)
			case "permission":
				s.Permission, havePermission = l.permission(f.val, fp)
			case "tools":
				s.Tools, _ = l.strList(f.val, fp)
			default:
				l.unknown(f, sp, "an MCP server", serverKeys)
			}
		}
		switch {
		case s.Command == "" && s.URL == "":
			l.errorf(p.val, sp, "needs a command (a stdio server) or a url (a streamable HTTP server)")
		case s.Command != "" && s.URL != "":
			l.errorf(p.val, sp, "has both a command and a url: give one")
		case s.URL != "" && (s.Args != nil || s.Env != nil || s.Cwd != ""):
			l.errorf(p.val, sp, "args, env and cwd belong to a command, not to a url")
		case s.Command != "" && s.Headers != nil:
			l.errorf(p.val, sp, "headers belong to a url, not to a command")
		}
		if !havePermission {
			l.errorf(p.val, joinPath(sp, "permission"), "required: %q (its tools may be used without approval) or %q (never used by a tools agent)",
				PermissionNever, PermissionAlways)
		} else if s.Permission == PermissionAlways {
			l.warnf(p.val, sp, "every call needs approval, which a tools agent cannot ask for: it will not use this server")
		}
		out = append(out, s)
	}
	return out
}

// participants reads participants; without the section, every
// participant may be used (as far as the capabilities allow).
func (l *loader) participants(n *yaml.Node, path string) []ParticipantConfig {
	if n == nil {
		return []ParticipantConfig{{ID: "*", Permission: PermissionNever}}
	}
	pairs, ok := l.mapping(n, path)
	if !ok {
		return nil
	}
	out := []ParticipantConfig{}
	for _, p := range pairs {
		pp := joinPath(path, p.key)
		if p.key == "" || strings.Contains(p.key, "/") {
			l.errorf(p.kn, pp, "a participant id must not be empty nor contain '/'")
			continue
		}
		c := ParticipantConfig{ID: p.key}
		fields, ok := l.mapping(p.val, pp)
		if !ok {
			continue
		}
		var havePermission bool
		for _, f := range fields {
			fp := joinPath(pp, f.key)
			switch f.key {
			case "permission":
				c.Permission, havePermission = l.permission(f.val, fp)
			case "tools":
				c.Tools, _ = l.strList(f.val, fp)
			default:
				l.unknown(f, pp, "a participant", []string{"permission", "tools"})
			}
		}
		if !havePermission {
			l.errorf(p.val, joinPath(pp, "permission"), "required: %q or %q", PermissionNever, PermissionAlways)
		}
		out = append(out, c)
	}
	return out
}

var toolKeys = []string{"name", "description", "parameters", "prompt"}

// toolProperties are the tool's own members a prompt may name.
var toolProperties = []string{"name", "description"}

// tools reads the tools and checks their prompts against their
// parameters.
func (l *loader) tools(n *yaml.Node, path string) []*Tool {
	items, ok := l.sequence(n, path)
	if !ok {
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
	fields, ok := l.mapping(n, path)
	if !ok {
		return nil
	}
	t := &Tool{}
	var promptNode, paramsNode *yaml.Node
	for _, f := range fields {
		fp := joinPath(path, f.key)
		switch f.key {
		case "name":
			if name, ok := l.str(f.val, fp); ok {
				t.Name = name
				if err := checkToolName(name); err != "" {
					l.errorf(f.val, fp, "%s", err)
				}
			}
		case "description":
			t.Description, _ = l.str(f.val, fp)
		case "parameters":
			paramsNode = f.val
			s := l.schema(f.val, fp, 1)
			if s == nil {
				continue
			}
			obj, isObj := s.(*ObjectSchema)
			if !isObj {
				l.errorf(f.val, joinPath(fp, "type"), "the root of parameters must be an object (MCP tools take an object of arguments), got %s", s.Type())
				continue
			}
			t.Parameters = obj
		case "prompt":
			promptNode = f.val
			t.Prompt, _ = l.str(f.val, fp)
		default:
			l.unknown(f, path, "a tool", toolKeys)
		}
	}
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
	if promptNode == nil {
		l.errorf(n, joinPath(path, "prompt"), "required: the template a call fills")
		return t
	}
	l.checkPrompt(t, promptNode, paramsNode, path)
	return t
}

// checkToolName says what is wrong with an MCP tool name, or "".
func checkToolName(name string) string {
	if name == "" || len(name) > maxToolNameBytes {
		return fmt.Sprintf("a tool name has 1 to %d characters", maxToolNameBytes)
	}
	for _, r := range name {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '_' || r == '-' || r == '.') {
			return fmt.Sprintf("%q: a tool name is letters, digits, '_', '-' and '.'", clip(name, 40))
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
