package capability

import "testing"

// A participant's set as a space config gives it: ten patterns, the one that
// allows a read_* tool call last, behind a nested payload pattern.
var benchSet = MustCompile(
	`{"kind":"chat"}`,
	`{"kind":"reasoning/*"}`,
	`{"kind":"mcp/proposal"}`,
	`{"kind":"mcp/response"}`,
	`{"kind":"stream/request"}`,
	`{"kind":"participant/*"}`,
	`{"kind":"capability/grant-ack"}`,
	`{"kind":"mcp/request","payload":{"method":"resources/*"}}`,
	`{"kind":"mcp/request","payload":{"method":"tools/list"}}`,
	`{"kind":"mcp/request","payload":{"method":"tools/call","params":{"name":"read_*"}}}`,
)

var benchToolCall = []byte(`{"jsonrpc":"2.0","id":42,"method":"tools/call","params":{"name":"read_file","arguments":{"path":"notes/today.txt"}}}`)

func benchMatch(b *testing.B, s *Set, kind string, payload []byte, want bool) {
	b.Helper()
	b.ReportAllocs()
	for b.Loop() {
		if _, ok := s.Match(kind, payload); ok != want {
			b.Fatalf("match = %v, want %v", ok, want)
		}
	}
}

// The yardstick: 10 patterns, mcp/request tools/call, nested payload pattern.
func BenchmarkMatchToolCall10(b *testing.B) {
	benchMatch(b, benchSet, "mcp/request", benchToolCall, true)
}

func BenchmarkMatchToolCallDenied10(b *testing.B) {
	denied := []byte(`{"jsonrpc":"2.0","id":42,"method":"tools/call","params":{"name":"write_file","arguments":{"path":"notes/today.txt"}}}`)
	benchMatch(b, benchSet, "mcp/request", denied, false)
}

func BenchmarkMatchKindOnly10(b *testing.B) {
	benchMatch(b, benchSet, "participant/status", []byte(`{"tokens":10,"messages_in_context":3}`), true)
}

func BenchmarkMatchRegex(b *testing.B) {
	s := MustCompile(`{"kind":"mcp/request","payload":{"params":{"arguments":{"path":"/^notes/.*\\.txt$/"}}}}`)
	benchMatch(b, s, "mcp/request", benchToolCall, true)
}

func BenchmarkMatchJSONPath(b *testing.B) {
	s := MustCompile(`{"kind":"mcp/request","payload":{"$.params.arguments.path":"notes/*.txt"}}`)
	benchMatch(b, s, "mcp/request", benchToolCall, true)
}

func BenchmarkMatchDeep(b *testing.B) {
	s := MustCompile(`{"kind":"mcp/request","payload":{"**":"notes/today.txt"}}`)
	benchMatch(b, s, "mcp/request", benchToolCall, true)
}

func BenchmarkCompile10(b *testing.B) {
	raws := benchSet.Patterns()
	b.ReportAllocs()
	for b.Loop() {
		if _, err := Compile(raws); err != nil {
			b.Fatal(err)
		}
	}
}
