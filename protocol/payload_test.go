package protocol

import (
	"encoding/json"
	"errors"
	"reflect"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func raws(ss ...string) []json.RawMessage {
	out := make([]json.RawMessage, len(ss))
	for i, s := range ss {
		out[i] = json.RawMessage(s)
	}
	return out
}

// samplePayloads has, for every kind with a payload, a value with every field
// set (strings with characters JSON.stringify leaves alone, such as <>&).
func samplePayloads() map[string]any {
	caps := raws(`{"kind":"chat"}`, `{"kind":"mcp/request","payload":{"method":"tools/*"}}`)
	stream := StreamInfo{
		StreamID: "stream-42", Owner: "agent-1", AuthorizedWriters: []string{"agent-1", "agent-2"},
		Created: "2025-01-09T10:00:00Z", Direction: DirectionUpload, ExpectedSizeBytes: 1048576,
		Description: "Chain-of-thought <reasoning> & more", ContentType: "application/json", Format: "jsonl",
		Metadata: json.RawMessage(`{"compression":"gzip"}`), Target: []string{"alice"},
		Extra: map[string]json.RawMessage{"custom_field": json.RawMessage(`{"x":[1,2]}`), "priority": json.RawMessage(`3`)},
	}
	return map[string]any{
		KindMCPRequest: &MCPMessage{JSONRPC: "2.0", ID: json.RawMessage(`42`), Method: "tools/call",
			Params: json.RawMessage(`{"name":"read_file","arguments":{"path":"/tmp/a&b"}}`)},
		KindMCPResponse: &MCPMessage{JSONRPC: "2.0", ID: json.RawMessage(`"req-1"`),
			Result: json.RawMessage(`{"content":[{"type":"text","text":"ok"}]}`),
			Error:  &RPCError{Code: -32603, Message: "Internal error", Data: json.RawMessage(`{"why":"x"}`)}},
		KindMCPProposal:         &MCPMessage{Method: "tools/call", Params: json.RawMessage(`{"name":"dangerous_operation"}`)},
		KindMCPWithdraw:         &Withdraw{Reason: ReasonNoLongerNeeded},
		KindMCPReject:           &Reject{Reason: ReasonUnsafe},
		KindReasoningStart:      &Reasoning{Message: "Analyzing", Input: "question?"},
		KindReasoningThought:    &Reasoning{Message: "m", Reasoning: "r", Action: "call", ActionInput: json.RawMessage(`{"a":1}`)},
		KindReasoningConclusion: &Reasoning{Message: "done"},
		KindReasoningCancel:     &ReasoningCancel{Reason: "superseded"},
		KindCapabilityGrant:     &Grant{Recipient: "untrusted-agent", Capabilities: caps, Reason: "Demonstrated safe file handling"},
		KindCapabilityRevoke:    &Revoke{Recipient: "agent", GrantID: "grant-789", Capabilities: caps, Reason: "Task completed"},
		KindCapabilityGrantAck:  &GrantAck{Status: GrantAccepted},
		KindSpaceInvite: &Invite{ParticipantID: "new-agent", Email: "op@example.com",
			InitialCapabilities: caps, Reason: "Adding specialized analysis agent"},
		KindSpaceInviteAck: &InviteAck{Status: InviteCreated, ParticipantID: "new-agent", Token: "tok",
			ConnectionURL: "ws://localhost:8080/", Error: "none"},
		KindSpaceKick:                &Kick{ParticipantID: "misbehaving-agent", Reason: "Repeated capability violations"},
		KindParticipantPause:         &Pause{Reason: "rate_limit", TimeoutSeconds: 60},
		KindParticipantResume:        &Resume{Reason: "timeout"},
		KindParticipantRequestStatus: &RequestStatus{Fields: []string{"tokens", "latency"}},
		KindParticipantStatus: &Status{Tokens: 12345, MaxTokens: 20000, MessagesInContext: 128, LatencyMS: 350.5,
			Status: ParticipantStatusActive, Extra: map[string]json.RawMessage{"queue_depth": json.RawMessage(`4`)}},
		KindParticipantForget:      &Forget{Direction: ForgetOldest, Entries: 10},
		KindParticipantCompact:     &Compact{Reason: "token_pressure", TargetTokens: 16000},
		KindParticipantCompactDone: &CompactDone{FreedTokens: 2048, FreedMessages: 12, Status: CompactStatusCompacted, Skipped: true, Reason: "r"},
		KindParticipantClear:       &Clear{Reason: "test_clear"},
		KindParticipantRestart:     &Restart{Reason: "r", Mode: "soft"},
		KindParticipantShutdown:    &Shutdown{Reason: "test_shutdown"},
		KindStreamRequest: &StreamRequest{Direction: DirectionUpload, ExpectedSizeBytes: 10485760,
			Description: "Large dataset export", ContentType: "application/json", Format: "jsonl",
			Metadata: json.RawMessage(`{"compression":"gzip","schema_version":"1.0"}`), Target: []string{"aggregator"},
			Extra: map[string]json.RawMessage{"game": json.RawMessage(`"cat-maze"`)}},
		KindStreamOpen: &StreamOpen{StreamID: "stream-1", Encoding: StreamEncodingText, Owner: "bob",
			AuthorizedWriters: []string{"bob"}, Target: []string{"alice"}, Compression: "gzip"},
		KindStreamClose:       &StreamClose{StreamID: "stream-1", Reason: StreamCloseComplete},
		KindStreamGrantWrite:  &StreamGrantWrite{StreamID: "stream-1", ParticipantID: "w", Reason: "help"},
		KindStreamRevokeWrite: &StreamRevokeWrite{StreamID: "stream-1", ParticipantID: "w", Reason: "done"},
		KindStreamTransferOwnership: &StreamTransferOwnership{StreamID: "stream-1", NewOwner: "w",
			Reason: "handover"},
		KindStreamWriteGranted: &StreamWriteGranted{StreamID: "stream-1", ParticipantID: "w",
			AuthorizedWriters: []string{"bob", "w"}, Reason: "help"},
		KindStreamWriteRevoked: &StreamWriteRevoked{StreamID: "stream-1", ParticipantID: "w",
			AuthorizedWriters: []string{"bob"}, Reason: "done"},
		KindStreamOwnershipTransferred: &StreamOwnershipTransferred{StreamID: "stream-1", PreviousOwner: "bob",
			NewOwner: "w", AuthorizedWriters: []string{"w"}, Reason: "handover"},
		KindChat:            &Chat{Text: "Hello <everyone> & \"all\"\n😀", Format: FormatMarkdown},
		KindChatAcknowledge: &ChatAcknowledge{Status: ChatAckReceived},
		KindChatCancel:      &ChatCancel{Reason: "handled elsewhere"},
		KindSystemPresence: &Presence{Event: PresenceInvited, Participant: ParticipantInfo{ID: "new", Capabilities: caps},
			InvitedBy: "admin", Reason: "help"},
		KindSystemWelcome: &Welcome{
			You:           ParticipantInfo{ID: "new-participant", Capabilities: caps},
			Participants:  []ParticipantInfo{{ID: "agent-1", Capabilities: caps}, {ID: "agent-2", Capabilities: []json.RawMessage{}}},
			ActiveStreams: []StreamInfo{stream},
		},
		KindSystemError: &SystemError{Error: ErrorCapabilityViolation, Message: "m", Code: CodeValidationError,
			AttemptedKind: KindMCPRequest, YourCapabilities: caps, Targets: []string{"ghost"}, StreamID: "stream-9"},
		KindSystemJoin:        &Join{Space: "s", ParticipantID: "p", Participant: "human", Token: "t", Capabilities: caps},
		KindFloorRespondingTo: &RespondingTo{StartedAt: 1700000000123},
		KindFloorYield:        &Yield{Winner: "agent-a", WinnerStartedAt: 1700000000001},
	}
}

func TestPayloadRoundTrip(t *testing.T) {
	samples := samplePayloads()
	all := append(Kinds(), ExtensionKinds()...)
	for _, kind := range all {
		if PayloadFor(kind) != nil && samples[kind] == nil {
			t.Errorf("no sample payload for %s", kind)
		}
	}
	var d Decoder
	for kind, p := range samples {
		t.Run(kind, func(t *testing.T) {
			fresh := PayloadFor(kind)
			if fresh == nil || reflect.TypeOf(fresh) != reflect.TypeOf(p) {
				t.Fatalf("PayloadFor(%s) = %T, sample is %T", kind, fresh, p)
			}
			env, err := New(kind, p)
			if err != nil {
				t.Fatal(err)
			}
			env.ID, env.TS, env.From = NewID(), FormatTime(fixedTime), "tester"
			env.CorrelationID = []string{"env-0"}
			env.Context = "ctx-1"
			b := env.AppendJSON(nil)
			var got Envelope
			if err := d.Decode(b, &got); err != nil {
				t.Fatalf("Decode(%s): %v", b, err)
			}
			if err := got.ValidateComplete(); err != nil {
				t.Errorf("ValidateComplete(%s): %v", b, err)
			}
			if diff := cmp.Diff(env, &got); diff != "" {
				t.Errorf("envelope changed (-sent +got):\n%s", diff)
			}
			if err := got.DecodePayload(fresh); err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(p, fresh); diff != "" {
				t.Errorf("payload changed (-sent +got):\n%s\nwire: %s", diff, b)
			}
		})
	}
}

func TestPayloadForUnknown(t *testing.T) {
	for _, k := range []string{"", "custom/thing", KindSystemHeartbeat} {
		if p := PayloadFor(k); p != nil {
			t.Errorf("PayloadFor(%q) = %T, want nil", k, p)
		}
	}
}

func TestPayloadWireShapes(t *testing.T) {
	tests := []struct {
		name string
		v    any
		want string
	}{
		{"presence leave omits capabilities", Presence{Event: PresenceLeave, Participant: ParticipantInfo{ID: "bob"}},
			`{"event":"leave","participant":{"id":"bob"}}`},
		{"empty capabilities kept", ParticipantInfo{ID: "a", Capabilities: []json.RawMessage{}}, `{"id":"a","capabilities":[]}`},
		{"welcome nil participants", Welcome{You: ParticipantInfo{ID: "a", Capabilities: []json.RawMessage{}}},
			`{"you":{"id":"a","capabilities":[]},"participants":[]}`},
		{"welcome empty active_streams", Welcome{Participants: []ParticipantInfo{}, ActiveStreams: []StreamInfo{}},
			`{"you":{"id":""},"participants":[],"active_streams":[]}`},
		{"status keeps messages_in_context", Status{}, `{"messages_in_context":0}`},
		{"status extras sorted after known", Status{MessagesInContext: 1, Extra: map[string]json.RawMessage{
			"z": json.RawMessage(`1`), "a": json.RawMessage(` { "b" : 2 } `), "tokens": json.RawMessage(`99`)}},
			`{"messages_in_context":1,"a":{"b":2},"z":1}`},
		{"capability violation", SystemError{Error: ErrorCapabilityViolation, AttemptedKind: "chat", YourCapabilities: []json.RawMessage{}},
			`{"error":"capability_violation","attempted_kind":"chat","your_capabilities":[]}`},
		{"no HTML escaping", Chat{Text: "<a&b>"}, `{"text":"<a&b>"}`},
		{"no HTML escaping in nested marshalers", Welcome{Participants: []ParticipantInfo{},
			ActiveStreams: []StreamInfo{{StreamID: "s", Description: "<&>", Extra: map[string]json.RawMessage{"x": json.RawMessage(`"<&>"`)}}}},
			`{"you":{"id":""},"participants":[],"active_streams":[{"stream_id":"s","owner":"","created":"","description":"<&>","x":"<&>"}]}`},
		{"responding-to", RespondingTo{StartedAt: 5}, `{"started_at":5}`},
		{"stream info extra", StreamInfo{StreamID: "s", Owner: "o", Created: "c", Direction: "upload",
			Extra: map[string]json.RawMessage{"x": nil}}, `{"stream_id":"s","owner":"o","created":"c","direction":"upload","x":null}`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var e Envelope
			if err := e.SetPayload(tc.v); err != nil {
				t.Fatal(err)
			}
			if string(e.Payload) != tc.want {
				t.Errorf("got  %s\nwant %s", e.Payload, tc.want)
			}
		})
	}
}

