package capability

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"
)

type matchCase struct {
	name    string
	pattern string // one capability
	kind    string
	payload string // "" = no payload
	want    bool
}

func runMatchCases(t *testing.T, cases []matchCase) {
	t.Helper()
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			s, err := Compile([]json.RawMessage{json.RawMessage(tc.pattern)})
			if err != nil {
				t.Fatalf("Compile(%s): %v", tc.pattern, err)
			}
			var payload []byte
			if tc.payload != "" {
				payload = []byte(tc.payload)
			}
			if got := s.Allows(tc.kind, payload); got != tc.want {
				t.Errorf("pattern %s, kind %q, payload %s: got %v, want %v", tc.pattern, tc.kind, tc.payload, got, tc.want)
			}
		})
	}
}

// The reference SDK matcher's unit tests (its dotted kinds kept as they are).
func TestReferenceSuite(t *testing.T) {
	const nestedRead = `{"kind":"mcp.request","payload":{"method":"tools/call","params":{"name":"read_*"}}}`
	const regexQuery = `{"kind":"mcp.request","payload":{"method":"tools/call","params":{"name":"database_query","arguments":{"query":"/^SELECT .* FROM public\\..*$/"}}}}`
	runMatchCases(t, []matchCase{
		{"exact kind", `{"kind":"mcp.request"}`, "mcp.request", "", true},
		{"different kind", `{"kind":"mcp.request"}`, "mcp.response", "", false},
		{"kind from array", `{"kind":["mcp.request","mcp.proposal"]}`, "mcp.proposal", "", true},
		{"wildcard kind", `{"kind":"mcp.*"}`, "mcp.request", "", true},
		{"wildcard in payload", `{"kind":"mcp.request","payload":{"method":"tools/*"}}`, "mcp.request", `{"method":"tools/call"}`, true},
		{"nested wildcard", nestedRead, "mcp.request", `{"method":"tools/call","params":{"name":"read_file"}}`, true},
		{"double wildcard for deep paths", `{"kind":"mcp.request","payload":{"method":"resources/read","params":{"uri":"/public/**"}}}`,
			"mcp.request", `{"method":"resources/read","params":{"uri":"/public/docs/readme.md"}}`, true},
		{"negative allows", `{"kind":"mcp.request","payload":{"method":"tools/call","params":{"name":"!delete_*"}}}`,
			"mcp.request", `{"method":"tools/call","params":{"name":"read_file"}}`, true},
		{"negative blocks", `{"kind":"mcp.request","payload":{"method":"tools/call","params":{"name":"!delete_*"}}}`,
			"mcp.request", `{"method":"tools/call","params":{"name":"delete_file"}}`, false},
		{"except tools/call: resources/list", `{"kind":"mcp.request","payload":{"method":"!tools/call"}}`, "mcp.request", `{"method":"resources/list"}`, true},
		{"except tools/call: resources/read", `{"kind":"mcp.request","payload":{"method":"!tools/call"}}`, "mcp.request", `{"method":"resources/read","params":{"uri":"file:///example.txt"}}`, true},
		{"except tools/call: prompts/list", `{"kind":"mcp.request","payload":{"method":"!tools/call"}}`, "mcp.request", `{"method":"prompts/list"}`, true},
		{"except tools/call: prompts/get", `{"kind":"mcp.request","payload":{"method":"!tools/call"}}`, "mcp.request", `{"method":"prompts/get","params":{"name":"example_prompt"}}`, true},
		{"except tools/call: tools/call", `{"kind":"mcp.request","payload":{"method":"!tools/call"}}`, "mcp.request", `{"method":"tools/call","params":{"name":"any_tool"}}`, false},
		{"regex matches", regexQuery, "mcp.request",
			`{"method":"tools/call","params":{"name":"database_query","arguments":{"query":"SELECT id, name FROM public.users"}}}`, true},
		{"regex does not match", `{"kind":"mcp.request","payload":{"method":"tools/call","params":{"arguments":{"query":"/^SELECT .* FROM public\\..*$/"}}}}`,
			"mcp.request", `{"method":"tools/call","params":{"arguments":{"query":"DELETE FROM users"}}}`, false},
		{"array values", `{"kind":"mcp.request","payload":{"method":["tools/call","tools/list"],"params":{"name":["read_file","list_files"]}}}`,
			"mcp.request", `{"method":"tools/call","params":{"name":"read_file"}}`, true},
		{"deep match", `{"kind":"mcp.request","payload":{"**":"sensitive_data"}}`,
			"mcp.request", `{"method":"tools/call","params":{"nested":{"deeply":{"value":"sensitive_data"}}}}`, true},
		{"JSONPath", `{"kind":"mcp.request","payload":{"$.params.name":"read_*"}}`,
			"mcp.request", `{"method":"tools/call","params":{"name":"read_file"}}`, true},
		{"array JSONPath", `{"kind":"mcp.request","payload":{"$.params[*].name":"file_*"}}`,
			"mcp.request", `{"method":"tools/call","params":[{"name":"file_read","path":"/tmp/test.txt"},{"name":"file_write","path":"/tmp/out.txt"}]}`, true},
	})
}

