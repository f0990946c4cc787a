package llm

import (
	"bytes"
	"encoding/json"
	"math"
	"slices"
	"strconv"
	"strings"
	"unicode"
)

// This file is how the offline model fills a tool's arguments from the
// request: the tool's JSON Schema says which tokens fill which property.

// fill makes the arguments of a tool from the request: the required
// properties first, then the optional ones, each in the schema's order. dirs
// are directories that earlier tool results named, for a path the request
// does not give. It returns the required properties it could not fill; the
// arguments are usable only when there are none.
func (q *query) fill(t Tool, dirs []string) (map[string]any, []schemaProp) {
	s := parseSchema(t.Parameters)
	args := map[string]any{}
	f := filler{q: q, tool: t, schema: s, dirs: dirs}
	var missing []schemaProp
	for _, required := range []bool{true, false} {
		for _, p := range s.props {
			if s.required[p.name] != required {
				continue
			}
			v, ok := f.value(p, required)
			if ok {
				args[p.name] = v
			} else if required {
				missing = append(missing, p)
			}
		}
	}
	return args, missing
}

// filler hands out the request's tokens to properties, each token once.
type filler struct {
	q                    *query
	tool                 Tool
	schema               toolSchema
	dirs                 []string
	nextNumber, nextPath int
	nextQuoted, nextDate int
	usedRemainder        bool
	usedWrite            bool // writeText given out
	usedTarget           bool // writeTarget given out
	usedPlace            map[string]bool
}

// writes tells a tool whose name or description says it writes.
func (f *filler) writes() bool {
	name, desc := toolWords(f.tool, f.schema)
	return slices.Contains(name, "write") || slices.Contains(desc, "write")
}

func (f *filler) number() (float64, bool) {
	if f.nextNumber >= len(f.q.numbers) {
		return 0, false
	}
	f.nextNumber++
	return f.q.numbers[f.nextNumber-1], true
}

// text hands out a filename (first, when path), a quoted text, or (when
// loose) the request's remaining words. A path never takes the remaining
// words: "list the files" names no file called "files". A tool that writes
// gets the text and the file of "write TEXT to FILE" as they are written.
func (f *filler) text(path, loose bool) (string, bool) {
	if f.q.writeTarget != "" && f.writes() {
		switch {
		case path && !f.usedTarget:
			f.usedTarget = true
			return f.q.writeTarget, true
		case !path && !f.usedWrite:
			f.usedWrite = true
			return f.q.writeText, true
		}
	}
	if path && f.nextPath < len(f.q.paths) {
		f.nextPath++
		return f.q.paths[f.nextPath-1], true
	}
	if f.nextQuoted < len(f.q.quoted) {
		f.nextQuoted++
		return f.q.quoted[f.nextQuoted-1], true
	}
	if path {
		if len(f.dirs) > 0 && loose && fromDirectory(f.tool) {
			return f.dirs[0], true
		}
		return "", false
	}
	if !path && f.nextPath < len(f.q.paths) && !f.anyPathProperty() {
		f.nextPath++
		return f.q.paths[f.nextPath-1], true
	}
	if loose && !f.usedRemainder {
		f.usedRemainder = true
		if r := f.q.remainder(f.tool, f.schema); r != "" {
			return r, true
		}
	}
	return "", false
}

// fromDirectory tells a tool whose path may be a directory a tool named:
// one that works on a directory and changes nothing (create_directory of
// the allowed directory would create nothing).
func fromDirectory(t Tool) bool { return wantsDirectory(t) && !mutates(t) }

// wantsDirectory tells a tool that works on a directory (list_directory,
// "Find files under a directory"): only its path may be a directory that a
// tool named, never that of a tool that reads or writes one file.
func wantsDirectory(t Tool) bool {
	return slices.Contains(ownWords(t.Name), "directory") || slices.Contains(textWords(t.Description), "directory")
}

func (f *filler) anyPathProperty() bool {
	return slices.ContainsFunc(f.schema.props, func(p schemaProp) bool { return p.typ == "string" && pathish(p.name) })
}

