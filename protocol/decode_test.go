package protocol

import (
	"bytes"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/mew-protocol/mew/internal/jsontape"
)

// Envelopes exactly as the reference gateway sent them (reference doc §1.3,
// §1.5, §1.11, §1.12, §1.4).
var referenceEnvelopes = map[string]string{
	"welcome":        `{"protocol":"mew/v0.4","id":"welcome-1795341818357","ts":"2026-11-22T10:03:38.358Z","from":"system:gateway","to":["bob"],"kind":"system/welcome","payload":{"you":{"id":"bob","capabilities":[{"kind":"chat"},{"kind":"stream/request"},{"kind":"mcp/proposal"},{"id":"mcp-response","kind":"mcp/response"}]},"participants":[{"id":"alice","capabilities":[{"kind":"*"},{"id":"mcp-response","kind":"mcp/response"}]}],"active_streams":[]}}`,
	"presence-join":  `{"protocol":"mew/v0.4","id":"presence-1795341818358","ts":"2026-11-22T10:03:38.358Z","from":"system:gateway","kind":"system/presence","payload":{"event":"join","participant":{"id":"bob","capabilities":[{"kind":"chat"},{"kind":"stream/request"},{"kind":"mcp/proposal"},{"id":"mcp-response","kind":"mcp/response"}]}}}`,
	"presence-leave": `{"protocol":"mew/v0.4","id":"presence-1795341818358","ts":"2026-11-22T10:03:38.358Z","from":"system:gateway","kind":"system/presence","payload":{"event":"leave","participant":{"id":"bob"}}}`,
	"chat":           `{"protocol":"mew/v0.4","id":"msg-1795341818659-d8pg8n0ib","ts":"2026-11-22T10:03:38.659Z","from":"alice","kind":"chat","payload":{"text":"hello bob"}}`,
	"stream-open":    `{"protocol":"mew/v0.4","id":"stream-open-1795341860740-8yub9umtz","ts":"2026-11-22T10:04:20.740Z","from":"gateway","to":["bob"],"kind":"stream/open","correlation_id":["sreq-1"],"payload":{"stream_id":"stream-1","encoding":"text","owner":"bob","authorized_writers":["bob"],"target":["alice"]}}`,
	"bare-error":     `{"protocol":"mew/v0.4","kind":"system/error","payload":{"error":"Chat message requires payload.text","code":"VALIDATION_ERROR"}}`,
}

func TestReferenceEnvelopesByteExact(t *testing.T) {
	var d Decoder
	for name, src := range referenceEnvelopes {
		t.Run(name, func(t *testing.T) {
			var env Envelope
			if err := d.Decode([]byte(src), &env); err != nil {
				t.Fatalf("Decode: %v", err)
			}
			if got := env.AppendJSON(nil); string(got) != src {
				t.Errorf("re-encoded bytes differ\n got %s\nwant %s", got, src)
			}
			if got, err := json.Marshal(&env); err != nil || string(got) != src {
				t.Errorf("json.Marshal = %s, %v", got, err)
			}
			if name == "bare-error" {
				if err := env.Validate(); err != nil {
					t.Errorf("Validate: %v", err)
				}
				return
			}
			if err := env.ValidateComplete(); err != nil {
				t.Errorf("ValidateComplete: %v", err)
			}
		})
	}
}

// The typed payloads re-encode the reference's payloads byte for byte, so the
// gateway can build them with structs and still match the reference.
func TestReferencePayloadsByteExact(t *testing.T) {
	for name, src := range referenceEnvelopes {
		t.Run(name, func(t *testing.T) {
			env, err := Decode([]byte(src))
			if err != nil {
				t.Fatal(err)
			}
			p := PayloadFor(env.Kind)
			if err := env.DecodePayload(p); err != nil {
				t.Fatal(err)
			}
			again := *env
			if err := again.SetPayload(p); err != nil {
				t.Fatal(err)
			}
			if string(again.Payload) != string(env.Payload) {
				t.Errorf("typed payload re-encodes differently\n got %s\nwant %s", again.Payload, env.Payload)
			}
		})
	}
}

