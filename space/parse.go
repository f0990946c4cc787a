package space

import (
	"encoding/json"
	"errors"
	"maps"
	"slices"
	"sort"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/mew-protocol/mew/capability"
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
		return p.fail(root, "space.id", "is required")
	}
	top := deref(root)
	if top.Kind != yaml.MappingNode {
		return p.fail(root, "", "want a mapping at the top level, got %s", describe(top))
	}
	pairs, err := p.pairs(top, "")
	if err != nil {
		return err
	}
	var spaceNode *yaml.Node
	for _, kv := range pairs {
		key := joinKey("", kv.Key)
		switch kv.Key {
		case "space":
			spaceNode = kv.Value
			err = p.space(kv.Value, key, &c.Space)
		case "participants":
			err = p.participants(kv.Value, key, c)
		case "defaults":
			err = p.defaults(kv.Value, key, &c.Defaults)
		case "gateway_logging":
			err = p.logging(kv.Value, key, &c.Logging)
		case "floor_control":
			err = p.floorControl(kv.Value, key, &c.FloorControl)
		case "gateway":
			// Documented by the reference, used by nothing.
			err = p.known(kv.Value, key, "port", "space")
		default:
			p.unknownKey(key, kv.Key, topKeys)
		}
		if err != nil {
			return err
		}
	}
	if c.Space.ID == "" {
		if spaceNode == nil {
			spaceNode = root
		}
		return p.fail(spaceNode, "space.id", "is required")
	}
	sort.Strings(p.unknown)
	c.Unknown = p.unknown
	c.DidYouMean = p.suggest
	return nil
}

// topKeys are the keys of the top level.
var topKeys = []string{"space", "participants", "defaults", "gateway_logging", "floor_control", "gateway"}

// unknownKey records the key path of a member name this package does not
// know, and the one of known it is likely a typo of, if any.
func (p *parser) unknownKey(path, name string, known []string) {
	p.unknown = append(p.unknown, path)
	if s := closest(name, known); s != "" {
		if p.suggest == nil {
			p.suggest = map[string]string{}
		}
		p.suggest[path] = s
	}
}

// closest returns the name of known that word is a likely typo of: the
// nearest by edit distance, when that distance is at most a quarter of
// its length (at least 1, at most 3); "" when none is.
func closest(word string, known []string) string {
	best, bestD := "", 0
	for _, k := range known {
		limit := min(max(len(k)/4, 1), 3)
		if d := editDistance(strings.ToLower(word), k); d <= limit && (best == "" || d < bestD) {
			best, bestD = k, d
		}
	}
	return best
}

// editDistance is the number of insertions, deletions, substitutions and
// swaps of adjacent bytes that turn a into b (optimal string alignment).
func editDistance(a, b string) int {
	prev2 := make([]int, len(b)+1)
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
			if i > 1 && j > 1 && a[i-1] == b[j-2] && a[i-2] == b[j-1] {
				cur[j] = min(cur[j], prev2[j-2]+1)
			}
		}
		prev2, prev, cur = prev, cur, prev2
	}
	return prev[len(b)]
}

// known checks that n is a mapping (or null) and records its keys other than
// names as unknown; the values are not looked at.
func (p *parser) known(n *yaml.Node, key string, names ...string) error {
	ignore := make(map[string]field, len(names))
	for _, name := range names {
		ignore[name] = func(*yaml.Node, string) error { return nil }
	}
	return p.fields(n, key, ignore)
}

func (p *parser) space(n *yaml.Node, key string, info *Info) error {
	return p.fields(n, key, map[string]field{
		"id": func(v *yaml.Node, k string) error {
			id, err := p.str(v, k)
			if err != nil {
				return err
			}
			if id != "" {
				if problem := idProblem(id); problem != "" {
					return p.fail(v, k, "invalid space id: %s", problem)
				}
			}
			info.ID = id
			return nil
		},
		"name":                set(&info.Name, p.str),
		"description":         set(&info.Description, p.str),
		"default_participant": set(&info.DefaultParticipant, p.str),
		"ui_theme":            set(&info.UITheme, p.str),
	})
}