// value fills one property.
func (f *filler) value(p schemaProp, required bool) (any, bool) {
	switch p.typ {
	case "number", "integer":
		n, ok := f.number()
		if !ok || p.typ == "integer" && n != math.Trunc(n) {
			return nil, false
		}
		if p.typ == "integer" {
			return int64(n), true
		}
		return n, true
	case "string":
		if len(p.enum) > 0 {
			return f.enum(p.enum, required)
		}
		switch p.class() {
		case classDate:
			return f.date()
		case classOrigin, classDest:
			places := []string{f.q.origin}
			if p.class() == classDest {
				places = []string{f.q.dest, f.q.place}
			}
			if v, ok := f.placeOf(places...); ok {
				return v, true
			}
			// "move notes.txt to old.txt": files, not places, the first
			// where from and the second where to.
			if i := min(p.class()-classOrigin, 1); len(f.q.paths) == 2 && slices.Contains(does(f.tool), "move") {
				return f.q.paths[i], true
			}
			return nil, false
		case classPlace:
			if v, ok := f.placeOf(f.q.place, f.q.dest, f.q.origin); ok || !required {
				return v, ok
			}
			// "weather Tokyo": a short remainder is the place.
			if r := f.q.remainder(f.tool, f.schema); r != "" && len(strings.Fields(r)) <= 3 && !f.usedRemainder {
				f.usedRemainder = true
				return r, true
			}
			return nil, false
		}
		if s, ok := f.text(pathish(p.name), required); ok {
			return s, true
		}
		if required {
			if n, ok := f.number(); ok {
				return strconv.FormatFloat(n, 'f', -1, 64), true
			}
		}
		return nil, false
	case "boolean":
		if !required {
			return nil, false
		}
		for _, w := range []string{"true", "yes", "enable", "enabled"} {
			if slices.ContainsFunc(f.q.tokens, func(t token) bool { return strings.EqualFold(t.text, w) }) {
				return true, true
			}
		}
		return false, true
	case "array":
		var items []any
		switch p.itemType {
		case "number", "integer":
			for n, ok := f.number(); ok; n, ok = f.number() {
				if p.itemType == "integer" {
					if n != math.Trunc(n) {
						return nil, false
					}
					items = append(items, int64(n))
				} else {
					items = append(items, n)
				}
			}
		case "string":
			for s, ok := f.text(false, required); ok; s, ok = f.text(false, required) {
				items = append(items, s)
			}
		}
		if len(items) == 0 && !required {
			return nil, false
		}
		if items == nil {
			items = []any{}
		}
		return items, true
	case "object":
		if required {
			return map[string]any{}, true
		}
		return nil, false
	case "null":
		return nil, false
	}
	// No usable type: a required property takes what is there.
	switch p.class() {
	case classDate:
		return f.date()
	case classOrigin, classDest, classPlace:
		return f.placeOf(f.q.origin, f.q.dest, f.q.place)
	}
	if !required {
		return nil, false
	}
	if n, ok := f.number(); ok {
		return n, true
	}
	return f.text(pathish(p.name), true)
}

// date hands out the request's dates in order.
func (f *filler) date() (any, bool) {
	if f.nextDate >= len(f.q.dates) {
		return nil, false
	}
	f.nextDate++
	return f.q.dates[f.nextDate-1], true
}

// placeOf hands out the first of places that is known and not yet given to
// another property.
func (f *filler) placeOf(places ...string) (any, bool) {
	for _, p := range places {
		if p != "" && !f.usedPlace[p] {
			if f.usedPlace == nil {
				f.usedPlace = map[string]bool{}
			}
			f.usedPlace[p] = true
			return p, true
		}
	}
	return nil, false
}

// enum picks the value the request names, or else the first one when one is
// required.
func (f *filler) enum(values []any, required bool) (any, bool) {
	for _, v := range values {
		s, ok := v.(string)
		if !ok || s == "" {
			continue
		}
		if slices.ContainsFunc(f.q.tokens, func(t token) bool { return strings.EqualFold(t.text, s) }) ||
			slices.ContainsFunc(f.q.quoted, func(t string) bool { return strings.EqualFold(t, s) }) {
			return s, true
		}
	}
	if required {
		return values[0], true
	}
	return nil, false
}

// toolSchema is what the offline model reads of a JSON Schema.
type toolSchema struct {
	props    []schemaProp // in the order written
	required map[string]bool
}

type schemaProp struct {
	name        string
	typ         string // "" when the schema says none the model can use
	itemType    string // for arrays
	enum        []any
	format      string
	description string
}

// Classes of string properties that take one kind of value only, never
// the request's loose words.
const (
	classText   = iota // anything: quoted text or the remaining words
	classDate          // a date: format date or date-time, named date/day/when, or described YYYY-MM-DD
	classOrigin        // where from: origin, from, departure, source
	classDest          // where to: destination, to, arrival
	classPlace         // a place: city, location, place, town, country, where
)