func TestDecodeFields(t *testing.T) {
	src := `{"protocol":"mew/v0.4","id":"env-1","ts":"2025-08-26T14:00:00Z","from":"robot-alpha",` +
		`"to":["coordinator","x"],"kind":"mcp/request","correlation_id":["env-0"],"context":"workflow-123/step-1",` +
		`"payload":{"jsonrpc":"2.0","id":42,"method":"tools/call"}}`
	env, err := Decode([]byte(src))
	if err != nil {
		t.Fatal(err)
	}
	want := &Envelope{
		Protocol: Version, ID: "env-1", TS: "2025-08-26T14:00:00Z", From: "robot-alpha",
		To: []string{"coordinator", "x"}, Kind: KindMCPRequest, CorrelationID: []string{"env-0"},
		Context: "workflow-123/step-1", Payload: json.RawMessage(`{"jsonrpc":"2.0","id":42,"method":"tools/call"}`),
	}
	if diff := cmp.Diff(want, env); diff != "" {
		t.Errorf("Decode (-want +got):\n%s", diff)
	}
	if got := env.AppendJSON(nil); string(got) != src {
		t.Errorf("AppendJSON = %s", got)
	}
}

func TestDecodeUnknownFieldsPreservedInOrder(t *testing.T) {
	src := `{"zeta":1,"kind":"chat","alpha":{"nested":[1, 2]},"id":"a","mid":null,"payload":{"text":"hi"},"last":"x"}`
	env, err := Decode([]byte(src))
	if err != nil {
		t.Fatal(err)
	}
	want := []Field{
		{"zeta", json.RawMessage(`1`)},
		{"alpha", json.RawMessage(`{"nested":[1, 2]}`)},
		{"mid", json.RawMessage(`null`)},
		{"last", json.RawMessage(`"x"`)},
	}
	if diff := cmp.Diff(want, env.Extra); diff != "" {
		t.Errorf("Extra (-want +got):\n%s", diff)
	}
	// Known members move to their place, unknown ones follow in source order,
	// compacted.
	const wantJSON = `{"id":"a","kind":"chat","payload":{"text":"hi"},"zeta":1,"alpha":{"nested":[1,2]},"mid":null,"last":"x"}`
	if got := env.AppendJSON(nil); string(got) != wantJSON {
		t.Errorf("AppendJSON\n got %s\nwant %s", got, wantJSON)
	}
}

func TestDecodeEscapes(t *testing.T) {
	// Escaped keys are the same keys; escaped strings are unescaped; unknown
	// escaped names are unescaped too.
	src := `{"\u006bind":"ch\u0061t","from":"a\"b\\c\u00e9\ud83d\ude00","x\u0041":true,"payload":{"text":"\u003c"}}`
	env, err := Decode([]byte(src))
	if err != nil {
		t.Fatal(err)
	}
	if env.Kind != KindChat || env.From != "a\"b\\cé😀" {
		t.Errorf("Kind %q From %q", env.Kind, env.From)
	}
	if len(env.Extra) != 1 || env.Extra[0].Name != "xA" {
		t.Errorf("Extra = %+v", env.Extra)
	}
	const want = `{"from":"a\"b\\cé😀","kind":"chat","payload":{"text":"\u003c"},"xA":true}`
	if got := env.AppendJSON(nil); string(got) != want {
		t.Errorf("AppendJSON\n got %s\nwant %s", got, want)
	}
}

func TestDecodeNormalises(t *testing.T) {
	env, err := Decode([]byte(` { "kind" : "x/y" , "to" : [ ] , "correlation_id":[], "payload" : null } `))
	if err != nil {
		t.Fatal(err)
	}
	if env.To != nil || env.CorrelationID != nil || env.Payload != nil {
		t.Errorf("empty arrays and null payload should be absent: %+v", env)
	}
	if got := string(env.AppendJSON(nil)); got != `{"kind":"x/y"}` {
		t.Errorf("AppendJSON = %s", got)
	}
	// Unknown protocol strings and kinds are copied, known ones interned.
	env, err = Decode([]byte(`{"protocol":"mew/v0.3","kind":"custom/thing"}`))
	if err != nil || env.Protocol != "mew/v0.3" || env.Kind != "custom/thing" {
		t.Fatalf("got %+v, %v", env, err)
	}
}

