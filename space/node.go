package space

import (
	"errors"

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

// wrap turns a *yamlx.Error into a *ConfigError of the file; the readers
// return *yamlx.Error, and the file is named once, here.
func (p *parser) wrap(err error) error {
	var ce *ConfigError
	var ye *yamlx.Error
	switch {
	case err == nil || errors.As(err, &ce):
		return err
	case errors.As(err, &ye):
		return &ConfigError{File: p.file, Line: ye.Line, Key: ye.Path, Err: ye.Err}
	}
	return &ConfigError{File: p.file, Err: err}
}

// decode parses data into its document node; nil for an empty stream. A
// stream with more than one document is refused, as js-yaml does.
func (p *parser) decode(data []byte) (*yaml.Node, error) {
	if len(data) > MaxConfigSize {
		return nil, &ConfigError{File: p.file, Err: errTooLarge}
	}
	return yamlx.Decode(data, limits, false)
}
