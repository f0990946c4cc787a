package space

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"
	"unicode/utf8"

	"go.yaml.in/yaml/v3"
)

// Limits on what a configuration may expand to, aliases followed.
const (
	maxDepth         = 64                // nested mappings and lists
	maxNodes         = 1 << 20           // nodes
	maxExpandedBytes = 2 * MaxConfigSize // bytes of scalar text

	// maxIndicators bounds the characters that can start a YAML node
	// (see indicators). Every node but the first needs one of them, so a
	// file within the bound parses into at most about twice as many nodes
	// (the YAML library keeps some 200 bytes per node in memory), however
	// the bytes are arranged. Real configurations have a few thousand.
	maxIndicators = 1 << 17
)

// indicators are the bytes that introduce a block sequence item (-), a
// mapping value (:), an explicit key (?), a flow collection ([ {), a flow
// item (,) or an alias (*).
const indicators = ",:-[{?*"

// countIndicators counts the bytes of data that are in indicators, stopping
// early past limit.
func countIndicators(data []byte, limit int) int {
	var table [256]bool
	for i := range len(indicators) {
		table[indicators[i]] = true
	}
	n := 0
	for _, c := range data {
		if table[c] {
			n++
			if n > limit {
				break
			}
		}
	}
	return n
}

// YAML short tags.
const (
	tagNull      = "!!null"
	tagBool      = "!!bool"
	tagStr       = "!!str"
	tagInt       = "!!int"
	tagFloat     = "!!float"
	tagTimestamp = "!!timestamp"
	tagMerge     = "!!merge"
)

// parser turns a YAML document into a Config. It holds no state beyond one
// call of Parse.
type parser struct {
	file    string            // for messages
	unknown []string          // key paths of unknown keys
	suggest map[string]string // unknown key path → the known key it resembles
}

// fail returns a *ConfigError at node n (which may be nil) and key path key.
// format may use %w.
func (p *parser) fail(n *yaml.Node, key, format string, args ...any) error {
	line := 0
	if n != nil {
		line = n.Line
	}
	return &ConfigError{File: p.file, Line: line, Key: key, Err: fmt.Errorf(format, args...)}
}

// decode parses data into its document node; nil for an empty stream. A
// stream with more than one document is refused, as js-yaml does.
func (p *parser) decode(data []byte) (*yaml.Node, error) {
	if len(data) > MaxConfigSize {
		return nil, &ConfigError{File: p.file, Err: errTooLarge}
	}
	if countIndicators(data, maxIndicators) > maxIndicators {
		return nil, &ConfigError{File: p.file, Err: fmt.Errorf("too complex: more than %d of the characters %q that make YAML nodes", maxIndicators, indicators)}
	}
	dec := yaml.NewDecoder(bytes.NewReader(data))
	var doc yaml.Node
	if err := dec.Decode(&doc); err != nil {
		if errors.Is(err, io.EOF) {
			return nil, nil
		}
		return nil, p.syntax(err)
	}
	var extra yaml.Node
	switch err := dec.Decode(&extra); {
	case errors.Is(err, io.EOF):
	case err != nil:
		return nil, p.syntax(err)
	default:
		return nil, p.fail(&extra, "", "more than one YAML document")
	}
	if err := (&sizer{}).check(p, &doc); err != nil {
		return nil, err
	}
	return &doc, nil
}

// syntax turns a YAML library error ("yaml: line 3: ...") into a ConfigError.
func (p *parser) syntax(err error) error {
	msg := strings.TrimPrefix(err.Error(), "yaml: ")
	line := 0
	if rest, ok := strings.CutPrefix(msg, "line "); ok {
		if num, after, ok := strings.Cut(rest, ": "); ok {
			if n, err := strconv.Atoi(num); err == nil && n > 0 {
				line, msg = n, after
			}
		}
	}
	return &ConfigError{File: p.file, Line: line, Err: fmt.Errorf("invalid YAML: %s", msg)}
}

// sizer measures a document as if every alias were expanded, refusing it
// when it nests too deeply, expands too far or refers to itself.
type sizer struct {
	memo   map[*yaml.Node]extent // anchored nodes already measured
	active map[*yaml.Node]bool   // anchored nodes being measured
}

type extent struct {
	depth, nodes, bytes int
}

func (s *sizer) check(p *parser, doc *yaml.Node) error {
	s.memo = make(map[*yaml.Node]extent)
	s.active = make(map[*yaml.Node]bool)
	_, err := s.measure(p, doc, 0)
	return err
}

