package tui

import (
	"cmp"
	"encoding/json"
	"fmt"
	"math"
	"slices"
	"sort"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/mew-protocol/mew/internal/clip"
	"github.com/mew-protocol/mew/internal/termtext"
)

// A form is what an elicitation's requestedSchema asks for, read for a
// person to fill: MCP allows a flat object of strings, numbers, integers,
// booleans and enums, and that is all the form reads. A schema from a
// peer may be anything, so reading it is bounded (size, fields, options)
// and anything else makes the form one that cannot be filled here: the
// person may still decline or cancel.

// Bounds of a form read from a peer's schema.
const (
	maxSchemaBytes  = 64 << 10
	maxFormFields   = 32
	maxEnumOptions  = 64
	maxFieldText    = 4096 // runes a text field takes
	maxFieldLabel   = 60
	maxFieldDescLen = 160
)

// fieldKind is what a field holds.
type fieldKind int

const (
	fieldString fieldKind = iota
	fieldNumber
	fieldInteger
	fieldBool
	fieldEnum
)

// formField is one property of the form, and what the person entered.
type formField struct {
	name     string // the property's name, as the content's member
	label    string // its title (or name), cleaned for the terminal
	desc     string
	kind     fieldKind
	required bool
	options  []string // enum values
	labels   []string // their titles, cleaned
	min, max *float64 // number bounds, or length bounds of a string
	format   string

	text   []rune // a string, number or integer field's text
	choice int    // an enum's option, -1 for none
	on     bool   // a boolean's value
	set    bool   // a boolean or enum has a value (chosen or default)
	err    string // why the value cannot be sent, shown under the field
}

// form is a requested schema read as fields.
type form struct {
	fields []*formField
	// unusable says why the form cannot be filled here ("" when it can).
	unusable string
}

// schemaProp is the part of a property schema a form reads.
type schemaProp struct {
	Type        json.RawMessage   `json:"type"`
	Title       string            `json:"title"`
	Description string            `json:"description"`
	Enum        []json.RawMessage `json:"enum"`
	EnumNames   []string          `json:"enumNames"`
	OneOf       []struct {
		Const json.RawMessage `json:"const"`
		Title string          `json:"title"`
	} `json:"oneOf"`
	Default   json.RawMessage `json:"default"`
	Minimum   *float64        `json:"minimum"`
	Maximum   *float64        `json:"maximum"`
	MinLength *float64        `json:"minLength"`
	MaxLength *float64        `json:"maxLength"`
	Format    string          `json:"format"`
}

// parseForm reads a requested schema; it never fails: a schema it cannot
// read gives a form with unusable set.
func parseForm(raw json.RawMessage) *form {
	f := &form{}
	if len(raw) == 0 || string(raw) == "null" {
		return f // no fields: accept sends an empty object
	}
	if len(raw) > maxSchemaBytes {
		f.unusable = fmt.Sprintf("the form's schema is too large (%d bytes)", len(raw))
		return f
	}
	var top struct {
		Type       string                     `json:"type"`
		Properties map[string]json.RawMessage `json:"properties"`
		Required   []string                   `json:"required"`
	}
	if err := json.Unmarshal(raw, &top); err != nil {
		f.unusable = "the form's schema is not a JSON Schema object"
		return f
	}
	if top.Type != "" && top.Type != "object" {
		f.unusable = "the form's schema is not of type object"
		return f
	}
	if len(top.Properties) > maxFormFields {
		f.unusable = fmt.Sprintf("the form has %d fields; at most %d are shown here", len(top.Properties), maxFormFields)
		return f
	}
	order := propertyOrder(raw, top.Properties)
	for _, name := range order {
		fd, why := parseField(name, top.Properties[name])
		if why != "" {
			f.unusable = "field " + strconv.Quote(termtext.Line(clip.Runes(name, maxFieldLabel))) + " " + why
			f.fields = nil
			return f
		}
		fd.required = slices.Contains(top.Required, name)
		f.fields = append(f.fields, fd)
	}
	return f
}

// propertyOrder is the properties' names in the order the schema lists
// them (a person reads the form in the server's order), falling back to
// sorted names.
func propertyOrder(raw json.RawMessage, props map[string]json.RawMessage) []string {
	var names []string
	var top struct {
		Properties json.RawMessage `json:"properties"`
	}
	if json.Unmarshal(raw, &top) == nil {
		dec := json.NewDecoder(strings.NewReader(string(top.Properties)))
		if t, err := dec.Token(); err == nil && t == json.Delim('{') {
			for dec.More() {
				t, err := dec.Token()
				if err != nil {
					break
				}
				k, _ := t.(string)
				var skip json.RawMessage
				if dec.Decode(&skip) != nil {
					break
				}
				if _, ok := props[k]; ok && !slices.Contains(names, k) {
					names = append(names, k)
				}
			}
		}
	}
	if len(names) != len(props) {
		names = names[:0]
		for k := range props {
			names = append(names, k)
		}
		sort.Strings(names)
	}
	return names
}

