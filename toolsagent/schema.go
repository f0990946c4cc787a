package toolsagent

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
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
	// check adds to vs what is wrong with the value v (decoded with
	// json.Decoder.UseNumber) at path.
	check(v any, path string, vs *violations)
}

// SchemaBase holds the members every schema may have.
type SchemaBase struct {
	Title       string
	Description string
}

// StringSchema is a string parameter.
type StringSchema struct {
	SchemaBase
	Enum      []string
	Default   *string
	Examples  []string
	MinLength *int // in characters (Unicode code points), as JSON Schema counts
	MaxLength *int
}

// NumberSchema is a number parameter, or with Integer an integer one.
type NumberSchema struct {
	SchemaBase
	Integer  bool
	Enum     []float64
	Default  *float64
	Examples []float64
	Minimum  *float64
	Maximum  *float64
}

// BooleanSchema is a boolean parameter.
type BooleanSchema struct {
	SchemaBase
	Default *bool
}

// ArraySchema is an array parameter. Items is the schema of every item;
// a tuple (the spec's items given as a list) sets PrefixItems instead, the
// schemas of the first items in order, encoded as draft 2020-12's
// prefixItems.
type ArraySchema struct {
	SchemaBase
	Items       Schema
	PrefixItems []Schema
	MinItems    *int
	MaxItems    *int
	UniqueItems bool
}

// ObjectSchema is an object parameter, and the root of every tool's
// parameters.
type ObjectSchema struct {
	SchemaBase
	// Properties in the order the definition gives them.
	Properties []Property
	Required   []string
	// AdditionalProperties, when set, says whether properties not in
	// Properties are allowed (JSON Schema's default: they are).
	// AdditionalSchema, when set instead, is the schema they must match.
	AdditionalProperties *bool
	AdditionalSchema     Schema
	MinProperties        *int
	MaxProperties        *int
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
	b, err := marshalValue(v)
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

// marshalValue encodes v as compact JSON without HTML escaping.
func marshalValue(v any) ([]byte, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return bytes.TrimSuffix(buf.Bytes(), []byte("\n")), nil
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
		o.add("required", s.Required)
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

// Violation is one way in which arguments fail a tool's schema.
type Violation struct {
	// Path locates the value: "destination", "passengers[0].name"; empty
	// for the arguments as a whole.
	Path string
	// Message says what is wrong.
	Message string
}

func (v Violation) String() string {
	if v.Path == "" {
		return v.Message
	}
	return v.Path + ": " + v.Message
}

// ArgumentError lists every violation of a call's arguments.
type ArgumentError struct {
	Tool       string
	Violations []Violation
	// More counts the violations left out of Violations (at most
	// maxViolations are kept).
	More int
}

func (e *ArgumentError) Error() string {
	msgs := make([]string, 0, len(e.Violations)+1)
	for _, v := range e.Violations {
		msgs = append(msgs, v.String())
	}
	if e.More > 0 {
		msgs = append(msgs, fmt.Sprintf("and %d more", e.More))
	}
	return fmt.Sprintf("toolsagent: invalid arguments for %s: %s", e.Tool, strings.Join(msgs, "; "))
}

// maxViolations bounds the violations an ArgumentError keeps.
const maxViolations = 50

// violations collects what check finds.
type violations struct {
	list []Violation
	more int
}

func (vs *violations) add(path, format string, args ...any) {
	if len(vs.list) >= maxViolations {
		vs.more++
		return
	}
	vs.list = append(vs.list, Violation{Path: path, Message: fmt.Sprintf(format, args...)})
}

// joinPath appends a property name to a path.
func joinPath(path, name string) string {
	if !plainName(name) {
		q, _ := marshalValue(name)
		return path + "[" + string(q) + "]"
	}
	if path == "" {
		return name
	}
	return path + "." + name
}

// indexPath appends an index to a path.
func indexPath(path string, i int) string {
	return path + "[" + strconv.Itoa(i) + "]"
}

// plainName reports whether name may be written in a path without quotes,
// and is a valid parameter name: letters, digits, '_', '-' and '.', at
// most 64 bytes.
func plainName(name string) bool {
	if name == "" || len(name) > 64 {
		return false
	}
	for _, r := range name {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '_' || r == '-' || r == '.') {
			return false
		}
	}
	return true
}

// describe says what a decoded JSON value is, for messages: its type and,
// clipped, the value.
func describe(v any) string {
	switch x := v.(type) {
	case nil:
		return "null"
	case string:
		return "a string (" + clip(strconv.Quote(x), 40) + ")"
	case json.Number:
		return "a number (" + clip(x.String(), 40) + ")"
	case bool:
		return "a boolean (" + strconv.FormatBool(x) + ")"
	case []any:
		return fmt.Sprintf("an array of %d items", len(x))
	case map[string]any:
		return fmt.Sprintf("an object with %d members", len(x))
	}
	return fmt.Sprintf("%T", v)
}

// clip shortens s to about n bytes, on a rune boundary.
func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && s[n]&0xC0 == 0x80 {
		n--
	}
	return s[:n] + "…"
}

