package toolsagent

import (
	"bytes"
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
	Title       string `yaml:"title"`
	Description string `yaml:"description"`
}

// StringSchema is a string parameter.
type StringSchema struct {
	SchemaBase
	Enum      []string `yaml:"enum"`
	Default   *string  `yaml:"default"`
	Examples  []string `yaml:"examples"`
	MinLength *int     `yaml:"minLength"` // in characters (Unicode code points), as JSON Schema counts
	MaxLength *int     `yaml:"maxLength"`
}

// NumberSchema is a number parameter, or with Integer an integer one.
type NumberSchema struct {
	SchemaBase
	Integer  bool
	Enum     []float64 `yaml:"enum"`
	Default  *float64  `yaml:"default"`
	Examples []float64 `yaml:"examples"`
	Minimum  *float64  `yaml:"minimum"`
	Maximum  *float64  `yaml:"maximum"`
}

// BooleanSchema is a boolean parameter.
type BooleanSchema struct {
	SchemaBase
	Default *bool `yaml:"default"`
}

// ArraySchema is an array parameter. Items is the schema of every item;
// a tuple (the spec's items given as a list) sets PrefixItems instead, the
// schemas of the first items in order, encoded as draft 2020-12's
// prefixItems.
type ArraySchema struct {
	SchemaBase
	Items       Schema `yaml:"items,node"`
	PrefixItems []Schema
	MinItems    *int `yaml:"minItems"`
	MaxItems    *int `yaml:"maxItems"`
	UniqueItems bool `yaml:"uniqueItems"`
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

// jsonObject writes a JSON object member by member, in order.
type jsonObject struct {
	buf bytes.Buffer
	err error
}

func (o *jsonObject) add(key string, v any) {
	if o.err != nil {
		return
	}
	if o.buf.Len() == 0 {
		o.buf.WriteByte('{')
	} else {
		o.buf.WriteByte(',')
	}
	k, _ := json.Marshal(key)
	o.buf.Write(k)
	o.buf.WriteByte(':')
	b, err := protocol.Marshal(v)
	if err != nil {
		o.err = err
		return
	}
	o.buf.Write(b)
}

func (o *jsonObject) bytes() ([]byte, error) {
	if o.err != nil {
		return nil, o.err
	}
	if o.buf.Len() == 0 {
		return []byte("{}"), nil
	}
	o.buf.WriteByte('}')
	return o.buf.Bytes(), nil
}

func (b *SchemaBase) addTo(o *jsonObject, typ string) {
	o.add("type", typ)
	if b.Title != "" {
		o.add("title", b.Title)
	}
	if b.Description != "" {
		o.add("description", b.Description)
	}
}

// MarshalJSON encodes the schema as JSON Schema.
func (s *StringSchema) MarshalJSON() ([]byte, error) {
	var o jsonObject
	s.addTo(&o, TypeString)
	addSlice(&o, "enum", s.Enum)
	addPtr(&o, "default", s.Default)
	addSlice(&o, "examples", s.Examples)
	addPtr(&o, "minLength", s.MinLength)
	addPtr(&o, "maxLength", s.MaxLength)
	return o.bytes()
}

// MarshalJSON encodes the schema as JSON Schema.
func (s *NumberSchema) MarshalJSON() ([]byte, error) {
	var o jsonObject
	s.addTo(&o, s.Type())
	addSlice(&o, "enum", s.Enum)
	addPtr(&o, "default", s.Default)
	addSlice(&o, "examples", s.Examples)
	addPtr(&o, "minimum", s.Minimum)
	addPtr(&o, "maximum", s.Maximum)
	return o.bytes()
}

// MarshalJSON encodes the schema as JSON Schema.
func (s *BooleanSchema) MarshalJSON() ([]byte, error) {
	var o jsonObject
	s.addTo(&o, TypeBoolean)
	addPtr(&o, "default", s.Default)
	return o.bytes()
}

// MarshalJSON encodes the schema as JSON Schema.
func (s *ArraySchema) MarshalJSON() ([]byte, error) {
	var o jsonObject
	s.addTo(&o, TypeArray)
	addSlice(&o, "prefixItems", s.PrefixItems)
	if s.Items != nil {
		o.add("items", s.Items)
	}
	addPtr(&o, "minItems", s.MinItems)
	addPtr(&o, "maxItems", s.MaxItems)
	if s.UniqueItems {
		o.add("uniqueItems", true)
	}
	return o.bytes()
}

// MarshalJSON encodes the schema as JSON Schema; properties keep their
// order.
func (s *ObjectSchema) MarshalJSON() ([]byte, error) {
	var o jsonObject
	s.addTo(&o, TypeObject)
	var props jsonObject
	for _, p := range s.Properties {
		props.add(p.Name, p.Schema)
	}
	b, err := props.bytes()
	if err != nil {
		return nil, err
	}
	o.add("properties", json.RawMessage(b))
	if len(s.Required) > 0 {
		// Once each: JSON Schema wants the names unique.
		var required []string
		for _, name := range s.Required {
			if !slices.Contains(required, name) {
				required = append(required, name)
			}
		}
		o.add("required", required)
	}
	switch {
	case s.AdditionalSchema != nil:
		o.add("additionalProperties", s.AdditionalSchema)
	case s.AdditionalProperties != nil:
		o.add("additionalProperties", *s.AdditionalProperties)
	}
	addPtr(&o, "minProperties", s.MinProperties)
	addPtr(&o, "maxProperties", s.MaxProperties)
	return o.bytes()
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

// addPtr adds key with *p when p is set.
func addPtr[T any](o *jsonObject, key string, p *T) {
	if p != nil {
		o.add(key, *p)
	}
}

// addSlice adds key with v when v is set.
func addSlice[T any](o *jsonObject, key string, v []T) {
	if v != nil {
		o.add(key, v)
	}
}