// hasCapability and findMatchingCapabilities of the reference suite.
func TestReferenceParticipantSets(t *testing.T) {
	agent1 := MustCompile(`{"kind":"mcp.proposal"}`, `{"kind":"mcp.request","payload":{"method":"resources/read"}}`, `{"kind":"chat"}`)
	if !agent1.Allows("mcp.request", []byte(`{"method":"resources/read","params":{"uri":"/file.txt"}}`)) {
		t.Error("resources/read should be allowed")
	}
	if agent1.Allows("mcp.request", []byte(`{"method":"resources/write","params":{"uri":"/file.txt"}}`)) {
		t.Error("resources/write should be blocked")
	}

	agent2 := MustCompile(
		`{"kind":"mcp.request","payload":{"method":"tools/call","params":{"name":"read_*"}}}`,
		`{"kind":"mcp.request","payload":{"method":"resources/*","params":{"uri":"/public/**"}}}`)
	for _, c := range []struct {
		payload string
		want    bool
	}{
		{`{"method":"tools/call","params":{"name":"read_file"}}`, true},
		{`{"method":"tools/call","params":{"name":"write_file"}}`, false},
		{`{"method":"resources/read","params":{"uri":"/public/docs/readme.md"}}`, true},
		{`{"method":"resources/read","params":{"uri":"/private/secrets.txt"}}`, false},
	} {
		if got := agent2.Allows("mcp.request", []byte(c.payload)); got != c.want {
			t.Errorf("%s: got %v, want %v", c.payload, got, c.want)
		}
	}

	// findMatchingCapabilities: three of the four patterns match.
	all := []string{`{"kind":"mcp.request"}`, `{"kind":"mcp.request","payload":{"method":"tools/*"}}`,
		`{"kind":"mcp.request","payload":{"method":"tools/call"}}`, `{"kind":"chat"}`}
	var matched []int
	for i, p := range all {
		if MustCompile(p).Allows("mcp.request", []byte(`{"method":"tools/call"}`)) {
			matched = append(matched, i)
		}
	}
	if len(matched) != 3 || matched[0] != 0 || matched[1] != 1 || matched[2] != 2 {
		t.Errorf("matching patterns = %v, want [0 1 2]", matched)
	}
}

