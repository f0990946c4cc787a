package protocol

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"
)

// list returns a JSON array of n distinct ids.
func list(n int) string {
	parts := make([]string, n)
	for i := range parts {
		parts[i] = fmt.Sprintf(`"p%d"`, i)
	}
	return "[" + strings.Join(parts, ",") + "]"
}

func TestValidate(t *testing.T) {
	long := func(n int) string { return strings.Repeat("a", n) }
	tests := []struct {
		name  string
		in    string
		want  error // nil = valid
		field string
	}{
		// Envelope rules.
		{"minimal chat", `{"kind":"chat","payload":{"text":"hi"}}`, nil, ""},
		{"no kind", `{"payload":{"text":"hi"}}`, ErrMissingKind, "kind"},
		{"kind at limit", `{"kind":"` + long(MaxKindLen) + `"}`, nil, ""},
		{"kind too long", `{"kind":"` + long(MaxKindLen+1) + `"}`, ErrTooLong, "kind"},
		{"kind with space", `{"kind":"chat message"}`, ErrBadKind, "kind"},
		{"kind with glob", `{"kind":"mcp/*"}`, ErrBadKind, "kind"},
		{"kind non-ASCII", `{"kind":"chät"}`, ErrBadKind, "kind"},
		{"kind all allowed bytes", `{"kind":"A-z_0.9:x/y"}`, nil, ""},
		{"protocol v0.4", `{"protocol":"mew/v0.4","kind":"x"}`, nil, ""},
		{"protocol v0.3", `{"protocol":"mew/v0.3","kind":"x"}`, ErrWrongProtocol, "protocol"},
		{"id at limit", `{"id":"` + long(MaxIDLen) + `","kind":"x"}`, nil, ""},
		{"id too long", `{"id":"` + long(MaxIDLen+1) + `","kind":"x"}`, ErrTooLong, "id"},
		{"from too long", `{"from":"` + long(MaxIDLen+1) + `","kind":"x"}`, ErrTooLong, "from"},
		{"ts RFC 3339", `{"ts":"2025-08-26T14:00:00Z","kind":"x"}`, nil, ""},
		{"ts with offset and fraction", `{"ts":"2025-08-26T14:00:00.123456+02:00","kind":"x"}`, nil, ""},
		{"ts words", `{"ts":"yesterday","kind":"x"}`, ErrBadTimestamp, "ts"},
		{"ts with space", `{"ts":"2025-08-26 14:00:00Z","kind":"x"}`, ErrBadTimestamp, "ts"},
		{"ts without zone", `{"ts":"2025-08-26T14:00:00","kind":"x"}`, ErrBadTimestamp, "ts"},
		{"ts out of range", `{"ts":"2025-13-26T14:00:00Z","kind":"x"}`, ErrBadTimestamp, "ts"},
		{"to at limit", `{"kind":"x","to":` + list(MaxTo) + `}`, nil, ""},
		{"to too many", `{"kind":"x","to":` + list(MaxTo+1) + `}`, ErrTooMany, "to"},
		{"to empty entry", `{"kind":"x","to":["a",""]}`, ErrEmptyValue, "to[1]"},
		{"to entry too long", `{"kind":"x","to":["` + long(MaxIDLen+1) + `"]}`, ErrTooLong, "to[0]"},
		{"correlation at limit", `{"kind":"x","correlation_id":` + list(MaxCorrelationIDs) + `}`, nil, ""},
		{"correlation too many", `{"kind":"x","correlation_id":` + list(MaxCorrelationIDs+1) + `}`, ErrTooMany, "correlation_id"},
		{"correlation empty entry", `{"kind":"x","correlation_id":[""]}`, ErrEmptyValue, "correlation_id[0]"},
		{"correlation entry too long", `{"kind":"x","correlation_id":["` + long(MaxIDLen+1) + `"]}`, ErrTooLong, "correlation_id[0]"},
		{"context at limit", `{"kind":"x","context":"` + long(MaxContextLen) + `"}`, nil, ""},
		{"context too long", `{"kind":"x","context":"` + long(MaxContextLen+1) + `"}`, ErrTooLong, "context"},
		{"unknown kind no payload", `{"kind":"custom/thing"}`, nil, ""},
		{"unknown kind with payload", `{"kind":"custom/thing","payload":{"a":1}}`, nil, ""},
		{"extra members allowed", `{"kind":"chat","payload":{"text":"hi"},"x-trace":{"a":1}}`, nil, ""},

		// chat
		{"chat no payload", `{"kind":"chat"}`, ErrMissingPayload, "payload"},
		{"chat null payload", `{"kind":"chat","payload":null}`, ErrMissingPayload, "payload"},
		{"chat no text", `{"kind":"chat","payload":{"format":"plain"}}`, ErrMissingField, "payload.text"},
		{"chat null text", `{"kind":"chat","payload":{"text":null}}`, ErrMissingField, "payload.text"},
		{"chat text number", `{"kind":"chat","payload":{"text":5}}`, ErrBadType, "payload.text"},
		{"chat empty text", `{"kind":"chat","payload":{"text":""}}`, ErrEmptyValue, "payload.text"},
		{"chat format number", `{"kind":"chat","payload":{"text":"a","format":1}}`, ErrBadType, "payload.format"},
		{"chat extra payload members", `{"kind":"chat","payload":{"text":"a","mentions":["b"]}}`, nil, ""},
		{"chat/acknowledge", `{"kind":"chat/acknowledge","correlation_id":["c"],"payload":{"status":"received"}}`, nil, ""},
		{"chat/acknowledge no correlation", `{"kind":"chat/acknowledge","payload":{"status":"received"}}`, ErrMissingField, "correlation_id"},
		{"chat/cancel no payload", `{"kind":"chat/cancel","correlation_id":["c"]}`, nil, ""},
		{"chat/cancel reason number", `{"kind":"chat/cancel","correlation_id":["c"],"payload":{"reason":1}}`, ErrBadType, "payload.reason"},

		// mcp
		{"mcp/request", `{"kind":"mcp/request","payload":{"jsonrpc":"2.0","id":1,"method":"tools/list"}}`, nil, ""},
		{"mcp/request no payload", `{"kind":"mcp/request"}`, ErrMissingPayload, "payload"},
		{"mcp/request no method", `{"kind":"mcp/request","payload":{"jsonrpc":"2.0","id":1}}`, ErrMissingField, "payload.method"},
		{"mcp/request method number", `{"kind":"mcp/request","payload":{"method":1}}`, ErrBadType, "payload.method"},
		{"mcp/request params string", `{"kind":"mcp/request","payload":{"method":"m","params":"x"}}`, ErrBadType, "payload.params"},
		{"mcp/request params array", `{"kind":"mcp/request","payload":{"method":"m","params":[1]}}`, nil, ""},
		{"mcp/request jsonrpc number", `{"kind":"mcp/request","payload":{"method":"m","jsonrpc":2}}`, ErrBadType, "payload.jsonrpc"},
		{"mcp/proposal no method", `{"kind":"mcp/proposal","payload":{"params":{}}}`, ErrMissingField, "payload.method"},
		{"mcp/proposal", `{"kind":"mcp/proposal","payload":{"method":"tools/call","params":{"name":"x"}}}`, nil, ""},
		{"mcp/response", `{"kind":"mcp/response","correlation_id":["r"],"payload":{"jsonrpc":"2.0","id":1,"result":{}}}`, nil, ""},
		{"mcp/response no correlation", `{"kind":"mcp/response","payload":{"result":{}}}`, ErrMissingField, "correlation_id"},
		{"mcp/response no payload", `{"kind":"mcp/response","correlation_id":["r"]}`, ErrMissingPayload, "payload"},
		{"mcp/response error string", `{"kind":"mcp/response","correlation_id":["r"],"payload":{"error":"x"}}`, ErrBadType, "payload.error"},
		{"mcp/withdraw", `{"kind":"mcp/withdraw","correlation_id":["p"],"payload":{"reason":"timeout"}}`, nil, ""},
		{"mcp/withdraw no correlation", `{"kind":"mcp/withdraw","payload":{"reason":"timeout"}}`, ErrMissingField, "correlation_id"},
		{"mcp/reject no correlation", `{"kind":"mcp/reject","payload":{"reason":"unsafe"}}`, ErrMissingField, "correlation_id"},

		// reasoning
		{"reasoning/start", `{"kind":"reasoning/start","payload":{"message":"m"}}`, nil, ""},
		{"reasoning/start reference shape", `{"kind":"reasoning/start","payload":{"input":"q"}}`, nil, ""},
		{"reasoning/thought message number", `{"kind":"reasoning/thought","payload":{"message":1}}`, ErrBadType, "payload.message"},
		{"reasoning/cancel", `{"kind":"reasoning/cancel","context":"r1","payload":{"reason":"superseded"}}`, nil, ""},
		{"reasoning/cancel no context", `{"kind":"reasoning/cancel","payload":{"reason":"superseded"}}`, ErrMissingField, "context"},

		// capability and space
		{"grant", `{"kind":"capability/grant","payload":{"recipient":"a","capabilities":[{"kind":"chat"}]}}`, nil, ""},
		{"grant no capabilities", `{"kind":"capability/grant","payload":{"recipient":"a"}}`, ErrMissingField, "payload.capabilities"},
		{"grant no recipient", `{"kind":"capability/grant","payload":{"capabilities":[]}}`, ErrMissingField, "payload.recipient"},
		{"grant capability string", `{"kind":"capability/grant","payload":{"recipient":"a","capabilities":[{"kind":"chat"},"chat"]}}`, ErrBadType, "payload.capabilities[1]"},
		{"revoke by id", `{"kind":"capability/revoke","payload":{"recipient":"a","grant_id":"g"}}`, nil, ""},
		{"revoke by pattern", `{"kind":"capability/revoke","payload":{"recipient":"a","capabilities":[{"kind":"mcp/*"}]}}`, nil, ""},
		{"revoke neither", `{"kind":"capability/revoke","payload":{"recipient":"a"}}`, ErrMissingField, "payload.grant_id"},
		{"grant-ack no payload", `{"kind":"capability/grant-ack","correlation_id":["g"]}`, nil, ""},
		{"invite", `{"kind":"space/invite","payload":{"participant_id":"n","initial_capabilities":[{"kind":"chat"}]}}`, nil, ""},
		{"invite no participant", `{"kind":"space/invite","payload":{"email":"a@b"}}`, ErrMissingField, "payload.participant_id"},
		{"invite no payload", `{"kind":"space/invite"}`, ErrMissingPayload, "payload"},
		{"invite caps not array", `{"kind":"space/invite","payload":{"participant_id":"n","initial_capabilities":{}}}`, ErrBadType, "payload.initial_capabilities"},
		{"kick", `{"kind":"space/kick","payload":{"participant_id":"n","reason":"r"}}`, nil, ""},
		{"kick empty participant", `{"kind":"space/kick","payload":{"participant_id":""}}`, ErrEmptyValue, "payload.participant_id"},
		{"invite-ack no status", `{"kind":"space/invite-ack","payload":{"participant_id":"n"}}`, ErrMissingField, "payload.status"},

		// participant controls
		{"pause", `{"kind":"participant/pause","payload":{"reason":"rate_limit","timeout_seconds":60}}`, nil, ""},
		{"pause timeout string", `{"kind":"participant/pause","payload":{"timeout_seconds":"60"}}`, ErrBadType, "payload.timeout_seconds"},
		{"resume empty payload", `{"kind":"participant/resume","payload":{}}`, nil, ""},
		{"request-status fields", `{"kind":"participant/request-status","payload":{"fields":["tokens"]}}`, nil, ""},
		{"request-status fields numbers", `{"kind":"participant/request-status","payload":{"fields":[1]}}`, ErrBadType, "payload.fields[0]"},
		{"status", `{"kind":"participant/status","payload":{"tokens":1,"max_tokens":2,"messages_in_context":3,"custom_metric":4}}`, nil, ""},
		{"status no payload", `{"kind":"participant/status"}`, ErrMissingPayload, "payload"},
		{"status tokens string", `{"kind":"participant/status","payload":{"tokens":"many","messages_in_context":1}}`, ErrBadType, "payload.tokens"},
		{"forget", `{"kind":"participant/forget","payload":{"direction":"oldest","entries":10}}`, nil, ""},
		{"forget newest", `{"kind":"participant/forget","payload":{"direction":"newest"}}`, nil, ""},
		{"forget bad direction", `{"kind":"participant/forget","payload":{"direction":"middle"}}`, ErrBadValue, "payload.direction"},
		{"forget no direction", `{"kind":"participant/forget","payload":{"entries":10}}`, ErrMissingField, "payload.direction"},
		{"compact-done skipped string", `{"kind":"participant/compact-done","payload":{"skipped":"yes"}}`, ErrBadType, "payload.skipped"},
		{"clear without payload", `{"kind":"participant/clear"}`, nil, ""},
		{"restart without payload", `{"kind":"participant/restart"}`, nil, ""},
		{"shutdown without payload", `{"kind":"participant/shutdown"}`, nil, ""},

		// streams
		{"stream/request", `{"kind":"stream/request","payload":{"direction":"upload","expected_size_bytes":10,"metadata":{"a":1},"target":["b"],"custom":true}}`, nil, ""},
		{"stream/request bad direction", `{"kind":"stream/request","payload":{"direction":"sideways"}}`, ErrBadValue, "payload.direction"},
		{"stream/request without direction (reference agents omit it)", `{"kind":"stream/request","payload":{"modes":["text"]}}`, nil, ""},
		{"stream/request bad direction", `{"kind":"stream/request","payload":{"direction":"sideways"}}`, ErrBadValue, "payload.direction"},
		{"stream/request target string", `{"kind":"stream/request","payload":{"direction":"upload","target":"b"}}`, ErrBadType, "payload.target"},
		{"stream/request metadata array", `{"kind":"stream/request","payload":{"direction":"upload","metadata":[]}}`, ErrBadType, "payload.metadata"},
		{"stream/open no id", `{"kind":"stream/open","payload":{"encoding":"text"}}`, ErrMissingField, "payload.stream_id"},
		{"stream/close by correlation", `{"kind":"stream/close","correlation_id":["o"],"payload":{"reason":"complete"}}`, nil, ""},
		{"grant-write no participant", `{"kind":"stream/grant-write","payload":{"stream_id":"s"}}`, ErrMissingField, "payload.participant_id"},
		{"transfer no owner", `{"kind":"stream/transfer-ownership","payload":{"stream_id":"s"}}`, ErrMissingField, "payload.new_owner"},

		// floor control
		{"responding-to", `{"kind":"floor/responding-to","correlation_id":["m"],"payload":{"started_at":1700000000000}}`, nil, ""},
		{"responding-to no correlation", `{"kind":"floor/responding-to","payload":{"started_at":1}}`, ErrMissingField, "correlation_id"},
		{"responding-to started_at string", `{"kind":"floor/responding-to","correlation_id":["m"],"payload":{"started_at":"now"}}`, ErrBadType, "payload.started_at"},
		{"yield no winner", `{"kind":"floor/yield","correlation_id":["m"],"payload":{"winner_started_at":1}}`, ErrMissingField, "payload.winner"},

		// system
		{"welcome no you", `{"kind":"system/welcome","payload":{"participants":[]}}`, ErrMissingField, "payload.you"},
		{"welcome participants object", `{"kind":"system/welcome","payload":{"you":{"id":"a"},"participants":{}}}`, ErrBadType, "payload.participants"},
		{"presence no participant", `{"kind":"system/presence","payload":{"event":"join"}}`, ErrMissingField, "payload.participant"},
		{"error no error", `{"kind":"system/error","payload":{"message":"m"}}`, ErrMissingField, "payload.error"},
		{"heartbeat", `{"kind":"system/heartbeat"}`, nil, ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			env, err := Decode([]byte(tc.in))
			if err != nil {
				t.Fatalf("Decode: %v", err)
			}
			err = env.Validate()
			checkErr(t, err, tc.want, tc.field)
		})
	}
}

