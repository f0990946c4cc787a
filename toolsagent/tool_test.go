package toolsagent_test

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/mew-protocol/mew/toolsagent"
)

// greet is a tool with every kind of parameter.
func greet(t *testing.T, prompt string) *toolsagent.Tool {
	t.Helper()
	doc := head + fmt.Sprintf(`tools:
  - name: greet
    description: Greets.
    parameters:
      type: object
      properties:
        who: {type: string}
        times: {type: integer, default: 2}
        loud: {type: boolean}
        tags: {type: array, items: {type: string}}
        meta: {type: object}
        mood: {type: string, enum: [calm, glad], default: glad}
      required: [who]
    prompt: %q
`, prompt)
	d, err := toolsagent.Parse([]byte(doc))
	if err != nil {
		t.Fatal(err)
	}
	return d.Tools[0]
}

func TestToolsAgentTemplateFill(t *testing.T) {
	tl := greet(t, "{name}: greet {who} {times} times, loud={loud}, tags={tags}, meta={meta}, {mood}. {{who}} stays; so does }}{{.")
	cases := []struct{ args, want string }{
		{`{"who":"Ada"}`, "greet: greet Ada 2 times, loud=, tags=, meta=, glad. {who} stays; so does }{."},
		{`{"who":"Ada","times":3,"loud":true,"tags":["a","b"],"meta":{"k": [1, 2.50]},"mood":"calm"}`,
			`greet: greet Ada 3 times, loud=true, tags=["a","b"], meta={"k":[1,2.50]}, calm. {who} stays; so does }{.`},
		// null for an optional parameter is a value: it fails its type.
	}
	for _, c := range cases {
		got, err := tl.Fill(json.RawMessage(c.args))
		if err != nil || got != c.want {
			t.Errorf("Fill(%s)\n got %q, %v\nwant %q", c.args, got, err, c.want)
		}
	}
	got, err := tl.Preview(json.RawMessage(`{"times":5}`))
	want := "greet: greet {who} 5 times, loud={loud}, tags={tags}, meta={meta}, glad. {who} stays; so does }{."
	var ae *toolsagent.ArgumentError
	if got != want || !errors.As(err, &ae) || ae.Violations[0].String() != "who: required" {
		t.Errorf("Preview\n got %q, %v\nwant %q and who: required", got, err, want)
	}
	if got, err := tl.Preview(json.RawMessage(`not json`)); !strings.HasPrefix(got, "greet: greet {who} 2 times") || err == nil {
		t.Errorf("Preview of garbage: %q, %v", got, err)
	}
}

// Values are data: a value that looks like a placeholder, or holds
// braces, is inserted once, as it is.
func TestToolsAgentTemplateHostileValues(t *testing.T) {
	tl := greet(t, "A={who} B={mood}")
	for _, who := range []string{"{mood}", "{{mood}}", "}}{{", "{", "{name}", "{who}{who}", "\x00\u202e{mood}", strings.Repeat("{x}", 1000)} {
		args, _ := json.Marshal(map[string]any{"who": who})
		got, err := tl.Fill(args)
		if err != nil || got != "A="+who+" B=glad" {
			t.Errorf("who=%q: %q, %v", who, got, err)
		}
	}

	// Huge values: over MaxArgumentBytes the arguments are refused; a
	// template that repeats a large value past MaxPromptBytes fails.
	big, _ := json.Marshal(map[string]any{"who": strings.Repeat("x", toolsagent.MaxArgumentBytes)})
	var ae *toolsagent.ArgumentError
	if _, err := tl.Fill(big); !errors.As(err, &ae) || !strings.Contains(err.Error(), "larger than 1048576 bytes") {
		t.Errorf("huge arguments: %v", err)
	}
	many := greet(t, strings.Repeat("{who}", 20))
	args, _ := json.Marshal(map[string]any{"who": strings.Repeat("y", 100_000)})
	if _, err := many.Fill(args); !errors.Is(err, toolsagent.ErrPromptTooLong) {
		t.Errorf("repeated large value: %v", err)
	}

	// Deeply nested or malformed arguments are refused, not crashed on.
	deep := `{"who":"a","meta":` + strings.Repeat(`{"a":`, 20000) + `1` + strings.Repeat(`}`, 20000) + `}`
	for _, args := range []string{deep, `{"who":"a"} {}`, `["who"]`, `"who"`, `{"who":"a",}`, `{"who":"\ud800"}`} {
		_, err := tl.Fill(json.RawMessage(args))
		if !errors.As(err, &ae) && args != `{"who":"\ud800"}` {
			t.Errorf("Fill(%.40s…): %v, want an ArgumentError", args, err)
		}
	}
}

