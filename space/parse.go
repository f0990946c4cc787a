package space

import (
	"encoding/json"
	"errors"
	"sort"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/mew-protocol/mew/capability"
	"github.com/mew-protocol/mew/internal/yamlx"
)

// maxFloorTTL bounds floor_control.ttl_ms (one day).
const maxFloorTTL = 24 * time.Hour

// parse fills c from data.
func (p *parser) parse(data []byte, c *Config) error {
	c.Logging = Logging{Enabled: true, EnvelopeHistory: true, CapabilityDecisions: true}
	c.FloorControl = FloorControl{Enabled: true, TTL: DefaultFloorTTL}
	doc, err := p.decode(data)
	if err != nil {
		return err
	}
	var root *yaml.Node
	if doc != nil && len(doc.Content) > 0 {
		root = doc.Content[0]
	}
	if isNull(root) {
		return yamlx.Errorf(root, "space.id", "is required")
	}
	top := deref(root)
	if top.Kind != yaml.MappingNode {
		return yamlx.Errorf(root, "", "want a mapping at the top level, got %s", describe(top))
	}
	var spaceNode, approvals, notify *yaml.Node
	err = p.fields(top, "", c, map[string]yamlx.Reader{
		"space": func(v *yaml.Node, k string) error {
			spaceNode = v
			return p.space(v, k, &c.Space)
		},
		"participants":    func(v *yaml.Node, k string) error { return p.participants(v, k, c) },
		"defaults":        func(v *yaml.Node, k string) error { return p.defaults(v, k, &c.Defaults) },
		"gateway_logging": func(v *yaml.Node, k string) error { return p.fields(v, k, &c.Logging, p.logSwitches(&c.Logging)) },
		"floor_control":   func(v *yaml.Node, k string) error { return p.floorControl(v, k, &c.FloorControl) },
		"approvals":       func(v *yaml.Node, k string) error { approvals = v; return nil },
		"notify":          func(v *yaml.Node, k string) error { notify = v; return nil },
		// Documented by the reference, used by nothing.
		"gateway": func(v *yaml.Node, k string) error {
			var ignored struct {
				Port  *yaml.Node `yaml:"port"`
				Space *yaml.Node `yaml:"space"`
			}
			return p.fields(v, k, &ignored, nil)
		},
	})
	if err != nil {
		return err
	}
	if c.Space.ID == "" {
		if spaceNode == nil {
			spaceNode = root
		}
		return yamlx.Errorf(spaceNode, "space.id", "is required")
	}
	// After the participants, whom the rules name.
	if err := p.approvals(approvals, "approvals", c); err != nil {
		return err
	}
	if err := p.notify(notify, "notify", c); err != nil {
		return err
	}
	sort.Strings(p.unknown)
	c.Unknown = p.unknown
	c.DidYouMean = p.suggest
	return nil
}

// unknownKey records the key path of a member name this package does not
// know, and the one of known it is likely a typo of, if any: unknown keys
// are warnings, as the reference ignores them.
func (p *parser) unknownKey(kv pair, path string, known []string) error {
	p.unknown = append(p.unknown, path)
	if s := yamlx.Closest(kv.Key, known); s != "" {
		if p.suggest == nil {
			p.suggest = map[string]string{}
		}
		p.suggest[path] = s
	}
	return nil
}

// fields reads the mapping at n into dst (see yamlx.Fields: null is
// absent, a string may be written as a number), the members named in
// readers with them; it records unknown keys and returns the first error.
func (p *parser) fields(n *yaml.Node, key string, dst any, readers map[string]yamlx.Reader) error {
	_, errs := yamlx.Fields(n, key, dst, yamlx.FieldOptions{Lenient: true, Readers: readers, Unknown: p.unknownKey})
	if len(errs) > 0 {
		return errs[0]
	}
	return nil
}

func (p *parser) space(n *yaml.Node, key string, info *Info) error {
	return p.fields(n, key, info, map[string]yamlx.Reader{
		"id": func(v *yaml.Node, k string) error {
			id, err := yamlx.String(v, k)
			if err == nil && id != "" {
				if problem := idProblem(id); problem != "" {
					return yamlx.Errorf(v, k, "invalid space id: %s", problem)
				}
			}
			info.ID = id
			return err
		},
	})
}