func TestKindPatterns(t *testing.T) {
	runMatchCases(t, []matchCase{
		{"star allows chat", `{"kind":"*"}`, "chat", "", true},
		{"star allows mcp/request", `{"kind":"*"}`, "mcp/request", "", true},
		{"star allows nested kinds", `{"kind":"*"}`, "stream/transfer-ownership", "", true},
		{"star with a payload pattern still checks it", `{"kind":"*","payload":{"x":"y"}}`, "chat", `{"x":"z"}`, false},
		{"prefix glob", `{"kind":"mcp/*"}`, "mcp/request", "", true},
		{"prefix glob stays in its segment", `{"kind":"mcp/*"}`, "mcp/a/b", "", false},
		{"prefix glob needs a segment", `{"kind":"mcp/*"}`, "mcp", "", false},
		{"prefix glob needs a non-empty segment", `{"kind":"mcp/*"}`, "mcp/", "", false},
		{"prefix glob is not a string prefix", `{"kind":"mcp/*"}`, "mcpx/request", "", false},
		{"leading star", `{"kind":"*/request"}`, "stream/request", "", true},
		{"leading star, other suffix", `{"kind":"*/request"}`, "mcp/response", "", false},
		{"globstar crosses segments", `{"kind":"mcp/**"}`, "mcp/a/b", "", true},
		{"question mark", `{"kind":"cha?"}`, "chat", "", true},
		{"question mark is one character", `{"kind":"cha?"}`, "chats", "", false},
		{"question mark needs a character", `{"kind":"cha?"}`, "cha", "", false},
		{"exact", `{"kind":"chat"}`, "chat/acknowledge", "", false},
		{"array", `{"kind":["chat","mcp/*"]}`, "mcp/proposal", "", true},
		{"array misses", `{"kind":["chat","mcp/*"]}`, "reasoning/start", "", false},
		{"negated kind", `{"kind":"!system/*"}`, "chat", "", true},
		{"negated kind refuses", `{"kind":"!system/*"}`, "system/welcome", "", false},
		{"regex kind", `{"kind":"/^reasoning\\//"}`, "reasoning/thought", "", true},
		{"regex kind is unanchored unless anchored", `{"kind":"/thought/"}`, "reasoning/thought", "", true},
		{"escaped star is literal", `{"kind":"a\\*"}`, "a*", "", true},
		{"escaped star does not glob", `{"kind":"a\\*b*"}`, "axb", "", false},
		{"escaped star then glob", `{"kind":"a\\*b*"}`, "a*bc", "", true},
		{"annotations are ignored", `{"id":"mcp-response","kind":"mcp/response","name":"n","description":"d","note":"x","comment":"y"}`, "mcp/response", "", true},
		{"null payload pattern is none", `{"kind":"chat","payload":null}`, "chat", `"not an object"`, true},
	})
}

