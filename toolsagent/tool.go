package toolsagent

import (
	"bytes"
	"encoding/json"
	"fmt"

	"github.com/mew-protocol/mew/internal/argcheck"
	"github.com/mew-protocol/mew/protocol"
)

// MaxArgumentBytes bounds the arguments of one call, as JSON.
const MaxArgumentBytes = 1 << 20

// Tool is one tool of a tools agent: what MCP clients see (name,
// description, the parameters' schema) and the prompt template a call
// fills.
type Tool struct {
	// Name is the MCP tool name: letters, digits, '_', '-' and '.', at
	// most 128 bytes.
	Name string `yaml:"name"`
	// Description tells MCP clients (and their models) what the tool does.
	Description string `yaml:"description"`
	// Parameters is the schema of the arguments; its root is an object.
	Parameters *ObjectSchema `yaml:"parameters,node"`
	// Output, when set, is the schema of the result, the MCP tool's
	// outputSchema: the model is asked for one JSON object that fits it,
	// and a call's result carries that object as structured content (see
	// Structured). Its root is an object.
	Output *ObjectSchema `yaml:"output,node"`
	// Prompt is the template: {name} and {description} are the tool's,
	// {param} a call argument; "{{" and "}}" are literal braces.
	Prompt string `yaml:"prompt"`
	// Tags, Examples, InputModes and OutputModes describe the tool as an
	// A2A skill (an agent served with ServeA2A); MCP does not show them.
	// Examples are requests a client might send; the modes are media
	// types, the agent card's defaults when empty.
	Tags        []string `yaml:"tags"`
	Examples    []string `yaml:"examples"`
	InputModes  []string `yaml:"inputModes"`
	OutputModes []string `yaml:"outputModes"`

	tmpl     *template        // parsed Prompt, set by the loader
	compiled *argcheck.Schema // compiled Parameters, set by the loader
	// compiled Output, set by the loader
	outCompiled *argcheck.Schema
}

// InputSchema returns the parameters as JSON Schema, the tool's MCP
// inputSchema.
func (t *Tool) InputSchema() (json.RawMessage, error) {
	params := t.Parameters
	if params == nil {
		params = &ObjectSchema{}
	}
	b, err := params.MarshalJSON()
	if err != nil {
		return nil, fmt.Errorf("toolsagent: tool %s: input schema: %w", t.Name, err)
	}
	return b, nil
}

// Fill checks args (a JSON object; empty or null means none) against the
// parameters and returns the filled prompt. Invalid arguments give an
// *ArgumentError that lists every violation. A parameter that the call
// leaves out takes its default, and without one renders as nothing.
//
// Values are inserted as data: a string as its text, anything else as
// compact JSON, each once, in one pass, so that a value containing
// "{name}" or "{{" is inserted as it is and never expanded.
func (t *Tool) Fill(args json.RawMessage) (string, error) {
	vals, err := t.arguments(args)
	if err != nil {
		return "", err
	}
	return t.render(vals, func(string) string { return "" })
}

// Preview is Fill for someone writing a call: a parameter left out (and
// without a default) shows as its {placeholder}, and the prompt is
// returned even when the arguments are invalid, with the *ArgumentError.
func (t *Tool) Preview(args json.RawMessage) (string, error) {
	vals, argErr := t.arguments(args)
	if vals == nil {
		vals = map[string]json.RawMessage{}
	}
	prompt, err := t.render(vals, func(name string) string { return "{" + name + "}" })
	if err != nil {
		return "", err
	}
	return prompt, argErr
}

// template returns the parsed prompt, parsing it for a Tool built by hand.
func (t *Tool) template() *template {
	if t.tmpl != nil {
		return t.tmpl
	}
	tmpl, _ := parseTemplate(t.Prompt)
	return tmpl
}

