// Package argcheck validates the arguments of a tool call against the
// tool's JSON Schema, with github.com/santhosh-tekuri/jsonschema, and says
// what is wrong as a list of violations, each a path into the arguments
// ("trip.people[0].age") and a reason ("at most 120, got 200").
//
// It is the one validator of arguments: the participant package checks
// the calls of the tools it serves with it, and the tools agent the calls
// of its tools and the defaults and examples of its parameters.
package argcheck

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/big"
	"net/url"
	"slices"
	"strconv"
	"strings"

	"github.com/santhosh-tekuri/jsonschema/v6"
	"github.com/santhosh-tekuri/jsonschema/v6/kind"
	"golang.org/x/text/language"
	"golang.org/x/text/message"

	"github.com/mew-protocol/mew/internal/clip"
)

// Schema is a compiled JSON Schema, safe for concurrent use.
type Schema struct {
	s   *jsonschema.Schema
	raw json.RawMessage
	loc string
}

// noLoader refuses every schema document a schema refers to (a tool's
// schema must not make the process read files or the web); the JSON
// Schema meta-schemas are built in and need no loader.
type noLoader struct{}

func (noLoader) Load(url string) (any, error) {
	return nil, fmt.Errorf("external schema %q not allowed", url)
}

// Compile compiles a JSON Schema (a JSON object), read as draft 2020-12
// unless it names another with $schema. name identifies it in messages
// and references. The error of a schema that does not compile is one
// line.
func Compile(name string, raw json.RawMessage) (*Schema, error) {
	var compact bytes.Buffer
	if err := json.Compact(&compact, raw); err != nil {
		return nil, fmt.Errorf("not JSON: %w", err)
	}
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(compact.Bytes()))
	if err != nil {
		return nil, fmt.Errorf("not JSON: %w", err)
	}
	if _, ok := doc.(map[string]any); !ok {
		return nil, errors.New("not a JSON object")
	}
	c := jsonschema.NewCompiler()
	c.DefaultDraft(jsonschema.Draft2020)
	c.UseLoader(noLoader{})
	loc := "urn:mew:schema:" + url.PathEscape(name)
	if err := c.AddResource(loc, doc); err != nil {
		return nil, oneLine{err}
	}
	s, err := c.Compile(loc)
	if err != nil {
		return nil, oneLine{err}
	}
	return &Schema{s: s, raw: compact.Bytes(), loc: loc}, nil
}

// JSON returns the schema as compiled, compact.
func (s *Schema) JSON() json.RawMessage { return s.raw }

// oneLine is an error whose text, which the schema compiler spreads over
// several indented lines, is joined into one.
type oneLine struct{ err error }

func (e oneLine) Error() string {
	lines := strings.Split(e.err.Error(), "\n")
	for i, l := range lines {
		lines[i] = strings.TrimPrefix(strings.TrimSpace(l), "- ")
	}
	return strings.Join(slices.DeleteFunc(lines, func(l string) bool { return l == "" }), "; ")
}

func (e oneLine) Unwrap() error { return e.err }

// Violation is one way in which a value fails a schema.
type Violation struct {
	// Path locates the value: "destination", "passengers[0].name"; empty
	// for the value as a whole.
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

// Error lists the violations of a value, at most the limit given to
// Check or Validate.
type Error struct {
	Violations []Violation
	// More counts the violations left out.
	More int
}

func (e *Error) Error() string {
	msgs := make([]string, 0, len(e.Violations)+1)
	for _, v := range e.Violations {
		msgs = append(msgs, v.String())
	}
	if e.More > 0 {
		msgs = append(msgs, fmt.Sprintf("and %d more", e.More))
	}
	return strings.Join(msgs, "; ")
}

// Decode decodes a JSON document as Validate wants it (numbers as
// json.Number). An error is an *Error with one violation that says what
// is wrong with the text.
func Decode(data []byte) (any, error) {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, &Error{Violations: []Violation{{Message: "the arguments are not JSON: " + err.Error()}}}
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return nil, &Error{Violations: []Violation{{Message: "the arguments are followed by more than one JSON value"}}}
	}
	return v, nil
}

// Check decodes data and validates it; see Decode and Validate.
func (s *Schema) Check(data []byte, limit int) error {
	v, err := Decode(data)
	if err != nil {
		return err
	}
	return s.Validate(v, limit)
}

// Validate checks v, a decoded JSON value (numbers as json.Number or
// float64), against the schema. It returns nil or an *Error with at most
// limit violations (at least one), ordered by path: a value's own before
// its members' and items', members by name, items by index.
func (s *Schema) Validate(v any, limit int) error {
	err := s.s.Validate(v)
	if err == nil {
		return nil
	}
	var ve *jsonschema.ValidationError
	if !errors.As(err, &ve) {
		return &Error{Violations: []Violation{{Message: err.Error()}}}
	}
	var all []found
	s.collect(ve, v, &all)
	slices.SortStableFunc(all, func(a, b found) int { return compareLocations(a.at, b.at) })
	limit = max(limit, 1)
	e := &Error{}
	for _, f := range all {
		if len(e.Violations) == limit {
			e.More++
			continue
		}
		e.Violations = append(e.Violations, f.v)
	}
	if len(e.Violations) == 0 {
		e.Violations = []Violation{{Message: "does not match the schema"}}
	}
	return e
}