// measure returns the extent of n, which sits inside depth collections.
func (s *sizer) measure(p *parser, n *yaml.Node, depth int) (extent, error) {
	if n.Kind == yaml.AliasNode {
		t := n.Alias
		if t == nil {
			return extent{}, p.fail(n, "", "alias *%s refers to nothing", n.Value)
		}
		if s.active[t] {
			return extent{}, p.fail(n, "", "alias *%s refers to a node that contains it", n.Value)
		}
		e, ok := s.memo[t]
		if !ok {
			var err error
			if e, err = s.measure(p, t, depth); err != nil {
				return extent{}, err
			}
		}
		if depth+e.depth > maxDepth {
			return extent{}, p.fail(n, "", "nested more than %d levels deep", maxDepth)
		}
		return e, nil
	}
	e := extent{nodes: 1, bytes: len(n.Value)}
	inner := depth
	switch n.Kind {
	case yaml.MappingNode, yaml.SequenceNode:
		e.depth = 1
		inner = depth + 1
		if inner > maxDepth {
			return extent{}, p.fail(n, "", "nested more than %d levels deep", maxDepth)
		}
	}
	if n.Anchor != "" {
		s.active[n] = true
		defer delete(s.active, n)
	}
	for _, c := range n.Content {
		ce, err := s.measure(p, c, inner)
		if err != nil {
			return extent{}, err
		}
		if n.Kind != yaml.DocumentNode {
			e.depth = max(e.depth, ce.depth+1)
		} else {
			e.depth = max(e.depth, ce.depth)
		}
		e.nodes += ce.nodes
		e.bytes += ce.bytes
		if e.nodes > maxNodes {
			return extent{}, p.fail(n, "", "document expands to more than %d nodes", maxNodes)
		}
		if e.bytes > maxExpandedBytes {
			return extent{}, p.fail(n, "", "document expands to more than %d bytes", maxExpandedBytes)
		}
	}
	if n.Anchor != "" {
		s.memo[n] = e
	}
	return e, nil
}

// deref follows an alias.
func deref(n *yaml.Node) *yaml.Node {
	if n != nil && n.Kind == yaml.AliasNode {
		return n.Alias
	}
	return n
}

// isNull reports whether n is absent or null.
func isNull(n *yaml.Node) bool {
	n = deref(n)
	return n == nil || n.Kind == yaml.ScalarNode && n.ShortTag() == tagNull
}

// describe names what n is, for "want X, got Y" messages.
func describe(n *yaml.Node) string {
	n = deref(n)
	switch {
	case n == nil:
		return "nothing"
	case n.Kind == yaml.MappingNode:
		return "a mapping"
	case n.Kind == yaml.SequenceNode:
		return "a list"
	case n.Kind != yaml.ScalarNode:
		return "an unexpected node"
	}
	v := n.Value
	const maxShown = 40
	if len(v) > maxShown {
		cut := maxShown
		for cut > 0 && !utf8.RuneStart(v[cut]) {
			cut--
		}
		v = v[:cut] + "..."
	}
	switch n.ShortTag() {
	case tagNull:
		return "null"
	case tagBool, tagInt, tagFloat:
		return v
	}
	return strconv.Quote(v)
}

// describeKind names the kind of n without showing its value.
func describeKind(n *yaml.Node) string {
	n = deref(n)
	if n == nil || n.Kind != yaml.ScalarNode {
		return describe(n)
	}
	switch n.ShortTag() {
	case tagNull:
		return "null"
	case tagBool:
		return "a boolean"
	case tagInt, tagFloat:
		return "a number"
	}
	return "a string"
}

// pair is one entry of a mapping.
type pair struct {
	key string
	kn  *yaml.Node // key node
	v   *yaml.Node // value node, aliases not followed
}

