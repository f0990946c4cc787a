package toolsagent

import (
	"errors"
	"math"
	"strconv"
	"strings"

	"go.yaml.in/yaml/v3"

	"github.com/mew-protocol/mew/internal/yamlx"
)

// deref follows an alias. Decode has refused the documents whose
// aliases expand too far or refer to themselves.
func (l *loader) deref(n *yaml.Node) *yaml.Node {
	return yamlx.Deref(n)
}

// report records err, a *yamlx.Error, as a problem; it reports whether
// err was nil.
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

// kindOf says what a node is, for messages.
func kindOf(n *yaml.Node) string {
	switch n.Kind {
	case yaml.MappingNode:
		return "a mapping"
	case yaml.SequenceNode:
		return "a list"
	case yaml.ScalarNode:
		switch n.ShortTag() {
		case "!!str":
			return "a string (" + clip(strconv.Quote(n.Value), 40) + ")"
		case "!!int", "!!float":
			return "a number (" + clip(n.Value, 40) + ")"
		case "!!bool":
			return "a boolean (" + n.Value + ")"
		case "!!null":
			return "null"
		}
		return clip(n.Value, 40)
	}
	return "nothing"
}

// pair is one key and value of a mapping.
type pair struct {
	key string
	kn  *yaml.Node // the key
	val *yaml.Node
}

// mapping returns the pairs of a mapping, merge keys ("<<") applied;
// ok is false (and the problem reported) when n is not a mapping.
func (l *loader) mapping(n *yaml.Node, path string) (pairs []pair, ok bool) {
	d := l.deref(n)
	if d == nil || d.Kind != yaml.MappingNode {
		what := "nothing"
		if d != nil {
			what = kindOf(d)
		}
		l.errorf(n, path, "want a mapping, got %s", what)
		return nil, false
	}
	entries, err := yamlx.Pairs(d, path)
	if !l.report(err) {
		return nil, false
	}
	pairs = make([]pair, len(entries))
	for i, e := range entries {
		pairs[i] = pair{key: e.Key, kn: e.KeyNode, val: e.Value}
	}
	return pairs, true
}

// sequence returns the items of a list.
func (l *loader) sequence(n *yaml.Node, path string) ([]*yaml.Node, bool) {
	orig := n
	if n = l.deref(n); n == nil {
		return nil, false
	}
	if n.Kind != yaml.SequenceNode {
		l.errorf(orig, path, "want a list, got %s", kindOf(n))
		return nil, false
	}
	return n.Content, true
}

// scalar returns a scalar node, reporting what else it is.
func (l *loader) scalar(n *yaml.Node, path, want string) (*yaml.Node, bool) {
	orig := n
	if n = l.deref(n); n == nil {
		return nil, false
	}
	if n.Kind != yaml.ScalarNode {
		l.errorf(orig, path, "want %s, got %s", want, kindOf(n))
		return nil, false
	}
	return n, true
}

func (l *loader) str(n *yaml.Node, path string) (string, bool) {
	s, ok := l.scalar(n, path, "a string")
	if !ok {
		return "", false
	}
	if s.ShortTag() != "!!str" {
		l.errorf(s, path, "want a string, got %s", kindOf(s))
		return "", false
	}
	return s.Value, true
}

// text reads any scalar as its text (for values such as versions and
// environment variables, where 1.0 or true mean their text).
func (l *loader) text(n *yaml.Node, path string) (string, bool) {
	s, ok := l.scalar(n, path, "a string")
	if !ok {
		return "", false
	}
	if s.ShortTag() == "!!null" {
		return "", true
	}
	return s.Value, true
}

func (l *loader) boolean(n *yaml.Node, path string) (bool, bool) {
	s, ok := l.scalar(n, path, "a boolean")
	if !ok {
		return false, false
	}
	var b bool
	if s.ShortTag() != "!!bool" || s.Decode(&b) != nil {
		l.errorf(s, path, "want a boolean, got %s", kindOf(s))
		return false, false
	}
	return b, true
}

func (l *loader) number(n *yaml.Node, path string) (float64, bool) {
	s, ok := l.scalar(n, path, "a number")
	if !ok {
		return 0, false
	}
	var f float64
	if tag := s.ShortTag(); (tag != "!!int" && tag != "!!float") || s.Decode(&f) != nil {
		l.errorf(s, path, "want a number, got %s", kindOf(s))
		return 0, false
	}
	if math.IsInf(f, 0) || math.IsNaN(f) {
		l.errorf(s, path, "want a finite number, got %s", s.Value)
		return 0, false
	}
	return f, true
}

// count reads a non-negative integer.
func (l *loader) count(n *yaml.Node, path string) (*int, bool) {
	s, ok := l.scalar(n, path, "a whole number")
	if !ok {
		return nil, false
	}
	var i int
	if s.ShortTag() != "!!int" || s.Decode(&i) != nil || i < 0 {
		l.errorf(s, path, "want a whole number of at least 0, got %s", kindOf(s))
		return nil, false
	}
	return &i, true
}

func (l *loader) strList(n *yaml.Node, path string) ([]string, bool) {
	items, ok := l.sequence(n, path)
	if !ok {
		return nil, false
	}
	out := make([]string, 0, len(items))
	for i, it := range items {
		s, ok := l.str(it, indexPath(path, i))
		if !ok {
			return nil, false
		}
		out = append(out, s)
	}
	return out, true
}

// textMap reads a mapping of names to texts (environment, headers).
func (l *loader) textMap(n *yaml.Node, path string) (map[string]string, bool) {
	pairs, ok := l.mapping(n, path)
	if !ok {
		return nil, false
	}
	out := make(map[string]string, len(pairs))
	for _, p := range pairs {
		v, ok := l.text(p.val, joinPath(path, p.key))
		if !ok {
			return nil, false
		}
		out[p.key] = v
	}
	return out, true
}

// unknown reports a key that is not allowed, naming those that are.
func (l *loader) unknown(p pair, path, where string, allowed []string) {
	l.errorf(p.kn, joinPath(path, p.key), "unknown key in %s (allowed: %s)", where, strings.Join(allowed, ", "))
}