// found is a violation with the location of the value it was reported
// at, for ordering.
type found struct {
	at []string
	v  Violation
}

// compareLocations orders instance locations: a prefix first, then
// tokens compared as numbers when both are, as text otherwise.
func compareLocations(a, b []string) int {
	for i := range min(len(a), len(b)) {
		if a[i] == b[i] {
			continue
		}
		x, errX := strconv.Atoi(a[i])
		y, errY := strconv.Atoi(b[i])
		if errX == nil && errY == nil {
			return x - y
		}
		return strings.Compare(a[i], b[i])
	}
	return len(a) - len(b)
}

// printer renders the library's own messages, for kinds without one here.
var printer = message.NewPrinter(language.English)

// collect adds the leaves of the error tree to out; root is the value
// validated.
func (s *Schema) collect(ve *jsonschema.ValidationError, root any, out *[]found) {
	if len(ve.Causes) > 0 {
		for _, c := range ve.Causes {
			s.collect(c, root, out)
		}
		return
	}
	at := ve.InstanceLocation
	path := pathOf(root, at)
	got := valueAt(root, at)
	// add reports a violation at path, ordered as the value at at plus
	// the tokens under.
	add := func(path string, under []string, format string, args ...any) {
		loc := at
		if len(under) > 0 {
			loc = append(slices.Clip(at), under...)
		}
		*out = append(*out, found{at: loc, v: Violation{Path: path, Message: fmt.Sprintf(format, args...)}})
	}
	switch k := ve.ErrorKind.(type) {
	case *kind.Type:
		want := make([]string, len(k.Want))
		for i, w := range k.Want {
			want[i] = article(w)
		}
		add(path, nil, "want %s, got %s", strings.Join(want, " or "), Describe(got))
	case *kind.Required:
		for _, name := range k.Missing {
			add(JoinPath(path, name), nil, "required")
		}
	case *kind.AdditionalProperties:
		names := slices.Sorted(slices.Values(k.Properties))
		allowed := s.propertyNames(ve.SchemaURL)
		for _, name := range names {
			add(JoinPath(path, name), []string{name}, "unknown member%s", allowed)
		}
	case *kind.Enum:
		want := make([]string, len(k.Want))
		for i, w := range k.Want {
			want[i] = clip.Mark(compact(w), 40)
		}
		add(path, nil, "%s is not one of %s", clip.Mark(compact(got), 40), strings.Join(want, ", "))
	case *kind.Const:
		add(path, nil, "want %s, got %s", clip.Mark(compact(k.Want), 40), clip.Mark(compact(got), 40))
	case *kind.MinLength:
		add(path, nil, "at least %d characters, got %d", k.Want, k.Got)
	case *kind.MaxLength:
		add(path, nil, "at most %d characters, got %d", k.Want, k.Got)
	case *kind.MinItems:
		add(path, nil, "at least %d items, got %d", k.Want, k.Got)
	case *kind.MaxItems:
		add(path, nil, "at most %d items, got %d", k.Want, k.Got)
	case *kind.MinProperties:
		add(path, nil, "at least %d members, got %d", k.Want, k.Got)
	case *kind.MaxProperties:
		add(path, nil, "at most %d members, got %d", k.Want, k.Got)
	case *kind.UniqueItems:
		add(IndexPath(path, k.Duplicates[1]), []string{strconv.Itoa(k.Duplicates[1])}, "repeats item %d (items must be unique)", k.Duplicates[0])
	case *kind.Minimum:
		add(path, nil, "at least %s, got %s", rat(k.Want), number(got))
	case *kind.Maximum:
		add(path, nil, "at most %s, got %s", rat(k.Want), number(got))
	case *kind.ExclusiveMinimum:
		add(path, nil, "more than %s, got %s", rat(k.Want), number(got))
	case *kind.ExclusiveMaximum:
		add(path, nil, "less than %s, got %s", rat(k.Want), number(got))
	case *kind.MultipleOf:
		add(path, nil, "want a multiple of %s, got %s", rat(k.Want), number(got))
	case *kind.Pattern:
		add(path, nil, "%s does not match the pattern %s", clip.Mark(compact(got), 40), clip.Mark(strconv.Quote(k.Want), 60))
	case *kind.FalseSchema:
		add(path, nil, "not allowed")
	default:
		add(path, nil, "%s", ve.ErrorKind.LocalizedString(printer))
	}
}