func (p *parser) participants(n *yaml.Node, key string, c *Config) error {
	pairs, err := yamlx.Mapping(n, key)
	if err != nil {
		return err
	}
	owners := make(map[string]string) // literal token → participant id
	for _, kv := range pairs {
		k := joinKey(key, kv.Key)
		if err := ValidParticipantID(kv.Key); err != nil {
			return yamlx.Errorf(kv.KeyNode, k, "%w", err)
		}
		part := &Participant{ID: kv.Key}
		if err := p.participant(kv.Value, k, part, owners); err != nil {
			return err
		}
		c.Participants = append(c.Participants, part)
	}
	return nil
}

func (p *parser) participant(n *yaml.Node, key string, part *Participant, owners map[string]string) error {
	err := p.fields(n, key, part, map[string]yamlx.Reader{
		"tokens": func(v *yaml.Node, k string) (err error) {
			part.Tokens, err = tokens(v, k, part.ID, owners)
			return err
		},
		"capabilities":  yamlx.Set(&part.Capabilities, capabilities),
		"env":           yamlx.Set(&part.Env, envVars),
		"default_to":    yamlx.Set(&part.DefaultTo, defaultTo),
		"mcp_server":    yamlx.Set(&part.MCPServer, p.mcpServer),
		"bridge_config": yamlx.Set(&part.BridgeConfig, loose),
		"a2a_url":       yamlx.Set(&part.A2AURL, a2aURL),
		"a2a_answerers": yamlx.Set(&part.A2AAnswerers, participantIDs),
	})
	if err != nil {
		return err
	}
	return checkA2A(n, key, part)
}

// tokens reads a participant's literal tokens, refusing a token already
// listed (for this participant or another). Messages never show a token.
func tokens(n *yaml.Node, key, id string, owners map[string]string) ([]string, error) {
	v := deref(n)
	if isNull(v) {
		return nil, nil
	}
	if v.Kind != yaml.SequenceNode {
		// Not describe(v): the value may well be a token.
		return nil, yamlx.Errorf(n, key, "want a list of tokens, got %s", describeKind(v))
	}
	var out []string
	for i, item := range v.Content {
		k := indexKey(key, i)
		if isNull(item) {
			return nil, yamlx.Errorf(item, k, "want a token, got null")
		}
		t, err := yamlx.String(item, k)
		if err != nil {
			return nil, err
		}
		switch {
		case strings.TrimSpace(t) == "":
			return nil, yamlx.Errorf(item, k, "a token must not be empty")
		case strings.ContainsFunc(t, isControl):
			return nil, yamlx.Errorf(item, k, "a token must not contain control characters")
		}
		if other, dup := owners[t]; dup {
			if other == id {
				return nil, yamlx.Errorf(item, k, "the same token is listed twice")
			}
			return nil, yamlx.Errorf(item, k, "the same token is listed for participant %q; a token must identify one participant", other)
		}
		owners[t] = id
		out = append(out, t)
	}
	return out, nil
}

func isControl(r rune) bool { return r < 0x20 || r == 0x7f }

// capabilities reads a list of capability patterns, converts each to JSON
// and compiles it. Nil when n is null; empty, not nil, for [].
func capabilities(n *yaml.Node, key string) ([]json.RawMessage, error) {
	v := deref(n)
	if isNull(v) {
		return nil, nil
	}
	if v.Kind != yaml.SequenceNode {
		return nil, yamlx.Errorf(n, key, "want a list of capabilities, got %s", describe(v))
	}
	out := make([]json.RawMessage, 0, len(v.Content))
	for i, item := range v.Content {
		k := indexKey(key, i)
		raw, err := capabilityJSON(item, k)
		if err != nil {
			return nil, err
		}
		if _, err := capability.Compile([]json.RawMessage{raw}); err != nil {
			var ce *capability.CompileError
			if errors.As(err, &ce) {
				return nil, &yamlx.Error{Line: item.Line, Path: k + strings.TrimPrefix(ce.Path, "[0]"), Err: compileError{ce}}
			}
			return nil, yamlx.Errorf(item, k, "%w", err)
		}
		out = append(out, raw)
	}
	return out, nil
}

