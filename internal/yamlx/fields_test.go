package yamlx

import (
	"reflect"
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"
)

// level is an Unmarshaler: one of three words.
type level string

func (l *level) UnmarshalYAMLAt(n *yaml.Node, path string) error {
	s, err := StrictString(n, path)
	if err == nil && s != "low" && s != "high" {
		return Errorf(n, path, "want low or high, got %s", Describe(n))
	}
	*l = level(s)
	return err
}

type inner struct {
	Host string `yaml:"host"`
	Port int    `yaml:"port"`
}

type common struct {
	Name string `yaml:"name"`
}

type sample struct {
	common
	Count   int               `yaml:"count"`
	Ratio   float64           `yaml:"ratio"`
	On      bool              `yaml:"on"`
	Args    []string          `yaml:"args"`
	Nums    []float64         `yaml:"nums"`
	Env     map[string]string `yaml:"env"`
	Max     *int              `yaml:"max"`
	Level   level             `yaml:"level"`
	Version Text              `yaml:"version"`
	Server  *inner            `yaml:"server"`
	Raw     *yaml.Node        `yaml:"raw"`
	Later   []int             `yaml:"later,node"`
	Ignored string
}

func decodeSample(t *testing.T, doc string, opt FieldOptions) (sample, map[string]*yaml.Node, []error) {
	t.Helper()
	root, err := Decode([]byte(doc), Limits{}, false)
	if err != nil {
		t.Fatalf("Decode(%q): %v", doc, err)
	}
	s := sample{On: true}
	nodes, errs := Fields(root.Content[0], "top", &s, opt)
	return s, nodes, errs
}

func TestFieldsReadsByType(t *testing.T) {
	doc := `name: n
count: 3
ratio: 0.5
on: false
args: [a, b]
nums: [1, 2.5]
env: {A: x}
max: 9
level: high
version: 1.0
server: {host: h, port: 80}
raw: [anything]
later: {left: for the caller}
`
	s, nodes, errs := decodeSample(t, doc, FieldOptions{})
	if len(errs) > 0 {
		t.Fatal(errs)
	}
	want := sample{common: common{Name: "n"}, Count: 3, Ratio: 0.5, Args: []string{"a", "b"}, Nums: []float64{1, 2.5},
		Env: map[string]string{"A": "x"}, Level: "high", Version: "1.0", Server: &inner{Host: "h", Port: 80}}
	if s.Max == nil || *s.Max != 9 {
		t.Errorf("max %v", s.Max)
	}
	if s.Raw == nil || s.Raw.Kind != yaml.SequenceNode || s.Later != nil {
		t.Errorf("raw %v, later %v: want the raw node and later left alone", s.Raw, s.Later)
	}
	s.Max, s.Raw = nil, nil
	if !reflect.DeepEqual(s, want) {
		t.Errorf("got %+v\nwant %+v", s, want)
	}
	if len(nodes) != 13 || nodes["later"] == nil || nodes["later"].Line != 13 {
		t.Errorf("nodes %v", nodes)
	}
}

func TestFieldsReportsEveryProblem(t *testing.T) {
	doc := `count: -1
nam: x
level: medium
server: {host: h, prot: 1}
on: ~
args: [a, 2]
version: [1]
`
	s, nodes, errs := decodeSample(t, doc, FieldOptions{})
	var msgs []string
	for _, err := range errs {
		msgs = append(msgs, err.Error())
	}
	want := []string{
		"line 1: top.count: want a whole number of at least 0, got a number (-1)",
		"line 2: top.nam: unknown key (allowed: name, count, ratio, on, args, nums, env, max, level, version, server, raw, later); did you mean name?",
		`line 3: top.level: want low or high, got a string ("medium")`,
		"line 4: top.server.prot: unknown key (allowed: host, port); did you mean port?",
		"line 5: top.on: want a boolean, got null",
		"line 6: top.args[1]: want a string, got a number (2)",
		"line 7: top.version: want a string, got a list",
	}
	if !reflect.DeepEqual(msgs, want) {
		t.Errorf("errors:\n%s\nwant\n%s", strings.Join(msgs, "\n"), strings.Join(want, "\n"))
	}
	if len(nodes) != 0 || !s.On || s.Server != nil {
		t.Errorf("members read despite errors: %v, %+v", nodes, s)
	}
}