// pairs returns the entries of mapping n in file order, with merge keys
// (<<) expanded in place: entries written in the mapping win over merged
// ones, earlier merged mappings over later ones. Keys must be strings and
// must not repeat.
func (p *parser) pairs(n *yaml.Node, path string) ([]pair, error) {
	type merge struct {
		at int
		v  *yaml.Node
	}
	var (
		out    = make([]pair, 0, len(n.Content)/2)
		merges []merge
		seen   = make(map[string]bool, len(n.Content)/2)
	)
	for i := 0; i+1 < len(n.Content); i += 2 {
		kn, vn := n.Content[i], n.Content[i+1]
		k := deref(kn)
		if k != nil && k.Kind == yaml.ScalarNode && k.ShortTag() == tagMerge {
			merges = append(merges, merge{at: len(out), v: vn})
			continue
		}
		if k == nil || k.Kind != yaml.ScalarNode || k.ShortTag() != tagStr {
			return nil, p.fail(kn, path, "want a string key, got %s", describe(k))
		}
		if seen[k.Value] {
			return nil, p.fail(kn, joinKey(path, k.Value), "duplicate key")
		}
		seen[k.Value] = true
		out = append(out, pair{key: k.Value, kn: kn, v: vn})
	}
	if len(merges) == 0 {
		return out, nil
	}
	explicit := out
	out = make([]pair, 0, len(explicit))
	next := 0
	for _, m := range merges {
		out = append(out, explicit[next:m.at]...)
		next = m.at
		var srcs []*yaml.Node
		switch v := deref(m.v); {
		case v != nil && v.Kind == yaml.MappingNode:
			srcs = []*yaml.Node{v}
		case v != nil && v.Kind == yaml.SequenceNode:
			for _, item := range v.Content {
				if d := deref(item); d != nil && d.Kind == yaml.MappingNode {
					srcs = append(srcs, d)
				} else {
					return nil, p.fail(item, path, "a merge (<<) wants mappings, got %s", describe(item))
				}
			}
		default:
			return nil, p.fail(m.v, path, "a merge (<<) wants a mapping or a list of mappings, got %s", describe(m.v))
		}
		for _, src := range srcs {
			sub, err := p.pairs(src, path)
			if err != nil {
				return nil, err
			}
			for _, sp := range sub {
				if !seen[sp.key] {
					seen[sp.key] = true
					out = append(out, sp)
				}
			}
		}
	}
	return append(out, explicit[next:]...), nil
}

// mapping returns the entries of the mapping at n; none when n is null.
func (p *parser) mapping(n *yaml.Node, key string) ([]pair, error) {
	v := deref(n)
	if isNull(v) {
		return nil, nil
	}
	if v.Kind != yaml.MappingNode {
		return nil, p.fail(n, key, "want a mapping, got %s", describe(v))
	}
	return p.pairs(v, key)
}

// str returns the text of a scalar: strings, and numbers, booleans and
// timestamps as written. Null is "".
func (p *parser) str(n *yaml.Node, key string) (string, error) {
	v := deref(n)
	if isNull(v) {
		return "", nil
	}
	if v.Kind == yaml.ScalarNode {
		switch tag := v.ShortTag(); tag {
		case tagStr, tagInt, tagFloat, tagBool, tagTimestamp:
			return v.Value, nil
		default:
			return "", p.fail(n, key, "unsupported YAML tag %s", tag)
		}
	}
	return "", p.fail(n, key, "want a string, got %s", describe(v))
}

// boolean returns a boolean, def when n is null.
func (p *parser) boolean(n *yaml.Node, key string, def bool) (bool, error) {
	v := deref(n)
	if isNull(v) {
		return def, nil
	}
	if v.Kind == yaml.ScalarNode && v.ShortTag() == tagBool {
		var b bool
		if err := v.Decode(&b); err == nil {
			return b, nil
		}
	}
	return false, p.fail(n, key, "want a boolean, got %s", describe(v))
}

// strList returns a list of strings; nil when n is null.
func (p *parser) strList(n *yaml.Node, key string) ([]string, error) {
	v := deref(n)
	if isNull(v) {
		return nil, nil
	}
	if v.Kind != yaml.SequenceNode {
		return nil, p.fail(n, key, "want a list, got %s", describe(v))
	}
	out := make([]string, 0, len(v.Content))
	for i, item := range v.Content {
		if isNull(item) {
			return nil, p.fail(item, indexKey(key, i), "want a string, got null")
		}
		s, err := p.str(item, indexKey(key, i))
		if err != nil {
			return nil, err
		}
		out = append(out, s)
	}
	return out, nil
}

// appendJSON appends n as compact JSON, mapping keys in file order.
func (p *parser) appendJSON(dst []byte, n *yaml.Node, key string) ([]byte, error) {
	v := deref(n)
	if v == nil {
		return append(dst, "null"...), nil
	}
	switch v.Kind {
	case yaml.MappingNode:
		pairs, err := p.pairs(v, key)
		if err != nil {
			return nil, err
		}
		return p.appendObject(dst, pairs, key)
	case yaml.SequenceNode:
		dst = append(dst, '[')
		for i, item := range v.Content {
			if i > 0 {
				dst = append(dst, ',')
			}
			var err error
			if dst, err = p.appendJSON(dst, item, indexKey(key, i)); err != nil {
				return nil, err
			}
		}
		return append(dst, ']'), nil
	case yaml.ScalarNode:
		return p.appendScalar(dst, n, v, key)
	}
	return nil, p.fail(n, key, "unexpected YAML node")
}