func checkErr(t *testing.T, err, want error, field string) {
	t.Helper()
	if want == nil {
		if err != nil {
			t.Errorf("unexpected error: %v", err)
		}
		return
	}
	if !errors.Is(err, want) {
		t.Fatalf("err = %v, want %v", err, want)
	}
	var fe *FieldError
	if !errors.As(err, &fe) {
		t.Fatalf("err = %T, want *FieldError", err)
	}
	if fe.Field != field {
		t.Errorf("Field = %q, want %q", fe.Field, field)
	}
	if !strings.Contains(err.Error(), field) {
		t.Errorf("message %q does not name %q", err, field)
	}
}

// Envelopes built in Go can hold what Decode never produces.
func TestValidateBuiltEnvelopes(t *testing.T) {
	tests := []struct {
		name  string
		env   Envelope
		want  error
		field string
	}{
		{"payload not JSON", Envelope{Kind: "x", Payload: json.RawMessage(`{"a":`)}, ErrBadJSON, "payload"},
		{"payload array", Envelope{Kind: "x", Payload: json.RawMessage(`[1]`)}, ErrPayloadNotObject, "payload"},
		{"payload string", Envelope{Kind: "x", Payload: json.RawMessage(` "s"`)}, ErrPayloadNotObject, "payload"},
		{"id invalid UTF-8", Envelope{Kind: "x", ID: "a\xff"}, ErrBadUTF8, "id"},
		{"to invalid UTF-8", Envelope{Kind: "x", To: []string{"\xc3"}}, ErrBadUTF8, "to[0]"},
		{"context invalid UTF-8", Envelope{Kind: "x", Context: "\xc3"}, ErrBadUTF8, "context"},
		{"extra reuses known name", Envelope{Kind: "x", Extra: []Field{{"kind", json.RawMessage(`"y"`)}}}, ErrDuplicateField, "kind"},
		{"extra repeats a name", Envelope{Kind: "x", Extra: []Field{{"a", json.RawMessage(`1`)}, {"a", json.RawMessage(`2`)}}}, ErrDuplicateField, "a"},
		{"extra invalid JSON", Envelope{Kind: "x", Extra: []Field{{"a", json.RawMessage(`{`)}}}, ErrBadJSON, "a"},
		{"extra empty value", Envelope{Kind: "x", Extra: []Field{{"a", nil}}}, ErrBadJSON, "a"},
		{"extra name invalid UTF-8", Envelope{Kind: "x", Extra: []Field{{"\xff", json.RawMessage(`1`)}}}, ErrBadUTF8, "\xff"},
		{"fine", Envelope{Kind: "x", Extra: []Field{{"a", json.RawMessage(` [ 1 ] `)}}}, nil, ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			checkErr(t, tc.env.Validate(), tc.want, tc.field)
		})
	}
}