// propertyNames lists, for a message, the properties of the object
// schema at schemaURL: " (allowed: a, b)", in the schema's order, or ""
// when they cannot be found.
func (s *Schema) propertyNames(schemaURL string) string {
	base, frag, _ := strings.Cut(schemaURL, "#")
	if base != s.loc {
		return ""
	}
	doc := json.RawMessage(s.raw)
	for _, tok := range strings.Split(strings.TrimPrefix(frag, "/"), "/") {
		if tok == "" {
			continue
		}
		tok = strings.ReplaceAll(strings.ReplaceAll(tok, "~1", "/"), "~0", "~")
		var next json.RawMessage
		if i, err := strconv.Atoi(tok); err == nil {
			var list []json.RawMessage
			if json.Unmarshal(doc, &list) != nil || i < 0 || i >= len(list) {
				return ""
			}
			next = list[i]
		} else {
			var obj map[string]json.RawMessage
			if json.Unmarshal(doc, &obj) != nil {
				return ""
			}
			next = obj[tok]
		}
		doc = next
	}
	var obj map[string]json.RawMessage
	if json.Unmarshal(doc, &obj) != nil {
		return ""
	}
	names := keysInOrder(obj["properties"])
	if len(names) == 0 {
		return " (allowed: none)"
	}
	return " (allowed: " + strings.Join(names, ", ") + ")"
}

// keysInOrder returns the member names of a JSON object in the order
// written; nil when raw is not an object.
func keysInOrder(raw json.RawMessage) []string {
	dec := json.NewDecoder(bytes.NewReader(raw))
	if t, err := dec.Token(); err != nil || t != json.Delim('{') {
		return nil
	}
	var names []string
	for dec.More() {
		t, err := dec.Token()
		if err != nil {
			return names
		}
		name, _ := t.(string)
		names = append(names, name)
		var skip json.RawMessage
		if dec.Decode(&skip) != nil {
			return names
		}
	}
	return names
}

// valueAt returns the value at an instance location, nil when there is
// none.
func valueAt(v any, at []string) any {
	for _, tok := range at {
		switch x := v.(type) {
		case map[string]any:
			v = x[tok]
		case []any:
			i, err := strconv.Atoi(tok)
			if err != nil || i < 0 || i >= len(x) {
				return nil
			}
			v = x[i]
		default:
			return nil
		}
	}
	return v
}

// pathOf writes an instance location of root as a path: members joined
// with '.' (or quoted in brackets), items' indices in brackets.
func pathOf(root any, at []string) string {
	path := ""
	v := root
	for _, tok := range at {
		switch x := v.(type) {
		case []any:
			i, err := strconv.Atoi(tok)
			if err == nil && i >= 0 && i < len(x) {
				path, v = IndexPath(path, i), x[i]
				continue
			}
		case map[string]any:
			path, v = JoinPath(path, tok), x[tok]
			continue
		}
		path, v = JoinPath(path, tok), nil
	}
	return path
}

// JoinPath appends a member name to a path: after a '.', or quoted in
// brackets when it is not a plain name.
func JoinPath(path, name string) string {
	if !PlainName(name) {
		q, _ := json.Marshal(name)
		return path + "[" + string(q) + "]"
	}
	if path == "" {
		return name
	}
	return path + "." + name
}

// IndexPath appends an index to a path.
func IndexPath(path string, i int) string {
	return path + "[" + strconv.Itoa(i) + "]"
}

// PlainName reports whether name is written in a path without quotes:
// 1 to 64 letters, digits, '_', '-' and '.'.
func PlainName(name string) bool {
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

// Describe says what a decoded JSON value is, for messages: its type and,
// clipped, the value.
func Describe(v any) string {
	switch x := v.(type) {
	case nil:
		return "null"
	case string:
		return "a string (" + clip.Mark(strconv.Quote(x), 40) + ")"
	case json.Number:
		return "a number (" + clip.Mark(x.String(), 40) + ")"
	case float64:
		return "a number (" + strconv.FormatFloat(x, 'g', -1, 64) + ")"
	case bool:
		return "a boolean (" + strconv.FormatBool(x) + ")"
	case []any:
		return fmt.Sprintf("an array of %d items", len(x))
	case map[string]any:
		return fmt.Sprintf("an object with %d members", len(x))
	}
	return fmt.Sprintf("%T", v)
}

// compact writes a value as compact JSON (a string quoted).
func compact(v any) string {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return fmt.Sprint(v)
	}
	return strings.TrimSuffix(buf.String(), "\n")
}

// number writes a number as given, clipped.
func number(v any) string {
	switch x := v.(type) {
	case json.Number:
		return clip.Mark(x.String(), 40)
	case float64:
		return strconv.FormatFloat(x, 'g', -1, 64)
	}
	return clip.Mark(compact(v), 40)
}

// rat writes a schema's bound as JSON would.
func rat(r *big.Rat) string {
	if r.IsInt() {
		return r.Num().String()
	}
	f, _ := r.Float64()
	return strconv.FormatFloat(f, 'g', -1, 64)
}

// article puts "a" or "an" before a JSON Schema type name.
func article(typ string) string {
	switch typ {
	case "integer", "array", "object":
		return "an " + typ
	}
	return "a " + typ
}