// capabilityJSON converts one capability mapping to compact JSON, keys in the
// order written, after checking that it has a kind.
func capabilityJSON(n *yaml.Node, key string) (json.RawMessage, error) {
	v := deref(n)
	if v == nil || v.Kind != yaml.MappingNode {
		return nil, yamlx.Errorf(n, key, "want a capability mapping, got %s", describe(v))
	}
	pairs, err := yamlx.Pairs(v, key)
	if err != nil {
		return nil, err
	}
	var kind *pair
	for i := range pairs {
		if pairs[i].Key == "kind" {
			kind = &pairs[i]
			break
		}
	}
	if kind == nil {
		return nil, yamlx.Errorf(n, key, "kind is required")
	}
	if err := checkKind(kind.Value, key+".kind"); err != nil {
		return nil, err
	}
	return yamlx.AppendObject(nil, pairs, key)
}

// checkKind checks a capability's kind: a non-empty string, or a non-empty list
// of them (any of which may match, as in the SDK matcher).
func checkKind(n *yaml.Node, key string) error {
	v := deref(n)
	isString := func(s *yaml.Node) bool {
		return s != nil && s.Kind == yaml.ScalarNode && s.ShortTag() == tagStr
	}
	switch {
	case isString(v):
		if v.Value == "" {
			return yamlx.Errorf(n, key, "must not be empty")
		}
		return nil
	case v != nil && v.Kind == yaml.SequenceNode && len(v.Content) > 0:
		for i, item := range v.Content {
			d := deref(item)
			if !isString(d) {
				return yamlx.Errorf(item, indexKey(key, i), "want a string, got %s", describe(d))
			}
			if d.Value == "" {
				return yamlx.Errorf(item, indexKey(key, i), "must not be empty")
			}
		}
		return nil
	}
	return yamlx.Errorf(n, key, "want a string, got %s", describe(v))
}

// compileError shows a capability compile error without its own path (the
// error's key path has it) and unwraps to it.
type compileError struct{ ce *capability.CompileError }

func (e compileError) Error() string {
	msg := e.ce.Err.Error()
	if e.ce.Detail != "" {
		msg += ": " + e.ce.Detail
	}
	return msg
}

func (e compileError) Unwrap() error { return e.ce }

// envVars reads a mapping of environment variables in file order.
func envVars(n *yaml.Node, key string) ([]EnvVar, error) {
	pairs, err := yamlx.Mapping(n, key)
	if err != nil {
		return nil, err
	}
	var out []EnvVar
	for _, kv := range pairs {
		k := joinKey(key, kv.Key)
		if kv.Key == "" || strings.ContainsAny(kv.Key, "=\x00") {
			return nil, yamlx.Errorf(kv.KeyNode, k, "invalid environment variable name")
		}
		val, err := yamlx.String(kv.Value, k)
		if err != nil {
			return nil, err
		}
		if strings.ContainsRune(val, 0) {
			return nil, yamlx.Errorf(kv.Value, k, "an environment variable must not contain NUL")
		}
		out = append(out, EnvVar{Name: kv.Key, Value: val})
	}
	return out, nil
}

// defaultTo reads a mapping from kinds to lists of participant ids.
func defaultTo(n *yaml.Node, key string) (map[string][]string, error) {
	pairs, err := yamlx.Mapping(n, key)
	if err != nil || pairs == nil {
		return nil, err
	}
	out := make(map[string][]string, len(pairs))
	for _, kv := range pairs {
		list, err := yamlx.StringList(kv.Value, joinKey(key, kv.Key))
		if err != nil {
			return nil, err
		}
		out[kv.Key] = list
	}
	return out, nil
}

