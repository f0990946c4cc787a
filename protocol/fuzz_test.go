package protocol

import (
	"bytes"
	"encoding/json"
	"errors"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// compactRaw compares raw JSON by its compact form: Decode keeps payloads as
// written, AppendJSON compacts them.
var compactRaw = cmp.Transformer("compact", func(r json.RawMessage) string {
	var b bytes.Buffer
	if err := json.Compact(&b, r); err != nil {
		return "invalid:" + string(r)
	}
	return b.String()
})

func FuzzDecode(f *testing.F) {
	for _, s := range referenceEnvelopes {
		f.Add([]byte(s))
	}
	for _, s := range []string{
		`{}`,
		`[]`,
		`{"kind":"chat","payload":{"text":"hi"},"x":[1, 2 ,{"y" : null}]}`,
		`{"kind":"chat","correlation_id":"x"}`,
		`{"to":["a","\u0000\ud800"],"payload":null,"\u0069d2":"\/"}`,
		`{"kind":"mcp/request","payload":{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"a"}}}`,
		`{"id":"a","id":"b"}`,
		"{\"kind\":\"\xff\"}",
		`{"payload":{"a":[[[[[[1]]]]]]}}`,
		`  {"kind" : "x" , "payload" : { "t" : "a b" } }  `,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		var d Decoder
		var env Envelope
		err := d.Decode(data, &env)
		if err != nil {
			var fe *FieldError
			if !errors.As(err, &fe) && !errors.Is(err, ErrBadJSON) {
				t.Fatalf("error %v is neither a *FieldError nor ErrBadJSON", err)
			}
			return
		}
		// What Decode accepts is JSON for encoding/json too, and reads the same.
		if !json.Valid(data) {
			t.Fatalf("Decode accepted what encoding/json calls invalid: %q", data)
		}
		checkAgainstEncodingJSON(t, data, &env)

		_ = env.Validate() // must not panic
		if p := PayloadFor(env.Kind); p != nil {
			_ = env.DecodePayload(p)
		}

		b1 := env.AppendJSON(nil)
		if !json.Valid(b1) {
			t.Fatalf("AppendJSON wrote invalid JSON: %s", b1)
		}
		var env2 Envelope
		if err := d.Decode(b1, &env2); err != nil {
			t.Fatalf("re-decoding %s: %v", b1, err)
		}
		if diff := cmp.Diff(&env, &env2, compactRaw); diff != "" {
			t.Fatalf("round trip changed the envelope (-first +second):\n%s\nwire: %s", diff, b1)
		}
		b2 := env2.AppendJSON(nil)
		if !bytes.Equal(b1, b2) {
			t.Fatalf("encoding is not a fixed point:\n%s\n%s", b1, b2)
		}
		if m, err := env.MarshalJSON(); err != nil || !bytes.Equal(m, b1) {
			t.Fatalf("MarshalJSON = %s, %v; AppendJSON = %s", m, err, b1)
		}
	})
}

// checkAgainstEncodingJSON compares a decoded envelope with encoding/json's
// reading of the same bytes (its string unescaping is the reference here).
func checkAgainstEncodingJSON(t *testing.T, data []byte, env *Envelope) {
	t.Helper()
	var m map[string]json.RawMessage
	if err := json.Unmarshal(data, &m); err != nil {
		t.Fatalf("encoding/json cannot read an accepted envelope: %v", err)
	}
	str := func(name, got string) {
		raw, ok := m[name]
		if !ok {
			if got != "" {
				t.Fatalf("%s = %q but absent", name, got)
			}
			return
		}
		var want string
		if err := json.Unmarshal(raw, &want); err != nil || want != got {
			t.Fatalf("%s = %q, encoding/json reads %q (%v)", name, got, want, err)
		}
	}
	str("protocol", env.Protocol)
	str("id", env.ID)
	str("ts", env.TS)
	str("from", env.From)
	str("kind", env.Kind)
	str("context", env.Context)
	list := func(name string, got []string) {
		var want []string
		if raw, ok := m[name]; ok {
			var one string
			if name == "correlation_id" && json.Unmarshal(raw, &one) == nil {
				raw = json.RawMessage(`[` + string(raw) + `]`) // a lone string is a list of one
			}
			if err := json.Unmarshal(raw, &want); err != nil {
				t.Fatalf("%s: %v", name, err)
			}
		}
		if len(want) == 0 {
			want = nil
		}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Fatalf("%s differs from encoding/json's (-want +got):\n%s", name, diff)
		}
	}
	list("to", env.To)
	list("correlation_id", env.CorrelationID)
	known := 0
	for _, name := range slotNames {
		if _, ok := m[name]; ok {
			known++
		}
	}
	if known+len(env.Extra) != len(m) {
		t.Fatalf("%d known members + %d extra != %d members", known, len(env.Extra), len(m))
	}
	for _, f := range env.Extra {
		if !bytes.Equal(m[f.Name], f.Value) {
			t.Fatalf("extra %q = %s, encoding/json has %s", f.Name, f.Value, m[f.Name])
		}
	}
}

func FuzzParseFrame(f *testing.F) {
	for _, s := range []string{"#stream-1#hello", "##x", "#nohash", "#s#", "#s#a#b", "", "#", "#a b#c", "{\"kind\":\"chat\"}", "#s#\x00\xff"} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, msg []byte) {
		id, data, err := ParseFrame(msg)
		if IsFrame(msg) == (err == ErrNotFrame) {
			t.Fatalf("IsFrame = %v but ParseFrame err = %v", IsFrame(msg), err)
		}
		if err != nil {
			if id != nil || data != nil {
				t.Fatalf("results with error %v", err)
			}
			return
		}
		if bytes.IndexByte(id, '#') >= 0 {
			t.Fatalf("stream id %q holds '#'", id)
		}
		if err := ValidateStreamID(string(id)); err != nil {
			t.Fatalf("parsed id %q fails ValidateStreamID: %v", id, err)
		}
		if back := AppendFrame(nil, string(id), data); !bytes.Equal(back, msg) {
			t.Fatalf("AppendFrame(%q, %q) = %q, want %q", id, data, back, msg)
		}
	})
}