func TestDecodeDoesNotAlias(t *testing.T) {
	src := []byte(`{"id":"abc","kind":"chat","to":["bob"],"payload":{"text":"hi"},"x":[1]}`)
	env, err := Decode(src)
	if err != nil {
		t.Fatal(err)
	}
	before := env.Clone()
	for i := range src {
		src[i] = 'Z'
	}
	if diff := cmp.Diff(before, env); diff != "" {
		t.Errorf("envelope changed with its input (-before +after):\n%s", diff)
	}
	// Appending to decoded slices must not overwrite neighbours.
	env.To = append(env.To, "carol")
	env.Payload = append(env.Payload, ' ')
	if env.Extra[0].Name != "x" || string(env.Extra[0].Value) != "[1]" {
		t.Errorf("append clobbered Extra: %+v", env.Extra)
	}
}

func TestDecodeLeavesEnvelopeOnError(t *testing.T) {
	var d Decoder
	env := Envelope{Kind: "keep"}
	if err := d.Decode([]byte(`{"kind":"chat","to":"bob"}`), &env); err == nil {
		t.Fatal("want error")
	}
	if env.Kind != "keep" {
		t.Errorf("env changed on error: %+v", env)
	}
	// The decoder still works afterwards.
	if err := d.Decode([]byte(`{"kind":"chat"}`), &env); err != nil || env.Kind != KindChat {
		t.Errorf("after error: %+v, %v", env, err)
	}
}

func TestUnmarshalJSON(t *testing.T) {
	var holder struct {
		Env  Envelope `json:"env"`
		Envs []Envelope
	}
	err := json.Unmarshal([]byte(`{"env":{"kind":"chat","payload":{"text":"hi"}},"Envs":[{"kind":"a"}]}`), &holder)
	if err != nil {
		t.Fatal(err)
	}
	if holder.Env.Kind != KindChat || string(holder.Env.Payload) != `{"text":"hi"}` || holder.Envs[0].Kind != "a" {
		t.Errorf("got %+v", holder)
	}
	err = json.Unmarshal([]byte(`{"env":{"kind":"chat","correlation_id":[1]}}`), &holder)
	if !errors.Is(err, ErrBadType) {
		t.Errorf("err = %v, want ErrBadType", err)
	}
}