func TestPayloadPatterns(t *testing.T) {
	const tool = `{"jsonrpc":"2.0","id":42,"method":"tools/call","params":{"name":"read_file","arguments":{"path":"notes.txt","count":5,"flag":true,"none":null}}}`
	runMatchCases(t, []matchCase{
		{"no payload pattern, no payload", `{"kind":"chat"}`, "chat", "", true},
		{"no payload pattern, invalid payload", `{"kind":"chat"}`, "chat", `{"text":`, true},
		{"empty pattern, any payload", `{"kind":"chat","payload":{}}`, "chat", `{"text":"hi"}`, true},
		{"empty pattern, absent payload", `{"kind":"chat","payload":{}}`, "chat", "", true},
		{"empty pattern, payload not an object", `{"kind":"chat","payload":{}}`, "chat", `[1,2]`, true},
		{"member pattern, absent payload", `{"kind":"chat","payload":{"text":"*"}}`, "chat", "", false},
		{"member pattern, array payload", `{"kind":"chat","payload":{"text":"*"}}`, "chat", `[{"text":"hi"}]`, false},
		{"member pattern, invalid payload", `{"kind":"chat","payload":{"text":"*"}}`, "chat", `{"text":"hi"`, false},
		{"member pattern, duplicate keys refused", `{"kind":"mcp/request","payload":{"method":"tools/list"}}`, "mcp/request", `{"method":"tools/list","method":"tools/call"}`, false},
		{"exact string", `{"kind":"mcp/request","payload":{"method":"tools/call"}}`, "mcp/request", tool, true},
		{"exact string mismatch", `{"kind":"mcp/request","payload":{"method":"tools/list"}}`, "mcp/request", tool, false},
		{"escaped value matches", `{"kind":"mcp/request","payload":{"method":"tools/call"}}`, "mcp/request", `{"method":"tools\/call"}`, true},
		{"escaped key matches", `{"kind":"mcp/request","payload":{"method":"tools/call"}}`, "mcp/request", `{"\u006dethod":"tools/call"}`, true},
		{"escaped value globbed", `{"kind":"mcp/request","payload":{"method":"tools/*"}}`, "mcp/request", `{"method":"tools\/c\u0061ll"}`, true},
		{"missing member", `{"kind":"mcp/request","payload":{"params":{"name":"read_file"}}}`, "mcp/request", `{"method":"tools/call"}`, false},
		{"nested object", `{"kind":"mcp/request","payload":{"params":{"arguments":{"path":"notes.txt"}}}}`, "mcp/request", tool, true},
		{"nested object pattern on a string", `{"kind":"mcp/request","payload":{"method":{"x":"y"}}}`, "mcp/request", tool, false},
		{"empty nested pattern needs the member", `{"kind":"mcp/request","payload":{"params":{}}}`, "mcp/request", `{"method":"x"}`, false},
		{"empty nested pattern needs an object", `{"kind":"mcp/request","payload":{"params":{}}}`, "mcp/request", `{"params":"x"}`, false},
		{"empty nested pattern", `{"kind":"mcp/request","payload":{"params":{}}}`, "mcp/request", tool, true},
		{"number equal", `{"kind":"k","payload":{"id":42}}`, "k", tool, true},
		{"number equal, other spelling", `{"kind":"k","payload":{"n":5}}`, "k", `{"n":5.0}`, true},
		{"number equal, exponent", `{"kind":"k","payload":{"n":500}}`, "k", `{"n":5e2}`, true},
		{"number differs", `{"kind":"k","payload":{"id":7}}`, "k", tool, false},
		{"numbers compare exactly", `{"kind":"k","payload":{"n":9007199254740993}}`, "k", `{"n":9007199254740992}`, false},
		{"numbers compare exactly, huge", `{"kind":"k","payload":{"n":1e400}}`, "k", `{"n":10e399}`, true},
		{"zero is zero", `{"kind":"k","payload":{"n":0}}`, "k", `{"n":-0.0e5}`, true},
		{"number is not a string", `{"kind":"k","payload":{"n":5}}`, "k", `{"n":"5"}`, false},
		{"string is not a number", `{"kind":"k","payload":{"n":"5"}}`, "k", `{"n":5}`, false},
		{"number must be present", `{"kind":"k","payload":{"n":5}}`, "k", `{}`, false},
		{"true", `{"kind":"k","payload":{"params":{"arguments":{"flag":true}}}}`, "k", tool, true},
		{"false is not true", `{"kind":"k","payload":{"params":{"arguments":{"flag":false}}}}`, "k", tool, false},
		{"null", `{"kind":"k","payload":{"params":{"arguments":{"none":null}}}}`, "k", tool, true},
		{"null is not missing", `{"kind":"k","payload":{"params":{"arguments":{"other":null}}}}`, "k", tool, false},
		{"star: any string", `{"kind":"k","payload":{"method":"*"}}`, "k", tool, true},
		{"star: any number", `{"kind":"k","payload":{"id":"*"}}`, "k", tool, true},
		{"star: any object", `{"kind":"k","payload":{"params":"*"}}`, "k", tool, true},
		{"star: null is present", `{"kind":"k","payload":{"v":"*"}}`, "k", `{"v":null}`, true},
		{"star: must be present", `{"kind":"k","payload":{"v":"*"}}`, "k", `{}`, false},
		{"glob on a number", `{"kind":"k","payload":{"id":"4*"}}`, "k", tool, false},
		{"glob zero characters", `{"kind":"k","payload":{"name":"read_*"}}`, "k", `{"name":"read_"}`, true},
		{"glob stays in its segment", `{"kind":"k","payload":{"name":"read_*"}}`, "k", `{"name":"read_a/b"}`, false},
		{"globstar", `{"kind":"k","payload":{"uri":"/public/**"}}`, "k", `{"uri":"/public/a/b/c.md"}`, true},
		{"globstar, the directory itself", `{"kind":"k","payload":{"uri":"/public/**"}}`, "k", `{"uri":"/public"}`, true},
		{"globstar refuses ..", `{"kind":"k","payload":{"uri":"/public/**"}}`, "k", `{"uri":"/public/../secret"}`, false},
		{"globstar refuses dotfiles", `{"kind":"k","payload":{"uri":"/public/**"}}`, "k", `{"uri":"/public/docs/.env"}`, false},
		{"star refuses dotfiles", `{"kind":"k","payload":{"f":"*.txt"}}`, "k", `{"f":".txt"}`, false},
		{"literal dot allows dotfiles", `{"kind":"k","payload":{"f":".*"}}`, "k", `{"f":".env"}`, true},
		{"globstar in the middle", `{"kind":"k","payload":{"uri":"/a/**/z.md"}}`, "k", `{"uri":"/a/b/c/z.md"}`, true},
		{"globstar in the middle, zero segments", `{"kind":"k","payload":{"uri":"/a/**/z.md"}}`, "k", `{"uri":"/a/z.md"}`, true},
		{"globstar in the middle, wrong end", `{"kind":"k","payload":{"uri":"/a/**/z.md"}}`, "k", `{"uri":"/a/b/y.md"}`, false},
		{"negation on a missing member", `{"kind":"k","payload":{"name":"!delete_*"}}`, "k", `{}`, false},
		{"negation on a number", `{"kind":"k","payload":{"name":"!delete_*"}}`, "k", `{"name":7}`, false},
		{"negation of an exact string", `{"kind":"k","payload":{"name":"!rm"}}`, "k", `{"name":"rmdir"}`, true},
		{"regex", `{"kind":"k","payload":{"q":"/^SELECT/"}}`, "k", `{"q":"SELECT 1"}`, true},
		{"regex is RE2, unanchored", `{"kind":"k","payload":{"q":"/read/"}}`, "k", `{"q":"unread_x"}`, true},
		{"a pattern between slashes is a regex", `{"kind":"k","payload":{"path":"/public/"}}`, "k", `{"path":"xpublicx"}`, true},
		{"regex on a number", `{"kind":"k","payload":{"q":"/4/"}}`, "k", `{"q":42}`, false},
		{"one of", `{"kind":"k","payload":{"method":["tools/list","tools/call"]}}`, "k", tool, true},
		{"one of, mixed items", `{"kind":"k","payload":{"id":["x",42]}}`, "k", tool, true},
		{"one of, objects", `{"kind":"k","payload":{"params":[{"name":"write_*"},{"name":"read_*"}]}}`, "k", tool, true},
		{"one of, none", `{"kind":"k","payload":{"method":["tools/list","resources/read"]}}`, "k", tool, false},
		{"array pattern is not an array value", `{"kind":"k","payload":{"v":["a","b"]}}`, "k", `{"v":["a","b"]}`, false},
		{"key glob", `{"kind":"k","payload":{"na*":"read_file"}}`, "k", `{"name":"read_file"}`, true},
		{"key glob, some member matches", `{"kind":"k","payload":{"p*":"b"}}`, "k", `{"pa":"a","pb":"b"}`, true},
		{"key glob, no member's value matches", `{"kind":"k","payload":{"na*":"x"}}`, "k", `{"name":"read_file"}`, false},
		{"key glob, no member", `{"kind":"k","payload":{"zz*":"*"}}`, "k", `{"name":"read_file"}`, false},
		{"deep", `{"kind":"k","payload":{"**":"notes.txt"}}`, "k", tool, true},
		{"deep in arrays", `{"kind":"k","payload":{"**":"b"}}`, "k", `{"a":[{"x":["a","b"]}]}`, true},
		{"deep does not match keys", `{"kind":"k","payload":{"**":"path"}}`, "k", tool, false},
		{"deep object matches the payload itself", `{"kind":"k","payload":{"**":{"method":"tools/call"}}}`, "k", tool, true},
		{"deep object", `{"kind":"k","payload":{"**":{"path":"*.txt"}}}`, "k", tool, true},
		{"deep misses", `{"kind":"k","payload":{"**":"secret"}}`, "k", tool, false},
		{"all members must match", `{"kind":"k","payload":{"method":"tools/call","params":{"name":"write_*"}}}`, "k", tool, false},
	})
}