func TestValidateComplete(t *testing.T) {
	full := Envelope{Protocol: Version, ID: "i", TS: "2025-08-26T14:00:00Z", From: "f", Kind: "x"}
	if err := full.ValidateComplete(); err != nil {
		t.Fatalf("complete envelope: %v", err)
	}
	for _, field := range []string{"protocol", "id", "ts", "from"} {
		t.Run(field, func(t *testing.T) {
			e := full
			switch field {
			case "protocol":
				e.Protocol = ""
			case "id":
				e.ID = ""
			case "ts":
				e.TS = ""
			case "from":
				e.From = ""
			}
			if err := e.Validate(); err != nil {
				t.Errorf("Validate should accept a missing %s: %v", field, err)
			}
			checkErr(t, e.ValidateComplete(), ErrMissingField, field)
		})
	}
	// ValidateComplete applies Validate's rules too.
	e := full
	e.Protocol = "mew/v0.3"
	checkErr(t, e.ValidateComplete(), ErrWrongProtocol, "protocol")
}

// Every kind with a payload rule appears in the kind lists, so the table in
// doc.go and the constants stay in step.
func TestKindRulesCoverKnownKinds(t *testing.T) {
	known := map[string]bool{}
	for _, k := range append(Kinds(), ExtensionKinds()...) {
		known[k] = true
	}
	for k := range kindRules {
		if !known[k] {
			t.Errorf("rule for unknown kind %q", k)
		}
	}
}

func TestIsReservedID(t *testing.T) {
	for id, want := range map[string]bool{
		"system:gateway": true, "System:Gateway": true, " system:gateway ": true, "SYSTEM:x": true,
		"system:": true, "gateway": true, "GATEWAY": true, " Gateway": true,
		"systemgateway": false, "gateway2": false, "my-gateway": false, "sys": false, "": false,
		"human": false, "agent:system:x": false,
	} {
		if got := IsReservedID(id); got != want {
			t.Errorf("IsReservedID(%q) = %v, want %v", id, got, want)
		}
	}
}