func TestToolsAgentTemplateArguments(t *testing.T) {
	d, err := toolsagent.Parse([]byte(head + `tools:
  - name: book
    description: d
    prompt: "{trip}"
    parameters:
      type: object
      additionalProperties: false
      minProperties: 1
      properties:
        trip:
          type: object
          required: [to, people]
          additionalProperties: {type: string}
          properties:
            to: {type: string, minLength: 2, maxLength: 5}
            people:
              type: array
              minItems: 1
              maxItems: 2
              uniqueItems: true
              items:
                type: object
                properties:
                  age: {type: integer, minimum: 0, maximum: 120}
                  seat: {type: string, enum: [aisle, window]}
            when: {type: array, items: [{type: string}, {type: number}]}
`))
	if err != nil {
		t.Fatal(err)
	}
	tl := d.Tools[0]
	args := `{"trip":{"to":"Lisbon","people":[{"age":1.5,"seat":"middle"},{"age":200},{"age":1.0},{"age":1}],"when":[3,"x"],"note":7},"x":1}`
	_, err = tl.Fill(json.RawMessage(args))
	var ae *toolsagent.ArgumentError
	if !errors.As(err, &ae) {
		t.Fatalf("Fill: %v", err)
	}
	got := make([]string, len(ae.Violations))
	for i, v := range ae.Violations {
		got[i] = v.String()
	}
	// Ordered by path: a value's own violations before its members' (by
	// name) and items' (by index).
	want := []string{
		"trip.note: want a string, got a number (7)",
		"trip.people: at most 2 items, got 4",
		"trip.people[0].age: want an integer, got a number (1.5)",
		`trip.people[0].seat: "middle" is not one of "aisle", "window"`,
		"trip.people[1].age: at most 120, got 200",
		"trip.people[3]: repeats item 2 (items must be unique)",
		"trip.to: at most 5 characters, got 6",
		"trip.when[0]: want a string, got a number (3)",
		`trip.when[1]: want a number, got a string ("x")`,
		"x: unknown member (allowed: trip)",
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("violations\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	if _, err := tl.Fill(json.RawMessage(`{}`)); err == nil || !strings.Contains(err.Error(), "at least 1 members, got 0") {
		t.Errorf("minProperties: %v", err)
	}

	// Many violations are cut after 50.
	var b strings.Builder
	b.WriteString(`{"trip":{"to":"ab","people":[{}]}`)
	for i := range 80 {
		fmt.Fprintf(&b, `,"extra%d":1`, i)
	}
	b.WriteString("}")
	_, err = tl.Fill(json.RawMessage(b.String()))
	if !errors.As(err, &ae) || len(ae.Violations) != 50 || ae.More != 30 || !strings.HasSuffix(err.Error(), "; and 30 more") {
		t.Errorf("many violations: %d kept, %d more: %.100v", len(ae.Violations), ae.More, err)
	}
}

// A Tool built by hand (not loaded) works too.
func TestToolsAgentTemplateHandMadeTool(t *testing.T) {
	tl := &toolsagent.Tool{Name: "t", Description: "does t", Prompt: "{name} ({description}): {q}",
		Parameters: &toolsagent.ObjectSchema{Properties: []toolsagent.Property{{Name: "q", Schema: &toolsagent.StringSchema{}}}}}
	got, err := tl.Fill(json.RawMessage(`{"q":"why?"}`))
	if err != nil || got != "t (does t): why?" {
		t.Errorf("%q, %v", got, err)
	}
	schema, err := (&toolsagent.Tool{Name: "empty"}).InputSchema()
	if err != nil || string(schema) != `{"type":"object","properties":{}}` {
		t.Errorf("empty schema %s, %v", schema, err)
	}
}

// Hand-made schemas encode as JSON Schema: "type" first, members in a
// fixed order, an empty (not nil) enum kept, required names once each.
func TestToolsAgentSchemaJSON(t *testing.T) {
	one, zero, no := 1, 0, false
	x, lo := "x", 0.0
	for _, c := range []struct {
		s    toolsagent.Schema
		want string
	}{
		{&toolsagent.StringSchema{SchemaBase: toolsagent.SchemaBase{Title: "T", Description: "d <b>"}, Enum: []string{}, Default: &x,
			Examples: []string{"a"}, MinLength: &one, MaxLength: &one},
			`{"type":"string","title":"T","description":"d <b>","enum":[],"default":"x","examples":["a"],"minLength":1,"maxLength":1}`},
		{&toolsagent.NumberSchema{Integer: true, Enum: []float64{1, 1e21}, Minimum: &lo}, `{"type":"integer","enum":[1,1e+21],"minimum":0}`},
		{&toolsagent.NumberSchema{Default: &lo, Maximum: &lo}, `{"type":"number","default":0,"maximum":0}`},
		{&toolsagent.BooleanSchema{}, `{"type":"boolean"}`},
		{&toolsagent.ArraySchema{Items: &toolsagent.StringSchema{}, MinItems: &zero, UniqueItems: true},
			`{"type":"array","items":{"type":"string"},"minItems":0,"uniqueItems":true}`},
		{&toolsagent.ObjectSchema{Properties: []toolsagent.Property{{Name: "b", Schema: &toolsagent.BooleanSchema{}}, {Name: "a", Schema: &toolsagent.StringSchema{}}},
			Required: []string{"b", "b"}, AdditionalProperties: &no, MaxProperties: &one},
			`{"type":"object","properties":{"b":{"type":"boolean"},"a":{"type":"string"}},"required":["b"],"additionalProperties":false,"maxProperties":1}`},
		{&toolsagent.ObjectSchema{AdditionalSchema: &toolsagent.NumberSchema{}}, `{"type":"object","properties":{},"additionalProperties":{"type":"number"}}`},
	} {
		got, err := c.s.MarshalJSON()
		if err != nil || string(got) != c.want {
			t.Errorf("%T: %s, %v\nwant %s", c.s, got, err, c.want)
		}
	}
}