func TestDecodeErrors(t *testing.T) {
	deep := strings.Repeat(`{"a":`, 600) + "1" + strings.Repeat("}", 600)
	tests := []struct {
		name  string
		in    string
		want  error
		field string // must appear in the message
	}{
		{"array envelope", `[{"kind":"chat"}]`, ErrNotObject, "not a JSON object"},
		{"string envelope", `"chat"`, ErrNotObject, "got string"},
		{"null envelope", `null`, ErrNotObject, "got null"},
		{"number envelope", `42`, ErrNotObject, "got number"},
		{"protocol number", `{"protocol":4}`, ErrBadType, "protocol"},
		{"id number", `{"id":1}`, ErrBadType, "id"},
		{"ts bool", `{"ts":true}`, ErrBadType, "ts"},
		{"from null", `{"from":null}`, ErrBadType, "from"},
		{"kind object", `{"kind":{}}`, ErrBadType, "kind"},
		{"kind array", `{"kind":["chat"]}`, ErrBadType, "kind"},
		{"context object", `{"context":{"operation":"push"}}`, ErrBadType, "context"},
		{"empty id", `{"id":"","kind":"chat"}`, ErrEmptyValue, "id"},
		{"empty from", `{"from":""}`, ErrEmptyValue, "from"},
		{"empty ts", `{"ts":""}`, ErrEmptyValue, "ts"},
		{"empty kind", `{"kind":""}`, ErrEmptyValue, "kind"},
		{"empty protocol", `{"protocol":""}`, ErrEmptyValue, "protocol"},
		{"empty context", `{"context":""}`, ErrEmptyValue, "context"},
		{"to string", `{"to":"bob"}`, ErrToNotArray, "to"},
		{"to object", `{"to":{"0":"bob"}}`, ErrToNotArray, "to"},
		{"to null", `{"to":null}`, ErrToNotArray, "to"},
		{"to numbers", `{"to":[1]}`, ErrBadType, "to[0]"},
		{"to null entry", `{"to":["a",null]}`, ErrBadType, "to[1]"},
		{"to nested array", `{"to":[["a"]]}`, ErrBadType, "to[0]"},
		{"correlation number", `{"correlation_id":1}`, ErrCorrelationNotArray, "correlation_id"},
		{"correlation object", `{"correlation_id":{"a":"b"}}`, ErrCorrelationNotArray, "correlation_id"},
		{"to string", `{"to":"bob"}`, ErrToNotArray, "to"},
		{"correlation number", `{"correlation_id":7}`, ErrCorrelationNotArray, "correlation_id"},
		{"correlation objects", `{"correlation_id":["a",{}]}`, ErrBadType, "correlation_id[1]"},
		{"payload string", `{"kind":"chat","payload":"hi"}`, ErrPayloadNotObject, "payload"},
		{"payload array", `{"kind":"chat","payload":[{"text":"hi"}]}`, ErrPayloadNotObject, "payload"},
		{"payload number", `{"payload":1}`, ErrPayloadNotObject, "payload"},
		{"payload bool", `{"payload":false}`, ErrPayloadNotObject, "payload"},
		{"duplicate key", `{"id":"a","kind":"chat","id":"b"}`, jsontape.ErrDuplicateKey, `"id"`},
		{"duplicate escaped key", `{"kind":"chat","\u006bind":"x"}`, jsontape.ErrDuplicateKey, `"kind"`},
		{"duplicate unknown key", `{"x":1,"x":2}`, jsontape.ErrDuplicateKey, `"x"`},
		{"invalid UTF-8", "{\"kind\":\"ch\xffat\"}", jsontape.ErrInvalidUTF8, "UTF-8"},
		{"invalid UTF-8 in payload", "{\"payload\":{\"text\":\"\xc3\"}}", jsontape.ErrInvalidUTF8, "UTF-8"},
		{"truncated", `{"kind":"chat"`, jsontape.ErrSyntax, "end of input"},
		{"trailing data", `{"kind":"chat"} {}`, jsontape.ErrSyntax, "after the top-level value"},
		{"empty input", ``, jsontape.ErrSyntax, "want a value"},
		{"single quotes", `{'kind':'chat'}`, jsontape.ErrSyntax, "invalid JSON"},
		{"trailing comma", `{"kind":"chat",}`, jsontape.ErrSyntax, "invalid JSON"},
		{"too deep", `{"payload":` + deep + `}`, jsontape.ErrDepth, "nesting"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			env, err := Decode([]byte(tc.in))
			if err == nil {
				t.Fatalf("Decode succeeded: %+v", env)
			}
			if !errors.Is(err, tc.want) {
				t.Errorf("err = %v, want %v", err, tc.want)
			}
			if errors.Is(tc.want, jsontape.ErrSyntax) || errors.Is(tc.want, jsontape.ErrDuplicateKey) ||
				errors.Is(tc.want, jsontape.ErrInvalidUTF8) || errors.Is(tc.want, jsontape.ErrDepth) {
				if !errors.Is(err, ErrBadJSON) {
					t.Errorf("err = %v, want it to wrap ErrBadJSON too", err)
				}
				var se *jsontape.SyntaxError
				if !errors.As(err, &se) {
					t.Errorf("err = %v, want a *jsontape.SyntaxError inside", err)
				}
			} else {
				var fe *FieldError
				if !errors.As(err, &fe) {
					t.Errorf("err = %T, want *FieldError", err)
				}
			}
			if !strings.Contains(err.Error(), tc.field) {
				t.Errorf("message %q does not name %q", err, tc.field)
			}
			if env != nil {
				t.Errorf("Decode returned an envelope with its error")
			}
		})
	}
}

func TestFieldErrorMessage(t *testing.T) {
	_, err := Decode([]byte(`{"correlation_id":true}`))
	const want = "invalid envelope: correlation_id: correlation_id must be an array of strings (got true)"
	if err == nil || err.Error() != want {
		t.Errorf("err = %v\nwant %s", err, want)
	}
	var fe *FieldError
	if !errors.As(err, &fe) || fe.Field != "correlation_id" || errors.Unwrap(err) != ErrCorrelationNotArray {
		t.Errorf("FieldError = %+v", fe)
	}
}

