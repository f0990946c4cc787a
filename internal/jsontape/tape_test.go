package jsontape

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/google/go-cmp/cmp"
)

// mustParse parses src into a fresh tape and checks the tape's invariants.
func mustParse(t *testing.T, src string) *Tape {
	t.Helper()
	var tp Tape
	if err := tp.Parse([]byte(src)); err != nil {
		t.Fatalf("Parse(%q): %v", src, err)
	}
	if err := checkTape(&tp); err != nil {
		t.Fatalf("Parse(%q): bad tape: %v", src, err)
	}
	return &tp
}

// checkTape verifies the structural invariants of a successfully parsed tape:
// the root covers the whole document, every subtree ends where its Next says,
// spans nest and follow each other in source order, strings are delimited by
// quotes and carry FlagEscaped exactly when they hold a backslash, keys carry
// FlagKey and nothing else does.
func checkTape(tp *Tape) error {
	if len(tp.Nodes) == 0 {
		return errors.New("no nodes")
	}
	if got := tp.Nodes[0].Next; got != uint32(len(tp.Nodes)) {
		return fmt.Errorf("root Next = %d, want len(Nodes) = %d", got, len(tp.Nodes))
	}
	root := tp.Nodes[0]
	lo, hi := root.Start, root.End
	if root.Kind == String {
		lo, hi = lo-1, hi+1
	}
	if len(bytes.Trim(tp.Src[:lo], " \t\r\n")) != 0 || len(bytes.Trim(tp.Src[hi:], " \t\r\n")) != 0 {
		return fmt.Errorf("root span [%d,%d) leaves non-space bytes outside", lo, hi)
	}
	end, err := checkNode(tp, 0, false, 0, uint32(len(tp.Src)))
	if err != nil {
		return err
	}
	if end != uint32(len(tp.Nodes)) {
		return fmt.Errorf("walk ended at %d, want %d", end, len(tp.Nodes))
	}
	return nil
}

// checkNode checks node i, which must lie within [lo, hi) of the source, and
// returns the index after its subtree as found by walking it.
func checkNode(tp *Tape, i uint32, isKey bool, lo, hi uint32) (uint32, error) {
	if i >= uint32(len(tp.Nodes)) {
		return 0, fmt.Errorf("node %d out of range", i)
	}
	n := tp.Nodes[i]
	if n.Start > n.End || n.Start < lo || n.End > hi {
		return 0, fmt.Errorf("node %d span [%d,%d) not within [%d,%d)", i, n.Start, n.End, lo, hi)
	}
	if (n.Flags&FlagKey != 0) != isKey {
		return 0, fmt.Errorf("node %d: FlagKey = %v, want %v", i, n.Flags&FlagKey != 0, isKey)
	}
	src := tp.Src
	switch n.Kind {
	case String:
		if n.Start == 0 || int(n.End) >= len(src) || src[n.Start-1] != '"' || src[n.End] != '"' {
			return 0, fmt.Errorf("string node %d [%d,%d) not between quotes", i, n.Start, n.End)
		}
		if esc := bytes.IndexByte(tp.Raw(i), '\\') >= 0; esc != (n.Flags&FlagEscaped != 0) {
			return 0, fmt.Errorf("string node %d: FlagEscaped = %v, want %v", i, !esc, esc)
		}
	default:
		if n.Flags != 0 {
			return 0, fmt.Errorf("%v node %d has flags %#x", n.Kind, i, n.Flags)
		}
	}
	if !json.Valid(tp.RawValue(i)) {
		return 0, fmt.Errorf("node %d: RawValue %q is not valid JSON", i, tp.RawValue(i))
	}
	switch n.Kind {
	case Null, False, True, Number, String:
		if n.Next != i+1 {
			return 0, fmt.Errorf("scalar node %d: Next = %d, want %d", i, n.Next, i+1)
		}
		return i + 1, nil
	case Array, Object:
		open, closer := byte('['), byte(']')
		if n.Kind == Object {
			open, closer = '{', '}'
		}
		if n.End-n.Start < 2 || src[n.Start] != open || src[n.End-1] != closer {
			return 0, fmt.Errorf("%v node %d span %q not bracketed", n.Kind, i, src[n.Start:n.End])
		}
		pos := n.Start + 1
		j := i + 1
		for j < n.Next {
			if n.Kind == Object {
				if tp.Nodes[j].Kind != String {
					return 0, fmt.Errorf("object %d: key node %d is %v", i, j, tp.Nodes[j].Kind)
				}
				if _, err := checkNode(tp, j, true, pos, n.End-1); err != nil {
					return 0, err
				}
				pos = tp.Nodes[j].End + 1
				j++
			}
			next, err := checkNode(tp, j, false, pos, n.End-1)
			if err != nil {
				return 0, err
			}
			if next != tp.Nodes[j].Next {
				return 0, fmt.Errorf("node %d: subtree ends at %d, Next = %d", j, next, tp.Nodes[j].Next)
			}
			pos = tp.Nodes[j].End
			if tp.Nodes[j].Kind == String {
				pos++
			}
			j = next
		}
		if j != n.Next {
			return 0, fmt.Errorf("%v node %d: children end at %d, Next = %d", n.Kind, i, j, n.Next)
		}
		return j, nil
	}
	return 0, fmt.Errorf("node %d has kind %v", i, n.Kind)
}

// kinds lists the kinds of the tape's nodes.
func kinds(tp *Tape) []Kind {
	ks := make([]Kind, len(tp.Nodes))
	for i, n := range tp.Nodes {
		ks[i] = n.Kind
	}
	return ks
}

func TestParseTapeNodeByNode(t *testing.T) {
	tests := []struct {
		src   string
		nodes []Node
	}{
		{"null", []Node{{Start: 0, End: 4, Next: 1, Kind: Null}}},
		{" \t\r\ntrue\n ", []Node{{Start: 4, End: 8, Next: 1, Kind: True}}},
		{"false", []Node{{Start: 0, End: 5, Next: 1, Kind: False}}},
		{"-12.5e+3", []Node{{Start: 0, End: 8, Next: 1, Kind: Number}}},
		{`"ab"`, []Node{{Start: 1, End: 3, Next: 1, Kind: String}}},
		{`""`, []Node{{Start: 1, End: 1, Next: 1, Kind: String}}},
		{`"a\nb"`, []Node{{Start: 1, End: 5, Next: 1, Kind: String, Flags: FlagEscaped}}},
		{"[]", []Node{{Start: 0, End: 2, Next: 1, Kind: Array}}},
		{" { } ", []Node{{Start: 1, End: 4, Next: 1, Kind: Object}}},
		{
			// 0 ' ', 1 '{', 3 'a', 6 '[', 7 '1', 9 "true", 13 ']', 16 'b', 17 '\', 21 '{', 23 '}'
			` {"a":[1,true],"b\n":{}} `,
			[]Node{
				{Start: 1, End: 24, Next: 7, Kind: Object},
				{Start: 3, End: 4, Next: 2, Kind: String, Flags: FlagKey},
				{Start: 6, End: 14, Next: 5, Kind: Array},
				{Start: 7, End: 8, Next: 4, Kind: Number},
				{Start: 9, End: 13, Next: 5, Kind: True},
				{Start: 16, End: 19, Next: 6, Kind: String, Flags: FlagKey | FlagEscaped},
				{Start: 21, End: 23, Next: 7, Kind: Object},
			},
		},
		{
			`[[],[[]],{"":null}]`,
			[]Node{
				{Start: 0, End: 19, Next: 7, Kind: Array},
				{Start: 1, End: 3, Next: 2, Kind: Array},
				{Start: 4, End: 8, Next: 4, Kind: Array},
				{Start: 5, End: 7, Next: 4, Kind: Array},
				{Start: 9, End: 18, Next: 7, Kind: Object},
				{Start: 11, End: 11, Next: 6, Kind: String, Flags: FlagKey},
				{Start: 13, End: 17, Next: 7, Kind: Null},
			},
		},
		{
			"[ \"x\" , 0 ,\n{ \"k\" : \"v\" } ]",
			[]Node{
				{Start: 0, End: 27, Next: 6, Kind: Array},
				{Start: 3, End: 4, Next: 2, Kind: String},
				{Start: 8, End: 9, Next: 3, Kind: Number},
				{Start: 12, End: 25, Next: 6, Kind: Object},
				{Start: 15, End: 16, Next: 5, Kind: String, Flags: FlagKey},
				{Start: 21, End: 22, Next: 6, Kind: String},
			},
		},
	}
	for _, tc := range tests {
		tp := mustParse(t, tc.src)
		if diff := cmp.Diff(tc.nodes, tp.Nodes); diff != "" {
			t.Errorf("Parse(%q) nodes (-want +got):\n%s", tc.src, diff)
		}
	}
}

