package toolsagent

import (
	"encoding/json"
	"math"
	"slices"
	"strings"

	"go.yaml.in/yaml/v3"

	"github.com/mew-protocol/mew/internal/argcheck"
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
	pairs, ok := l.mapping(n, path)
	if !ok {
		return nil
	}
	var typ string
	for _, p := range pairs {
		if p.key == "type" {
			s, ok := l.str(p.val, joinPath(path, "type"))
			if !ok {
				return nil
			}
			typ = s
		}
	}
	if typ == "" {
		l.errorf(n, joinPath(path, "type"), "required: one of %s", strings.Join(schemaTypes, ", "))
		return nil
	}
	keys, known := typeKeys[typ]
	if !known {
		l.errorf(n, joinPath(path, "type"), "unknown type %q (want %s)", clip(typ, 40), strings.Join(schemaTypes, ", "))
		return nil
	}
	var base SchemaBase
	var rest []pair
	for _, p := range pairs {
		switch p.key {
		case "type":
		case "title":
			base.Title, _ = l.str(p.val, joinPath(path, p.key))
		case "description":
			base.Description, _ = l.str(p.val, joinPath(path, p.key))
		default:
			if slices.Contains(keys, p.key) {
				rest = append(rest, p)
				continue
			}
			l.errorf(p.kn, joinPath(path, p.key), "not part of the schema of %s (allowed: %s)",
				article(typ), strings.Join(append(slices.Clone(baseKeys), keys...), ", "))
		}
	}
	switch typ {
	case TypeString:
		return l.stringSchema(base, rest, path)
	case TypeNumber, TypeInteger:
		return l.numberSchema(base, typ == TypeInteger, rest, path)
	case TypeBoolean:
		s := &BooleanSchema{SchemaBase: base}
		for _, p := range rest {
			if b, ok := l.boolean(p.val, joinPath(path, p.key)); ok {
				s.Default = &b
			}
		}
		return s
	case TypeArray:
		return l.arraySchema(base, rest, path, depth)
	}
	return l.objectSchema(base, rest, path, depth)
}