func TestPayloadExtraDecode(t *testing.T) {
	env := &Envelope{Kind: KindParticipantStatus, Payload: json.RawMessage(
		`{"tokens":5,"messages_in_context":2,"cache_hits":7,"labels":{"a":"b"}}`)}
	var s Status
	if err := env.DecodePayload(&s); err != nil {
		t.Fatal(err)
	}
	want := Status{Tokens: 5, MessagesInContext: 2, Extra: map[string]json.RawMessage{
		"cache_hits": json.RawMessage(`7`), "labels": json.RawMessage(`{"a":"b"}`)}}
	if diff := cmp.Diff(want, s); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
	// No extras: Extra stays nil.
	env.Payload = json.RawMessage(`{"messages_in_context":2}`)
	s = Status{}
	if err := env.DecodePayload(&s); err != nil || s.Extra != nil {
		t.Errorf("got %+v, %v", s, err)
	}
}

func TestSetPayloadErrors(t *testing.T) {
	var e Envelope
	for _, v := range []any{"text", 42, []int{1}, json.RawMessage(`[1]`)} {
		if err := e.SetPayload(v); !errors.Is(err, ErrPayloadNotObject) {
			t.Errorf("SetPayload(%v) = %v, want ErrPayloadNotObject", v, err)
		}
	}
	if err := e.SetPayload(make(chan int)); err == nil {
		t.Error("SetPayload(chan) succeeded")
	}
	if err := e.SetPayload(json.RawMessage(`{"a":`)); err == nil {
		t.Error("SetPayload(invalid raw) succeeded")
	}
	if err := e.SetPayload(json.RawMessage(` { "a" : 1 } `)); err != nil || string(e.Payload) != `{"a":1}` {
		t.Errorf("raw payload = %s, %v", e.Payload, err)
	}
	for _, v := range []any{nil, json.RawMessage(`null`), (*Chat)(nil)} {
		e.Payload = json.RawMessage(`{}`)
		if err := e.SetPayload(v); err != nil || e.Payload != nil {
			t.Errorf("SetPayload(%#v) = %s, %v; want no payload", v, e.Payload, err)
		}
	}
	if _, err := New(KindChat, "hi"); !errors.Is(err, ErrPayloadNotObject) {
		t.Errorf("New with a string payload: %v", err)
	}
}