func TestJSONPath(t *testing.T) {
	const doc = `{"method":"tools/call","params":{"name":"read_file","items":[{"type":"file","path":"a.txt","size":3},{"type":"dir","path":"b","size":40},{"type":"file","path":"c.md","size":12}],"meta":{"owner":"ann","tags":["x","y"]}}}`
	cases := []struct {
		path, value string
		want        bool
	}{
		{`$.params.name`, `"read_*"`, true},
		{`$['params']['name']`, `"read_file"`, true},
		{`$["params"].name`, `"read_file"`, true},
		{`$.params.nope`, `"*"`, false},
		{`$.method.x`, `"*"`, false},
		{`$.params.items[0].path`, `"a.txt"`, true},
		{`$.params.items[-1].path`, `"c.md"`, true},
		{`$.params.items[5].path`, `"*"`, false},
		{`$.params.items[0,2].type`, `"dir"`, false},
		{`$.params.items[0,1].type`, `"dir"`, true},
		{`$.params.items[1:].path`, `"a.txt"`, false},
		{`$.params.items[1:].path`, `"c.md"`, true},
		{`$.params.items[:1].path`, `"b"`, false},
		{`$.params.items[::2].path`, `"c.md"`, true},
		{`$.params.items[::2].path`, `"b"`, false},
		{`$.params.items[::-1].path`, `"b"`, true},
		{`$.params.items[-2:-1].path`, `"b"`, true},
		{`$.params.items[*].path`, `"*.md"`, true},
		{`$.params.*.owner`, `"ann"`, true},
		{`$.params.meta[*]`, `"ann"`, true},
		{`$..path`, `"c.md"`, true},
		{`$..tags[1]`, `"y"`, true},
		{`$..*`, `"ann"`, true},
		{`$..['owner']`, `"ann"`, true},
		{`$..owner`, `"bob"`, false},
		{`$`, `{"method":"tools/*"}`, true},
		{`$.params['name','nope']`, `"read_file"`, true},
		{`$.params.items[?(@.type == 'file')].path`, `"c.md"`, true},
		{`$.params.items[?(@.type == 'file')].path`, `"b"`, false},
		{`$.params.items[?(@.type != 'file')].path`, `"b"`, true},
		{`$.params.items[?(@.size > 10)].path`, `"a.txt"`, false},
		{`$.params.items[?(@.size >= 40)].path`, `"b"`, true},
		{`$.params.items[?(@.size < 10 && @.type == "file")].path`, `"a.txt"`, true},
		{`$.params.items[?(@.size < 10 && @.type == "dir")].path`, `"*"`, false},
		{`$.params.items[?(@.size < 5 || @.size > 30)].path`, `"b"`, true},
		{`$.params.items[?(@.path)].type`, `"dir"`, true},
		{`$.params.items[?(!@.owner)].type`, `"file"`, true},
		{`$.params.items[?(@.owner)].type`, `"*"`, false},
		{`$.params.items[?(@['type'] == 'dir')].size`, `40`, true},
		{`$..[?(@.owner == 'ann')].tags[0]`, `"x"`, true},
		{`$.params[?(@ == 'read_file')]`, `"*"`, true}, // @ alone is the member's value
		{`$.params[?(@ == 'write_file')]`, `"*"`, false},
	}
	for _, c := range cases {
		pattern := `{"kind":"k","payload":{` + mustQuote(c.path) + `:` + c.value + `}}`
		s, err := Compile([]json.RawMessage{json.RawMessage(pattern)})
		if err != nil {
			t.Errorf("%s: %v", c.path, err)
			continue
		}
		if got := s.Allows("k", []byte(doc)); got != c.want {
			t.Errorf("%s = %s: got %v, want %v", c.path, c.value, got, c.want)
		}
	}
}

