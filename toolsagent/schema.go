package toolsagent

import (
	"encoding/json"
	"fmt"
	"github.com/mew-protocol/mew/protocol"
	"slices"
	"strconv"
	"strings"

	"github.com/mew-protocol/mew/internal/argcheck"
)

// Schema types, the values of "type".
const (
	TypeString  = "string"
	TypeNumber  = "number"
	TypeInteger = "integer"
	TypeBoolean = "boolean"
	TypeArray   = "array"
	TypeObject  = "object"
)

// Schema is a node of a tool's parameters: the JSON Schema subset of the
// tools-agent spec, a union discriminated by its type. The concrete types
// are *StringSchema, *NumberSchema (number and integer), *BooleanSchema,
// *ArraySchema and *ObjectSchema; each encodes itself as JSON Schema
// (draft 2020-12) with MarshalJSON.
type Schema interface {
	// Type is the schema's "type": one of the Type constants.
	Type() string
	json.Marshaler
}

// SchemaBase holds the members every schema may have.
type SchemaBase struct {
	Title       string `yaml:"title" json:"title,omitempty"`
	Description string `yaml:"description" json:"description,omitempty"`
}

// StringSchema is a string parameter.
type StringSchema struct {
	SchemaBase
	Enum      []string `yaml:"enum" json:"enum,omitzero"`
	Default   *string  `yaml:"default" json:"default,omitzero"`
	Examples  []string `yaml:"examples" json:"examples,omitzero"`
	MinLength *int     `yaml:"minLength" json:"minLength,omitzero"` // in characters (Unicode code points), as JSON Schema counts
	MaxLength *int     `yaml:"maxLength" json:"maxLength,omitzero"`
}

// NumberSchema is a number parameter, or with Integer an integer one.
type NumberSchema struct {
	SchemaBase
	Integer  bool      `json:"-"`
	Enum     []float64 `yaml:"enum" json:"enum,omitzero"`
	Default  *float64  `yaml:"default" json:"default,omitzero"`
	Examples []float64 `yaml:"examples" json:"examples,omitzero"`
	Minimum  *float64  `yaml:"minimum" json:"minimum,omitzero"`
	Maximum  *float64  `yaml:"maximum" json:"maximum,omitzero"`
}

// BooleanSchema is a boolean parameter.
type BooleanSchema struct {
	SchemaBase
	Default *bool `yaml:"default" json:"default,omitzero"`
}

// ArraySchema is an array parameter. Items is the schema of every item;
// a tuple (the spec's items given as a list) sets PrefixItems instead, the
// schemas of the first items in order, encoded as draft 2020-12's
// prefixItems.
type ArraySchema struct {
	SchemaBase
	PrefixItems []Schema `json:"prefixItems,omitzero"`
	Items       Schema   `yaml:"items,node" json:"items,omitzero"`
	MinItems    *int     `yaml:"minItems" json:"minItems,omitzero"`
	MaxItems    *int     `yaml:"maxItems" json:"maxItems,omitzero"`
	UniqueItems bool     `yaml:"uniqueItems" json:"uniqueItems,omitzero"`
}

// ObjectSchema is an object parameter, and the root of every tool's
// parameters.
type ObjectSchema struct {
	SchemaBase
	// Properties in the order the definition gives them.
	Properties []Property `yaml:"properties,node"`
	Required   []string   `yaml:"required"`
	// AdditionalProperties, when set, says whether properties not in
	// Properties are allowed (JSON Schema's default: they are).
	// AdditionalSchema, when set instead, is the schema they must match.
	AdditionalProperties *bool `yaml:"additionalProperties,node"`
	AdditionalSchema     Schema
	MinProperties        *int `yaml:"minProperties"`
	MaxProperties        *int `yaml:"maxProperties"`
}

// Property is one named property of an object.
type Property struct {
	Name   string
	Schema Schema
}

// Type implements Schema.
func (*StringSchema) Type() string { return TypeString }

// Type implements Schema.
func (s *NumberSchema) Type() string {
	if s.Integer {
		return TypeInteger
	}
	return TypeNumber
}

// Type implements Schema.
func (*BooleanSchema) Type() string { return TypeBoolean }

// Type implements Schema.
func (*ArraySchema) Type() string { return TypeArray }

// Type implements Schema.
func (*ObjectSchema) Type() string { return TypeObject }

// Property returns the schema of the property name.
func (s *ObjectSchema) Property(name string) (Schema, bool) {
	for _, p := range s.Properties {
		if p.Name == name {
			return p.Schema, true
		}
	}
	return nil, false
}

