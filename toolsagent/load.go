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

// unknown reports a key that is not allowed, naming those that are.
func (l *loader) unknown(p yamlx.Pair, path, where string, allowed []string) {
	l.errorf(p.KeyNode, joinPath(path, p.Key), "unknown key in %s (allowed: %s)", where, strings.Join(allowed, ", "))
}

// ptr returns a pointer to v, or nil with err: for the readers of
// optional schema keywords.
func ptr[T any](v T, err error) (*T, error) {
	if err != nil {
		return nil, err
	}
	return &v, nil
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
	pairs, err := yamlx.StrictMapping(root, "")
	if !l.report(err) {
		return d
	}
	model := map[string]any{}
	var haveName, haveMode, haveTools, haveVersion bool
	var toolsNode, participantsNode *yaml.Node
	for _, p := range pairs {
		var err error
		switch p.Key {
		case "name":
			d.Name, err = yamlx.StrictString(p.Value, p.Key)
			haveName = err == nil
			if haveName && strings.TrimSpace(d.Name) == "" {
				l.errorf(p.Value, p.Key, "must not be empty")
			}
		case "version":
			d.Version, err = yamlx.String(p.Value, p.Key)
			haveVersion = err == nil
		case "description":
			d.Description, err = yamlx.StrictString(p.Value, p.Key)
		case "mode":
			var mode string
			if mode, err = yamlx.StrictString(p.Value, p.Key); err == nil {
				haveMode = true
				if mode != ModeTools {
					l.errorf(p.Value, p.Key, "%q: a tools agent has mode %q (other modes run with mew agent run)", mode, ModeTools)
				}
			}
		case "tools":
			toolsNode, haveTools = p.Value, true
		case "mcpServers":
			d.Servers = l.servers(p.Value, p.Key)
		case "participants":
			participantsNode = p.Value
		case "timeout":
			var t time.Duration
			if t, err = duration(p.Value, p.Key); err == nil {
				d.Timeout = t
			}
		case "sharedHistory":
			d.SharedHistory, err = yamlx.StrictBool(p.Value, p.Key)
		case "maxConcurrentCalls":
			var n int
			if n, err = yamlx.Count(p.Value, p.Key); err == nil {
				if n < 1 {
					l.errorf(p.Value, p.Key, "want at least 1")
				} else {
					d.MaxConcurrentCalls = n
				}
			}
		case "reasoningEnabled", "thinkingEnabled":
			var b bool
			if b, err = yamlx.StrictBool(p.Value, p.Key); err == nil {
				d.Reasoning = b
			}
		default:
			l.otherKey(p, model)
		}
		l.report(err)
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

// otherKey reads a key of the root that is not the tools agent's own:
// a model setting (into model), an ignored key, or a mistake.
func (l *loader) otherKey(p yamlx.Pair, model map[string]any) {
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
		l.errorf(p.KeyNode, p.Key, "unknown key (a tools agent has %s; model settings %s; in a space %s)",
			strings.Join(ownKeys, ", "), strings.Join(agentKeys, ", "), strings.Join(connectionKeys, ", "))
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

// duration reads a Go duration ("90s", "2m") or a number of seconds.
func duration(n *yaml.Node, path string) (time.Duration, error) {
	const want = "want a duration such as 90s or 2m, or a number of seconds, got %s"
	v := yamlx.Deref(n)
	if v == nil || v.Kind != yaml.ScalarNode {
		return 0, yamlx.Errorf(n, path, want, yamlx.Describe(v))
	}
	var d time.Duration
	switch v.ShortTag() {
	case yamlx.TagInt, yamlx.TagFloat:
		f, err := yamlx.Number(n, path)
		if err != nil {
			return 0, err
		}
		d = time.Duration(f * float64(time.Second))
	case yamlx.TagStr:
		var err error
		if d, err = time.ParseDuration(v.Value); err != nil {
			return 0, yamlx.Errorf(n, path, want, yamlx.Describe(v))
		}
	default:
		return 0, yamlx.Errorf(n, path, want, yamlx.Describe(v))
	}
	if d <= 0 {
		return 0, yamlx.Errorf(n, path, "want a positive duration")
	}
	return d, nil
}

// permission reads a permission flag.
func permission(n *yaml.Node, path string) (Permission, error) {
	s, err := yamlx.StrictString(n, path)
	if err != nil {
		return "", err
	}
	switch p := Permission(s); p {
	case PermissionNever, PermissionAlways:
		return p, nil
	}
	return "", yamlx.Errorf(n, path, "%q: want %q (its tools may be used without approval) or %q (each call needs approval: never used)",
		clip.Mark(s, 40), PermissionNever, PermissionAlways)
}

var serverKeys = []string{"command", "args", "env", "cwd", "url", "headers", "permission", "tools"}

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
		fields, err := yamlx.StrictMapping(p.Value, sp)
		if !l.report(err) {
			continue
		}
		var havePermission bool
		for _, f := range fields {
			fp := joinPath(sp, f.Key)
			var err error
			switch f.Key {
			case "command":
				s.Command, err = yamlx.StrictString(f.Value, fp)
			case "args":
				s.Args, err = yamlx.StrictStringList(f.Value, fp)
			case "env":
				s.Env, err = yamlx.StringMap(f.Value, fp)
			case "cwd":
				s.Cwd, err = yamlx.StrictString(f.Value, fp)
			case "url":
				if s.URL, err = yamlx.StrictString(f.Value, fp); err == nil && !webURL(s.URL) {
					l.errorf(f.Value, fp, "want an http:// or https:// URL, got %q", clip.Mark(s.URL, 60))
				}
			case "headers":
				s.Headers, err = yamlx.StringMap(f.Value, fp)
			case "permission":
				s.Permission, err = permission(f.Value, fp)
				havePermission = err == nil
			case "tools":
				s.Tools, err = yamlx.StrictStringList(f.Value, fp)
			default:
				l.unknown(f, sp, "an MCP server", serverKeys)
			}
			l.report(err)
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
		if !havePermission {
			l.errorf(p.Value, joinPath(sp, "permission"), "required: %q (its tools may be used without approval) or %q (never used by a tools agent)",
				PermissionNever, PermissionAlways)
		} else if s.Permission == PermissionAlways {
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
		fields, err := yamlx.StrictMapping(p.Value, pp)
		if !l.report(err) {
			continue
		}
		var havePermission bool
		for _, f := range fields {
			fp := joinPath(pp, f.Key)
			var err error
			switch f.Key {
			case "permission":
				c.Permission, err = permission(f.Value, fp)
				havePermission = err == nil
			case "tools":
				c.Tools, err = yamlx.StrictStringList(f.Value, fp)
			default:
				l.unknown(f, pp, "a participant", []string{"permission", "tools"})
			}
			l.report(err)
		}
		if !havePermission {
			l.errorf(p.Value, joinPath(pp, "permission"), "required: %q or %q", PermissionNever, PermissionAlways)
		}
		out = append(out, c)
	}
	return out
}

var toolKeys = []string{"name", "description", "parameters", "output", "prompt", "tags", "examples", "inputModes", "outputModes"}

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
	fields, err := yamlx.StrictMapping(n, path)
	if !l.report(err) {
		return nil
	}
	t := &Tool{}
	var promptNode, paramsNode, outputNode *yaml.Node
	for _, f := range fields {
		fp := joinPath(path, f.Key)
		var err error
		switch f.Key {
		case "name":
			if t.Name, err = yamlx.StrictString(f.Value, fp); err == nil {
				if msg := checkToolName(t.Name); msg != "" {
					l.errorf(f.Value, fp, "%s", msg)
				}
			}
		case "description":
			t.Description, err = yamlx.StrictString(f.Value, fp)
		case "parameters":
			paramsNode = f.Value
			switch s := l.schema(f.Value, fp, 1).(type) {
			case nil:
			case *ObjectSchema:
				t.Parameters = s
			default:
				l.errorf(f.Value, joinPath(fp, "type"), "the root of parameters must be an object (MCP tools take an object of arguments), got %s", s.Type())
			}
		case "output":
			outputNode = f.Value
			switch s := l.schema(f.Value, fp, 1).(type) {
			case nil:
			case *ObjectSchema:
				t.Output = s
			default:
				l.errorf(f.Value, joinPath(fp, "type"), "the root of output must be an object (an MCP tool's structured content is an object), got %s", s.Type())
			}
		case "prompt":
			promptNode = f.Value
			t.Prompt, err = yamlx.StrictString(f.Value, fp)
		case "tags":
			t.Tags, err = yamlx.StrictStringList(f.Value, fp)
		case "examples":
			t.Examples, err = yamlx.StrictStringList(f.Value, fp)
		case "inputModes":
			t.InputModes, err = yamlx.StrictStringList(f.Value, fp)
		case "outputModes":
			t.OutputModes, err = yamlx.StrictStringList(f.Value, fp)
		default:
			l.unknown(f, path, "a tool", toolKeys)
		}
		l.report(err)
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