// appendObject appends the entries of a mapping as a JSON object.
func (p *parser) appendObject(dst []byte, pairs []pair, key string) ([]byte, error) {
	dst = append(dst, '{')
	for i, kv := range pairs {
		if i > 0 {
			dst = append(dst, ',')
		}
		dst = appendJSONString(dst, kv.key)
		dst = append(dst, ':')
		var err error
		if dst, err = p.appendJSON(dst, kv.v, joinKey(key, kv.key)); err != nil {
			return nil, err
		}
	}
	return append(dst, '}'), nil
}

// appendScalar appends the JSON equivalent of scalar v (reached through n).
func (p *parser) appendScalar(dst []byte, n, v *yaml.Node, key string) ([]byte, error) {
	switch tag := v.ShortTag(); tag {
	case tagNull:
		return append(dst, "null"...), nil
	case tagBool:
		var b bool
		if err := v.Decode(&b); err != nil {
			return nil, p.fail(n, key, "invalid boolean %s", describe(v))
		}
		return strconv.AppendBool(dst, b), nil
	case tagInt:
		var x any
		if err := v.Decode(&x); err != nil {
			return nil, p.fail(n, key, "invalid integer %s", describe(v))
		}
		switch x := x.(type) {
		case int:
			return strconv.AppendInt(dst, int64(x), 10), nil
		case int64:
			return strconv.AppendInt(dst, x, 10), nil
		case uint64:
			return strconv.AppendUint(dst, x, 10), nil
		case float64:
			return p.appendFloat(dst, n, key, x)
		}
		return nil, p.fail(n, key, "invalid integer %s", describe(v))
	case tagFloat:
		var f float64
		if err := v.Decode(&f); err != nil {
			return nil, p.fail(n, key, "invalid number %s", describe(v))
		}
		return p.appendFloat(dst, n, key, f)
	case tagStr, tagTimestamp:
		return appendJSONString(dst, v.Value), nil
	default:
		return nil, p.fail(n, key, "unsupported YAML tag %s", tag)
	}
}

// appendFloat appends f the way JavaScript's JSON.stringify writes numbers.
func (p *parser) appendFloat(dst []byte, n *yaml.Node, key string, f float64) ([]byte, error) {
	if math.IsInf(f, 0) || math.IsNaN(f) {
		return nil, p.fail(n, key, "%s cannot be written as JSON", describe(n))
	}
	if f == 0 {
		return append(dst, '0'), nil // also -0, as JSON.stringify does
	}
	abs := math.Abs(f)
	if abs < 1e21 && abs >= 1e-6 {
		return strconv.AppendFloat(dst, f, 'f', -1, 64), nil
	}
	b := strconv.AppendFloat(dst, f, 'e', -1, 64)
	// Go writes e-07 and e+21; JavaScript writes e-7 and e+21.
	if i := bytes.LastIndexByte(b, 'e'); i >= 0 && i+2 < len(b) && b[i+2] == '0' {
		b = append(b[:i+2], b[i+3:]...)
	}
	return b, nil
}

// appendJSONString appends s as a JSON string: invalid UTF-8 becomes U+FFFD,
// control characters are escaped, nothing else is (as JSON.stringify does).
func appendJSONString(dst []byte, s string) []byte {
	const hex = "0123456789abcdef"
	dst = append(dst, '"')
	for i := 0; i < len(s); {
		c := s[i]
		if c >= utf8.RuneSelf {
			r, size := utf8.DecodeRuneInString(s[i:])
			if r == utf8.RuneError && size == 1 {
				dst = append(dst, `\ufffd`...)
			} else {
				dst = append(dst, s[i:i+size]...)
			}
			i += size
			continue
		}
		switch {
		case c == '"' || c == '\\':
			dst = append(dst, '\\', c)
		case c == '\n':
			dst = append(dst, '\\', 'n')
		case c == '\r':
			dst = append(dst, '\\', 'r')
		case c == '\t':
			dst = append(dst, '\\', 't')
		case c == '\b':
			dst = append(dst, '\\', 'b')
		case c == '\f':
			dst = append(dst, '\\', 'f')
		case c < 0x20:
			dst = append(dst, '\\', 'u', '0', '0', hex[c>>4], hex[c&0xf])
		default:
			dst = append(dst, c)
		}
		i++
	}
	return append(dst, '"')
}