func TestDecodePayload(t *testing.T) {
	env := &Envelope{Kind: KindChat}
	c := Chat{Text: "keep"}
	if err := env.DecodePayload(&c); err != nil || c.Text != "keep" {
		t.Errorf("absent payload: %+v, %v", c, err)
	}
	env.Payload = json.RawMessage(`{"text":5}`)
	err := env.DecodePayload(&c)
	if !errors.Is(err, ErrBadType) {
		t.Errorf("err = %v, want ErrBadType", err)
	}
	// Unknown payload members are fine.
	env.Payload = json.RawMessage(`{"text":"t","mentions":["a"]}`)
	if err := env.DecodePayload(&c); err != nil || c.Text != "t" {
		t.Errorf("got %+v, %v", c, err)
	}
}

// TestDecodePayloadExactNames: a member named like a field but in another
// case is refused, so that no reader takes it for the field while another
// ignores it.
func TestDecodePayloadExactNames(t *testing.T) {
	for _, p := range []string{
		`{"Recipient":"alice","capabilities":[{"kind":"chat"}]}`,
		`{"recipient":"bob","RECIPIENT":"alice","capabilities":[{"kind":"chat"}]}`,
		`{"recipient":"bob","Capabilities":[{"kind":"*"}]}`,
	} {
		env := &Envelope{Kind: KindCapabilityGrant, Payload: []byte(p)}
		var g Grant
		err := env.DecodePayload(&g)
		if !errors.Is(err, ErrBadType) || !strings.Contains(err.Error(), "case-sensitive") {
			t.Errorf("DecodePayload(%s) = %v, %+v", p, err, g)
		}
	}
	env := &Envelope{Kind: KindCapabilityGrant, Payload: []byte(`{"recipient":"bob","capabilities":[{"kind":"chat"}],"Note":"x"}`)}
	var g Grant
	if err := env.DecodePayload(&g); err != nil || g.Recipient != "bob" {
		t.Errorf("exact names: %v %+v", err, g)
	}
}

// TestStreamInfoClone: a clone shares no memory with the original, so a
// copy handed out may be changed without changing the one kept.
func TestStreamInfoClone(t *testing.T) {
	orig := StreamInfo{StreamID: "s1", AuthorizedWriters: []string{"a"}, Target: []string{"b"},
		Metadata: json.RawMessage(`{"k":1}`), Extra: map[string]json.RawMessage{"x": json.RawMessage(`"y"`)}}
	want, err := json.Marshal(orig)
	if err != nil {
		t.Fatal(err)
	}
	c := orig.Clone()
	c.AuthorizedWriters[0], c.Target[0], c.Metadata[0] = "z", "z", '['
	c.Extra["x"][1] = 'z'
	c.Extra["new"] = json.RawMessage(`1`)
	got, err := json.Marshal(orig)
	if err != nil {
		t.Fatal(err)
	}
	if string(got) != string(want) {
		t.Errorf("changing the clone changed the original: %s, was %s", got, want)
	}
}