func TestParseValid(t *testing.T) {
	tests := []struct {
		src   string
		kinds []Kind
	}{
		// Scalars at the top level.
		{"null", []Kind{Null}},
		{"true", []Kind{True}},
		{"false", []Kind{False}},
		{"0", []Kind{Number}},
		{"-0", []Kind{Number}},
		{"-0.0", []Kind{Number}},
		{"1e5", []Kind{Number}},
		{"1E+5", []Kind{Number}},
		{"1e-5", []Kind{Number}},
		{"0e0", []Kind{Number}},
		{"0.5", []Kind{Number}},
		{"-123.456E-789", []Kind{Number}},
		{"123456789012345678901234567890123456789012345678901234567890", []Kind{Number}},
		{"1e400", []Kind{Number}},
		{`""`, []Kind{String}},
		{`"plain"`, []Kind{String}},
		{`"\"\\\/\b\f\n\r\t"`, []Kind{String}},
		{`"\u0000\u001f\u00e9\uFFFF\uabcd"`, []Kind{String}},
		{`"\ud83d\ude00"`, []Kind{String}},
		{`"\uD83D\uDE00"`, []Kind{String}},
		{`"\ud800"`, []Kind{String}}, // unpaired surrogate escapes are valid JSON
		{`"\udc00\ud800"`, []Kind{String}},
		{"\"h\xc3\xa9llo \xe2\x82\xac \xf0\x9f\x98\x80\"", []Kind{String}},
		{"\"\xef\xbf\xbd\"", []Kind{String}}, // a literal U+FFFD
		{"\"\x7f\"", []Kind{String}},         // DEL is not a control character in JSON
		{"\"\xf4\x8f\xbf\xbf\"", []Kind{String}},
		// Whitespace everywhere it may go.
		{" \t\n\r 1 \t\n\r ", []Kind{Number}},
		{" [ 1 , 2 ] ", []Kind{Array, Number, Number}},
		{"{ \"a\" : 1 , \"b\" : [ ] }", []Kind{Object, String, Number, String, Array}},
		// Containers.
		{"[]", []Kind{Array}},
		{"{}", []Kind{Object}},
		{"[[]]", []Kind{Array, Array}},
		{"[{}]", []Kind{Array, Object}},
		{`{"":{}}`, []Kind{Object, String, Object}},
		{`[null,true,false,0,"",[],{}]`, []Kind{Array, Null, True, False, Number, String, Array, Object}},
		{`{"a":{"b":{"c":[1,{"d":null}]}}}`, []Kind{Object, String, Object, String, Object, String, Array, Number, Object, String, Null}},
		// The same name in different objects is no duplicate.
		{`{"a":1,"b":{"a":2}}`, []Kind{Object, String, Number, String, Object, String, Number}},
		{`[{"a":1},{"a":2}]`, []Kind{Array, Object, String, Number, Object, String, Number}},
		{`{"a":1,"A":2,"a ":3,"\u0062":4}`, []Kind{Object, String, Number, String, Number, String, Number, String, Number}},
		// A string value equal to a key is no duplicate.
		{`{"a":"a","b":"a"}`, []Kind{Object, String, String, String, String}},
	}
	for _, tc := range tests {
		tp := mustParse(t, tc.src)
		if diff := cmp.Diff(tc.kinds, kinds(tp)); diff != "" {
			t.Errorf("Parse(%q) kinds (-want +got):\n%s", tc.src, diff)
		}
		if !json.Valid([]byte(tc.src)) {
			t.Errorf("test case %q is not valid per encoding/json", tc.src)
		}
	}
}

// bigObject returns an object with n members "k0".."k{n-1}", with extra
// members appended after them.
func bigObject(n int, extra ...string) string {
	var b strings.Builder
	b.WriteByte('{')
	for i := range n {
		if i > 0 {
			b.WriteByte(',')
		}
		fmt.Fprintf(&b, `"k%d":%d`, i, i)
	}
	for _, e := range extra {
		b.WriteByte(',')
		b.WriteString(e)
	}
	b.WriteByte('}')
	return b.String()
}

func nested(open, closer string, depth int) string {
	return strings.Repeat(open, depth) + strings.Repeat(closer, depth)
}

