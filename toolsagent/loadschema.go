package toolsagent

import (
	"encoding/json"
	"math"
	"strings"

	"go.yaml.in/yaml/v3"

	"github.com/mew-protocol/mew/internal/argcheck"
	"github.com/mew-protocol/mew/internal/clip"
	"github.com/mew-protocol/mew/internal/yamlx"
)

// schemaTypes are the values of "type".
var schemaTypes = []string{TypeString, TypeNumber, TypeInteger, TypeBoolean, TypeArray, TypeObject}

// schema reads one schema of the subset: its type first, then the
// members of that type (the fields of its Go type); nil after a problem
// that leaves nothing to use.
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
	var s Schema
	switch typ {
	case "":
		l.errorf(n, joinPath(path, "type"), "required: one of %s", strings.Join(schemaTypes, ", "))
		return nil
	case TypeString:
		s = &StringSchema{}
	case TypeNumber, TypeInteger:
		s = &NumberSchema{Integer: typ == TypeInteger}
	case TypeBoolean:
		s = &BooleanSchema{}
	case TypeArray:
		s = &ArraySchema{}
	case TypeObject:
		s = &ObjectSchema{}
	default:
		l.errorf(n, joinPath(path, "type"), "unknown type %q (want %s)", clip.Mark(typ, 40), strings.Join(schemaTypes, ", "))
		return nil
	}
	nodes, errs := yamlx.Fields(n, path, s, yamlx.FieldOptions{Join: joinPath, Unknown: func(p yamlx.Pair, k string, known []string) error {
		if p.Key == "type" {
			return nil // read above
		}
		return yamlx.Errorf(p.KeyNode, k, "not part of the schema of %s (allowed: type, %s)%s",
			article(typ), strings.Join(known, ", "), yamlx.DidYouMean(p.Key, known))
	}})
	for _, err := range errs {
		l.report(err)
	}
	switch s := s.(type) {
	case *StringSchema:
		l.checkString(s, nodes, path)
	case *NumberSchema:
		l.checkNumber(s, nodes, path)
	case *ArraySchema:
		l.arraySchema(s, nodes, path, depth)
	case *ObjectSchema:
		l.objectSchema(s, nodes, path, depth)
	}
	return s
}

// checkEnum refuses an empty enum.
func (l *loader) checkEnum(size int, nodes map[string]*yaml.Node, path string) {
	if n := nodes["enum"]; n != nil && size == 0 {
		l.errorf(n, joinPath(path, "enum"), "an empty enum allows nothing")
	}
}

// checkRange refuses a lower bound above the upper one.
func (l *loader) checkRange(lo, hi *int, path, loKey, hiKey string) {
	if lo != nil && hi != nil && *lo > *hi {
		l.errorf(nil, joinPath(path, loKey), "%d is more than %s %d", *lo, hiKey, *hi)
	}
}

func (l *loader) checkString(s *StringSchema, nodes map[string]*yaml.Node, path string) {
	l.checkEnum(len(s.Enum), nodes, path)
	l.checkRange(s.MinLength, s.MaxLength, path, "minLength", "maxLength")
	if s.Default != nil {
		l.checkValue(s, *s.Default, nodes["default"], joinPath(path, "default"))
	}
	for i, e := range s.Examples {
		l.checkValue(s, e, nil, indexPath(joinPath(path, "examples"), i))
	}
}

func (l *loader) checkNumber(s *NumberSchema, nodes map[string]*yaml.Node, path string) {
	if s.Integer {
		s.Enum = l.integers(s.Enum, nodes["enum"], joinPath(path, "enum"))
		s.Examples = l.integers(s.Examples, nodes["examples"], joinPath(path, "examples"))
	}
	l.checkEnum(len(s.Enum), nodes, path)
	if s.Minimum != nil && s.Maximum != nil && *s.Minimum > *s.Maximum {
		l.errorf(nil, joinPath(path, "minimum"), "%s is more than maximum %s", formatNumber(*s.Minimum), formatNumber(*s.Maximum))
	}
	if s.Default != nil {
		l.checkValue(s, json.Number(formatNumber(*s.Default)), nodes["default"], joinPath(path, "default"))
	}
	for i, e := range s.Examples {
		l.checkValue(s, json.Number(formatNumber(e)), nil, indexPath(joinPath(path, "examples"), i))
	}
}

// integers returns list, read from n, when its numbers are whole, and
// nil after reporting the first that is not.
func (l *loader) integers(list []float64, n *yaml.Node, path string) []float64 {
	for i, f := range list {
		if f != math.Trunc(f) {
			item := yamlx.Deref(n).Content[i]
			l.errorf(item, indexPath(path, i), "want an integer, got %s", yamlx.Describe(item))
			return nil
		}
	}
	return list
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

// arraySchema reads the items of an array schema: one schema, or a list
// of them, one per position.
func (l *loader) arraySchema(s *ArraySchema, nodes map[string]*yaml.Node, path string, depth int) {
	n := nodes["items"]
	ip := joinPath(path, "items")
	switch dn := yamlx.Deref(n); {
	case n == nil:
		l.errorf(nil, ip, "required: the schema of the items (or a list of schemas, one per position)")
	case dn == nil || dn.Kind != yaml.SequenceNode:
		s.Items = l.schema(n, ip, depth+1)
	default:
		if len(dn.Content) == 0 {
			l.errorf(n, ip, "an empty list of item schemas")
		}
		s.PrefixItems = []Schema{}
		for i, it := range dn.Content {
			if item := l.schema(it, indexPath(ip, i), depth+1); item != nil {
				s.PrefixItems = append(s.PrefixItems, item)
			}
		}
	}
	l.checkRange(s.MinItems, s.MaxItems, path, "minItems", "maxItems")
}

// objectSchema reads the properties of an object schema and what it says
// of others, and checks the required names.
func (l *loader) objectSchema(s *ObjectSchema, nodes map[string]*yaml.Node, path string, depth int) {
	if n := nodes["properties"]; n != nil {
		fp := joinPath(path, "properties")
		props, err := yamlx.StrictMapping(n, fp)
		l.report(err)
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
	}
	if n := nodes["additionalProperties"]; n != nil {
		fp := joinPath(path, "additionalProperties")
		if dn := yamlx.Deref(n); dn != nil && dn.Kind == yaml.ScalarNode {
			b, err := yamlx.StrictBool(n, fp)
			if l.report(err) {
				s.AdditionalProperties = &b
			}
		} else {
			s.AdditionalSchema = l.schema(n, fp, depth+1)
		}
	}
	seen := map[string]bool{}
	for i, name := range s.Required {
		rp := indexPath(joinPath(path, "required"), i)
		if seen[name] {
			l.warnf(nodes["required"], rp, "%q is listed twice", name)
		}
		seen[name] = true
		if _, ok := s.Property(name); !ok {
			l.errorf(nodes["required"], rp, "%q is not a property (properties: %s)", clip.Mark(name, 40), s.propertyNames())
		}
	}
	l.checkRange(s.MinProperties, s.MaxProperties, path, "minProperties", "maxProperties")
}