// A JSONPath key inside a nested pattern is evaluated against the nested object.
func TestJSONPathIsRelativeToTheMatchedObject(t *testing.T) {
	s := MustCompile(`{"kind":"k","payload":{"params":{"$.name":"read_*"}}}`)
	if !s.Allows("k", []byte(`{"params":{"name":"read_file"}}`)) {
		t.Error("nested $ should be the params object")
	}
	if s.Allows("k", []byte(`{"name":"read_file","params":{}}`)) {
		t.Error("nested $ must not see the outer object")
	}
}

func mustQuote(s string) string {
	b, err := json.Marshal(s)
	if err != nil {
		panic(err)
	}
	return string(b)
}

func TestMatchReturnsFirstAllowingPattern(t *testing.T) {
	s := MustCompile(`{"kind":"chat"}`, `{"kind":"mcp/request","payload":{"method":"tools/list"}}`, `{"kind":"mcp/*"}`, `{"kind":"*"}`)
	for _, c := range []struct {
		kind, payload string
		want          int
	}{
		{"chat", `{"text":"hi"}`, 0},
		{"mcp/request", `{"method":"tools/list"}`, 1},
		{"mcp/request", `{"method":"tools/call"}`, 2},
		{"reasoning/start", `{}`, 3},
	} {
		i, ok := s.Match(c.kind, []byte(c.payload))
		if !ok || i != c.want {
			t.Errorf("%s %s: got (%d, %v), want %d", c.kind, c.payload, i, ok, c.want)
		}
		if got := string(s.Pattern(i)); got != string(s.Patterns()[i]) {
			t.Errorf("Pattern(%d) = %s, Patterns()[%d] = %s", i, got, i, s.Patterns()[i])
		}
	}
	if i, ok := MustCompile(`{"kind":"chat"}`).Match("mcp/request", nil); ok || i != -1 {
		t.Errorf("denied match = (%d, %v), want (-1, false)", i, ok)
	}
}