// parseField reads one property, or says why it cannot be a field.
func parseField(name string, raw json.RawMessage) (*formField, string) {
	var p schemaProp
	if err := json.Unmarshal(raw, &p); err != nil {
		return nil, "is not a schema MCP allows in a form"
	}
	var typ string
	if len(p.Type) > 0 && json.Unmarshal(p.Type, &typ) != nil {
		return nil, "has a type that is not one word"
	}
	fd := &formField{
		name:   name,
		label:  termtext.Line(clip.Runes(cmp.Or(p.Title, name), maxFieldLabel)),
		desc:   termtext.Line(clip.Runes(p.Description, maxFieldDescLen)),
		format: termtext.Line(clip.Runes(p.Format, 20)),
		choice: -1,
	}
	switch {
	case len(p.Enum) > 0 || len(p.OneOf) > 0:
		if typ != "" && typ != "string" {
			return nil, "is an enum of " + strconv.Quote(termtext.Line(clip.Runes(typ, 20))) + "; forms have enums of strings"
		}
		fd.kind = fieldEnum
		if err := fd.readOptions(&p); err != "" {
			return nil, err
		}
	case typ == "string":
		fd.kind = fieldString
		fd.min, fd.max = p.MinLength, p.MaxLength
	case typ == "number":
		fd.kind = fieldNumber
		fd.min, fd.max = p.Minimum, p.Maximum
	case typ == "integer":
		fd.kind = fieldInteger
		fd.min, fd.max = p.Minimum, p.Maximum
	case typ == "boolean":
		fd.kind = fieldBool
	default:
		return nil, "has type " + strconv.Quote(termtext.Line(clip.Runes(typ, 20))) + ", which a form cannot hold"
	}
	fd.setDefault(p.Default)
	return fd, ""
}

// readOptions reads an enum's values and titles (enum with enumNames, or
// oneOf of const and title).
func (fd *formField) readOptions(p *schemaProp) string {
	n := len(p.Enum) + len(p.OneOf)
	if n > maxEnumOptions {
		return fmt.Sprintf("has %d options; at most %d are shown here", n, maxEnumOptions)
	}
	for i, e := range p.Enum {
		var v string
		if json.Unmarshal(e, &v) != nil {
			return "has an option that is not a string"
		}
		title := v
		if i < len(p.EnumNames) && p.EnumNames[i] != "" {
			title = p.EnumNames[i]
		}
		fd.options = append(fd.options, v)
		fd.labels = append(fd.labels, termtext.Line(clip.Runes(title, maxFieldLabel)))
	}
	for _, o := range p.OneOf {
		var v string
		if json.Unmarshal(o.Const, &v) != nil {
			return "has an option that is not a string"
		}
		fd.options = append(fd.options, v)
		fd.labels = append(fd.labels, termtext.Line(clip.Runes(cmp.Or(o.Title, v), maxFieldLabel)))
	}
	return ""
}

// setDefault fills the field with the schema's default, when it fits.
func (fd *formField) setDefault(raw json.RawMessage) {
	if len(raw) == 0 {
		return
	}
	switch fd.kind {
	case fieldString:
		var s string
		if json.Unmarshal(raw, &s) == nil {
			fd.text = []rune(clip.Runes(s, maxFieldText))
		}
	case fieldNumber, fieldInteger:
		var n json.Number
		if json.Unmarshal(raw, &n) == nil {
			fd.text = []rune(n.String())
		}
	case fieldBool:
		var b bool
		if json.Unmarshal(raw, &b) == nil {
			fd.on, fd.set = b, true
		}
	case fieldEnum:
		var s string
		if json.Unmarshal(raw, &s) == nil {
			for i, o := range fd.options {
				if o == s {
					fd.choice, fd.set = i, true
				}
			}
		}
	}
}

// typeText types r into a text field.
func (fd *formField) typeText(r string) {
	if fd.kind != fieldString && fd.kind != fieldNumber && fd.kind != fieldInteger {
		return
	}
	add := []rune(strings.ReplaceAll(r, "\n", " "))
	if len(fd.text)+len(add) > maxFieldText {
		add = add[:max(maxFieldText-len(fd.text), 0)]
	}
	fd.text = append(fd.text, add...)
	fd.err = ""
}

