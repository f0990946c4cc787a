package toolsagent

import (
	"encoding/json"
	"math"
	"slices"
	"strings"

	"go.yaml.in/yaml/v3"

	"github.com/mew-protocol/mew/internal/argcheck"
	"github.com/mew-protocol/mew/internal/clip"
	"github.com/mew-protocol/mew/internal/yamlx"
)

// Schema keys, by type.
var (
	baseKeys    = []string{"type", "title", "description"}
	schemaTypes = []string{TypeString, TypeNumber, TypeInteger, TypeBoolean, TypeArray, TypeObject}
	typeKeys    = map[string][]string{
		TypeString:  {"enum", "default", "examples", "minLength", "maxLength"},
		TypeNumber:  {"enum", "default", "examples", "minimum", "maximum"},
		TypeInteger: {"enum", "default", "examples", "minimum", "maximum"},
		TypeBoolean: {"default"},
		TypeArray:   {"items", "minItems", "maxItems", "uniqueItems"},
		TypeObject:  {"properties", "required", "additionalProperties", "minProperties", "maxProperties"},
	}
)

// schema reads one schema of the subset; nil after a problem that leaves
// nothing to use.
func (l *loader) schema(n *yaml.Node, path string, depth int) Schema {
	if depth > maxSchemaDepth {
		l.errorf(n, path, "schemas nested deeper than %d levels", maxSchemaDepth)
		return nil
	}
	pairs, err := yamlx.StrictMapping(n, path)
	if !l.report(err) {
		return nil
	}
	var typ string
	for _, p := range pairs {
		if p.Key == "type" {
			if typ, err = yamlx.StrictString(p.Value, joinPath(path, "type")); !l.report(err) {
				return nil
			}
		}
	}
	if typ == "" {
		l.errorf(n, joinPath(path, "type"), "required: one of %s", strings.Join(schemaTypes, ", "))
		return nil
	}
	keys, known := typeKeys[typ]
	if !known {
		l.errorf(n, joinPath(path, "type"), "unknown type %q (want %s)", clip.Mark(typ, 40), strings.Join(schemaTypes, ", "))
		return nil
	}
	var base SchemaBase
	var rest []yamlx.Pair
	for _, p := range pairs {
		var err error
		switch p.Key {
		case "type":
		case "title":
			base.Title, err = yamlx.StrictString(p.Value, joinPath(path, p.Key))
		case "description":
			base.Description, err = yamlx.StrictString(p.Value, joinPath(path, p.Key))
		default:
			if slices.Contains(keys, p.Key) {
				rest = append(rest, p)
			} else {
				l.errorf(p.KeyNode, joinPath(path, p.Key), "not part of the schema of %s (allowed: %s)",
					article(typ), strings.Join(append(slices.Clone(baseKeys), keys...), ", "))
			}
		}
		l.report(err)
	}
	switch typ {
	case TypeString:
		return l.stringSchema(base, rest, path)
	case TypeNumber, TypeInteger:
		return l.numberSchema(base, typ == TypeInteger, rest, path)
	case TypeBoolean:
		s := &BooleanSchema{SchemaBase: base}
		for _, p := range rest { // only default
			b, err := ptr(yamlx.StrictBool(p.Value, joinPath(path, p.Key)))
			if l.report(err) {
				s.Default = b
			}
		}
		return s
	case TypeArray:
		return l.arraySchema(base, rest, path, depth)
	}
	return l.objectSchema(base, rest, path, depth)
}

func (l *loader) stringSchema(base SchemaBase, pairs []yamlx.Pair, path string) Schema {
	s := &StringSchema{SchemaBase: base}
	var defNode *yaml.Node
	for _, p := range pairs {
		fp := joinPath(path, p.Key)
		var err error
		switch p.Key {
		case "enum":
			if s.Enum, err = yamlx.StrictStringList(p.Value, fp); err == nil && len(s.Enum) == 0 {
				l.errorf(p.Value, fp, "an empty enum allows nothing")
			}
		case "default":
			if s.Default, err = ptr(yamlx.StrictString(p.Value, fp)); err == nil {
				defNode = p.Value
			}
		case "examples":
			s.Examples, err = yamlx.StrictStringList(p.Value, fp)
		case "minLength":
			s.MinLength, err = ptr(yamlx.Count(p.Value, fp))
		case "maxLength":
			s.MaxLength, err = ptr(yamlx.Count(p.Value, fp))
		}
		l.report(err)
	}
	if s.MinLength != nil && s.MaxLength != nil && *s.MinLength > *s.MaxLength {
		l.errorf(nil, joinPath(path, "minLength"), "%d is more than maxLength %d", *s.MinLength, *s.MaxLength)
	}
	if s.Default != nil {
		l.checkValue(s, *s.Default, defNode, joinPath(path, "default"))
	}
	for i, e := range s.Examples {
		l.checkValue(s, e, nil, indexPath(joinPath(path, "examples"), i))
	}
	return s
}

// numbers reads a list of numbers, whole ones when integer.
func numbers(n *yaml.Node, path string, integer bool) ([]float64, error) {
	items, err := yamlx.List(n, path)
	if err != nil {
		return nil, err
	}
	out := make([]float64, 0, len(items))
	for i, it := range items {
		f, err := yamlx.Number(it, indexPath(path, i))
		if err != nil {
			return nil, err
		}
		if integer && f != math.Trunc(f) {
			return nil, yamlx.Errorf(it, indexPath(path, i), "want an integer, got %s", yamlx.Describe(it))
		}
		out = append(out, f)
	}
	return out, nil
}

