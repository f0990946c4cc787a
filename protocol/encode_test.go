package protocol

import (
	"encoding/json"
	"errors"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

func TestAppendJSONOrderAndOmission(t *testing.T) {
	e := &Envelope{
		Extra:   []Field{{"x-b", json.RawMessage(`2`)}, {"x-a", json.RawMessage(`1`)}},
		Payload: json.RawMessage(`{"text":"hi"}`), Context: "c", CorrelationID: []string{"r"},
		Kind: "chat", To: []string{"a", "b"}, From: "f", TS: "t", ID: "i", Protocol: Version,
	}
	const want = `{"protocol":"mew/v0.4","id":"i","ts":"t","from":"f","to":["a","b"],"kind":"chat",` +
		`"correlation_id":["r"],"context":"c","payload":{"text":"hi"},"x-b":2,"x-a":1}`
	if got := string(e.AppendJSON(nil)); got != want {
		t.Errorf("got  %s\nwant %s", got, want)
	}
	empty := &Envelope{To: []string{}, CorrelationID: []string{}, Payload: json.RawMessage{}}
	if got := string(empty.AppendJSON(nil)); got != `{}` {
		t.Errorf("empty envelope = %s", got)
	}
	nullPayload := &Envelope{Kind: "k", Payload: json.RawMessage(" null ")}
	if got := string(nullPayload.AppendJSON(nil)); got != `{"kind":"k"}` {
		t.Errorf("null payload = %s", got)
	}
	onlyExtra := &Envelope{Extra: []Field{{"a", nil}}}
	if got := string(onlyExtra.AppendJSON(nil)); got != `{"a":null}` {
		t.Errorf("only extra = %s", got)
	}
	// AppendJSON appends.
	if got := string((&Envelope{Kind: "k"}).AppendJSON([]byte("log: "))); got != `log: {"kind":"k"}` {
		t.Errorf("append = %s", got)
	}
}

// JSON.stringify escapes only '"', '\\' and control characters; what it does
// to each is pinned here (the expected strings are what node prints).
func TestAppendStringLikeJSONStringify(t *testing.T) {
	tests := []struct{ in, want string }{
		{"plain", `"plain"`},
		{`<a href="x">&amp;</a>`, `"<a href=\"x\">&amp;</a>"`},
		{`back\slash`, `"back\\slash"`},
		{"\b\f\n\r\t", `"\b\f\n\r\t"`},
		{"\x00\x01\x1f", `"\u0000\u0001\u001f"`},
		{"\x7f", "\"\x7f\""},
		{"é 漢字 😀", `"é 漢字 😀"`},
		{"\u2028\u2029", "\"\u2028\u2029\""},
		{"/slash", `"/slash"`},
		{"bad \xff byte", `"bad \ufffd byte"`},
		{"\xe2\x82", `"\ufffd\ufffd"`},
		{"", `""`},
	}
	for _, tc := range tests {
		if got := string(appendString(nil, tc.in)); got != tc.want {
			t.Errorf("appendString(%q) = %s, want %s", tc.in, got, tc.want)
		}
		// Whatever we write is valid JSON that reads back as the input (for
		// valid UTF-8).
		var back string
		if err := json.Unmarshal(appendString(nil, tc.in), &back); err != nil {
			t.Errorf("appendString(%q) is not JSON: %v", tc.in, err)
		}
	}
}

func TestAppendJSONCompactsRaw(t *testing.T) {
	tests := []struct{ raw, want string }{
		{`{"a":1}`, `{"a":1}`},
		{"{ \"a\" :\n\t[ 1 , 2 ] }", `{"a":[1,2]}`},
		{`{"text":"keep  these   spaces"}`, `{"text":"keep  these   spaces"}`},
		{`{"text":"quote \" then space", "b" : 1}`, `{"text":"quote \" then space","b":1}`},
		{`{"text":"backslash \\", "b" : 1}`, `{"text":"backslash \\","b":1}`},
		{`{"a":"<&>"}`, `{"a":"<&>"}`},
		{`{"a": 1`, `null`}, // invalid, found while compacting: written as null
	}
	for _, tc := range tests {
		e := &Envelope{Payload: json.RawMessage(tc.raw)}
		got := string(e.AppendJSON(nil))
		if want := `{"payload":` + tc.want + `}`; got != want {
			t.Errorf("payload %q: got %s, want %s", tc.raw, got, want)
		}
	}
}

func TestMarshalJSON(t *testing.T) {
	e := Envelope{Kind: "chat", Payload: json.RawMessage(`{"text":"<b>"}`)}
	b, err := e.MarshalJSON()
	if err != nil || string(b) != `{"kind":"chat","payload":{"text":"<b>"}}` {
		t.Errorf("MarshalJSON = %s, %v", b, err)
	}
	// By value in another struct (the value receiver is why this works).
	type record struct {
		Env Envelope `json:"envelope"`
	}
	if b, err := json.Marshal(record{e}); err != nil || !strings.Contains(string(b), `"payload":{"text":`) {
		t.Errorf("json.Marshal(record) = %s, %v", b, err)
	}
	bad := Envelope{Kind: "k", Payload: json.RawMessage(`{"a":`)}
	if _, err := bad.MarshalJSON(); !errors.Is(err, ErrBadJSON) {
		t.Errorf("invalid payload: err = %v", err)
	}
	bad = Envelope{Kind: "k", Extra: []Field{{"x", json.RawMessage(`nope`)}}}
	if _, err := json.Marshal(bad); !errors.Is(err, ErrBadJSON) {
		t.Errorf("invalid extra: err = %v", err)
	}
}

func TestEnvelopeHelpers(t *testing.T) {
	e := &Envelope{To: []string{"a", "b"}, CorrelationID: []string{"r1", "r2"}}
	if e.IsBroadcast() || !e.AddressedTo("b") || e.AddressedTo("c") {
		t.Error("addressing wrong for to=[a b]")
	}
	if !e.CorrelatesWith("r2") || e.CorrelatesWith("r3") {
		t.Error("CorrelatesWith wrong")
	}
	b := &Envelope{}
	if !b.IsBroadcast() || !b.AddressedTo("anyone") || b.CorrelatesWith("") {
		t.Error("broadcast envelope wrong")
	}
}

func TestTime(t *testing.T) {
	e := &Envelope{TS: "2026-11-22T10:03:38.358Z"}
	got, err := e.Time()
	if err != nil || !got.Equal(fixedTime) {
		t.Errorf("Time = %v, %v", got, err)
	}
	if s := FormatTime(fixedTime.In(time.FixedZone("x", 3600))); s != e.TS {
		t.Errorf("FormatTime = %s, want %s", s, e.TS)
	}
	if s := FormatTime(time.Date(2025, 1, 2, 3, 4, 5, 0, time.UTC)); s != "2025-01-02T03:04:05.000Z" {
		t.Errorf("FormatTime whole second = %s", s)
	}
	if _, err := (&Envelope{}).Time(); !errors.Is(err, ErrMissingField) {
		t.Errorf("empty ts: %v", err)
	}
	if _, err := (&Envelope{TS: "soon"}).Time(); !errors.Is(err, ErrBadTimestamp) || !strings.Contains(err.Error(), "ts") {
		t.Errorf("bad ts: %v", err)
	}
}

func TestClone(t *testing.T) {
	e, err := Decode([]byte(`{"kind":"chat","to":["a"],"correlation_id":["r"],"payload":{"text":"x"},"z":[1]}`))
	if err != nil {
		t.Fatal(err)
	}
	c := e.Clone()
	if diff := cmp.Diff(e, c); diff != "" {
		t.Fatalf("clone differs:\n%s", diff)
	}
	c.To[0], c.CorrelationID[0], c.Payload[2], c.Extra[0].Value[1] = "b", "s", 'X', '9'
	if e.To[0] != "a" || e.CorrelationID[0] != "r" || e.Payload[2] != 't' || string(e.Extra[0].Value) != "[1]" {
		t.Errorf("clone shares memory: %+v", e)
	}
	if c := (&Envelope{Kind: "k"}).Clone(); c.Payload != nil || c.Extra != nil || c.To != nil {
		t.Errorf("clone of empty invented fields: %+v", c)
	}
}

func TestNewID(t *testing.T) {
	re := regexp.MustCompile(`^[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$`)
	seen := map[string]bool{}
	prev := ""
	for range 1000 {
		id := NewID()
		if !re.MatchString(id) {
			t.Fatalf("NewID() = %q, not a UUIDv7", id)
		}
		if seen[id] {
			t.Fatalf("duplicate id %s", id)
		}
		seen[id] = true
		if id <= prev {
			t.Fatalf("ids not increasing: %s after %s", id, prev)
		}
		prev = id
	}
}

func TestKinds(t *testing.T) {
	kinds := Kinds()
	if len(kinds) != 35 {
		t.Errorf("Kinds() has %d kinds, want 35 (33 of spec §3 + 2 floor)", len(kinds))
	}
	seen := map[string]bool{}
	for _, k := range append(kinds, ExtensionKinds()...) {
		if seen[k] {
			t.Errorf("kind %s listed twice", k)
		}
		seen[k] = true
		if !IsKnownKind(k) {
			t.Errorf("IsKnownKind(%s) = false", k)
		}
		if got, ok := internKind([]byte(k)); !ok || got != k {
			t.Errorf("internKind(%s) = %q, %v", k, got, ok)
		}
		if err := validateKind(k); err != nil {
			t.Errorf("kind constant %s fails validation: %v", k, err)
		}
	}
	kinds[0] = "changed"
	if Kinds()[0] != KindMCPRequest {
		t.Error("Kinds() shares its slice")
	}
	if IsKnownKind("chat/") || IsKnownKind("") {
		t.Error("IsKnownKind accepts an unknown kind")
	}
	for kind, want := range map[string][2]bool{
		KindSystemWelcome:     {true, true},
		KindSystemHeartbeat:   {true, true},
		"system/anything":     {true, true},
		KindFloorYield:        {false, true},
		KindFloorRespondingTo: {false, false},
		KindChat:              {false, false},
		"systems/x":           {false, false},
	} {
		if IsSystem(kind) != want[0] || IsGatewayOnly(kind) != want[1] {
			t.Errorf("%s: IsSystem %v IsGatewayOnly %v, want %v", kind, IsSystem(kind), IsGatewayOnly(kind), want)
		}
	}
}