// backspace deletes the last rune of a text field.
func (fd *formField) backspace() {
	if len(fd.text) > 0 {
		fd.text = fd.text[:len(fd.text)-1]
	}
	fd.err = ""
}

// step moves an enum's choice by d, or sets a boolean (d > 0: on).
func (fd *formField) step(d int) {
	switch fd.kind {
	case fieldEnum:
		if len(fd.options) == 0 {
			return
		}
		n := len(fd.options)
		if fd.choice < 0 {
			fd.choice = 0
			if d < 0 {
				fd.choice = n - 1
			}
		} else {
			fd.choice = (fd.choice + d + n) % n
		}
		fd.set = true
	case fieldBool:
		fd.on, fd.set = d > 0, true
	}
	fd.err = ""
}

// toggle flips a boolean, or moves an enum on.
func (fd *formField) toggle() {
	if fd.kind == fieldBool {
		fd.on, fd.set = !fd.on, true
		fd.err = ""
		return
	}
	fd.step(1)
}

// value reads the field: its JSON value, whether it has one, and why it
// cannot be sent ("" when it can).
func (fd *formField) value() (any, bool, string) {
	switch fd.kind {
	case fieldBool:
		if !fd.set {
			return nil, false, ""
		}
		return fd.on, true, ""
	case fieldEnum:
		if fd.choice < 0 {
			return nil, false, ""
		}
		return fd.options[fd.choice], true, ""
	}
	s := strings.TrimSpace(string(fd.text))
	if s == "" {
		return nil, false, ""
	}
	switch fd.kind {
	case fieldNumber, fieldInteger:
		x, err := strconv.ParseFloat(s, 64)
		if err != nil || math.IsInf(x, 0) || math.IsNaN(x) {
			return nil, true, "not a number"
		}
		if fd.kind == fieldInteger && x != math.Trunc(x) {
			return nil, true, "not a whole number"
		}
		if fd.min != nil && x < *fd.min {
			return nil, true, "at least " + num(*fd.min)
		}
		if fd.max != nil && x > *fd.max {
			return nil, true, "at most " + num(*fd.max)
		}
		// Written anew, so that what Go reads as a number ("0x1p4", "+5")
		// is sent as JSON writes it.
		return json.Number(num(x)), true, ""
	}
	n := float64(utf8.RuneCountInString(s))
	if fd.min != nil && n < *fd.min {
		return nil, true, "at least " + num(*fd.min) + " characters"
	}
	if fd.max != nil && n > *fd.max {
		return nil, true, "at most " + num(*fd.max) + " characters"
	}
	return s, true, ""
}

// content checks every field and returns the filled form; false when a
// field is wrong (each says why in its err).
func (f *form) content() (map[string]any, bool) {
	out := map[string]any{}
	ok := true
	for _, fd := range f.fields {
		v, has, why := fd.value()
		switch {
		case why != "":
			fd.err, ok = why, false
		case !has && fd.required:
			fd.err, ok = "required", false
		case has:
			fd.err = ""
			out[fd.name] = v
		default:
			fd.err = ""
		}
	}
	return out, ok
}

// hint says what a field takes: "integer 1–9", "email".
func (fd *formField) hint() string {
	var what string
	switch fd.kind {
	case fieldNumber:
		what = "number"
	case fieldInteger:
		what = "integer"
	case fieldBool:
		return "Space toggles"
	case fieldEnum:
		return "←/→ choose"
	default:
		what = fd.format
	}
	switch {
	case fd.min != nil && fd.max != nil:
		what += " " + num(*fd.min) + "–" + num(*fd.max)
	case fd.min != nil:
		what += " ≥ " + num(*fd.min)
	case fd.max != nil:
		what += " ≤ " + num(*fd.max)
	}
	if fd.kind == fieldString && (fd.min != nil || fd.max != nil) {
		what += " characters"
	}
	return strings.TrimSpace(what)
}

// shown is the field's value as the form draws it.
func (fd *formField) shown() string {
	switch fd.kind {
	case fieldBool:
		switch {
		case !fd.set:
			return "[ ]  (not set)"
		case fd.on:
			return "[x] yes"
		}
		return "[ ] no"
	case fieldEnum:
		if fd.choice < 0 {
			return "‹ choose ›"
		}
		return "‹ " + fd.labels[fd.choice] + " ›"
	}
	return termtext.Line(string(fd.text))
}

func num(x float64) string { return strconv.FormatFloat(x, 'f', -1, 64) }