func TestParseInvalid(t *testing.T) {
	const noOffset = -1
	tests := []struct {
		src    string
		err    error
		offset int // noOffset: not checked
	}{
		// Empty documents and stray punctuation.
		{"", ErrSyntax, 0},
		{" \t\r\n", ErrSyntax, 4},
		{"]", ErrSyntax, 0},
		{"}", ErrSyntax, 0},
		{",", ErrSyntax, 0},
		{":", ErrSyntax, 0},
		{"[", ErrSyntax, 1},
		{"{", ErrSyntax, 1},
		{"[1", ErrSyntax, 2},
		{`{"a":1`, ErrSyntax, 6},
		{`{"a":`, ErrSyntax, 5},
		{`{"a"`, ErrSyntax, 4},
		{"[1]]", ErrSyntax, 3},
		{`{"a":1}}`, ErrSyntax, 7},
		{"[}", ErrSyntax, 1},
		{"{]", ErrSyntax, 1},
		{`[1}`, ErrSyntax, 2},
		{`{"a":1]`, ErrSyntax, 6},
		// Trailing data.
		{"{} {}", ErrSyntax, 3},
		{"1 2", ErrSyntax, 2},
		{"[] x", ErrSyntax, 3},
		{"nulls", ErrSyntax, 4},
		{"truex", ErrSyntax, 4},
		{"0x10", ErrSyntax, 1},
		{"\"a\"\"b\"", ErrSyntax, 3},
		{"1\x00", ErrSyntax, 1},
		// Numbers.
		{"01", ErrSyntax, 1},
		{"-01", ErrSyntax, 2},
		{"00", ErrSyntax, 1},
		{"[01]", ErrSyntax, 2},
		{"1.", ErrSyntax, 2},
		{"1.e5", ErrSyntax, 2},
		{".5", ErrSyntax, 0},
		{"[.5]", ErrSyntax, 1},
		{"+1", ErrSyntax, 0},
		{"-", ErrSyntax, 1},
		{"--1", ErrSyntax, 1},
		{"-a", ErrSyntax, 1},
		{"- 1", ErrSyntax, 1},
		{"1e", ErrSyntax, 2},
		{"1e+", ErrSyntax, 3},
		{"1E-", ErrSyntax, 3},
		{"1e+-1", ErrSyntax, 3},
		{"1ee1", ErrSyntax, 2},
		{"1.5.5", ErrSyntax, 3},
		{"NaN", ErrSyntax, 0},
		{"Infinity", ErrSyntax, 0},
		{"-Infinity", ErrSyntax, 1},
		{"\u0661", ErrSyntax, 0}, // ARABIC-INDIC DIGIT ONE
		// Literals.
		{"tru", ErrSyntax, 0},
		{"nul", ErrSyntax, 0},
		{"fals", ErrSyntax, 0},
		{"True", ErrSyntax, 0},
		{"NULL", ErrSyntax, 0},
		{"[t]", ErrSyntax, 1},
		{"undefined", ErrSyntax, 0},
		// Arrays and objects.
		{"[1,]", ErrSyntax, 3},
		{"[,1]", ErrSyntax, 1},
		{"[,]", ErrSyntax, 1},
		{"[1,,2]", ErrSyntax, 3},
		{"[1 2]", ErrSyntax, 3},
		{`["a""b"]`, ErrSyntax, 4},
		{`{"a":1,}`, ErrSyntax, 7},
		{`{,}`, ErrSyntax, 1},
		{`{"a":1,,"b":2}`, ErrSyntax, 7},
		{`{"a" 1}`, ErrSyntax, 5},
		{`{"a"}`, ErrSyntax, 4},
		{`{"a":}`, ErrSyntax, 5},
		{`{"a"::1}`, ErrSyntax, 5},
		{`{"a":1 "b":2}`, ErrSyntax, 7},
		{`{"a"=1}`, ErrSyntax, 4},
		{`{'a':1}`, ErrSyntax, 1},
		{`{a:1}`, ErrSyntax, 1},
		{`{1:2}`, ErrSyntax, 1},
		{`{null:2}`, ErrSyntax, 1},
		{`{[]:2}`, ErrSyntax, 1},
		// Strings.
		{`'a'`, ErrSyntax, 0},
		{`"abc`, ErrSyntax, 4},
		{`"`, ErrSyntax, 1},
		{`"abc\`, ErrSyntax, 4},
		{`"abc\"`, ErrSyntax, 6},
		{"\"a\x01\"", ErrSyntax, 2},
		{"\"\x00\"", ErrSyntax, 1},
		{"\"\x1f\"", ErrSyntax, 1},
		{"\"\t\"", ErrSyntax, 1},
		{"\"\n\"", ErrSyntax, 1},
		{"\"\r\"", ErrSyntax, 1},
		{"{\"a\nb\":1}", ErrSyntax, 3},
		{`"\x"`, ErrSyntax, 1},
		{`"\'"`, ErrSyntax, 1},
		{`"\a"`, ErrSyntax, 1},
		{`"\0"`, ErrSyntax, 1},
		{`"\U0041"`, ErrSyntax, 1},
		{`"ab\ "`, ErrSyntax, 3},
		{"\"\\\x00\"", ErrSyntax, 1},
		{`"\u12"`, ErrSyntax, 1},
		{`"\u"`, ErrSyntax, 1},
		{`"\u12`, ErrSyntax, 1},
		{`"\u12G4"`, ErrSyntax, 1},
		{`"\u-123"`, ErrSyntax, 1},
		{`"\u 123"`, ErrSyntax, 1},
		{`"\ud83d\u"`, ErrSyntax, 7},
		{`["\x"]`, ErrSyntax, 2},
		{`{"\x":1}`, ErrSyntax, 2},
		// Not JSON at all.
		{"/* c */ 1", ErrSyntax, 0},
		{"// c\n1", ErrSyntax, 0},
		{"\xef\xbb\xbf{}", ErrSyntax, 0}, // a byte order mark
		{"\x00", ErrSyntax, 0},
		{"\v1", ErrSyntax, 0},
		{"\f1", ErrSyntax, 0},
		{"\u00a01", ErrSyntax, 0}, // NO-BREAK SPACE is not JSON white space
		{"\xff", ErrSyntax, 0},    // outside a string, any non-ASCII byte is a grammar error
		{"[\xc3\xa9]", ErrSyntax, 1},

		// Invalid UTF-8 in strings.
		{"\"\xff\"", ErrInvalidUTF8, 1},
		{"\"\xfe\"", ErrInvalidUTF8, 1},
		{"\"abc\x80\"", ErrInvalidUTF8, 4},      // lone continuation byte
		{"\"\xc3\"", ErrInvalidUTF8, 1},         // truncated 2-byte sequence
		{"\"\xc3", ErrInvalidUTF8, 1},           // truncated at end of input
		{"\"\xc3a\"", ErrInvalidUTF8, 1},        // lead byte followed by ASCII
		{"\"\xe2\x82\"", ErrInvalidUTF8, 1},     // truncated 3-byte sequence
		{"\"\xf0\x9f\x98\"", ErrInvalidUTF8, 1}, // truncated 4-byte sequence
		{"\"\xc0\xaf\"", ErrInvalidUTF8, 1},     // overlong '/'
		{"\"\xc1\xbf\"", ErrInvalidUTF8, 1},     // overlong
		{"\"\xe0\x80\xaf\"", ErrInvalidUTF8, 1}, // overlong '/'
		{"\"\xf0\x80\x80\xaf\"", ErrInvalidUTF8, 1},
		{"\"\xc0\x80\"", ErrInvalidUTF8, 1},             // overlong NUL
		{"\"\xed\xa0\x80\"", ErrInvalidUTF8, 1},         // UTF-8 encoded surrogate U+D800
		{"\"\xed\xbf\xbf\"", ErrInvalidUTF8, 1},         // UTF-8 encoded surrogate U+DFFF
		{"\"\xf4\x90\x80\x80\"", ErrInvalidUTF8, 1},     // above U+10FFFF
		{"\"\xf5\x80\x80\x80\"", ErrInvalidUTF8, 1},     // invalid lead byte
		{"\"\xf8\x88\x80\x80\x80\"", ErrInvalidUTF8, 1}, // 5-byte form
		{"{\"\xff\":1}", ErrInvalidUTF8, 2},             // in a key
		{"[\"ok\",\"\xe9t\xe9\"]", ErrInvalidUTF8, 7},   // Latin-1
		{"\"\\n\xff\"", ErrInvalidUTF8, 3},              // after an escape

		// Duplicate keys.
		{`{"a":1,"a":2}`, ErrDuplicateKey, 7},
		{`{"a":1,"a":1}`, ErrDuplicateKey, 7},
		{`{"a":1,"b":2,"a":3}`, ErrDuplicateKey, 13},
		{`{"":1,"":2}`, ErrDuplicateKey, 6},
		{`{"a":1,"\u0061":2}`, ErrDuplicateKey, 7},
		{`{"\u0061":1,"a":2}`, ErrDuplicateKey, 12},
		{`{"\u0061":1,"\u0061":2}`, ErrDuplicateKey, 12},
		{`{"a/b":1,"a\/b":2}`, ErrDuplicateKey, 9},
		{`{"\u00e9":1,"` + "\xc3\xa9" + `":2}`, ErrDuplicateKey, 12},
		{`{"\ud83d\ude00":1,"` + "\xf0\x9f\x98\x80" + `":2}`, ErrDuplicateKey, 18},
		{`{"a":{"b":1,"c":{},"b":2}}`, ErrDuplicateKey, 19},
		{`{"x":[{"a":1},{"a":1,"a":1}]}`, ErrDuplicateKey, 21},
		{`[{"a":1},{"a":1,"a":1}]`, ErrDuplicateKey, 16},
		{`{"a":{"a":{"a":1,"a":2}}}`, ErrDuplicateKey, 17},
		// The duplicate is found before the value is read.
		{`{"a":1,"a":`, ErrDuplicateKey, 7},
		// More than smallObject members: the set path.
		{bigObject(100, `"k0":0`), ErrDuplicateKey, noOffset},
		{bigObject(100, `"k99":0`), ErrDuplicateKey, noOffset},
		{bigObject(100, `"k5\u0030":0`), ErrDuplicateKey, noOffset},
		{bigObject(100, `"\u006b7":0`), ErrDuplicateKey, noOffset},
		{bigObject(16, `"k0":0`), ErrDuplicateKey, noOffset},  // 17th member: first on the set path
		{bigObject(16, `"k15":0`), ErrDuplicateKey, noOffset}, // 17th member
		{bigObject(15, `"k3":0`), ErrDuplicateKey, noOffset},  // 16th member: the last linear one
		{bigObject(17, `"k16":0`), ErrDuplicateKey, noOffset}, // the 17th key, added to the set
		{bigObject(20, `"x":0`, `"y":0`, `"x":0`), ErrDuplicateKey, noOffset},
		{`{"\u006b0":0,` + bigObject(40)[1:], ErrDuplicateKey, noOffset}, // escaped first key, duplicate on the set path
		{`[` + bigObject(30) + `,` + bigObject(30, `"k29":1`) + `]`, ErrDuplicateKey, noOffset},
		// Unpaired surrogates unescape to U+FFFD, as encoding/json does, so a
		// recipient using it would see these keys as one.
		{`{"\ud800":1,"\udc00":2}`, ErrDuplicateKey, 12},
		{`{"\ud800":1,"` + "\xef\xbf\xbd" + `":2}`, ErrDuplicateKey, 12},

		// Depth.
		{nested("[", "]", DefaultMaxDepth+1), ErrDepth, DefaultMaxDepth},
		{nested(`{"a":`, "}", DefaultMaxDepth+1), ErrDepth, 5 * DefaultMaxDepth},
		{nested("[", "", DefaultMaxDepth+1), ErrDepth, DefaultMaxDepth}, // found before the missing brackets
		{nested("[", "]", 100000), ErrDepth, DefaultMaxDepth},
		{strings.Repeat(`[{"a":`, 257), ErrDepth, 512 * 3},
	}
	for _, tc := range tests {
		var tp Tape
		err := tp.Parse([]byte(tc.src))
		name := tc.src
		if len(name) > 60 {
			name = name[:60] + "..."
		}
		if !errors.Is(err, tc.err) {
			t.Errorf("Parse(%q) = %v, want %v", name, err, tc.err)
			continue
		}
		var se *SyntaxError
		if !errors.As(err, &se) {
			t.Errorf("Parse(%q) = %T, want *SyntaxError", name, err)
			continue
		}
		if tc.offset != noOffset && se.Offset != tc.offset {
			t.Errorf("Parse(%q): offset %d, want %d (%v)", name, se.Offset, tc.offset, err)
		}
		if se.Offset < 0 || se.Offset > len(tc.src) {
			t.Errorf("Parse(%q): offset %d outside the input", name, se.Offset)
		}
		if tc.err == ErrSyntax && json.Valid([]byte(tc.src)) {
			t.Errorf("test case %q is valid per encoding/json but expects ErrSyntax", name)
		}
	}
}

func TestDuplicateKeyOffsetOnSetPath(t *testing.T) {
	src := bigObject(100, `"k4\u0032":0`)
	var tp Tape
	err := tp.Parse([]byte(src))
	var se *SyntaxError
	if !errors.As(err, &se) || se.Err != ErrDuplicateKey {
		t.Fatalf("Parse = %v, want ErrDuplicateKey", err)
	}
	want := strings.LastIndex(src, `"k4\u0032"`)
	if se.Offset != want {
		t.Errorf("offset %d, want %d", se.Offset, want)
	}
	if !strings.Contains(se.Error(), `"k42"`) {
		t.Errorf("error %q does not name the unescaped key", se.Error())
	}
}

func TestNoDuplicateOnSetPath(t *testing.T) {
	// Many members, some with escaped names, none repeated.
	var b strings.Builder
	b.WriteByte('{')
	for i := range 200 {
		if i > 0 {
			b.WriteByte(',')
		}
		if i%3 == 0 {
			fmt.Fprintf(&b, `"\u006b%d":%d`, i, i)
		} else {
			fmt.Fprintf(&b, `"k%d":{"k%d":%d}`, i, i, i)
		}
	}
	b.WriteByte('}')
	tp := mustParse(t, b.String())
	if got := tp.Len(0); got != 200 {
		t.Errorf("Len = %d, want 200", got)
	}
	for _, k := range []string{"k0", "k3", "k17", "k199"} {
		if _, ok := tp.Lookup(0, k); !ok {
			t.Errorf("Lookup(%q) not found", k)
		}
	}
}

// mixed nests arrays and objects to depth d, with shallower siblings.
func mixed(d int) string {
	switch {
	case d == 0:
		return "0"
	case d%2 == 1:
		return "[1," + mixed(d-1) + "]"
	default:
		return `{"a":[],"b":` + mixed(d-1) + "}"
	}
}

func TestDepth(t *testing.T) {
	tests := []struct {
		maxDepth int
		depth    int
		ok       bool
	}{
		{0, DefaultMaxDepth, true},
		{0, DefaultMaxDepth + 1, false},
		{-1, DefaultMaxDepth, true},
		{-1, DefaultMaxDepth + 1, false},
		{1, 1, true},
		{1, 2, false},
		{2, 2, true},
		{2, 3, false},
		{3, 3, true},
		{3, 4, false},
		{1000, 1000, true},
		{1000, 1001, false},
	}
	shapes := map[string]func(int) string{
		"arrays":  func(d int) string { return nested("[", "]", d) },
		"objects": func(d int) string { return nested(`{"k":`, "}", d) },
		"mixed":   mixed,
	}
	for _, tc := range tests {
		for name, shape := range shapes {
			src := shape(tc.depth)
			if name == "objects" {
				src = strings.Replace(src, "}", "0}", 1)
				src = strings.Replace(src, ":}", ":0}", 1)
			}
			tp := Tape{MaxDepth: tc.maxDepth}
			err := tp.Parse([]byte(src))
			if !tc.ok {
				if !errors.Is(err, ErrDepth) {
					t.Errorf("MaxDepth=%d, %d levels of %s: %v, want ErrDepth", tc.maxDepth, tc.depth, name, err)
				}
				continue
			}
			if err != nil {
				t.Errorf("MaxDepth=%d, %d levels of %s: %v", tc.maxDepth, tc.depth, name, err)
				continue
			}
			if got := depthOf(&tp, 0); got != tc.depth {
				t.Errorf("%s: depth %d, want %d", name, got, tc.depth)
			}
			if err := checkTape(&tp); err != nil {
				t.Errorf("MaxDepth=%d, %d levels of %s: %v", tc.maxDepth, tc.depth, name, err)
			}
		}
	}
}

// depthOf returns the nesting depth of node i: 0 for a scalar, 1 for a
// container of scalars.
func depthOf(tp *Tape, i uint32) int {
	n := tp.Nodes[i]
	if n.Kind != Array && n.Kind != Object {
		return 0
	}
	d := 0
	for j := i + 1; j < n.Next; j = tp.Nodes[j].Next {
		if n.Kind == Object {
			j++ // the value
		}
		d = max(d, depthOf(tp, j))
	}
	return d + 1
}

func TestSyntaxError(t *testing.T) {
	var tp Tape
	err := tp.Parse([]byte(`{"a":1,}`))
	var se *SyntaxError
	if !errors.As(err, &se) {
		t.Fatalf("Parse = %v, want *SyntaxError", err)
	}
	if se.Unwrap() != ErrSyntax {
		t.Errorf("Unwrap = %v", se.Unwrap())
	}
	if msg := se.Error(); !strings.HasPrefix(msg, "invalid JSON at offset 7") {
		t.Errorf("Error() = %q", msg)
	}
	if msg := (&SyntaxError{Offset: 3, Err: ErrDepth}).Error(); msg != "nesting too deep at offset 3" {
		t.Errorf("Error() without detail = %q", msg)
	}
	for _, sentinel := range []error{ErrDepth, ErrDuplicateKey, ErrInvalidUTF8, ErrTooLarge} {
		if errors.Is(err, sentinel) {
			t.Errorf("syntax error also matches %v", sentinel)
		}
	}
}

func TestKindString(t *testing.T) {
	want := map[Kind]string{
		Invalid: "invalid", Null: "null", False: "false", True: "true",
		Number: "number", String: "string", Array: "array", Object: "object",
		Kind(8): "kind(8)", Kind(255): "kind(255)",
	}
	for k, s := range want {
		if got := k.String(); got != s {
			t.Errorf("Kind(%d).String() = %q, want %q", uint8(k), got, s)
		}
	}
}

// TestReuse parses a sequence of documents, good and bad, with one tape and
// checks each result against a fresh tape.
func TestReuse(t *testing.T) {
	docs := []string{
		bigObject(40, `"x":[`+bigObject(20)+`]`),
		`{"a":1,"a":2}`,
		nested("[", "]", 600),
		`[1,2`,
		`{"a":{"b":[1,2,{"c":"\u00e9"}]}}`,
		bigObject(20, `"k3":1`),
		`"x"`,
		`{"k0":0,"k1":1}`,
		bigObject(30),
		"",
		`[]`,
	}
	var reused Tape
	for round := range 2 {
		for _, d := range docs {
			var fresh Tape
			errFresh := fresh.Parse([]byte(d))
			errReused := reused.Parse([]byte(d))
			if fmt.Sprint(errFresh) != fmt.Sprint(errReused) {
				t.Errorf("round %d %.40q: reused error %v, fresh %v", round, d, errReused, errFresh)
			}
			if errFresh == nil {
				if diff := cmp.Diff(fresh.Nodes, reused.Nodes); diff != "" {
					t.Errorf("round %d %.40q: nodes differ (-fresh +reused):\n%s", round, d, diff)
				}
			}
		}
	}
}

func TestParseNilAndReusedSource(t *testing.T) {
	var tp Tape
	if err := tp.Parse(nil); !errors.Is(err, ErrSyntax) {
		t.Errorf("Parse(nil) = %v", err)
	}
	if err := tp.Parse([]byte("[1]")); err != nil {
		t.Fatal(err)
	}
	if len(tp.Nodes) != 2 || string(tp.Src) != "[1]" {
		t.Errorf("after Parse: %d nodes, Src %q", len(tp.Nodes), tp.Src)
	}
	// A sub-slice of a larger buffer: nothing past len may be read.
	buf := []byte(`[1]]]]]`)
	if err := tp.Parse(buf[:3]); err != nil {
		t.Errorf("Parse of a prefix: %v", err)
	}
	buf = []byte(`"abc"`)
	if err := tp.Parse(buf[:4]); !errors.Is(err, ErrSyntax) {
		t.Errorf("Parse of an unterminated prefix: %v", err)
	}
}

// ---- accessors ----

func TestText(t *testing.T) {
	tests := []struct {
		src  string // a JSON string
		want string
	}{
		{`""`, ""},
		{`"abc"`, "abc"},
		{`"a\"b"`, `a"b`},
		{`"\\"`, `\`},
		{`"\/"`, "/"},
		{`"\b\f\n\r\t"`, "\b\f\n\r\t"},
		{`"\u0041\u00e9\u20ac"`, "Aé€"},
		{`"\ud83d\ude00!"`, "😀!"},
		{`"\u0000"`, "\x00"},
		{`"\ud800"`, "\ufffd"},
		{"\"caf\xc3\xa9\\n\"", "café\n"},
	}
	for _, tc := range tests {
		tp := mustParse(t, tc.src)
		if got := string(tp.Text(0)); got != tc.want {
			t.Errorf("Text(%s) = %q, want %q", tc.src, got, tc.want)
		}
		if got := tp.String(0); got != tc.want {
			t.Errorf("String(%s) = %q, want %q", tc.src, got, tc.want)
		}
		if !tp.TextEquals(0, tc.want) {
			t.Errorf("TextEquals(%s, %q) = false", tc.src, tc.want)
		}
		if tp.TextEquals(0, tc.want+"x") || (tc.want != "" && tp.TextEquals(0, tc.want[:len(tc.want)-1])) {
			t.Errorf("TextEquals(%s) matches a different string", tc.src)
		}
		if tc.src != `""` && tp.TextEquals(0, tc.src[1:len(tc.src)-1]) && strings.Contains(tc.src, `\`) {
			t.Errorf("TextEquals(%s) matches the escaped source", tc.src)
		}
		var want string
		if err := json.Unmarshal([]byte(tc.src), &want); err != nil || want != tc.want {
			t.Errorf("encoding/json decodes %s to %q, %v; test expects %q", tc.src, want, err, tc.want)
		}
	}
}

func TestTextAliasing(t *testing.T) {
	tp := mustParse(t, `["plain","a\nb","c\td"]`)
	plain := tp.Text(1)
	if &plain[0] != &tp.Src[tp.Nodes[1].Start] {
		t.Error("Text of an unescaped string is not a slice of the source")
	}
	s1 := tp.String(2)
	first := tp.Text(2)
	if string(first) != "a\nb" {
		t.Fatalf("Text(2) = %q", first)
	}
	second := tp.Text(3)
	if string(second) != "c\td" {
		t.Fatalf("Text(3) = %q", second)
	}
	// The scratch buffer behind first may now hold "c\td": a caller that
	// needs the text past the next call copies it, as String does.
	_ = first
	if s1 != "a\nb" {
		t.Errorf("String copy changed to %q", s1)
	}
	if string(plain) != "plain" {
		t.Errorf("unescaped Text changed to %q", plain)
	}
}

func TestLookup(t *testing.T) {
	src := `{"jsonrpc":"2.0","m\u0065thod":"tools/call","params":{"name":"x","a\"b":1,"":2},"id":7,"nested":{"id":8},"esc\\":null}`
	tp := mustParse(t, src)
	tests := []struct {
		obj   uint32
		key   string
		found bool
		raw   string // RawValue of the result
	}{
		{0, "jsonrpc", true, `"2.0"`},
		{0, "method", true, `"tools/call"`},
		{0, `m\u0065thod`, false, ""},
		{0, "id", true, "7"},
		{0, "esc\\", true, "null"},
		{0, `esc\\`, false, ""},
		{0, "name", false, ""}, // nested members are not found
		{0, "absent", false, ""},
		{0, "", false, ""},
		{0, "Method", false, ""},
		{0, "jsonrp", false, ""},
		{0, "jsonrpc ", false, ""},
	}
	for _, tc := range tests {
		v, ok := tp.Lookup(tc.obj, tc.key)
		if ok != tc.found {
			t.Errorf("Lookup(%q) found = %v, want %v", tc.key, ok, tc.found)
			continue
		}
		if ok && string(tp.RawValue(v)) != tc.raw {
			t.Errorf("Lookup(%q) = %q, want %q", tc.key, tp.RawValue(v), tc.raw)
		}
		if !ok && v != 0 {
			t.Errorf("Lookup(%q) not found but returned %d", tc.key, v)
		}
	}
	params, ok := tp.Lookup(0, "params")
	if !ok || tp.Nodes[params].Kind != Object {
		t.Fatalf("Lookup(params) = %d, %v", params, ok)
	}
	for key, raw := range map[string]string{"name": `"x"`, `a"b`: "1", "": "2"} {
		v, ok := tp.Lookup(params, key)
		if !ok || string(tp.RawValue(v)) != raw {
			t.Errorf("params.Lookup(%q) = %q, %v; want %q", key, tp.RawValue(v), ok, raw)
		}
	}
	nestedObj, _ := tp.Lookup(0, "nested")
	if v, ok := tp.Lookup(nestedObj, "id"); !ok || string(tp.Raw(v)) != "8" {
		t.Errorf("nested.id = %q, %v", tp.Raw(v), ok)
	}

	empty := mustParse(t, `{}`)
	if _, ok := empty.Lookup(0, ""); ok {
		t.Error("Lookup in {} found a member")
	}
	// Skipping a member whose value is a container.
	tp = mustParse(t, `{"x":{"b":1,"c":[{"b":3}]},"b":2}`)
	if v, ok := tp.Lookup(0, "b"); !ok || string(tp.Raw(v)) != "2" {
		t.Errorf("Lookup(b) = %q, %v; want 2", tp.Raw(v), ok)
	}
}

// BUG: Lookup on a node that is not an object walks the array's elements
// as if they were (key, value) pairs: it can return an element as the
// "value" of a member, or index past the tape and panic.
func TestLookupNonObject(t *testing.T) {
	tests := []string{
		`["name","admin"]`, // Lookup(0, "name") returns the element "admin"
		`["a"]`,            // Lookup(0, "a") returns an index past the tape
		`["b"]`,            // Lookup(0, "a") panics: index out of range
		`[1,"name",2]`,
		`"name"`,
		`1`,
		`null`,
	}
	for _, src := range tests {
		tp := mustParse(t, src)
		for _, key := range []string{"name", "a", "1"} {
			func() {
				defer func() {
					if r := recover(); r != nil {
						t.Errorf("BUG: Lookup(%s, %q) on a %v panics: %v", src, key, tp.Nodes[0].Kind, r)
					}
				}()
				if v, ok := tp.Lookup(0, key); ok {
					t.Errorf("BUG: Lookup(%s, %q) on a %v = %d, true; want not found", src, key, tp.Nodes[0].Kind, v)
				}
			}()
		}
	}
}

func TestRaw(t *testing.T) {
	src := ` {"s":"a\nb","n":-1.5e3,"t":true,"f":false,"z":null,"a":[ 1 , 2 ],"o":{ }} `
	tp := mustParse(t, src)
	want := map[string][2]string{ // key: {Raw, RawValue}
		"s": {`a\nb`, `"a\nb"`},
		"n": {"-1.5e3", "-1.5e3"},
		"t": {"true", "true"},
		"f": {"false", "false"},
		"z": {"null", "null"},
		"a": {"[ 1 , 2 ]", "[ 1 , 2 ]"},
		"o": {"{ }", "{ }"},
	}
	for key, w := range want {
		v, ok := tp.Lookup(0, key)
		if !ok {
			t.Fatalf("Lookup(%q) failed", key)
		}
		if got := string(tp.Raw(v)); got != w[0] {
			t.Errorf("Raw(%s) = %q, want %q", key, got, w[0])
		}
		if got := string(tp.RawValue(v)); got != w[1] {
			t.Errorf("RawValue(%s) = %q, want %q", key, got, w[1])
		}
	}
	if got := string(tp.RawValue(0)); got != strings.TrimSpace(src) {
		t.Errorf("RawValue(root) = %q", got)
	}
	if got := string(tp.Raw(1)); got != "s" {
		t.Errorf("Raw(key) = %q", got)
	}
	if got := string(tp.RawValue(1)); got != `"s"` {
		t.Errorf("RawValue(key) = %q", got)
	}
}

func TestFloat(t *testing.T) {
	tests := []struct {
		src  string
		want float64
		err  error
	}{
		{"0", 0, nil},
		{"-0", math.Copysign(0, -1), nil},
		{"1", 1, nil},
		{"1e5", 1e5, nil},
		{"1E+5", 1e5, nil},
		{"1e-5", 1e-5, nil},
		{"0.5", 0.5, nil},
		{"-123.456", -123.456, nil},
		{"9007199254740993", 9007199254740992, nil},
		{"1e400", math.Inf(1), strconv.ErrRange},
		{"-1e400", math.Inf(-1), strconv.ErrRange},
	}
	for _, tc := range tests {
		tp := mustParse(t, tc.src)
		got, err := tp.Float(0)
		if !errors.Is(err, tc.err) {
			t.Errorf("Float(%s) error = %v, want %v", tc.src, err, tc.err)
		}
		if got != tc.want || math.Signbit(got) != math.Signbit(tc.want) {
			t.Errorf("Float(%s) = %v, want %v", tc.src, got, tc.want)
		}
	}
}

func TestFloatErrorDoesNotAliasSource(t *testing.T) {
	// Float hands ParseFloat a view of the source; an error must not keep it.
	tp := mustParse(t, "1e400")
	_, err := tp.Float(0)
	var ne *strconv.NumError
	if !errors.As(err, &ne) {
		t.Fatalf("Float(1e400) = %v, want *strconv.NumError", err)
	}
	copy(tp.Src, "99999")
	if ne.Num != "1e400" {
		t.Errorf("NumError.Num = %q after the source changed, want 1e400", ne.Num)
	}
}

func TestLen(t *testing.T) {
	tests := []struct {
		src  string
		want int
	}{
		{"[]", 0},
		{"{}", 0},
		{"[1]", 1},
		{"[[1,2,3],{}]", 2},
		{`{"a":[1,2],"b":{"c":{}}}`, 2},
		{bigObject(100), 100},
		{"1", 0},
		{`"abc"`, 0},
		{"null", 0},
	}
	for _, tc := range tests {
		tp := mustParse(t, tc.src)
		if got := tp.Len(0); got != tc.want {
			t.Errorf("Len(%s) = %d, want %d", tc.src, got, tc.want)
		}
	}
}

// pairEqual parses `[a,b]` and reports Equal of the two elements.
func pairEqual(t *testing.T, a, b string) bool {
	t.Helper()
	tp := mustParse(t, "["+a+","+b+"]")
	return tp.Equal(1, tp.Nodes[1].Next)
}

func TestEqual(t *testing.T) {
	tests := []struct {
		a, b  string
		equal bool
	}{
		{"null", "null", true},
		{"true", "true", true},
		{"false", "false", true},
		{"true", "false", false},
		{"null", "false", false},
		{"0", "false", false},
		{`""`, "null", false},
		{"[]", "{}", false},
		{`"1"`, "1", false},
		{`"true"`, "true", false},
		{"[1]", "1", false},
		// Numbers compare by value.
		{"1", "1", true},
		{"1", "1.0", true},
		{"1", "1e0", true},
		{"1.0", "1e0", true},
		{"1", "10e-1", true},
		{"1", "0.1e1", true},
		{"100", "1E2", true},
		{"100", "1e+2", true},
		{"0", "-0", true},
		{"0", "0e10", true},
		{"0.5", "5e-1", true},
		{"1", "2", false},
		{"1", "-1", false},
		{"1", "1.0000001", false},
		{"1e400", "1e400", true},
		// Strings compare after unescaping.
		{`"a"`, `"a"`, true},
		{`"a"`, `"\u0061"`, true},
		{`"\u0061"`, `"\u0061"`, true},
		{`"\u0061"`, `"a"`, true},
		{`"a/b"`, `"a\/b"`, true},
		{`"\n"`, `"\u000a"`, true},
		{`"\u00e9"`, "\"\xc3\xa9\"", true},
		{`"\ud83d\ude00"`, "\"\xf0\x9f\x98\x80\"", true},
		{`"a"`, `"b"`, false},
		{`"a"`, `"A"`, false},
		{`"a"`, `"a "`, false},
		{`"\n"`, `"n"`, false},
		{`"\u0061"`, `"b"`, false},
		{`""`, `"\u0000"`, false},
		// Arrays are ordered.
		{"[]", "[]", true},
		{"[1,2]", "[1,2]", true},
		{"[1,2]", "[1.0, 2e0]", true},
		{"[1,2]", "[2,1]", false},
		{"[1]", "[1,1]", false},
		{"[1,1]", "[1]", false},
		{"[]", "[[]]", false},
		{"[[1,[2]],3]", "[[1,[2]],3]", true},
		{"[[1,[2]],3]", "[[1,[3]],3]", false},
		// Objects are not.
		{"{}", "{}", true},
		{`{"a":1,"b":2}`, `{"b":2,"a":1}`, true},
		{`{"a":1,"b":2}`, `{"b":2.0,"\u0061":1e0}`, true},
		{`{"a":1,"b":[1,{"c":"x"}]}`, `{"b":[1,{"c":"\u0078"}],"a":1}`, true},
		{`{"a":1}`, `{"a":1,"b":2}`, false},
		{`{"a":1,"b":2}`, `{"a":1}`, false},
		{`{"a":1,"b":2}`, `{"a":1,"c":2}`, false},
		{`{"a":1,"b":2}`, `{"a":1,"b":3}`, false},
		{`{"a":null}`, `{}`, false},
		{`{"a":{}}`, `{"a":[]}`, false},
		{`{"a":{"b":1}}`, `{"a":{"b":1,"c":1}}`, false},
		{bigObject(40), bigObject(40), true},
		{bigObject(40), bigObject(39, `"k39":40`), false},
	}
	for _, tc := range tests {
		if got := pairEqual(t, tc.a, tc.b); got != tc.equal {
			t.Errorf("Equal(%s, %s) = %v, want %v", tc.a, tc.b, got, tc.equal)
		}
		if got := pairEqual(t, tc.b, tc.a); got != tc.equal {
			t.Errorf("Equal(%s, %s) = %v, want %v (symmetry)", tc.b, tc.a, got, tc.equal)
		}
	}
	// Every node equals itself, keys included.
	tp := mustParse(t, `{"a":[1,"x",{"b\n":null}],"c":1e400}`)
	for i := range tp.Nodes {
		if !tp.Equal(uint32(i), uint32(i)) {
			t.Errorf("node %d (%s) not equal to itself", i, tp.RawValue(uint32(i)))
		}
	}
}

// BUG: Equal compares numbers through float64, so distinct numbers that
// round to the same float64 are "equal", and equal numbers outside the
// float64 range are not.
func TestEqualNumbersExact(t *testing.T) {
	tests := []struct {
		a, b  string
		equal bool
	}{
		{"9007199254740993", "9007199254740992", false}, // 2^53+1 vs 2^53
		{"18446744073709551617", "18446744073709551616", false},
		{"0.1", "0.10000000000000000001", false},
		{"1e-400", "0", false},
		{"1e-400", "2e-400", false},
		{"1e400", "10e399", true},
		{"1e400", "1.0e400", true},
		{"-1e400", "-10e399", true},
	}
	for _, tc := range tests {
		if got := pairEqual(t, tc.a, tc.b); got != tc.equal {
			t.Errorf("BUG: Equal(%s, %s) = %v, want %v", tc.a, tc.b, got, tc.equal)
		}
	}
}

func TestAppendUnescaped(t *testing.T) {
	tests := []string{
		``,
		`plain`,
		`\/`,
		`a\/b`,
		`\"\\\/\b\f\n\r\t`,
		`\u0000`,
		`\u001F\u007f\u0080`,
		`\u00e9\u00E9`,
		`\u20ac`,
		`\uffff\ufffe\ufffd`,
		`\ud83d\ude00`,
		`\uD83D\uDE00`,
		`\udbff\udfff`,
		`\ud800\udc00`,
		`\ud800`,
		`\udc00`,
		`\udfff`,
		`x\ud800y`,
		`\ud800\u0041`,
		`\ud800\ud800`,
		`\ud800\ud800\udc00`,
		`\udc00\ud800`,
		`\ud83d\ude00\ud83d`,
		`\ud800\n`,
		`\ud800\\udc00`,
		`\ud800\/`,
		`\ud83d`,
		"caf\xc3\xa9 \\u00e9 \xf0\x9f\x98\x80",
		`\\u0041`,
		`\\\\`,
		`a\tb\nc`,
	}
	for _, raw := range tests {
		var want string
		if err := json.Unmarshal([]byte(`"`+raw+`"`), &want); err != nil {
			t.Fatalf("encoding/json rejects %q: %v", raw, err)
		}
		if got := AppendUnescaped(nil, []byte(raw)); string(got) != want {
			t.Errorf("AppendUnescaped(%q) = %q, want %q", raw, got, want)
		}
		if got := AppendUnescaped([]byte("pre"), []byte(raw)); string(got) != "pre"+want {
			t.Errorf("AppendUnescaped(pre, %q) = %q, want %q", raw, got, "pre"+want)
		}
		// Through a tape.
		tp := mustParse(t, `"`+raw+`"`)
		if got := tp.String(0); got != want {
			t.Errorf("String(%q) = %q, want %q", raw, got, want)
		}
		if !utf8.ValidString(want) {
			t.Errorf("%q unescapes to invalid UTF-8", raw)
		}
	}
}

func TestAppendUnescapedMalformed(t *testing.T) {
	// AppendUnescaped documents that its input is validated; it must still
	// not panic or lose bytes on content it was not meant to see.
	for _, raw := range []string{`\`, `a\`, `\u`, `\u1`, `\u12`, `\u123`, `\uZZZZ`, `\ud800\u12`, `\ud800\`, `\x`} {
		got := AppendUnescaped(nil, []byte(raw))
		if len(got) == 0 {
			t.Errorf("AppendUnescaped(%q) = %q", raw, got)
		}
	}
}

// ---- differential against encoding/json ----

// sentinelOf classifies a Parse error into its sentinel.
func sentinelOf(err error) error {
	for _, s := range []error{ErrSyntax, ErrDepth, ErrDuplicateKey, ErrInvalidUTF8, ErrTooLarge} {
		if errors.Is(err, s) {
			return s
		}
	}
	return nil
}

// problems reports, for a document encoding/json considers valid, whether it
// has a duplicate key (names compared as encoding/json decodes them) and
// whether it nests deeper than maxDepth.
func problems(src []byte, maxDepth int) (dup, deep bool, err error) {
	dec := json.NewDecoder(bytes.NewReader(src))
	dec.UseNumber() // a float64 would fail on 1e400
	type level struct {
		object bool
		keys   map[string]bool
		isKey  bool // the next token in this object is a name
	}
	var stack []level
	for {
		tok, err := dec.Token()
		if err == io.EOF {
			return dup, deep, nil
		}
		if err != nil {
			return dup, deep, err
		}
		valueDone := func() {
			if n := len(stack); n > 0 && stack[n-1].object {
				stack[n-1].isKey = true
			}
		}
		switch v := tok.(type) {
		case json.Delim:
			switch v {
			case '[', '{':
				if n := len(stack); n > 0 && stack[n-1].object {
					stack[n-1].isKey = false
				}
				stack = append(stack, level{object: v == '{', keys: map[string]bool{}, isKey: true})
				if len(stack) > maxDepth {
					deep = true
				}
			default:
				stack = stack[:len(stack)-1]
				valueDone()
			}
		case string:
			if n := len(stack); n > 0 && stack[n-1].object && stack[n-1].isKey {
				if stack[n-1].keys[v] {
					dup = true
				}
				stack[n-1].keys[v] = true
				stack[n-1].isKey = false
				continue
			}
			valueDone()
		default:
			valueDone()
		}
	}
}

// toValue converts node i to what encoding/json decodes with UseNumber.
func toValue(tp *Tape, i uint32) any {
	n := tp.Nodes[i]
	switch n.Kind {
	case Null:
		return nil
	case True:
		return true
	case False:
		return false
	case Number:
		return json.Number(tp.Raw(i))
	case String:
		return tp.String(i)
	case Array:
		s := []any{}
		for e := i + 1; e < n.Next; e = tp.Nodes[e].Next {
			s = append(s, toValue(tp, e))
		}
		return s
	case Object:
		m := map[string]any{}
		for k := i + 1; k < n.Next; k = tp.Nodes[k+1].Next {
			m[tp.String(k)] = toValue(tp, k+1)
		}
		return m
	}
	panic(fmt.Sprintf("node %d has kind %v", i, n.Kind))
}

// dirtyDoc leaves a tape with a deep stack, a large object's key set and
// escaped scratch text, to show that Parse resets what matters.
var dirtyDoc = []byte(`[[[{"\u0041":"\n",` + bigObject(30)[1:] + `,{"z":[[[[`)

// checkDifferential checks Parse on src against encoding/json and the tape
// invariants. It is shared by the table test and the fuzz target.
func checkDifferential(t testing.TB, src []byte) {
	t.Helper()
	var tp Tape
	err := tp.Parse(src)
	valid := json.Valid(src)

	// A reused tape agrees with a fresh one.
	var reused Tape
	_ = reused.Parse(dirtyDoc)
	_ = reused.Text(4) // the key "\u0041"; nodes 0-2 are arrays, 3 the object
	errReused := reused.Parse(src)
	if fmt.Sprint(err) != fmt.Sprint(errReused) {
		t.Fatalf("Parse(%q): fresh %v, reused %v", src, err, errReused)
	}

	if err != nil {
		var se *SyntaxError
		if !errors.As(err, &se) {
			t.Fatalf("Parse(%q) = %T %v, want *SyntaxError", src, err, err)
		}
		if se.Offset < 0 || se.Offset > len(src) {
			t.Fatalf("Parse(%q): offset %d outside the input", src, se.Offset)
		}
		s := sentinelOf(err)
		if s == nil || s == ErrTooLarge {
			t.Fatalf("Parse(%q) = %v: unexpected error", src, err)
		}
		switch s {
		case ErrInvalidUTF8:
			if utf8.Valid(src) {
				t.Fatalf("Parse(%q) = %v, but the input is valid UTF-8", src, err)
			}
			if r, size := utf8.DecodeRune(src[se.Offset:]); r != utf8.RuneError || size != 1 {
				t.Fatalf("Parse(%q) = %v, but the bytes at the offset are valid UTF-8", src, err)
			}
		case ErrDepth:
			if bytes.Count(src, []byte("["))+bytes.Count(src, []byte("{")) <= DefaultMaxDepth {
				t.Fatalf("Parse(%q) = %v with too few brackets", src, err)
			}
		}
		if valid {
			dup, deep, perr := problems(src, DefaultMaxDepth)
			if perr != nil {
				t.Fatalf("encoding/json cannot tokenize %q: %v", src, perr)
			}
			badUTF8 := !utf8.Valid(src)
			ok := (s == ErrDuplicateKey && dup) || (s == ErrInvalidUTF8 && badUTF8) || (s == ErrDepth && deep)
			if !ok {
				t.Fatalf("Parse(%q) = %v, but encoding/json accepts it (dup=%v deep=%v badUTF8=%v)", src, err, dup, deep, badUTF8)
			}
		}
		return
	}

	if !valid {
		t.Fatalf("Parse(%q) succeeded, encoding/json rejects it", src)
	}
	if !utf8.Valid(src) {
		t.Fatalf("Parse(%q) accepted invalid UTF-8", src)
	}
	if dup, deep, perr := problems(src, DefaultMaxDepth); dup || deep || perr != nil {
		t.Fatalf("Parse(%q) succeeded but encoding/json sees dup=%v deep=%v err=%v", src, dup, deep, perr)
	}
	if !slices.Equal(tp.Nodes, reused.Nodes) {
		t.Fatalf("Parse(%q): reused tape differs: fresh %v, reused %v", src, tp.Nodes, reused.Nodes)
	}
	if err := checkTape(&tp); err != nil {
		t.Fatalf("Parse(%q): %v", src, err)
	}

	// The whole document decodes as encoding/json decodes it.
	dec := json.NewDecoder(bytes.NewReader(src))
	dec.UseNumber()
	var want any
	if err := dec.Decode(&want); err != nil {
		t.Fatalf("encoding/json cannot decode %q: %v", src, err)
	}
	// reflect.DeepEqual, not cmp.Diff: the latter is very slow on deep nesting.
	if got := toValue(&tp, 0); !reflect.DeepEqual(want, got) {
		t.Fatalf("Parse(%q): value differs: encoding/json %#v, tape %#v", src, want, got)
	}

	for i := range tp.Nodes {
		i := uint32(i)
		n := tp.Nodes[i]
		switch n.Kind {
		case String:
			var s string
			if err := json.Unmarshal(tp.RawValue(i), &s); err != nil {
				t.Fatalf("node %d %q: %v", i, tp.RawValue(i), err)
			}
			if got := tp.Text(i); string(got) != s {
				t.Fatalf("node %d %q: Text = %q, encoding/json %q", i, tp.RawValue(i), got, s)
			}
			if !tp.TextEquals(i, s) {
				t.Fatalf("node %d %q: TextEquals(%q) = false", i, tp.RawValue(i), s)
			}
		case Number:
			if _, err := tp.Float(i); err != nil && !errors.Is(err, strconv.ErrRange) {
				t.Fatalf("node %d %q: Float: %v", i, tp.Raw(i), err)
			}
		case Object:
			for k := i + 1; k < n.Next; k = tp.Nodes[k+1].Next {
				v, ok := tp.Lookup(i, tp.String(k))
				if !ok || v != k+1 {
					t.Fatalf("node %d: Lookup(%q) = %d, %v; want %d", i, tp.String(k), v, ok, k+1)
				}
			}
			if m, ok := want.(map[string]any); ok && i == 0 && tp.Len(0) != len(m) {
				t.Fatalf("Len = %d, encoding/json has %d members", tp.Len(0), len(m))
			}
		case Array:
			if s, ok := want.([]any); ok && i == 0 && tp.Len(0) != len(s) {
				t.Fatalf("Len = %d, encoding/json has %d elements", tp.Len(0), len(s))
			}
		}
		if !tp.Equal(i, i) {
			t.Fatalf("node %d %q not Equal to itself", i, tp.RawValue(i))
		}
	}

	// The document equals its re-encoding by encoding/json, which sorts
	// members and escapes differently but keeps numbers as written.
	again, err := json.Marshal(want)
	if err != nil {
		t.Fatalf("encoding/json cannot re-encode %q: %v", src, err)
	}
	pair := Tape{MaxDepth: DefaultMaxDepth + 1}
	doc := append(append(append(append([]byte("["), src...), ','), again...), ']')
	if err := pair.Parse(doc); err != nil {
		t.Fatalf("Parse(%q): %v", doc, err)
	}
	if !pair.Equal(1, pair.Nodes[1].Next) {
		t.Fatalf("%q not Equal to its re-encoding %q", src, again)
	}

	// A tighter MaxDepth accepts exactly the documents that fit.
	d := depthOf(&tp, 0)
	for _, limit := range []int{1, 2, 3, 8} {
		small := Tape{MaxDepth: limit}
		err := small.Parse(src)
		switch {
		case d <= limit && err != nil:
			t.Fatalf("Parse(%q) with MaxDepth %d (depth %d): %v", src, limit, d, err)
		case d > limit && !errors.Is(err, ErrDepth):
			t.Fatalf("Parse(%q) with MaxDepth %d (depth %d): %v, want ErrDepth", src, limit, d, err)
		}
	}
}

// corpus returns handpicked documents, valid and not.
func corpus() []string {
	return []string{
		"", " ", "null", "true", "false", "0", "-0", "1", "-1", "1.5", "1e5", "1E+5", "1e-5",
		"0.5", "123456789012345678901234567890", "1e400", "-1e-400",
		`""`, `"x"`, `"\u0000"`, `"\ud800"`, `"\ud83d\ude00"`, `"\"\\\/\b\f\n\r\t"`,
		"\"\xf0\x9f\x98\x80\"", "\"\xff\"", "\"\xc3\"", "\"\xed\xa0\x80\"", "\"\xc0\xaf\"",
		"[]", "{}", "[[]]", `{"a":1}`, `{"a":1,"a":2}`, `{"a":1,"\u0061":2}`, `{"a":{"b":1,"b":2}}`,
		`{"\ud800":1,"\udc00":2}`, `{"a":[1,2,{"b":null}],"c":"d"}`,
		"01", "1.", ".5", "+1", "-", "[1,]", `{"a":1,}`, `{"a" 1}`, `{'a':1}`, `{a:1}`, "tru",
		"\"a\x01\"", `"\x"`, `"\u12"`, "{} {}", "]", "[", "{",
		nested("[", "]", 512), nested("[", "]", 513), nested(`{"a":`, "}", 513),
		bigObject(17), bigObject(100), bigObject(100, `"k1\u0032":0`), bigObject(16, `"k0":1`),
		`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"read_file","arguments":{"path":"/etc/passwd"}}}`,
	}
}

// randomJSON writes a random valid JSON value with random white space,
// escapes and numbers; object names repeat now and then.
func randomJSON(r *rand.Rand, b *bytes.Buffer, depth int) {
	ws := func() {
		for r.IntN(4) == 0 {
			b.WriteByte(" \t\r\n"[r.IntN(4)])
		}
	}
	ws()
	defer ws()
	k := r.IntN(10)
	if depth > 6 && k >= 7 {
		k = r.IntN(7)
	}
	switch k {
	case 0:
		b.WriteString([]string{"null", "true", "false"}[r.IntN(3)])
	case 1, 2:
		randomNumber(r, b)
	case 3, 4, 5, 6:
		randomString(r, b)
	case 7, 8:
		b.WriteByte('[')
		n := r.IntN(5)
		for i := range n {
			if i > 0 {
				b.WriteByte(',')
			}
			randomJSON(r, b, depth+1)
		}
		if n == 0 {
			ws()
		}
		b.WriteByte(']')
	default:
		b.WriteByte('{')
		n := r.IntN(6)
		if r.IntN(8) == 0 {
			n = 17 + r.IntN(10)
		}
		for i := range n {
			if i > 0 {
				b.WriteByte(',')
			}
			ws()
			if r.IntN(3) == 0 {
				randomString(r, b)
			} else {
				// Distinct-looking names, some escaped, duplicates possible.
				fmt.Fprintf(b, `"k%d"`, r.IntN(3*n+1))
			}
			ws()
			b.WriteByte(':')
			randomJSON(r, b, depth+1)
		}
		if n == 0 {
			ws()
		}
		b.WriteByte('}')
	}
}

func randomNumber(r *rand.Rand, b *bytes.Buffer) {
	if r.IntN(3) == 0 {
		b.WriteByte('-')
	}
	if r.IntN(4) == 0 {
		b.WriteByte('0')
	} else {
		b.WriteByte(byte('1' + r.IntN(9)))
		for range r.IntN(25) {
			b.WriteByte(byte('0' + r.IntN(10)))
		}
	}
	if r.IntN(3) == 0 {
		b.WriteByte('.')
		for range 1 + r.IntN(5) {
			b.WriteByte(byte('0' + r.IntN(10)))
		}
	}
	if r.IntN(3) == 0 {
		b.WriteByte("eE"[r.IntN(2)])
		if r.IntN(2) == 0 {
			b.WriteByte("+-"[r.IntN(2)])
		}
		for range 1 + r.IntN(4) {
			b.WriteByte(byte('0' + r.IntN(10)))
		}
	}
}

func randomString(r *rand.Rand, b *bytes.Buffer) {
	pieces := []string{
		"a", "b", "k1", " ", "é", "€", "😀", "\u2028", "\x7f", "\xef\xbf\xbd",
		`\"`, `\\`, `\/`, `\b`, `\f`, `\n`, `\r`, `\t`, `\u0061`, `\u0000`, `\u00e9`,
		`\ud83d\ude00`, `\ud800`, `\udc00`, `\uDBFF\uDFFF`, `\uffff`, `\u006b1`,
	}
	b.WriteByte('"')
	for range r.IntN(5) {
		b.WriteString(pieces[r.IntN(len(pieces))])
	}
	b.WriteByte('"')
}

// mutate damages a document in a random way.
func mutate(r *rand.Rand, src []byte) []byte {
	out := bytes.Clone(src)
	special := []byte("{}[]:,\"\\ 0-.eE+tfnu\x00\x1f\x7f\x80\xc3\xed\xff")
	for range 1 + r.IntN(3) {
		switch op := r.IntN(4); {
		case len(out) == 0 || op == 0:
			i := r.IntN(len(out) + 1)
			out = append(out[:i], append([]byte{special[r.IntN(len(special))]}, out[i:]...)...)
		case op == 1:
			i := r.IntN(len(out))
			out = append(out[:i], out[i+1:]...)
		case op == 2:
			out[r.IntN(len(out))] = special[r.IntN(len(special))]
		default:
			i := r.IntN(len(out) + 1)
			out = out[:i]
		}
	}
	return out
}

func TestDifferential(t *testing.T) {
	inputs := corpus()
	r := rand.New(rand.NewPCG(1, 2))
	n := 5000
	if testing.Short() {
		n = 500
	}
	for range n {
		var b bytes.Buffer
		randomJSON(r, &b, 0)
		inputs = append(inputs, b.String())
		inputs = append(inputs, string(mutate(r, b.Bytes())))
	}
	for _, s := range corpus() {
		for range 20 {
			inputs = append(inputs, string(mutate(r, []byte(s))))
		}
	}
	var valid, failed int
	for _, s := range inputs {
		checkDifferential(t, []byte(s))
		var tp Tape
		if tp.Parse([]byte(s)) == nil {
			valid++
		} else {
			failed++
		}
	}
	t.Logf("%d inputs: %d parsed, %d rejected", len(inputs), valid, failed)
	if valid < len(inputs)/4 || failed < len(inputs)/4 {
		t.Errorf("generator is lopsided: %d parsed, %d rejected", valid, failed)
	}
}