func (p *parser) participants(n *yaml.Node, key string, c *Config) error {
	pairs, err := p.mapping(n, key)
	if err != nil {
		return err
	}
	owners := make(map[string]string) // literal token → participant id
	for _, kv := range pairs {
		k := joinKey(key, kv.Key)
		if err := ValidParticipantID(kv.Key); err != nil {
			return p.fail(kv.KeyNode, k, "%w", err)
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
	err := p.fields(n, key, map[string]field{
		"tokens": func(v *yaml.Node, k string) (err error) {
			part.Tokens, err = p.tokens(v, k, part.ID, owners)
			return err
		},
		"capabilities":   set(&part.Capabilities, p.capabilities),
		"type":           set(&part.Type, p.str),
		"command":        set(&part.Command, p.str),
		"args":           set(&part.Args, p.strList),
		"env":            set(&part.Env, p.env),
		"auto_start":     set(&part.AutoStart, p.boolOr(false)),
		"auto_connect":   set(&part.AutoConnect, p.boolOr(false)),
		"fifo":           set(&part.Fifo, p.boolOr(false)),
		"output_log":     set(&part.OutputLog, p.str),
		"default_to":     set(&part.DefaultTo, p.defaultTo),
		"restart_policy": set(&part.RestartPolicy, p.str),
		"io":             set(&part.IO, p.str),
		"mcp_server":     set(&part.MCPServer, p.mcpServer),
		"bridge_config":  set(&part.BridgeConfig, p.loose),
		"a2a_url":        set(&part.A2AURL, p.a2aURL),
		"a2a_answerers":  set(&part.A2AAnswerers, p.participantIDs),
	})
	if err != nil {
		return err
	}
	return p.checkA2A(n, key, part)
}

// field reads one member of a mapping: its value node and key path.
type field func(v *yaml.Node, key string) error

// fields reads a mapping member by member with the field of each name; the
// members it has no field for are recorded as unknown.
func (p *parser) fields(n *yaml.Node, key string, byName map[string]field) error {
	pairs, err := p.mapping(n, key)
	if err != nil {
		return err
	}
	for _, kv := range pairs {
		k := joinKey(key, kv.Key)
		f, ok := byName[kv.Key]
		if !ok {
			p.unknownKey(k, kv.Key, slices.Collect(maps.Keys(byName)))
			continue
		}
		if err := f(kv.Value, k); err != nil {
			return err
		}
	}
	return nil
}

// set returns a field that stores in dst what read makes of the value.
func set[T any](dst *T, read func(*yaml.Node, string) (T, error)) field {
	return func(v *yaml.Node, k string) error {
		x, err := read(v, k)
		if err == nil {
			*dst = x
		}
		return err
	}
}

// boolOr returns a reader of booleans that gives def for null.
func (p *parser) boolOr(def bool) func(*yaml.Node, string) (bool, error) {
	return func(n *yaml.Node, key string) (bool, error) { return p.boolean(n, key, def) }
}

// tokens reads a participant's literal tokens, refusing a token already
// listed (for this participant or another). Messages never show a token.
func (p *parser) tokens(n *yaml.Node, key, id string, owners map[string]string) ([]string, error) {
	v := deref(n)
	if isNull(v) {
		return nil, nil
	}
	if v.Kind != yaml.SequenceNode {
		// Not describe(v): the value may well be a token.
		return nil, p.fail(n, key, "want a list of tokens, got %s", describeKind(v))
	}
	var out []string
	for i, item := range v.Content {
		k := indexKey(key, i)
		if isNull(item) {
			return nil, p.fail(item, k, "want a token, got null")
		}
		t, err := p.str(item, k)
		if err != nil {
			return nil, err
		}
		switch {
		case strings.TrimSpace(t) == "":
			return nil, p.fail(item, k, "a token must not be empty")
		case strings.ContainsFunc(t, isControl):
			return nil, p.fail(item, k, "a token must not contain control characters")
		}
		if other, dup := owners[t]; dup {
			if other == id {
				return nil, p.fail(item, k, "the same token is listed twice")
			}
			return nil, p.fail(item, k, "the same token is listed for participant %q; a token must identify one participant", other)
		}
		owners[t] = id
		out = append(out, t)
	}
	return out, nil
}

func isControl(r rune) bool { return r < 0x20 || r == 0x7f }

// capabilities reads a list of capability patterns, converts each to JSON
// and compiles it. Nil when n is null; empty, not nil, for [].
func (p *parser) capabilities(n *yaml.Node, key string) ([]json.RawMessage, error) {
	v := deref(n)
	if isNull(v) {
		return nil, nil
	}
	if v.Kind != yaml.SequenceNode {
		return nil, p.fail(n, key, "want a list of capabilities, got %s", describe(v))
	}
	out := make([]json.RawMessage, 0, len(v.Content))
	for i, item := range v.Content {
		k := indexKey(key, i)
		raw, err := p.capability(item, k)
		if err != nil {
			return nil, err
		}
		if _, err := capability.Compile([]json.RawMessage{raw}); err != nil {
			var ce *capability.CompileError
			if errors.As(err, &ce) {
				return nil, &ConfigError{
					File: p.file,
					Line: item.Line,
					Key:  k + strings.TrimPrefix(ce.Path, "[0]"),
					Err:  compileError{ce},
				}
			}
			return nil, p.fail(item, k, "%w", err)
		}
		out = append(out, raw)
	}
	return out, nil
}

// capability converts one capability mapping to compact JSON, keys in the
// order written, after checking that it has a kind.
func (p *parser) capability(n *yaml.Node, key string) (json.RawMessage, error) {
	v := deref(n)
	if v == nil || v.Kind != yaml.MappingNode {
		return nil, p.fail(n, key, "want a capability mapping, got %s", describe(v))
	}
	pairs, err := p.pairs(v, key)
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
		return nil, p.fail(n, key, "kind is required")
	}
	if err := p.kind(kind.Value, key+".kind"); err != nil {
		return nil, err
	}
	return p.object(pairs, key)
}

// kind checks a capability's kind: a non-empty string, or a non-empty list
// of them (any of which may match, as in the SDK matcher).
func (p *parser) kind(n *yaml.Node, key string) error {
	v := deref(n)
	isString := func(s *yaml.Node) bool {
		return s != nil && s.Kind == yaml.ScalarNode && s.ShortTag() == tagStr
	}
	switch {
	case isString(v):
		if v.Value == "" {
			return p.fail(n, key, "must not be empty")
		}
		return nil
	case v != nil && v.Kind == yaml.SequenceNode && len(v.Content) > 0:
		for i, item := range v.Content {
			d := deref(item)
			if !isString(d) {
				return p.fail(item, indexKey(key, i), "want a string, got %s", describe(d))
			}
			if d.Value == "" {
				return p.fail(item, indexKey(key, i), "must not be empty")
			}
		}
		return nil
	}
	return p.fail(n, key, "want a string, got %s", describe(v))
}

// compileError shows a capability compile error without its own path (the
// ConfigError's key has it) and unwraps to it.
type compileError struct{ ce *capability.CompileError }

func (e compileError) Error() string {
	msg := e.ce.Err.Error()
	if e.ce.Detail != "" {
		msg += ": " + e.ce.Detail
	}
	return msg
}

func (e compileError) Unwrap() error { return e.ce }

// env reads a mapping of environment variables in file order.
func (p *parser) env(n *yaml.Node, key string) ([]EnvVar, error) {
	pairs, err := p.mapping(n, key)
	if err != nil {
		return nil, err
	}
	var out []EnvVar
	for _, kv := range pairs {
		k := joinKey(key, kv.Key)
		if kv.Key == "" || strings.ContainsAny(kv.Key, "=\x00") {
			return nil, p.fail(kv.KeyNode, k, "invalid environment variable name")
		}
		val, err := p.str(kv.Value, k)
		if err != nil {
			return nil, err
		}
		if strings.ContainsRune(val, 0) {
			return nil, p.fail(kv.Value, k, "an environment variable must not contain NUL")
		}
		out = append(out, EnvVar{Name: kv.Key, Value: val})
	}
	return out, nil
}

// defaultTo reads a mapping from kinds to lists of participant ids.
func (p *parser) defaultTo(n *yaml.Node, key string) (map[string][]string, error) {
	pairs, err := p.mapping(n, key)
	if err != nil || pairs == nil {
		return nil, err
	}
	out := make(map[string][]string, len(pairs))
	for _, kv := range pairs {
		list, err := p.strList(kv.Value, joinKey(key, kv.Key))
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
	err := p.fields(n, key, map[string]field{
		"command": set(&s.Command, p.str),
		"args":    set(&s.Args, p.strList),
		"env":     set(&s.Env, p.env),
		"cwd":     set(&s.Cwd, p.str),
		"url":     set(&s.URL, p.mcpURL),
		"auth":    set(&s.Auth, p.mcpAuth),
	})
	if err != nil {
		return nil, err
	}
	switch {
	case s.URL != "" && (s.Command != "" || len(s.Args) > 0 || len(s.Env) > 0 || s.Cwd != ""):
		return nil, p.fail(n, key, "url and command (with args, env, cwd) are two kinds of server; give one")
	case s.Auth != nil && s.URL == "":
		return nil, p.fail(n, key, "auth applies to a url server (a command gets its credentials in env)")
	}
	return s, nil
}

// loose reads a mapping as JSON-like values (numbers become float64).
func (p *parser) loose(n *yaml.Node, key string) (map[string]any, error) {
	if isNull(n) {
		return nil, nil
	}
	if v := deref(n); v.Kind != yaml.MappingNode {
		return nil, p.fail(n, key, "want a mapping, got %s", describe(v))
	}
	raw, err := p.appendJSON(nil, n, key)
	if err != nil {
		return nil, err
	}
	var out map[string]any
	if err := json.Unmarshal(raw, &out); err != nil {
		return nil, p.fail(n, key, "%w", err)
	}
	return out, nil
}

func (p *parser) defaults(n *yaml.Node, key string, d *Defaults) error {
	return p.fields(n, key, map[string]field{
		"capabilities": set(&d.Capabilities, p.capabilities),
		"routing": func(v *yaml.Node, k string) error {
			return p.fields(v, k, map[string]field{"default_to": set(&d.DefaultTo, p.defaultTo)})
		},
		"proposal_timeout_ms": func(v *yaml.Node, k string) (err error) {
			d.ProposalTimeout, err = p.milliseconds(v, k, 0, MaxProposalTimeout)
			return err
		},
	})
}

func (p *parser) logging(n *yaml.Node, key string, l *Logging) error {
	return p.fields(n, key, map[string]field{
		"enabled":              set(&l.Enabled, p.boolOr(true)),
		"envelope_history":     set(&l.EnvelopeHistory, p.logSwitch),
		"capability_decisions": set(&l.CapabilityDecisions, p.logSwitch),
	})
}

// logSwitch reads {enabled: bool} (the reference's form) or a bare boolean;
// true when absent.
func (p *parser) logSwitch(n *yaml.Node, key string) (bool, error) {
	if v := deref(n); v != nil && v.Kind == yaml.ScalarNode && v.ShortTag() == tagBool {
		return p.boolean(n, key, true)
	}
	on := true
	err := p.fields(n, key, map[string]field{"enabled": set(&on, p.boolOr(true))})
	return on, err
}

func (p *parser) floorControl(n *yaml.Node, key string, f *FloorControl) error {
	return p.fields(n, key, map[string]field{
		"enabled": set(&f.Enabled, p.boolOr(true)),
		"ttl_ms": func(v *yaml.Node, k string) (err error) {
			f.TTL, err = p.milliseconds(v, k, DefaultFloorTTL, maxFloorTTL)
			return err
		},
	})
}

// milliseconds reads a positive whole number of milliseconds up to limit;
// def when n is null.
func (p *parser) milliseconds(n *yaml.Node, key string, def, limit time.Duration) (time.Duration, error) {
	v := deref(n)
	if isNull(v) {
		return def, nil
	}
	var ms int64
	if v.Kind != yaml.ScalarNode || v.ShortTag() != tagInt || v.Decode(&ms) != nil {
		return 0, p.fail(n, key, "want a whole number of milliseconds, got %s", describe(v))
	}
	if ms < 1 || ms > limit.Milliseconds() {
		return 0, p.fail(n, key, "want 1 to %d milliseconds, got %d", limit.Milliseconds(), ms)
	}
	return time.Duration(ms) * time.Millisecond, nil
}
