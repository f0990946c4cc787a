package protocol

import "testing"

// A chat envelope as the reference gateway relays it (reference doc §1.5).
var benchChat = []byte(`{"protocol":"mew/v0.4","id":"msg-1795341818659-d8pg8n0ib","ts":"2026-11-22T10:03:38.659Z","from":"alice","kind":"chat","payload":{"text":"hello bob"}}`)

// A tools/call request as the reference SDK sends it.
var benchMCPRequest = []byte(`{"protocol":"mew/v0.4","id":"0b6f8c2e-5d1a-4f7e-9c3b-2a1d4e5f6a7b","ts":"2026-11-22T10:03:40.012Z","from":"coder-agent","to":["filesystem"],"kind":"mcp/request","correlation_id":["env-req-1"],"context":"reason-1795341818659-abc","payload":{"jsonrpc":"2.0","id":42,"method":"tools/call","params":{"name":"read_file","arguments":{"path":"/workspace/src/index.ts"}}}}`)

func benchmarkDecode(b *testing.B, src []byte) {
	var d Decoder
	var env Envelope
	b.ReportAllocs()
	b.SetBytes(int64(len(src)))
	for b.Loop() {
		if err := d.Decode(src, &env); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkDecodeChat(b *testing.B)       { benchmarkDecode(b, benchChat) }
func BenchmarkDecodeMCPRequest(b *testing.B) { benchmarkDecode(b, benchMCPRequest) }

func BenchmarkValidateMCPRequest(b *testing.B) {
	env, err := Decode(benchMCPRequest)
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		if err := env.ValidateComplete(); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkAppendJSON(b *testing.B) {
	env, err := Decode(benchMCPRequest)
	if err != nil {
		b.Fatal(err)
	}
	buf := make([]byte, 0, 1024)
	b.ReportAllocs()
	b.SetBytes(int64(len(benchMCPRequest)))
	for b.Loop() {
		buf = env.AppendJSON(buf[:0])
	}
}

func BenchmarkParseFrame(b *testing.B) {
	msg := AppendFrame(nil, "stream-1", []byte(`{"context":"reason-1","type":"token","text":"Hello"}`))
	b.ReportAllocs()
	for b.Loop() {
		if _, _, err := ParseFrame(msg); err != nil {
			b.Fatal(err)
		}
	}
}