func TestFieldsLenient(t *testing.T) {
	// Null keeps the value set before; a string may be written as a number.
	s, _, errs := decodeSample(t, "name: 5\non: ~\nargs: [1, x]\nmax:\n", FieldOptions{Lenient: true})
	if len(errs) > 0 || s.Name != "5" || !s.On || !reflect.DeepEqual(s.Args, []string{"1", "x"}) || s.Max != nil {
		t.Errorf("%+v, %v", s, errs)
	}
	root, err := Decode([]byte("~"), Limits{}, false)
	if err != nil {
		t.Fatal(err)
	}
	if nodes, errs := Fields(root.Content[0], "", &s, FieldOptions{Lenient: true}); nodes != nil || errs != nil {
		t.Errorf("null mapping: %v, %v", nodes, errs)
	}
	if nodes, errs := Fields(root.Content[0], "k", &s, FieldOptions{}); nodes != nil || len(errs) != 1 || !strings.HasSuffix(errs[0].Error(), "k: want a mapping, got null") {
		t.Errorf("null mapping, strict: %v, %v", nodes, errs)
	}
}

func TestFieldsUnknownHook(t *testing.T) {
	var seen []string
	_, _, errs := decodeSample(t, "x-a: 1\nname: n\nb: 2\n", FieldOptions{Unknown: func(p Pair, path string, known []string) error {
		seen = append(seen, path)
		if strings.HasPrefix(p.Key, "x-") {
			return nil
		}
		return Errorf(p.KeyNode, path, "no %s among %d", p.Key, len(known))
	}})
	if !reflect.DeepEqual(seen, []string{"top.x-a", "top.b"}) || len(errs) != 1 || errs[0].Error() != "line 3: top.b: no b among 13" {
		t.Errorf("seen %v, errors %v", seen, errs)
	}
	// Join writes the key paths.
	_, _, errs = decodeSample(t, "b: 2\n", FieldOptions{Join: func(path, name string) string { return path + "/" + name }})
	if len(errs) != 1 || !strings.HasPrefix(errs[0].Error(), "line 1: top/b: unknown key") {
		t.Errorf("errors %v", errs)
	}
}

func TestFieldsUnsupportedType(t *testing.T) {
	var dst struct {
		C chan int `yaml:"c"`
	}
	root, err := Decode([]byte("c: 1"), Limits{}, false)
	if err != nil {
		t.Fatal(err)
	}
	if _, errs := Fields(root.Content[0], "", &dst, FieldOptions{}); len(errs) != 1 || !strings.Contains(errs[0].Error(), "cannot read into a field of type chan int") {
		t.Errorf("%v", errs)
	}
}

func TestClosest(t *testing.T) {
	known := []string{"participants", "space", "capabilities", "id"}
	for word, want := range map[string]string{
		"participant": "participants", "Space": "space", "capabilites": "capabilities", "spcae": "space",
		"ib": "id", "xyz": "", "partisipantz": "participants", "": "", "spaces": "space", "capabilitiesss": "capabilities", "capabilitiesxxxx": "",
		strings.Repeat("space", 1<<16): "",
	} {
		if got := Closest(word, known); got != want {
			t.Errorf("Closest(%q) = %q, want %q", word, got, want)
		}
	}
}

func TestEditDistance(t *testing.T) {
	for _, tc := range []struct {
		a, b string
		d    int
	}{{"", "", 0}, {"abc", "abc", 0}, {"capabilites", "capabilities", 1}, {"auto_strat", "auto_start", 1}, {"abc", "", 3}, {"colour", "command", 5}} {
		if d := editDistance(tc.a, tc.b); d != tc.d {
			t.Errorf("editDistance(%q, %q) = %d, want %d", tc.a, tc.b, d, tc.d)
		}
	}
}
