package argcheck_test

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/mew-protocol/mew/internal/argcheck"
)

// trip exercises the keywords tools use: types, required, enum, bounds,
// nested objects and arrays, additionalProperties.
const trip = `{
  "type": "object",
  "required": ["to", "people"],
  "additionalProperties": false,
  "properties": {
    "to": {"type": "string", "minLength": 2, "maxLength": 5},
    "class": {"type": "string", "enum": ["economy", "business"]},
    "nights": {"type": "integer", "minimum": 1, "maximum": 30},
    "budget": {"type": "number", "exclusiveMinimum": 0},
    "pets": {"type": "boolean"},
    "people": {
      "type": "array", "minItems": 1, "maxItems": 3, "uniqueItems": true,
      "items": {
        "type": "object",
        "required": ["name"],
        "properties": {"name": {"type": "string"}, "age": {"type": "integer", "minimum": 0}},
        "additionalProperties": {"type": "string"}
      }
    },
    "legs": {"type": "array", "prefixItems": [{"type": "string"}, {"type": "number"}]},
    "with space": {"type": "object", "minProperties": 1, "maxProperties": 1}
  }
}`

func TestArgCheckValidate(t *testing.T) {
	s, err := argcheck.Compile("trip", json.RawMessage(trip))
	if err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name, args string
		want       []string // the violations; none for valid arguments
	}{
		{"valid", `{"to":"Oslo","people":[{"name":"Ada","age":36,"note":"x"}],"legs":["a",1]}`, nil},
		{"types", `{"to":3,"people":{},"pets":"yes","nights":1.5,"budget":"x"}`, []string{
			`budget: want a number, got a string ("x")`,
			`nights: want an integer, got a number (1.5)`,
			`people: want an array, got an object with 0 members`,
			`pets: want a boolean, got a string ("yes")`,
			`to: want a string, got a number (3)`,
		}},
		{"required", `{}`, []string{"to: required", "people: required"}},
		{"root type", `[1]`, []string{"want an object, got an array of 1 items"}},
		{"enum", `{"to":"Oslo","people":[{"name":"a"}],"class":"first"}`, []string{
			`class: "first" is not one of "economy", "business"`,
		}},
		{"bounds", `{"to":"O","people":[{"name":"a"}],"nights":31,"budget":0}`, []string{
			"budget: more than 0, got 0",
			"nights: at most 30, got 31",
			"to: at least 2 characters, got 1",
		}},
		{"lower bound and length", `{"to":"Lisbon","people":[{"name":"a"}],"nights":0}`, []string{
			"nights: at least 1, got 0",
			"to: at most 5 characters, got 6",
		}},
		{"nested", `{"to":"Oslo","people":[{"name":"a","age":-1},{"age":2,"x":1},{"name":"a","age":-1},{"name":"c"}],"legs":[1,"b"]}`, []string{
			"legs[0]: want a string, got a number (1)",
			`legs[1]: want a number, got a string ("b")`,
			"people: at most 3 items, got 4",
			"people[0].age: at least 0, got -1",
			"people[1].name: required",
			"people[1].x: want a string, got a number (1)",
			"people[2]: repeats item 0 (items must be unique)",
			"people[2].age: at least 0, got -1",
		}},
		{"additionalProperties", `{"to":"Oslo","people":[{"name":"a"}],"zz":1,"a b":2}`, []string{
			`["a b"]: unknown member (allowed: to, class, nights, budget, pets, people, legs, with space)`,
			"zz: unknown member (allowed: to, class, nights, budget, pets, people, legs, with space)",
		}},
		{"members", `{"to":"Oslo","people":[],"with space":{}}`, []string{
			"people: at least 1 items, got 0",
			`["with space"]: at least 1 members, got 0`,
		}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			err := s.Check([]byte(c.args), 50)
			if c.want == nil {
				if err != nil {
					t.Fatalf("valid arguments refused: %v", err)
				}
				return
			}
			var e *argcheck.Error
			if !errors.As(err, &e) {
				t.Fatalf("err = %v, want an *argcheck.Error", err)
			}
			got := make([]string, len(e.Violations))
			for i, v := range e.Violations {
				got[i] = v.String()
			}
			if strings.Join(got, "\n") != strings.Join(c.want, "\n") {
				t.Errorf("violations\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(c.want, "\n"))
			}
			if err.Error() != strings.Join(c.want, "; ") {
				t.Errorf("Error() = %q", err)
			}
		})
	}
}

func TestArgCheckLimitAndDecode(t *testing.T) {
	s, err := argcheck.Compile("t", json.RawMessage(`{"type":"object","additionalProperties":{"type":"string"}}`))
	if err != nil {
		t.Fatal(err)
	}
	err = s.Check([]byte(`{"a":1,"b":2,"c":3,"d":4}`), 2)
	if err == nil || err.Error() != "a: want a string, got a number (1); b: want a string, got a number (2); and 2 more" {
		t.Errorf("limit: %v", err)
	}
	for args, want := range map[string]string{
		`{"a":`:       "the arguments are not JSON: unexpected EOF",
		`{} {}`:       "the arguments are followed by more than one JSON value",
		`{"a":"x"} 1`: "the arguments are followed by more than one JSON value",
	} {
		if err := s.Check([]byte(args), 2); err == nil || err.Error() != want {
			t.Errorf("Check(%s) = %v, want %q", args, err, want)
		}
	}
	// Decoded Go values validate too (float64 numbers).
	if err := s.Validate(map[string]any{"a": 1.5}, 5); err == nil || err.Error() != "a: want a string, got a number (1.5)" {
		t.Errorf("Validate: %v", err)
	}
}

func TestArgCheckCompile(t *testing.T) {
	for raw, want := range map[string]string{
		`{"type":`:                    "not JSON",
		`[1]`:                         "not a JSON object",
		`{"type":"strin"}`:            "is not valid against metaschema",
		`{"$ref":"http://example/s"}`: `external schema "http://example/s" not allowed`,
	} {
		_, err := argcheck.Compile("bad name/with [path]", json.RawMessage(raw))
		if err == nil || !strings.Contains(err.Error(), want) || strings.Contains(err.Error(), "\n") {
			t.Errorf("Compile(%s) = %v, want one line with %q", raw, err, want)
		}
	}
	s, err := argcheck.Compile("ok", json.RawMessage("{\n  \"type\": \"object\"\n}"))
	if err != nil || string(s.JSON()) != `{"type":"object"}` {
		t.Errorf("JSON() = %s, %v", s.JSON(), err)
	}
}