// render fills the template with vals; missing gives the text of a
// parameter that has neither a value nor a default.
func (t *Tool) render(vals map[string]json.RawMessage, missing func(string) string) (string, error) {
	params := t.Parameters
	if params == nil {
		params = &ObjectSchema{}
	}
	prompt, err := t.template().render(func(name string) string {
		schema, isParam := params.Property(name)
		if !isParam {
			switch name {
			case "name":
				return t.Name
			case "description":
				return t.Description
			}
			return missing(name)
		}
		if raw, ok := vals[name]; ok {
			return valueText(raw)
		}
		if d := defaultOf(schema); d != nil {
			return valueText(d)
		}
		return missing(name)
	})
	if err != nil {
		return "", fmt.Errorf("toolsagent: tool %s: %w", t.Name, err)
	}
	out, err := t.OutputSchema()
	if err != nil {
		return "", err
	}
	if out != nil {
		prompt += outputInstruction(out)
	}
	return prompt, nil
}

// valueText is how a value appears in a prompt: a string as its text,
// anything else as compact JSON.
func valueText(raw json.RawMessage) string {
	var s string
	if len(raw) > 0 && raw[0] == '"' && json.Unmarshal(raw, &s) == nil {
		return s
	}
	var buf bytes.Buffer
	if err := json.Compact(&buf, raw); err != nil {
		return string(raw)
	}
	return buf.String()
}

// defaultOf returns a schema's default as JSON, or nil.
func defaultOf(s Schema) json.RawMessage {
	var v any
	switch x := s.(type) {
	case *StringSchema:
		if x.Default != nil {
			v = *x.Default
		}
	case *NumberSchema:
		if x.Default != nil {
			v = *x.Default
		}
	case *BooleanSchema:
		if x.Default != nil {
			v = *x.Default
		}
	}
	if v == nil {
		return nil
	}
	b, err := protocol.Marshal(v)
	if err != nil {
		return nil
	}
	return b
}

// arguments decodes and checks a call's arguments. It returns the members
// of the arguments object, and with invalid arguments an *ArgumentError
// (the members are still returned when the arguments are an object).
func (t *Tool) arguments(args json.RawMessage) (map[string]json.RawMessage, error) {
	fail := func(e *argcheck.Error) error {
		return &ArgumentError{Tool: t.Name, Violations: e.Violations, More: e.More}
	}
	args = bytes.TrimSpace(args)
	if len(args) == 0 || string(args) == "null" {
		args = json.RawMessage("{}")
	}
	if len(args) > MaxArgumentBytes {
		return nil, fail(&argcheck.Error{Violations: []Violation{{Message: fmt.Sprintf("the arguments are larger than %d bytes", MaxArgumentBytes)}}})
	}
	v, err := argcheck.Decode(args)
	if err != nil {
		return nil, fail(err.(*argcheck.Error))
	}
	var members map[string]json.RawMessage
	if _, isObject := v.(map[string]any); !isObject {
		return nil, fail(&argcheck.Error{Violations: []Violation{{Message: "the arguments must be a JSON object, got " + argcheck.Describe(v)}}})
	}
	if err := json.Unmarshal(args, &members); err != nil {
		return nil, fail(&argcheck.Error{Violations: []Violation{{Message: "the arguments are not a JSON object: " + err.Error()}}})
	}
	schema, err := t.schema()
	if err != nil {
		return members, err
	}
	if err := schema.Validate(v, maxViolations); err != nil {
		return members, fail(err.(*argcheck.Error))
	}
	return members, nil
}

// schema returns the compiled parameters, compiling them for a Tool built
// by hand.
func (t *Tool) schema() (*argcheck.Schema, error) {
	if t.compiled != nil {
		return t.compiled, nil
	}
	return compileParameters(t.Name, t.Parameters)
}

// compileParameters compiles a tool's parameters for checking arguments.
func compileParameters(name string, params Schema) (*argcheck.Schema, error) {
	if params == nil {
		params = &ObjectSchema{}
	}
	raw, err := params.MarshalJSON()
	if err != nil {
		return nil, fmt.Errorf("toolsagent: tool %s: input schema: %w", name, err)
	}
	s, err := argcheck.Compile(name, raw)
	if err != nil {
		return nil, fmt.Errorf("toolsagent: tool %s: input schema: %w", name, err)
	}
	return s, nil
}