func (l *loader) numberSchema(base SchemaBase, integer bool, pairs []yamlx.Pair, path string) Schema {
	s := &NumberSchema{SchemaBase: base, Integer: integer}
	var defNode *yaml.Node
	for _, p := range pairs {
		fp := joinPath(path, p.Key)
		var err error
		switch p.Key {
		case "enum":
			if s.Enum, err = numbers(p.Value, fp, integer); err == nil && len(s.Enum) == 0 {
				l.errorf(p.Value, fp, "an empty enum allows nothing")
			}
		case "default":
			if s.Default, err = ptr(yamlx.Number(p.Value, fp)); err == nil {
				defNode = p.Value
			}
		case "examples":
			s.Examples, err = numbers(p.Value, fp, integer)
		case "minimum":
			s.Minimum, err = ptr(yamlx.Number(p.Value, fp))
		case "maximum":
			s.Maximum, err = ptr(yamlx.Number(p.Value, fp))
		}
		l.report(err)
	}
	if s.Minimum != nil && s.Maximum != nil && *s.Minimum > *s.Maximum {
		l.errorf(nil, joinPath(path, "minimum"), "%s is more than maximum %s", formatNumber(*s.Minimum), formatNumber(*s.Maximum))
	}
	if s.Default != nil {
		l.checkValue(s, json.Number(formatNumber(*s.Default)), defNode, joinPath(path, "default"))
	}
	for i, e := range s.Examples {
		l.checkValue(s, json.Number(formatNumber(e)), nil, indexPath(joinPath(path, "examples"), i))
	}
	return s
}

// checkValue reports the violations of a default or an example.
func (l *loader) checkValue(s Schema, v any, n *yaml.Node, path string) {
	compiled, err := compileParameters(path, s)
	if err != nil {
		l.errorf(n, path, "%v", err)
		return
	}
	if err := compiled.Validate(v, maxViolations); err != nil {
		for _, v := range err.(*argcheck.Error).Violations {
			l.errorf(n, path, "%s", v.Message)
		}
	}
}

func (l *loader) arraySchema(base SchemaBase, pairs []yamlx.Pair, path string, depth int) Schema {
	s := &ArraySchema{SchemaBase: base}
	var haveItems bool
	for _, p := range pairs {
		fp := joinPath(path, p.Key)
		var err error
		switch p.Key {
		case "items":
			haveItems = true
			dn := yamlx.Deref(p.Value)
			if dn == nil || dn.Kind != yaml.SequenceNode {
				s.Items = l.schema(p.Value, fp, depth+1)
				break
			}
			if len(dn.Content) == 0 {
				l.errorf(p.Value, fp, "an empty list of item schemas")
			}
			s.PrefixItems = []Schema{}
			for i, it := range dn.Content {
				if item := l.schema(it, indexPath(fp, i), depth+1); item != nil {
					s.PrefixItems = append(s.PrefixItems, item)
				}
			}
		case "minItems":
			s.MinItems, err = ptr(yamlx.Count(p.Value, fp))
		case "maxItems":
			s.MaxItems, err = ptr(yamlx.Count(p.Value, fp))
		case "uniqueItems":
			s.UniqueItems, err = yamlx.StrictBool(p.Value, fp)
		}
		l.report(err)
	}
	if !haveItems {
		l.errorf(nil, joinPath(path, "items"), "required: the schema of the items (or a list of schemas, one per position)")
	}
	if s.MinItems != nil && s.MaxItems != nil && *s.MinItems > *s.MaxItems {
		l.errorf(nil, joinPath(path, "minItems"), "%d is more than maxItems %d", *s.MinItems, *s.MaxItems)
	}
	return s
}

func (l *loader) objectSchema(base SchemaBase, pairs []yamlx.Pair, path string, depth int) Schema {
	s := &ObjectSchema{SchemaBase: base}
	var reqNode *yaml.Node
	for _, p := range pairs {
		fp := joinPath(path, p.Key)
		var err error
		switch p.Key {
		case "properties":
			var props []yamlx.Pair
			props, err = yamlx.StrictMapping(p.Value, fp)
			for _, prop := range props {
				pp := joinPath(fp, prop.Key)
				if !plainName(prop.Key) {
					l.errorf(prop.KeyNode, pp, "a property name is 1 to 64 letters, digits, '_', '-' and '.'")
					continue
				}
				if ps := l.schema(prop.Value, pp, depth+1); ps != nil {
					s.Properties = append(s.Properties, Property{Name: prop.Key, Schema: ps})
				}
			}
		case "required":
			reqNode = p.Value
			s.Required, err = yamlx.StrictStringList(p.Value, fp)
		case "additionalProperties":
			if dn := yamlx.Deref(p.Value); dn != nil && dn.Kind == yaml.ScalarNode {
				s.AdditionalProperties, err = ptr(yamlx.StrictBool(p.Value, fp))
			} else {
				s.AdditionalSchema = l.schema(p.Value, fp, depth+1)
			}
		case "minProperties":
			s.MinProperties, err = ptr(yamlx.Count(p.Value, fp))
		case "maxProperties":
			s.MaxProperties, err = ptr(yamlx.Count(p.Value, fp))
		}
		l.report(err)
	}
	seen := map[string]bool{}
	for i, name := range s.Required {
		rp := indexPath(joinPath(path, "required"), i)
		if seen[name] {
			l.warnf(reqNode, rp, "%q is listed twice", name)
		}
		seen[name] = true
		if _, ok := s.Property(name); !ok {
			l.errorf(reqNode, rp, "%q is not a property (properties: %s)", clip.Mark(name, 40), s.propertyNames())
		}
	}
	if s.MinProperties != nil && s.MaxProperties != nil && *s.MinProperties > *s.MaxProperties {
		l.errorf(nil, joinPath(path, "minProperties"), "%d is more than maxProperties %d", *s.MinProperties, *s.MaxProperties)
	}
	return s
}
