package yamlx

import (
	"errors"
	"reflect"
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"
)

// value decodes doc, a mapping, and returns the value of its key "v".
func value(t *testing.T, doc string) *yaml.Node {
	t.Helper()
	root, err := Decode([]byte(doc), Limits{}, false)
	if err != nil {
		t.Fatalf("Decode(%q): %v", doc, err)
	}
	pairs, err := StrictMapping(root.Content[0], "")
	if err != nil {
		t.Fatalf("StrictMapping(%q): %v", doc, err)
	}
	for _, p := range pairs {
		if p.Key == "v" {
			return p.Value
		}
	}
	t.Fatalf("%q has no v", doc)
	return nil
}

func TestDescribe(t *testing.T) {
	long := strings.Repeat("x", 50)
	for _, c := range []struct{ doc, want, kind string }{
		{`v: "yes"`, `a string ("yes")`, "a string"},
		{`v: yes`, `a string ("yes")`, "a string"},
		{`v: 5`, `a number (5)`, "a number"},
		{`v: 1.5`, `a number (1.5)`, "a number"},
		{`v: .inf`, `a number (.inf)`, "a number"},
		{`v: true`, `a boolean (true)`, "a boolean"},
		{`v: ~`, `null`, "null"},
		{`v:`, `null`, "null"},
		{`v: 2024-01-02`, `a date (2024-01-02)`, "a date"},
		{`v: [a]`, `a list`, "a list"},
		{`v: {a: 1}`, `a mapping`, "a mapping"},
		{`v: !secret s`, `a value tagged !secret ("s")`, "a value tagged !secret"},
		{`v: !!int "1\u001b[31m"`, `a number ("1\x1b[31m")`, "a number"},
		{"v: " + long, `a string ("` + long[:40] + `"…)`, "a string"},
		{"a: &a hi\nv: *a", `a string ("hi")`, "a string"},
	} {
		n := value(t, c.doc)
		if got := Describe(n); got != c.want {
			t.Errorf("Describe(%q) = %s, want %s", c.doc, got, c.want)
		}
		if got := DescribeKind(n); got != c.kind {
			t.Errorf("DescribeKind(%q) = %s, want %s", c.doc, got, c.kind)
		}
	}
	if got := Describe(nil); got != "nothing" {
		t.Errorf("Describe(nil) = %s", got)
	}
}

// wantError checks that err is an *Error at line and path saying msg.
func wantError(t *testing.T, what string, err error, line int, path, msg string) {
	t.Helper()
	var ye *Error
	if !errors.As(err, &ye) {
		t.Errorf("%s: error %v, want an *Error", what, err)
		return
	}
	if ye.Line != line || ye.Path != path || ye.Err.Error() != msg {
		t.Errorf("%s: line %d, path %q, %q; want line %d, path %q, %q", what, ye.Line, ye.Path, ye.Err, line, path, msg)
	}
}