// class says what kind of value p takes, from its format, name and
// description.
func (p schemaProp) class() int {
	name := strings.ToLower(p.name)
	desc := strings.ToLower(p.description)
	words := strings.FieldsFunc(name, func(r rune) bool { return !unicode.IsLetter(r) })
	has := func(ws ...string) bool {
		return slices.ContainsFunc(words, func(w string) bool { return slices.Contains(ws, w) })
	}
	descStarts := func(ws ...string) bool {
		return slices.ContainsFunc(ws, func(w string) bool { return strings.HasPrefix(desc, w) })
	}
	switch {
	case p.format == "date" || p.format == "date-time" || has("date", "day", "when", "dob") ||
		strings.Contains(desc, "yyyy-mm-dd") || slices.Contains(strings.FieldsFunc(desc, func(r rune) bool { return !unicode.IsLetter(r) }), "date"):
		return classDate
	case has("origin", "from", "departure", "source", "depart") || descStarts("departure", "origin", "from"):
		return classOrigin
	case has("destination", "dest", "to", "arrival", "arrive") || descStarts("arrival", "destination"):
		return classDest
	case has("city", "location", "place", "town", "country", "where", "region") || strings.Contains(desc, "city"):
		return classPlace
	}
	return classText
}

// parseSchema reads the properties of an object schema in the order they
// are written. Anything it cannot read counts as absent.
func parseSchema(raw json.RawMessage) toolSchema {
	s := toolSchema{required: map[string]bool{}}
	var top struct {
		Properties json.RawMessage   `json:"properties"`
		Required   []json.RawMessage `json:"required"`
	}
	if json.Unmarshal(raw, &top) != nil {
		return s
	}
	for _, r := range top.Required {
		var name string
		if json.Unmarshal(r, &name) == nil {
			s.required[name] = true
		}
	}
	dec := json.NewDecoder(bytes.NewReader(top.Properties))
	if tok, err := dec.Token(); err == nil && tok == json.Delim('{') {
		for dec.More() {
			key, err := dec.Token()
			if err != nil {
				break
			}
			var value json.RawMessage
			if err := dec.Decode(&value); err != nil {
				break
			}
			name, _ := key.(string)
			p := schemaProp{name: name}
			var fields map[string]json.RawMessage
			if json.Unmarshal(value, &fields) == nil {
				p.typ = schemaType(fields)
				_ = json.Unmarshal(fields["format"], &p.format)
				_ = json.Unmarshal(fields["description"], &p.description)
				if items := map[string]json.RawMessage{}; json.Unmarshal(fields["items"], &items) == nil {
					p.itemType = schemaType(items)
				}
				_ = json.Unmarshal(fields["enum"], &p.enum)
				if p.typ == "" && len(p.enum) > 0 {
					switch p.enum[0].(type) {
					case string:
						p.typ = "string"
					case float64:
						p.typ = "number"
					case bool:
						p.typ = "boolean"
					}
				}
			}
			if !slices.ContainsFunc(s.props, func(o schemaProp) bool { return o.name == name }) {
				s.props = append(s.props, p)
			}
		}
	}
	// A required property the schema does not describe still needs a value.
	var missing []string
	for name := range s.required {
		if !slices.ContainsFunc(s.props, func(p schemaProp) bool { return p.name == name }) {
			missing = append(missing, name)
		}
	}
	slices.Sort(missing)
	for _, name := range missing {
		s.props = append(s.props, schemaProp{name: name})
	}
	return s
}

// schemaType reads "type" (a name, or a list of names of which the first
// that is not "null" counts), else the type of the first branch of anyOf or
// oneOf that has one.
func schemaType(fields map[string]json.RawMessage) string {
	var one string
	if json.Unmarshal(fields["type"], &one) == nil {
		return one
	}
	var many []string
	if json.Unmarshal(fields["type"], &many) == nil {
		for _, t := range many {
			if t != "null" {
				return t
			}
		}
	}
	for _, key := range []string{"anyOf", "oneOf"} {
		var branches []map[string]json.RawMessage
		if json.Unmarshal(fields[key], &branches) == nil {
			for _, b := range branches {
				if t := schemaType(b); t != "" && t != "null" {
					return t
				}
			}
		}
	}
	return ""
}