func TestDecoderReuse(t *testing.T) {
	var d Decoder
	var envs []Envelope
	for _, src := range []string{
		`{"kind":"chat","id":"one","payload":{"text":"1"}}`,
		`{"kind":"chat","id":"two","to":["a","b"],"payload":{"text":"2"}}`,
		`{"kind":"chat","id":"three","x":1}`,
	} {
		var env Envelope
		if err := d.Decode([]byte(src), &env); err != nil {
			t.Fatal(err)
		}
		envs = append(envs, env)
	}
	// Earlier envelopes are not disturbed by later decodes.
	if envs[0].ID != "one" || string(envs[0].Payload) != `{"text":"1"}` || envs[1].To[1] != "b" || envs[2].Extra[0].Name != "x" {
		t.Errorf("got %+v", envs)
	}
	if envs[2].Payload != nil || envs[2].To != nil {
		t.Errorf("fields leaked from earlier decode: %+v", envs[2])
	}
}

func TestDecodeLargeEnvelope(t *testing.T) {
	// Many members: the parser switches to its set-based duplicate check.
	var b bytes.Buffer
	b.WriteString(`{"kind":"chat"`)
	for i := range 100 {
		b.WriteString(`,"k`)
		b.WriteString(strings.Repeat("x", i))
		b.WriteString(`":1`)
	}
	b.WriteString(`}`)
	env, err := Decode(b.Bytes())
	if err != nil || len(env.Extra) != 100 {
		t.Fatalf("got %d extras, %v", len(env.Extra), err)
	}
	if got := env.AppendJSON(nil); !bytes.Equal(got, b.Bytes()) {
		t.Errorf("round trip differs")
	}
}

// TestLoneCorrelationID: a lone string correlation_id, as the reference's
// agents send it, is read as a one-element list and encoded as one.
func TestLoneCorrelationID(t *testing.T) {
	for _, in := range []string{
		`{"kind":"chat","correlation_id":"m-1","payload":{"text":"x"}}`,
		`{"kind":"chat","to":["bob"],"correlation_id":"m-1","payload":{"text":"x"}}`,
		`{"kind":"chat","correlation_id":"m\u002d1","to":["bob"],"payload":{"text":"x"}}`,
	} {
		env, err := Decode([]byte(in))
		if err != nil {
			t.Fatalf("Decode(%s): %v", in, err)
		}
		if len(env.CorrelationID) != 1 || env.CorrelationID[0] != "m-1" {
			t.Errorf("Decode(%s).CorrelationID = %q, want [m-1]", in, env.CorrelationID)
		}
		if out := string(env.AppendJSON(nil)); !strings.Contains(out, `"correlation_id":["m-1"]`) {
			t.Errorf("encoded as %s, want a one-element array", out)
		}
		if len(env.To) > 0 && env.To[0] != "bob" {
			t.Errorf("to = %q", env.To)
		}
	}
}

func TestPeekID(t *testing.T) {
	for in, want := range map[string]string{
		`{"id":"m-1","kind":"chat","to":"bob"}`:   "m-1",
		`{"kind":"chat","id":"m-2","payload":[]}`: "m-2",
		`{"id":7}`:     "",
		`{"id":""}`:    "",
		`["id"]`:       "",
		`{"id":"m-3"`:  "",
		`{"ID":"m-4"}`: "",
		`{"id":"` + strings.Repeat("x", MaxIDLen+1) + `"}`: "",
	} {
		if got := PeekID([]byte(in)); got != want {
			t.Errorf("PeekID(%.40s) = %q, want %q", in, got, want)
		}
	}
}

// TestPeekIDPrefix: the id of an envelope cut anywhere after it is found;
// an id that comes after the cut, a nested "id", or garbage give "".
func TestPeekIDPrefix(t *testing.T) {
	full := `{"protocol":"mew/v0.4","payload":{"id":"inner","x":[1,{"id":"deeper"}]},"id":"env-1","kind":"mcp/response","more":"` + strings.Repeat("a", 1000)
	for cut := len(`{"protocol":"mew/v0.4","payload":{"id":"inner","x":[1,{"id":"deeper"}]},"id":"env-1"`); cut <= len(full); cut += 97 {
		if got := PeekIDPrefix([]byte(full[:cut])); got != "env-1" {
			t.Fatalf("cut at %d: %q", cut, got)
		}
	}
	for _, in := range []string{`{"protocol":"mew/v0.4","payload":{"id":"inner"`, `[{"id":"x"}]`, `{"id":5}`, `{"id":"`, "", "garbage"} {
		if got := PeekIDPrefix([]byte(in)); got != "" {
			t.Errorf("%q: %q, want none", in, got)
		}
	}
}