func TestJoinAndNil(t *testing.T) {
	var none *Set
	if none.Allows("chat", nil) || none.Len() != 0 {
		t.Error("a nil set allows nothing")
	}
	empty, err := Compile(nil)
	if err != nil || empty.Allows("chat", nil) {
		t.Errorf("an empty set allows nothing (err %v)", err)
	}
	static := MustCompile(`{"kind":"chat"}`)
	grant := MustCompile(`{"kind":"mcp/request","payload":{"method":"tools/call"}}`)
	j := Join(static, nil, grant)
	if j.Len() != 2 {
		t.Fatalf("Len = %d, want 2", j.Len())
	}
	if i, ok := j.Match("mcp/request", []byte(`{"method":"tools/call"}`)); !ok || i != 1 {
		t.Errorf("joined match = (%d, %v), want (1, true)", i, ok)
	}
	if want := `[{"kind":"chat"},{"kind":"mcp/request","payload":{"method":"tools/call"}}]`; j.String() != want {
		t.Errorf("String = %s, want %s", j.String(), want)
	}
}

// Compile keeps its own copy of each pattern: the caller may reuse its buffers.
func TestCompileCopiesPatterns(t *testing.T) {
	buf := []byte(`{"kind":"chat"}`)
	s, err := Compile([]json.RawMessage{buf})
	if err != nil {
		t.Fatal(err)
	}
	copy(buf, `{"kind":"xxxx"}`)
	if string(s.Pattern(0)) != `{"kind":"chat"}` || !s.Allows("chat", nil) {
		t.Errorf("pattern changed with the caller's buffer: %s", s.Pattern(0))
	}
}

