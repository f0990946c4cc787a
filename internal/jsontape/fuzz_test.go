package jsontape

import (
	"encoding/json"
	"math/big"
	"strings"
	"testing"
	"unicode/utf8"
)

// FuzzParse checks Parse against encoding/json and the tape's invariants on
// arbitrary input: see checkDifferential. Seeds are the handpicked corpus
// plus the files under testdata/fuzz/FuzzParse.
func FuzzParse(f *testing.F) {
	for _, s := range corpus() {
		f.Add([]byte(s))
	}
	for _, s := range []string{
		`{"protocol":"mew/v0.4","id":"m1","from":"a","to":["b"],"kind":"mcp/request","payload":{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"x","arguments":{}}}}`,
		`[1,-0,0.5,1e5,1E+5,-1.25e-3,123456789012345678901234567890]`,
		`{"a\/b":"\b\f\n\r\t\"\\","\u00e9":"\ud83d\ude00"}`,
		`{"k":{"k":{"k":[[[[{"k":null}]]]]}}}`,
		"{\"\xef\xbf\xbd\":1,\"\\ud800\":2}",
		"\"\xe2\x82\xac\xf0\x9f\x98\x80\x7f\"",
		`{"a":1,"b":2,"c":3,"d":4,"e":5,"f":6,"g":7,"h":8,"i":9,"j":10,"k":11,"l":12,"m":13,"n":14,"o":15,"p":16,"q":17,"\u0071":18}`,
		" \t\r\n[ \t\r\n] \t\r\n",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, in []byte) {
		checkDifferential(t, in)
	})
}

// FuzzAppendUnescaped checks AppendUnescaped against encoding/json on the
// contents of JSON strings, and that it never panics on other bytes.
func FuzzAppendUnescaped(f *testing.F) {
	for _, s := range []string{
		``, `plain`, `\/`, `\"\\\/\b\f\n\r\t`, `\u0000`, `\u00e9`, `\ud83d\ude00`,
		`\ud800`, `\udc00`, `\ud800\u0041`, `\ud800\ud800\udc00`, `\udc00\ud800`, `\ud83d`,
		`\`, `\u12`, `\x`, "caf\xc3\xa9",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, raw []byte) {
		got := AppendUnescaped([]byte("pre"), raw) // must not panic on anything
		quoted := append(append([]byte{'"'}, raw...), '"')
		var tp Tape
		if tp.Parse(quoted) != nil {
			return
		}
		var want string
		if err := json.Unmarshal(quoted, &want); err != nil {
			t.Fatalf("Parse accepts %q, encoding/json: %v", quoted, err)
		}
		if string(got) != "pre"+want {
			t.Fatalf("AppendUnescaped(%q) = %q, encoding/json %q", raw, got[3:], want)
		}
		if !utf8.Valid(got) {
			t.Fatalf("AppendUnescaped(%q) = %q is not valid UTF-8", raw, got[3:])
		}
		if tp.String(0) != want {
			t.Fatalf("String(%q) = %q, want %q", quoted, tp.String(0), want)
		}
	})
}

// FuzzNormalNumber checks that two numbers get the same canonical spelling
// exactly when big.Rat says they are equal.
func FuzzNormalNumber(f *testing.F) {
	for _, seed := range [][2]string{{"1", "1.0"}, {"9007199254740993", "9007199254740992"}, {"-0", "0e5"}, {"120", "1.2e2"}, {"0.001", "1e-3"}, {"1e400", "10e399"}} {
		f.Add(seed[0], seed[1])
	}
	f.Fuzz(func(t *testing.T, a, b string) {
		var ta, tb Tape
		if ta.Parse([]byte(a)) != nil || tb.Parse([]byte(b)) != nil || ta.Nodes[0].Kind != Number || tb.Nodes[0].Kind != Number {
			return
		}
		a, b = string(ta.Raw(0)), string(tb.Raw(0)) // without surrounding white space
		if len(a) > 40 || len(b) > 40 || strings.ContainsAny(a+b, "eE") && (len(a) > 12 || len(b) > 12) {
			t.Skip() // big.Rat builds 10^exponent: keep exponents small
		}
		ra, ok1 := new(big.Rat).SetString(a)
		rb, ok2 := new(big.Rat).SetString(b)
		if !ok1 || !ok2 {
			t.Skip() // big.Rat refuses very large exponents
		}
		got := string(AppendNormalNumber(nil, []byte(a))) == string(AppendNormalNumber(nil, []byte(b)))
		if want := ra.Cmp(rb) == 0; got != want {
			t.Fatalf("%q vs %q: same spelling %v, equal %v", a, b, got, want)
		}
	})
}