func (l *loader) stringSchema(base SchemaBase, pairs []pair, path string) Schema {
	s := &StringSchema{SchemaBase: base}
	var defNode *yaml.Node
	for _, p := range pairs {
		fp := joinPath(path, p.key)
		switch p.key {
		case "enum":
			if list, ok := l.strList(p.val, fp); ok {
				if len(list) == 0 {
					l.errorf(p.val, fp, "an empty enum allows nothing")
				}
				s.Enum = list
			}
		case "default":
			if v, ok := l.str(p.val, fp); ok {
				s.Default, defNode = &v, p.val
			}
		case "examples":
			s.Examples, _ = l.strList(p.val, fp)
		case "minLength":
			s.MinLength, _ = l.count(p.val, fp)
		case "maxLength":
			s.MaxLength, _ = l.count(p.val, fp)
		}
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

func (l *loader) numberSchema(base SchemaBase, integer bool, pairs []pair, path string) Schema {
	s := &NumberSchema{SchemaBase: base, Integer: integer}
	var defNode *yaml.Node
	list := func(n *yaml.Node, fp string) []float64 {
		items, ok := l.sequence(n, fp)
		if !ok {
			return nil
		}
		out := make([]float64, 0, len(items))
		for i, it := range items {
			f, ok := l.number(it, indexPath(fp, i))
			if !ok {
				return nil
			}
			if integer && f != math.Trunc(f) {
				l.errorf(it, indexPath(fp, i), "want an integer, got %s", formatNumber(f))
			}
			out = append(out, f)
		}
		return out
	}
	for _, p := range pairs {
		fp := joinPath(path, p.key)
		switch p.key {
		case "enum":
			s.Enum = list(p.val, fp)
			if s.Enum != nil && len(s.Enum) == 0 {
				l.errorf(p.val, fp, "an empty enum allows nothing")
			}
		case "default":
			if f, ok := l.number(p.val, fp); ok {
				s.Default, defNode = &f, p.val
			}
		case "examples":
			s.Examples = list(p.val, fp)
		case "minimum":
			if f, ok := l.number(p.val, fp); ok {
				s.Minimum = &f
			}
		case "maximum":
			if f, ok := l.number(p.val, fp); ok {
				s.Maximum = &f
			}
		}
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

func (l *loader) arraySchema(base SchemaBase, pairs []pair, path string, depth int) Schema {
	s := &ArraySchema{SchemaBase: base}
	var haveItems bool
	for _, p := range pairs {
		fp := joinPath(path, p.key)
		switch p.key {
		case "items":
			haveItems = true
			if dn := l.deref(p.val); dn != nil && dn.Kind == yaml.SequenceNode {
				if len(dn.Content) == 0 {
					l.errorf(p.val, fp, "an empty list of item schemas")
				}
				s.PrefixItems = []Schema{}
				for i, it := range dn.Content {
					if item := l.schema(it, indexPath(fp, i), depth+1); item != nil {
						s.PrefixItems = append(s.PrefixItems, item)
					}
				}
				continue
			}
			s.Items = l.schema(p.val, fp, depth+1)
		case "minItems":
			s.MinItems, _ = l.count(p.val, fp)
		case "maxItems":
			s.MaxItems, _ = l.count(p.val, fp)
		case "uniqueItems":
			s.UniqueItems, _ = l.boolean(p.val, fp)
		}
	}
	if !haveItems {
		l.errorf(nil, joinPath(path, "items"), "required: the schema of the items (or a list of schemas, one per position)")
	}
	if s.MinItems != nil && s.MaxItems != nil && *s.MinItems > *s.MaxItems {
		l.errorf(nil, joinPath(path, "minItems"), "%d is more than maxItems %d", *s.MinItems, *s.MaxItems)
	}
	return s
}

func (l *loader) objectSchema(base SchemaBase, pairs []pair, path string, depth int) Schema {
	s := &ObjectSchema{SchemaBase: base}
	var reqNode *yaml.Node
	for _, p := range pairs {
		fp := joinPath(path, p.key)
		switch p.key {
		case "properties":
			props, ok := l.mapping(p.val, fp)
			if !ok {
				continue
			}
			for _, prop := range props {
				pp := joinPath(fp, prop.key)
				if !plainName(prop.key) {
					l.errorf(prop.kn, pp, "a property name is 1 to 64 letters, digits, '_', '-' and '.'")
					continue
				}
				if ps := l.schema(prop.val, pp, depth+1); ps != nil {
					s.Properties = append(s.Properties, Property{Name: prop.key, Schema: ps})
				}
			}
		case "required":
			reqNode = p.val
			s.Required, _ = l.strList(p.val, fp)
		case "additionalProperties":
			if dn := l.deref(p.val); dn != nil && dn.Kind == yaml.ScalarNode {
				if b, ok := l.boolean(p.val, fp); ok {
					s.AdditionalProperties = &b
				}
				continue
			}
			s.AdditionalSchema = l.schema(p.val, fp, depth+1)
		case "minProperties":
			s.MinProperties, _ = l.count(p.val, fp)
		case "maxProperties":
			s.MaxProperties, _ = l.count(p.val, fp)
		}
	}
	seen := map[string]bool{}
	for i, name := range s.Required {
		rp := indexPath(joinPath(path, "required"), i)
		if seen[name] {
			l.warnf(reqNode, rp, "%q is listed twice", name)
		}
		seen[name] = true
		if _, ok := s.Property(name); !ok {
			l.errorf(reqNode, rp, "%q is not a property (properties: %s)", clip(name, 40), s.propertyNames())
		}
	}
	if s.MinProperties != nil && s.MaxProperties != nil && *s.MinProperties > *s.MaxProperties {
		l.errorf(nil, joinPath(path, "minProperties"), "%d is more than maxProperties %d", *s.MinProperties, *s.MaxProperties)
	}
	return s
}