func TestCompileErrors(t *testing.T) {
	cases := []struct {
		name     string
		patterns []string
		err      error
		path     string // the CompileError path
		detail   string // part of the message
	}{
		{"not JSON", []string{`{"kind":`}, ErrInvalidPattern, "[0]", "unexpected end"},
		{"not an object", []string{`{"kind":"chat"}`, `"chat"`}, ErrInvalidPattern, "[1]", "want an object"},
		{"duplicate key", []string{`{"kind":"chat","kind":"*"}`}, ErrDuplicateKey, "[0].kind", "duplicate key"},
		{"duplicate key, escaped", []string{`{"kind":"chat","\u006bind":"*"}`}, ErrDuplicateKey, "[0].kind", "duplicate key"},
		{"duplicate payload", []string{`{"kind":"k","payload":{},"payload":{"a":1}}`}, ErrDuplicateKey, "[0].payload", ""},
		{"duplicate key in a payload pattern", []string{`{"kind":"k"}`, `{"kind":"k","payload":{"params":{"name":"a","x":[1,{"y":2}],"name":"*"}}}`}, ErrDuplicateKey, "[1].payload.params.name", ""},
		{"duplicate key in an array item", []string{`{"kind":"k","payload":{"q":[{"a":1},{"b":1,"b":2}]}}`}, ErrDuplicateKey, "[0].payload.q[1].b", ""},
		{"upper-case KIND", []string{`{"kind":"chat","KIND":"*"}`}, ErrUnknownMember, "[0].KIND", "case-sensitive"},
		{"Kind alone", []string{`{"Kind":"*"}`}, ErrUnknownMember, "[0].Kind", "case-sensitive"},
		{"upper-case PAYLOAD", []string{`{"kind":"mcp/request","payload":{},"PAYLOAD":{"method":"x"}}`}, ErrUnknownMember, "[0].PAYLOAD", "case-sensitive"},
		{"unknown member", []string{`{"kind":"chat","recipients":["x"]}`}, ErrUnknownMember, "[0].recipients", "annotations id, name"},
		{"upper-case TO", []string{`{"kind":"chat","TO":["x"]}`}, ErrUnknownMember, "[0].TO", "case-sensitive"},
		{"number to", []string{`{"kind":"chat","to":5}`}, ErrInvalidPattern, "[0].to", "participant id pattern"},
		{"empty to", []string{`{"kind":"chat","to":[]}`}, ErrInvalidPattern, "[0].to", "allows no recipient"},
		{"object in to", []string{`{"kind":"chat","to":["a",{"b":1}]}`}, ErrInvalidPattern, "[0].to[1]", "string or an array"},
		{"no kind", []string{`{"payload":{}}`}, ErrMissingKind, "[0]", ""},
		{"number kind", []string{`{"kind":5}`}, ErrInvalidPattern, "[0].kind", "string or an array"},
		{"object kind", []string{`{"kind":{"a":"b"}}`}, ErrInvalidPattern, "[0].kind", "string or an array"},
		{"array kind with a number", []string{`{"kind":["chat",5]}`}, ErrInvalidPattern, "[0].kind[1]", "string or an array"},
		{"payload not an object", []string{`{"kind":"chat","payload":"x"}`}, ErrInvalidPattern, "[0].payload", "want an object"},
		{"bad regex", []string{`{"kind":"chat"}`, `{"kind":"k","payload":{"params":{"query":"/(unclosed/"}}}`}, ErrBadRegex, "[1].payload.params.query", "missing closing )"},
		{"regex with a lookahead", []string{`{"kind":"k","payload":{"q":"/(?=x)/"}}`}, ErrBadRegex, "[0].payload.q", ""},
		{"bad regex in an array", []string{`{"kind":"k","payload":{"q":["a","/[/"]}}`}, ErrBadRegex, "[0].payload.q[1]", ""},
		{"bad regex kind", []string{`{"kind":"/(/"}`}, ErrBadRegex, "[0].kind", ""},
		{"JSONPath: bad start", []string{`{"kind":"k","payload":{"$x":1}}`}, ErrBadJSONPath, "[0].payload.$x", "unexpected"},
		{"JSONPath: empty bracket", []string{`{"kind":"k","payload":{"$[]":1}}`}, ErrBadJSONPath, "[0].payload.$[]", ""},
		{"JSONPath: unclosed bracket", []string{`{"kind":"k","payload":{"$.a[0":1}}`}, ErrBadJSONPath, "", "want ']'"},
		{"JSONPath: unterminated quote", []string{`{"kind":"k","payload":{"$['a]":1}}`}, ErrBadJSONPath, "", "unterminated"},
		{"JSONPath: empty name", []string{`{"kind":"k","payload":{"$.":1}}`}, ErrBadJSONPath, "", "member name"},
		{"JSONPath: zero step", []string{`{"kind":"k","payload":{"$.a[::0]":1}}`}, ErrBadJSONPath, "", "step"},
		{"JSONPath: filter without @", []string{`{"kind":"k","payload":{"$.a[?(x == 1)]":1}}`}, ErrBadJSONPath, "", "start with @"},
		{"JSONPath: filter without literal", []string{`{"kind":"k","payload":{"$.a[?(@.x == )]":1}}`}, ErrBadJSONPath, "", "want a literal"},
		{"JSONPath: filter unclosed", []string{`{"kind":"k","payload":{"$.a[?(@.x == 1]":1}}`}, ErrBadJSONPath, "", "want &&"},
		{"JSONPath: negated comparison", []string{`{"kind":"k","payload":{"$.a[?(!@.x == 1)]":1}}`}, ErrBadJSONPath, "", "existence"},
		{"JSONPath: too long", []string{`{"kind":"k","payload":{"$` + strings.Repeat(".a", 600) + `":1}}`}, ErrBadJSONPath, "", "longer than"},
		{"deeply nested bad value", []string{`{"kind":"k","payload":{"a":{"b":[{"c":"/(/"}]}}}`}, ErrBadRegex, "[0].payload.a.b[0].c", ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			raws := make([]json.RawMessage, len(tc.patterns))
			for i, p := range tc.patterns {
				raws[i] = json.RawMessage(p)
			}
			s, err := Compile(raws)
			if err == nil {
				t.Fatalf("Compile succeeded with %d patterns, want an error", s.Len())
			}
			if !errors.Is(err, tc.err) {
				t.Errorf("error %v, want %v", err, tc.err)
			}
			var ce *CompileError
			if !errors.As(err, &ce) {
				t.Fatalf("error %T is not a *CompileError", err)
			}
			if tc.path != "" && ce.Path != tc.path {
				t.Errorf("path %q, want %q", ce.Path, tc.path)
			}
			if !strings.Contains(err.Error(), tc.detail) {
				t.Errorf("message %q does not mention %q", err.Error(), tc.detail)
			}
		})
	}
}

func TestMustCompilePanicsOnBadPattern(t *testing.T) {
	defer func() {
		if recover() == nil {
			t.Error("MustCompile did not panic")
		}
	}()
	MustCompile(`{"kind":5}`)
}