func (p *parser) mcpServer(n *yaml.Node, key string) (*MCPServer, error) {
	if isNull(n) {
		return nil, nil
	}
	s := &MCPServer{}
	err := p.fields(n, key, s, map[string]yamlx.Reader{
		"env":  yamlx.Set(&s.Env, envVars),
		"url":  yamlx.Set(&s.URL, mcpURL),
		"auth": yamlx.Set(&s.Auth, p.mcpAuth),
	})
	if err != nil {
		return nil, err
	}
	switch {
	case s.URL != "" && (s.Command != "" || len(s.Args) > 0 || len(s.Env) > 0 || s.Cwd != ""):
		return nil, yamlx.Errorf(n, key, "url and command (with args, env, cwd) are two kinds of server; give one")
	case s.Auth != nil && s.URL == "":
		return nil, yamlx.Errorf(n, key, "auth applies to a url server (a command gets its credentials in env)")
	}
	return s, nil
}

// loose reads a mapping as JSON-like values (numbers become float64).
func loose(n *yaml.Node, key string) (map[string]any, error) {
	if isNull(n) {
		return nil, nil
	}
	if v := deref(n); v.Kind != yaml.MappingNode {
		return nil, yamlx.Errorf(n, key, "want a mapping, got %s", describe(v))
	}
	raw, err := yamlx.AppendJSON(nil, n, key)
	if err != nil {
		return nil, err
	}
	var out map[string]any
	if err := json.Unmarshal(raw, &out); err != nil {
		return nil, yamlx.Errorf(n, key, "%w", err)
	}
	return out, nil
}

func (p *parser) defaults(n *yaml.Node, key string, d *Defaults) error {
	return p.fields(n, key, d, map[string]yamlx.Reader{
		"capabilities": yamlx.Set(&d.Capabilities, capabilities),
		"routing": func(v *yaml.Node, k string) error {
			return p.fields(v, k, &struct{}{}, map[string]yamlx.Reader{"default_to": yamlx.Set(&d.DefaultTo, defaultTo)})
		},
		"proposal_timeout_ms": func(v *yaml.Node, k string) (err error) {
			d.ProposalTimeout, err = milliseconds(v, k, 0, MaxProposalTimeout)
			return err
		},
	})
}

// logSwitches read gateway_logging's switches, each {enabled: bool} (the
// reference's form) or a bare boolean; true when absent.
func (p *parser) logSwitches(l *Logging) map[string]yamlx.Reader {
	read := func(n *yaml.Node, key string) (bool, error) {
		if v := deref(n); v != nil && v.Kind == yaml.ScalarNode && v.ShortTag() == tagBool {
			return yamlx.Bool(n, key, true)
		}
		on := struct {
			Enabled bool `yaml:"enabled"`
		}{true}
		err := p.fields(n, key, &on, nil)
		return on.Enabled, err
	}
	return map[string]yamlx.Reader{
		"envelope_history":     yamlx.Set(&l.EnvelopeHistory, read),
		"capability_decisions": yamlx.Set(&l.CapabilityDecisions, read),
	}
}

func (p *parser) floorControl(n *yaml.Node, key string, f *FloorControl) error {
	return p.fields(n, key, f, map[string]yamlx.Reader{
		"ttl_ms": func(v *yaml.Node, k string) (err error) {
			f.TTL, err = milliseconds(v, k, DefaultFloorTTL, maxFloorTTL)
			return err
		},
	})
}

// milliseconds reads a positive whole number of milliseconds up to limit;
// def when n is null.
func milliseconds(n *yaml.Node, key string, def, limit time.Duration) (time.Duration, error) {
	v := deref(n)
	if isNull(v) {
		return def, nil
	}
	var ms int64
	if v.Kind != yaml.ScalarNode || v.ShortTag() != tagInt || v.Decode(&ms) != nil {
		return 0, yamlx.Errorf(n, key, "want a whole number of milliseconds, got %s", describe(v))
	}
	if ms < 1 || ms > limit.Milliseconds() {
		return 0, yamlx.Errorf(n, key, "want 1 to %d milliseconds, got %d", limit.Milliseconds(), ms)
	}
	return time.Duration(ms) * time.Millisecond, nil
}