func TestStrictReaders(t *testing.T) {
	// Each reader refuses null and what is not of its kind, naming what
	// it got.
	null := value(t, "v: ~")
	str := value(t, "v: hello")
	num := value(t, "v: 7")
	for _, c := range []struct {
		name string
		read func(*yaml.Node, string) (any, error)
		ok   *yaml.Node
		want any
		bad  *yaml.Node
		msg  string
	}{
		{"StrictString", func(n *yaml.Node, k string) (any, error) { return StrictString(n, k) }, str, "hello", num, "want a string, got a number (7)"},
		{"StrictBool", func(n *yaml.Node, k string) (any, error) { return StrictBool(n, k) }, value(t, "v: false"), false, str, `want a boolean, got a string ("hello")`},
		{"Number", func(n *yaml.Node, k string) (any, error) { return Number(n, k) }, value(t, "v: -2.5"), -2.5, str, `want a number, got a string ("hello")`},
		{"Count", func(n *yaml.Node, k string) (any, error) { return Count(n, k) }, num, 7, value(t, "v: -1"), "want a whole number of at least 0, got a number (-1)"},
		{"List", func(n *yaml.Node, k string) (any, error) { l, err := List(n, k); return len(l), err }, value(t, "v: [a, b]"), 2, str, `want a list, got a string ("hello")`},
		{"StrictMapping", func(n *yaml.Node, k string) (any, error) { p, err := StrictMapping(n, k); return len(p), err }, value(t, "v: {a: 1}"), 1, num, "want a mapping, got a number (7)"},
		{"StrictStringList", func(n *yaml.Node, k string) (any, error) { return StrictStringList(n, k) }, value(t, "v: [a, b]"), []string{"a", "b"}, str, `want a list, got a string ("hello")`},
		{"StringMap", func(n *yaml.Node, k string) (any, error) { return StringMap(n, k) }, value(t, "v: {A: 1, B: x, C: ~}"), map[string]string{"A": "1", "B": "x", "C": ""}, str, `want a mapping, got a string ("hello")`},
	} {
		got, err := c.read(c.ok, "k")
		if err != nil || !reflect.DeepEqual(got, c.want) {
			t.Errorf("%s: %v, %v; want %v", c.name, got, err, c.want)
		}
		_, err = c.read(c.bad, "k")
		wantError(t, c.name, err, 1, "k", c.msg)
		_, err = c.read(null, "k")
		if err == nil || !strings.HasSuffix(err.Error(), "got null") {
			t.Errorf("%s of null: %v, want an error ending in got null", c.name, err)
		}
	}
}

func TestStrictReadersItems(t *testing.T) {
	_, err := StrictStringList(value(t, "v:\n  - a\n  - 3\n"), "k")
	wantError(t, "StrictStringList", err, 3, "k[1]", "want a string, got a number (3)")
	_, err = StringMap(value(t, "v:\n  a: [x]\n"), "k")
	wantError(t, "StringMap", err, 2, "k.a", "want a string, got a list")
	_, err = Number(value(t, "v: .nan"), "k")
	wantError(t, "Number", err, 1, "k", "want a finite number, got .nan")
	_, err = Count(value(t, "v: 1.0"), "k")
	wantError(t, "Count", err, 1, "k", "want a whole number of at least 0, got a number (1.0)")
}

func TestOptionalReaders(t *testing.T) {
	// Null is absent for Mapping, String, Bool and StringList.
	null := value(t, "v: ~")
	if p, err := Mapping(null, "k"); p != nil || err != nil {
		t.Errorf("Mapping(null) = %v, %v", p, err)
	}
	if s, err := String(null, "k"); s != "" || err != nil {
		t.Errorf("String(null) = %q, %v", s, err)
	}
	if b, err := Bool(null, "k", true); !b || err != nil {
		t.Errorf("Bool(null, true) = %v, %v", b, err)
	}
	if l, err := StringList(null, "k"); l != nil || err != nil {
		t.Errorf("StringList(null) = %v, %v", l, err)
	}
	if s, err := String(value(t, "v: 1.0"), "k"); s != "1.0" || err != nil {
		t.Errorf("String(1.0) = %q, %v", s, err)
	}
	_, err := Bool(value(t, "v: yes"), "k", false)
	wantError(t, "Bool", err, 1, "k", `want a boolean, got a string ("yes")`)
}

func TestKeyPath(t *testing.T) {
	long := strings.Repeat("k", 200)
	for _, c := range []struct{ path, key, want string }{
		{"", "a", "a"},
		{"a", "b", "a.b"},
		{"a", "", `a.""`},
		{"a", "x y", "a.x y"},
		{"a", `say "hi"`, `a."say \"hi\""`},
		{"a", "\x1b[31m", `a."\x1b[31m"`},
		{"a", long, "a." + long[:128] + "…"},
	} {
		if got := JoinKey(c.path, c.key); got != c.want {
			t.Errorf("JoinKey(%q, %q) = %s, want %s", c.path, c.key, got, c.want)
		}
	}
	if got := IndexKey("a.b", 3); got != "a.b[3]" {
		t.Errorf("IndexKey = %s", got)
	}
}
