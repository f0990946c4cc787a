package yamlx

import (
	"maps"
	"reflect"
	"slices"
	"strings"

	"go.yaml.in/yaml/v3"
)

// Unmarshaler is a field type that reads itself from its node, for a
// value whose Go type alone does not say how (a check, a choice of
// names). Its errors should be *Error, as the readers' are.
type Unmarshaler interface {
	UnmarshalYAMLAt(n *yaml.Node, path string) error
}

// FieldOptions says how Fields reads a mapping.
type FieldOptions struct {
	// Lenient takes null as absent (the field keeps its value, so a
	// default set before stays) and reads a string from any scalar as
	// written (see String); otherwise null is refused and a string must
	// be one (see StrictString).
	Lenient bool
	// Unknown is called for each member the struct has no field for,
	// with the names it has, in order; its error, if any, is returned
	// among the others. Nil refuses the member: "unknown key (allowed:
	// ...)", with a "did you mean" when the key looks like a typo.
	Unknown func(p Pair, path string, known []string) error
	// Readers read the members named, in place of their fields' types: for
	// a value that needs a check or the reader's context. A reader is
	// called for null too. A name needs no field to count as known.
	Readers map[string]Reader
	// Join appends a member's name to a key path; nil is JoinKey.
	Join func(path, name string) string
}

// Reader reads one member's value node, at its key path.
type Reader func(v *yaml.Node, path string) error

// Set returns a Reader that stores in dst what read makes of the value.
func Set[T any](dst *T, read func(*yaml.Node, string) (T, error)) Reader {
	return func(v *yaml.Node, path string) error {
		x, err := read(v, path)
		if err == nil {
			*dst = x
		}
		return err
	}
}

// Fields decodes the mapping at n into the struct dst points to, each
// member into the field tagged `yaml:"name"` (embedded structs' fields
// count as the struct's own), read by the field's type: string, bool,
// int (a Count), float64 (a Number), []string, []float64 (Numbers),
// map[string]string, a struct or a pointer to one of these (set only when
// the member is there), an Unmarshaler, or *yaml.Node (the value node,
// for the caller to read). A field tagged `yaml:"name,node"` is not read:
// the caller reads it from its node.
//
// Fields goes on after an error, so that a caller can report every
// problem at once. It returns the value nodes, by name, of the members
// read without error (nil when n is no mapping, or null), and the errors.
func Fields(n *yaml.Node, path string, dst any, opt FieldOptions) (map[string]*yaml.Node, []error) {
	var pairs []Pair
	var err error
	if opt.Lenient {
		pairs, err = Mapping(n, path)
	} else {
		pairs, err = StrictMapping(n, path)
	}
	if err != nil {
		return nil, []error{err}
	}
	if pairs == nil {
		return nil, nil
	}
	byName, known := fieldsOf(reflect.ValueOf(dst).Elem())
	for _, name := range slices.Sorted(maps.Keys(opt.Readers)) {
		if _, ok := byName[name]; !ok {
			known = append(known, name)
		}
	}
	join := opt.Join
	if join == nil {
		join = JoinKey
	}
	nodes := make(map[string]*yaml.Node, len(pairs))
	var errs []error
	for _, p := range pairs {
		k := join(path, p.Key)
		f, ok := byName[p.Key]
		read, custom := opt.Readers[p.Key]
		ok = ok || custom
		switch {
		case custom:
			err = read(p.Value, k)
		case !ok && opt.Unknown != nil:
			err = opt.Unknown(p, k, known)
		case !ok:
			err = unknownKey(p, k, known)
		case f.node:
			err = nil
		default:
			err = readValue(p.Value, k, f.v, opt)
		}
		if err != nil {
			errs = append(errs, err)
		} else if ok {
			nodes[p.Key] = p.Value
		}
	}
	return nodes, errs
}

// unknownKey is the error of a member that is not one of known.
func unknownKey(p Pair, path string, known []string) error {
	return fail(p.KeyNode, path, "unknown key (allowed: %s)%s", strings.Join(known, ", "), DidYouMean(p.Key, known))
}

// DidYouMean is "; did you mean <name>?" for the name of known that word
// is a likely typo of (see Closest), "" when there is none.
func DidYouMean(word string, known []string) string {
	if s := Closest(word, known); s != "" {
		return "; did you mean " + s + "?"
	}
	return ""
}

// field is a struct field Fields reads into.
type field struct {
	v    reflect.Value
	node bool // the caller reads it
}

