package toolsagent

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/mew-protocol/mew/internal/argcheck"
)

// A tool that declares an output schema (Tool.Output, "output" in a
// definition) is a tool whose result is data: MCP lists the schema as the
// tool's outputSchema, and a call's result carries the model's answer as
// structuredContent, checked against the schema, with the same JSON as its
// text (for clients that read only text). The filled prompt ends with the
// schema and asks for one JSON object that fits it; an answer that is not
// such an object fails the call with an *OutputError.

// OutputError is a model's answer that does not fit the tool's output
// schema.
type OutputError struct {
	Tool       string
	Violations []Violation
	// More counts the violations left out of Violations.
	More int
}

func (e *OutputError) Error() string {
	list := &argcheck.Error{Violations: e.Violations, More: e.More}
	return fmt.Sprintf("toolsagent: the answer of %s does not fit its output schema: %s", e.Tool, list)
}

// OutputSchema returns the output schema as JSON Schema, the tool's MCP
// outputSchema; nil when the tool declares none.
func (t *Tool) OutputSchema() (json.RawMessage, error) {
	if t.Output == nil {
		return nil, nil
	}
	b, err := t.Output.MarshalJSON()
	if err != nil {
		return nil, fmt.Errorf("toolsagent: tool %s: output schema: %w", t.Name, err)
	}
	return b, nil
}

// outputSchema returns the compiled output schema (nil without one),
// compiling it for a Tool built by hand.
func (t *Tool) outputSchema() (*argcheck.Schema, error) {
	if t.Output == nil || t.outCompiled != nil {
		return t.outCompiled, nil
	}
	return compileOutput(t.Name, t.Output)
}

// compileOutput compiles an output schema for checking answers.
func compileOutput(name string, out *ObjectSchema) (*argcheck.Schema, error) {
	raw, err := out.MarshalJSON()
	if err != nil {
		return nil, fmt.Errorf("toolsagent: tool %s: output schema: %w", name, err)
	}
	s, err := argcheck.Compile(name+" output", raw)
	if err != nil {
		return nil, fmt.Errorf("toolsagent: tool %s: output schema: %w", name, err)
	}
	return s, nil
}

// outputInstruction is what the filled prompt of a tool with an output
// schema ends with.
func outputInstruction(schema json.RawMessage) string {
	return "\n\nAnswer with one JSON object and nothing else (no prose, no code fence) that fits this JSON Schema:\n" + string(schema)
}

// Structured returns the JSON object of a model's answer to a tool with an
// output schema, compact, after checking it against the schema; nil for a
// tool without one. The answer may be wrapped in a Markdown code fence. An
// answer that is not one JSON object fitting the schema gives an
// *OutputError.
func (t *Tool) Structured(answer string) (json.RawMessage, error) {
	schema, err := t.outputSchema()
	if err != nil || schema == nil {
		return nil, err
	}
	fail := func(e *argcheck.Error) error {
		return &OutputError{Tool: t.Name, Violations: e.Violations, More: e.More}
	}
	text := unfence(answer)
	v, err := argcheck.Decode([]byte(text))
	if err != nil {
		return nil, fail(&argcheck.Error{Violations: []Violation{{Message: "the answer is not one JSON value"}}})
	}
	if _, isObject := v.(map[string]any); !isObject {
		return nil, fail(&argcheck.Error{Violations: []Violation{{Message: "the answer must be a JSON object, got " + argcheck.Describe(v)}}})
	}
	if err := schema.Validate(v, maxViolations); err != nil {
		return nil, fail(err.(*argcheck.Error))
	}
	var buf bytes.Buffer
	if err := json.Compact(&buf, []byte(text)); err != nil {
		return nil, fail(&argcheck.Error{Violations: []Violation{{Message: "the answer is not JSON: " + err.Error()}}})
	}
	return buf.Bytes(), nil
}

// unfence returns text without surrounding space and, when it is one
// Markdown code block (```json ... ```), without the fence.
func unfence(text string) string {
	text = strings.TrimSpace(text)
	if !strings.HasPrefix(text, "```") || !strings.HasSuffix(text, "```") || len(text) < 6 {
		return text
	}
	body := text[3 : len(text)-3]
	if nl := strings.IndexByte(body, '\n'); nl >= 0 && !strings.ContainsAny(body[:nl], "{[\"") {
		body = body[nl+1:] // the info string, such as "json"
	}
	return strings.TrimSpace(body)
}