func (s *StringSchema) check(v any, path string, vs *violations) {
	str, ok := v.(string)
	if !ok {
		vs.add(path, "want a string, got %s", describe(v))
		return
	}
	n := len([]rune(str))
	if s.MinLength != nil && n < *s.MinLength {
		vs.add(path, "at least %d characters, got %d", *s.MinLength, n)
	}
	if s.MaxLength != nil && n > *s.MaxLength {
		vs.add(path, "at most %d characters, got %d", *s.MaxLength, n)
	}
	if s.Enum != nil && !slices.Contains(s.Enum, str) {
		vs.add(path, "%s is not one of %s", clip(strconv.Quote(str), 40), quoteList(s.Enum))
	}
}

func (s *NumberSchema) check(v any, path string, vs *violations) {
	num, ok := v.(json.Number)
	if !ok {
		vs.add(path, "want %s, got %s", article(s.Type()), describe(v))
		return
	}
	f, err := strconv.ParseFloat(num.String(), 64)
	if err != nil || math.IsInf(f, 0) {
		vs.add(path, "%s is out of range", clip(num.String(), 40))
		return
	}
	if s.Integer && f != math.Trunc(f) {
		vs.add(path, "want an integer, got %s", clip(num.String(), 40))
	}
	if s.Minimum != nil && f < *s.Minimum {
		vs.add(path, "at least %s, got %s", formatNumber(*s.Minimum), clip(num.String(), 40))
	}
	if s.Maximum != nil && f > *s.Maximum {
		vs.add(path, "at most %s, got %s", formatNumber(*s.Maximum), clip(num.String(), 40))
	}
	if s.Enum != nil && !slices.Contains(s.Enum, f) {
		names := make([]string, len(s.Enum))
		for i, e := range s.Enum {
			names[i] = formatNumber(e)
		}
		vs.add(path, "%s is not one of %s", clip(num.String(), 40), strings.Join(names, ", "))
	}
}

func (s *BooleanSchema) check(v any, path string, vs *violations) {
	if _, ok := v.(bool); !ok {
		vs.add(path, "want a boolean, got %s", describe(v))
	}
}

func (s *ArraySchema) check(v any, path string, vs *violations) {
	items, ok := v.([]any)
	if !ok {
		vs.add(path, "want an array, got %s", describe(v))
		return
	}
	if s.MinItems != nil && len(items) < *s.MinItems {
		vs.add(path, "at least %d items, got %d", *s.MinItems, len(items))
	}
	if s.MaxItems != nil && len(items) > *s.MaxItems {
		vs.add(path, "at most %d items, got %d", *s.MaxItems, len(items))
	}
	for i, item := range items {
		switch {
		case i < len(s.PrefixItems):
			s.PrefixItems[i].check(item, indexPath(path, i), vs)
		case s.Items != nil:
			s.Items.check(item, indexPath(path, i), vs)
		}
	}
	if s.UniqueItems {
		seen := make(map[string]int, len(items))
		for i, item := range items {
			key := canonical(item)
			if j, dup := seen[key]; dup {
				vs.add(indexPath(path, i), "repeats item %d (items must be unique)", j)
				continue
			}
			seen[key] = i
		}
	}
}

func (s *ObjectSchema) check(v any, path string, vs *violations) {
	obj, ok := v.(map[string]any)
	if !ok {
		vs.add(path, "want an object, got %s", describe(v))
		return
	}
	for _, name := range s.Required {
		if _, ok := obj[name]; !ok {
			vs.add(joinPath(path, name), "required")
		}
	}
	if s.MinProperties != nil && len(obj) < *s.MinProperties {
		vs.add(path, "at least %d members, got %d", *s.MinProperties, len(obj))
	}
	if s.MaxProperties != nil && len(obj) > *s.MaxProperties {
		vs.add(path, "at most %d members, got %d", *s.MaxProperties, len(obj))
	}
	for _, p := range s.Properties {
		if val, ok := obj[p.Name]; ok {
			p.Schema.check(val, joinPath(path, p.Name), vs)
		}
	}
	var extra []string
	for name := range obj {
		if _, known := s.Property(name); !known {
			extra = append(extra, name)
		}
	}
	slices.Sort(extra)
	for _, name := range extra {
		switch {
		case s.AdditionalSchema != nil:
			s.AdditionalSchema.check(obj[name], joinPath(path, name), vs)
		case s.AdditionalProperties != nil && !*s.AdditionalProperties:
			vs.add(joinPath(path, name), "unknown member (allowed: %s)", s.propertyNames())
		}
	}
}

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

// canonical encodes a decoded JSON value so that equal values (1 and 1.0,
// objects with their members in any order) encode the same.
func canonical(v any) string {
	switch x := v.(type) {
	case json.Number:
		if f, err := strconv.ParseFloat(x.String(), 64); err == nil {
			return "n" + formatNumber(f)
		}
		return "n" + x.String()
	case []any:
		parts := make([]string, len(x))
		for i, item := range x {
			parts[i] = canonical(item)
		}
		return "[" + strings.Join(parts, ",") + "]"
	case map[string]any:
		keys := make([]string, 0, len(x))
		for k := range x {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		parts := make([]string, len(keys))
		for i, k := range keys {
			parts[i] = strconv.Quote(k) + ":" + canonical(x[k])
		}
		return "{" + strings.Join(parts, ",") + "}"
	}
	b, _ := json.Marshal(v)
	return string(b)
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

func quoteList(list []string) string {
	q := make([]string, len(list))
	for i, s := range list {
		q[i] = strconv.Quote(s)
	}
	return strings.Join(q, ", ")
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
