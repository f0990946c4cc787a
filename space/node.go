package space

import (
	"encoding/json"
	"errors"
	"fmt"

	"go.yaml.in/yaml/v3"

	"github.com/mew-protocol/mew/internal/yamlx"
)

// maxDepth bounds the nesting of mappings and lists.
const maxDepth = 64

// limits bound what a configuration may expand to, aliases followed.
var limits = yamlx.Limits{
	Depth: maxDepth,
	Nodes: 1 << 20,           // nodes
	Bytes: 2 * MaxConfigSize, // bytes of scalar text
	// Real configurations have a few thousand.
	Indicators: 1 << 17,
}

// YAML short tags.
const (
	tagBool = yamlx.TagBool
	tagStr  = yamlx.TagStr
	tagInt  = yamlx.TagInt
)

// The readers of yamlx, for short.
var (
	deref        = yamlx.Deref
	isNull       = yamlx.IsNull
	describe     = yamlx.Describe
	describeKind = yamlx.DescribeKind
)

// pair is one entry of a mapping.
type pair = yamlx.Pair

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

// wrap turns a *yamlx.Error into a *ConfigError of the file.
func (p *parser) wrap(err error) error {
	var ye *yamlx.Error
	if errors.As(err, &ye) {
		return &ConfigError{File: p.file, Line: ye.Line, Key: ye.Path, Err: ye.Err}
	}
	return err
}

// decode parses data into its document node; nil for an empty stream. A
// stream with more than one document is refused, as js-yaml does.
func (p *parser) decode(data []byte) (*yaml.Node, error) {
	if len(data) > MaxConfigSize {
		return nil, &ConfigError{File: p.file, Err: errTooLarge}
	}
	doc, err := yamlx.Decode(data, limits, false)
	return doc, p.wrap(err)
}

func (p *parser) pairs(n *yaml.Node, path string) ([]pair, error) {
	pairs, err := yamlx.Pairs(n, path)
	return pairs, p.wrap(err)
}

func (p *parser) mapping(n *yaml.Node, key string) ([]pair, error) {
	pairs, err := yamlx.Mapping(n, key)
	return pairs, p.wrap(err)
}

func (p *parser) str(n *yaml.Node, key string) (string, error) {
	s, err := yamlx.String(n, key)
	return s, p.wrap(err)
}

func (p *parser) boolean(n *yaml.Node, key string, def bool) (bool, error) {
	b, err := yamlx.Bool(n, key, def)
	return b, p.wrap(err)
}

func (p *parser) strList(n *yaml.Node, key string) ([]string, error) {
	list, err := yamlx.StringList(n, key)
	return list, p.wrap(err)
}

func (p *parser) appendJSON(dst []byte, n *yaml.Node, key string) ([]byte, error) {
	b, err := yamlx.AppendJSON(dst, n, key)
	return b, p.wrap(err)
}

// object writes the entries of a mapping as a JSON object.
func (p *parser) object(pairs []pair, key string) (json.RawMessage, error) {
	b, err := yamlx.AppendObject(nil, pairs, key)
	return b, p.wrap(err)
}