// Each schema encodes itself with encoding/json, through a type of its
// own without the MarshalJSON method: "type" first, then its fields, in
// order, with their json tags.
type (
	stringJSON  StringSchema
	numberJSON  NumberSchema
	booleanJSON BooleanSchema
	arrayJSON   ArraySchema
)

// MarshalJSON encodes the schema as JSON Schema.
func (s *StringSchema) MarshalJSON() ([]byte, error) { return typed(TypeString, (*stringJSON)(s)) }

// MarshalJSON encodes the schema as JSON Schema.
func (s *NumberSchema) MarshalJSON() ([]byte, error) { return typed(s.Type(), (*numberJSON)(s)) }

// MarshalJSON encodes the schema as JSON Schema.
func (s *BooleanSchema) MarshalJSON() ([]byte, error) { return typed(TypeBoolean, (*booleanJSON)(s)) }

// MarshalJSON encodes the schema as JSON Schema.
func (s *ArraySchema) MarshalJSON() ([]byte, error) { return typed(TypeArray, (*arrayJSON)(s)) }

// MarshalJSON encodes the schema as JSON Schema; properties keep their
// order, required names are given once each (JSON Schema wants them
// unique).
func (s *ObjectSchema) MarshalJSON() ([]byte, error) {
	props := []byte{'{'}
	for i, p := range s.Properties {
		if i > 0 {
			props = append(props, ',')
		}
		k, _ := json.Marshal(p.Name)
		v, err := protocol.Marshal(p.Schema)
		if err != nil {
			return nil, err
		}
		props = append(append(append(props, k...), ':'), v...)
	}
	var additional any
	switch {
	case s.AdditionalSchema != nil:
		additional = s.AdditionalSchema
	case s.AdditionalProperties != nil:
		additional = *s.AdditionalProperties
	}
	var required []string
	for _, name := range s.Required {
		if !slices.Contains(required, name) {
			required = append(required, name)
		}
	}
	return typed(TypeObject, struct {
		SchemaBase
		Properties    json.RawMessage `json:"properties"`
		Required      []string        `json:"required,omitzero"`
		Additional    any             `json:"additionalProperties,omitzero"`
		MinProperties *int            `json:"minProperties,omitzero"`
		MaxProperties *int            `json:"maxProperties,omitzero"`
	}{s.SchemaBase, append(props, '}'), required, additional, s.MinProperties, s.MaxProperties})
}

// typed encodes v, a JSON object, with "type": typ as its first member.
func typed(typ string, v any) ([]byte, error) {
	b, err := protocol.Marshal(v)
	if err != nil {
		return nil, err
	}
	out := append([]byte(`{"type":`), strconv.Quote(typ)...)
	if len(b) > 2 {
		out = append(out, ',')
	}
	return append(out, b[1:]...), nil
}

// Violation is one way in which arguments fail a tool's schema: Path
// locates the value ("destination", "passengers[0].name"; empty for the
// arguments as a whole), Message says what is wrong.
type Violation = argcheck.Violation

// ArgumentError lists every violation of a call's arguments.
type ArgumentError struct {
	Tool       string
	Violations []Violation
	// More counts the violations left out of Violations (at most
	// maxViolations are kept).
	More int
}

func (e *ArgumentError) Error() string {
	list := &argcheck.Error{Violations: e.Violations, More: e.More}
	return fmt.Sprintf("toolsagent: invalid arguments for %s: %s", e.Tool, list)
}

// maxViolations bounds the violations an ArgumentError keeps.
const maxViolations = 50

// Paths of values in a definition and in arguments.
var (
	// joinPath appends a property name to a path.
	joinPath = argcheck.JoinPath
	// indexPath appends an index to a path.
	indexPath = argcheck.IndexPath
	// plainName reports whether name may be written in a path without
	// quotes, and is a valid parameter name: letters, digits, '_', '-'
	// and '.', at most 64 bytes.
	plainName = argcheck.PlainName
)

// propertyNames lists the property names for a message.
func (s *ObjectSchema) propertyNames() string {
	if len(s.Properties) == 0 {
		return "none"
	}
	names := make([]string, len(s.Properties))
	for i, p := range s.Properties {
		names[i] = p.Name
	}
	return strings.Join(names, ", ")
}

// formatNumber writes a number as JSON would.
func formatNumber(f float64) string {
	return strconv.FormatFloat(f, 'g', -1, 64)
}

// article puts "a" or "an" before a type name.
func article(typ string) string {
	switch typ {
	case TypeInteger, TypeArray, TypeObject:
		return "an " + typ
	}
	return "a " + typ
}