// fieldsOf returns the tagged fields of struct v by name, and the names
// in order.
func fieldsOf(v reflect.Value) (map[string]field, []string) {
	byName := map[string]field{}
	var names []string
	var walk func(v reflect.Value)
	walk = func(v reflect.Value) {
		t := v.Type()
		for i := range t.NumField() {
			sf := t.Field(i)
			tag, ok := sf.Tag.Lookup("yaml")
			if !ok && sf.Anonymous && sf.Type.Kind() == reflect.Struct {
				walk(v.Field(i))
				continue
			}
			name, opts, _ := strings.Cut(tag, ",")
			if name == "" || name == "-" {
				continue
			}
			byName[name] = field{v: v.Field(i), node: opts == "node"}
			names = append(names, name)
		}
	}
	walk(v)
	return byName, names
}

// readValue reads n into v according to v's type.
func readValue(n *yaml.Node, path string, v reflect.Value, opt FieldOptions) error {
	if u, ok := v.Addr().Interface().(Unmarshaler); ok {
		return u.UnmarshalYAMLAt(n, path)
	}
	if opt.Lenient && IsNull(n) {
		return nil
	}
	var x any
	var err error
	switch t := v.Type(); {
	case t == reflect.TypeFor[*yaml.Node]():
		v.Set(reflect.ValueOf(n))
		return nil
	case t.Kind() == reflect.Pointer:
		p := reflect.New(t.Elem())
		if err = readValue(n, path, p.Elem(), opt); err == nil {
			v.Set(p)
		}
		return err
	case t.Kind() == reflect.Struct:
		// The readers are the outer mapping's, named for its members.
		_, errs := Fields(n, path, v.Addr().Interface(), FieldOptions{Lenient: opt.Lenient, Unknown: opt.Unknown, Join: opt.Join})
		if len(errs) > 0 {
			return errs[0]
		}
		return nil
	case t.Kind() == reflect.String && opt.Lenient:
		x, err = String(n, path)
	case t.Kind() == reflect.String:
		x, err = StrictString(n, path)
	case t.Kind() == reflect.Bool:
		x, err = StrictBool(n, path)
	case t.Kind() == reflect.Int:
		x, err = Count(n, path)
	case t.Kind() == reflect.Float64:
		x, err = Number(n, path)
	case t == reflect.TypeFor[[]string]() && opt.Lenient:
		x, err = StringList(n, path)
	case t == reflect.TypeFor[[]string]():
		x, err = StrictStringList(n, path)
	case t == reflect.TypeFor[[]float64]():
		x, err = listOf(n, path, Number)
	case t == reflect.TypeFor[map[string]string]():
		x, err = StringMap(n, path)
	default:
		// A programming error, not the file's: say so plainly.
		return fail(n, path, "yamlx: cannot read into a field of type %s", t)
	}
	if err == nil {
		v.Set(reflect.ValueOf(x).Convert(v.Type()))
	}
	return err
}

// Text is a string read from any scalar as written (see String), in a
// strict reading too: to YAML, a version such as 1.0 is a number.
type Text string

// UnmarshalYAMLAt implements Unmarshaler.
func (t *Text) UnmarshalYAMLAt(n *yaml.Node, path string) error {
	s, err := String(n, path)
	*t = Text(s)
	return err
}

// Closest returns the name of known that word is a likely typo of: the
// nearest by edit distance, when that distance is at most a quarter of
// its length (at least 1, at most 3); "" when none is.
func Closest(word string, known []string) string {
	best, bestD := "", 0
	for _, k := range known {
		limit := min(max(len(k)/4, 1), 3)
		if len(word) > len(k)+limit || len(k) > len(word)+limit {
			continue // farther than limit; and a long hostile key costs nothing
		}
		if d := editDistance(strings.ToLower(word), k); d <= limit && (best == "" || d < bestD) {
			best, bestD = k, d
		}
	}
	return best
}

// editDistance is the number of insertions, deletions, substitutions and
// swaps of adjacent bytes that turn a into b (optimal string alignment).
func editDistance(a, b string) int {
	prev2 := make([]int, len(b)+1)
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
			if i > 1 && j > 1 && a[i-1] == b[j-2] && a[i-2] == b[j-1] {
				cur[j] = min(cur[j], prev2[j-2]+1)
			}
		}
		prev2, prev, cur = prev, cur, prev2
	}
	return prev[len(b)]
}
