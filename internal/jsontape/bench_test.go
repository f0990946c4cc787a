package jsontape

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
)

// envelope is a typical MCP request as the gateway sees it (~330 bytes).
var envelope = []byte(`{"protocol":"mew/v0.4","id":"msg-7f3a9c2e","ts":"2025-01-09T12:34:56.789Z","from":"agent-planner","to":["mcp-fs"],"kind":"mcp/request","correlation_id":["msg-7f3a9c10"],"payload":{"jsonrpc":"2.0","id":42,"method":"tools/call","params":{"name":"read_file","arguments":{"path":"/workspace/src/main.go","max_bytes":65536}}}}`)

// doc64K is a 64 KiB document of small records, as a tool result might be.
var doc64K = func() []byte {
	var b strings.Builder
	b.WriteString(`{"jsonrpc":"2.0","id":7,"result":{"items":[`)
	for i := 0; b.Len() < 64<<10-200; i++ {
		if i > 0 {
			b.WriteByte(',')
		}
		fmt.Fprintf(&b, `{"id":%d,"name":"file-%d.go","size":%d,"mode":"0644","tags":["go","src"],"ok":true,"note":"line\nbreak \u00e9"}`, i, i, i*37)
	}
	b.WriteString(`]}}`)
	s := b.String()
	for len(s) < 64<<10 {
		s += " "
	}
	return []byte(s)
}()

func TestBenchmarkDocuments(t *testing.T) {
	for name, doc := range map[string][]byte{"envelope": envelope, "doc64K": doc64K, "wide": wideObject, "escapedKeys": escapedKeys} {
		var tp Tape
		if err := tp.Parse(doc); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if !json.Valid(doc) {
			t.Fatalf("%s is not valid JSON", name)
		}
	}
	if len(doc64K) != 64<<10 {
		t.Errorf("doc64K is %d bytes", len(doc64K))
	}
}

func benchParse(b *testing.B, doc []byte) {
	b.ReportAllocs()
	b.SetBytes(int64(len(doc)))
	var tp Tape
	for b.Loop() {
		if err := tp.Parse(doc); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkParseEnvelope(b *testing.B) { benchParse(b, envelope) }

func BenchmarkParse64K(b *testing.B) { benchParse(b, doc64K) }

// wideObject has more members than smallObject, so duplicate detection
// switches to a set.
var wideObject = []byte(bigObject(64))

func BenchmarkParseWideObject(b *testing.B) { benchParse(b, wideObject) }

// escapedKeys has small objects whose member names hold escapes, so the
// linear duplicate check unescapes them.
var escapedKeys = []byte(`{"jsonrpc":"2.0","id":1,"m\u0065thod":"tools/call","params":{"n\u0061me":"x","\u0061rguments":{"p\u0061th":"/a","mode":"r"}}}`)

func BenchmarkParseEscapedKeys(b *testing.B) { benchParse(b, escapedKeys) }

// BenchmarkParseEnvelopeFresh allocates a new tape per document, for
// comparison with the reused path.
func BenchmarkParseEnvelopeFresh(b *testing.B) {
	b.ReportAllocs()
	b.SetBytes(int64(len(envelope)))
	for b.Loop() {
		var tp Tape
		if err := tp.Parse(envelope); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkJSONValid64K is encoding/json's validator on the same document,
// for reference.
func BenchmarkJSONValid64K(b *testing.B) {
	b.ReportAllocs()
	b.SetBytes(int64(len(doc64K)))
	for b.Loop() {
		if !json.Valid(doc64K) {
			b.Fatal("invalid")
		}
	}
}

func BenchmarkLookup(b *testing.B) {
	var tp Tape
	if err := tp.Parse(envelope); err != nil {
		b.Fatal(err)
	}
	b.Run("method", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			p, ok := tp.Lookup(0, "payload")
			if !ok {
				b.Fatal("no payload")
			}
			m, ok := tp.Lookup(p, "method")
			if !ok || !tp.TextEquals(m, "tools/call") {
				b.Fatal("no method")
			}
		}
	})
	b.Run("path", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			v := uint32(0)
			for _, k := range []string{"payload", "params", "arguments", "path"} {
				var ok bool
				if v, ok = tp.Lookup(v, k); !ok {
					b.Fatal(k)
				}
			}
		}
	})
	b.Run("absent", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, ok := tp.Lookup(0, "absent"); ok {
				b.Fatal("found")
			}
		}
	})
	var esc Tape
	if err := esc.Parse([]byte(`{"jsonrpc":"2.0","id":1,"m\u0065thod":"tools/call"}`)); err != nil {
		b.Fatal(err)
	}
	b.Run("escaped-key", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, ok := esc.Lookup(0, "method"); !ok {
				b.Fatal("not found")
			}
		}
	})
}
