package protocol

import (
	"fmt"
	"strconv"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/mew-protocol/mew/internal/jsontape"
)

// Limits that Validate enforces. The spec sets none; these bound what one
// envelope can make a gateway store and log, far above what real traffic uses.
const (
	MaxIDLen          = 256  // id, from, each to and correlation_id entry (bytes)
	MaxKindLen        = 128  // kind (bytes)
	MaxContextLen     = 1024 // context (bytes)
	MaxTo             = 1024 // entries of to
	MaxCorrelationIDs = 256  // entries of correlation_id
	MaxStreamIDLen    = 256  // stream id of a data frame (bytes)
)

// Validate checks what a participant may send: the envelope rules below and
// the payload rules of its kind (the table in the package documentation). It
// returns the first problem as a *FieldError wrapping one of the Err*
// sentinels.
//
//   - kind is required: 1..MaxKindLen bytes of [A-Za-z0-9/._:-];
//   - protocol is absent or exactly Version;
//   - id and from, if present, are at most MaxIDLen bytes;
//   - ts, if present, is an RFC 3339 timestamp;
//   - to has at most MaxTo entries, correlation_id at most MaxCorrelationIDs,
//     each non-empty and at most MaxIDLen bytes;
//   - context is at most MaxContextLen bytes;
//   - every string is valid UTF-8, Extra names are unique and not those of
//     known members, Extra values are valid JSON;
//   - payload, if present, is a JSON object.
//
// Validate does not decide who may send what: gateway-only kinds (IsGatewayOnly)
// and capabilities are the gateway's business.
func (e *Envelope) Validate() error {
	if err := validateKind(e.Kind); err != nil {
		return err
	}
	if e.Protocol != "" && e.Protocol != Version {
		return fieldErr("protocol", ErrWrongProtocol, fmt.Sprintf("got %q, want %q", e.Protocol, Version))
	}
	if err := checkID("id", e.ID); err != nil {
		return err
	}
	if e.TS != "" {
		if _, err := time.Parse(time.RFC3339Nano, e.TS); err != nil {
			return fieldErr("ts", ErrBadTimestamp, fmt.Sprintf("%q", e.TS))
		}
	}
	if err := checkID("from", e.From); err != nil {
		return err
	}
	if err := checkList("to", e.To, MaxTo); err != nil {
		return err
	}
	if err := checkList("correlation_id", e.CorrelationID, MaxCorrelationIDs); err != nil {
		return err
	}
	if len(e.Context) > MaxContextLen {
		return fieldErr("context", ErrTooLong, fmt.Sprintf("%d bytes, limit %d", len(e.Context), MaxContextLen))
	}
	if !utf8.ValidString(e.Context) {
		return fieldErr("context", ErrBadUTF8, "")
	}
	if len(e.Extra) > 0 {
		if err := e.checkExtra(); err != nil {
			return err
		}
	}
	return e.checkKindRules()
}

// ValidateComplete checks an envelope as a gateway relays it: Validate, and
// protocol, id, ts and from must all be present.
func (e *Envelope) ValidateComplete() error {
	for _, f := range [...]struct{ name, value string }{
		{"protocol", e.Protocol}, {"id", e.ID}, {"ts", e.TS}, {"from", e.From},
	} {
		if f.value == "" {
			return fieldErr(f.name, ErrMissingField, "")
		}
	}
	return e.Validate()
}

func validateKind(kind string) error {
	if kind == "" {
		return fieldErr("kind", ErrMissingKind, "")
	}
	if len(kind) > MaxKindLen {
		return fieldErr("kind", ErrTooLong, fmt.Sprintf("%d bytes, limit %d", len(kind), MaxKindLen))
	}
	for i := 0; i < len(kind); i++ {
		if !kindByte(kind[i]) {
			return fieldErr("kind", ErrBadKind, fmt.Sprintf("%q at byte %d", kind[i], i))
		}
	}
	return nil
}

func kindByte(c byte) bool {
	switch {
	case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z', c >= '0' && c <= '9':
		return true
	}
	return c == '/' || c == '.' || c == '_' || c == ':' || c == '-'
}

func checkID(field, s string) error {
	if len(s) > MaxIDLen {
		return fieldErr(field, ErrTooLong, fmt.Sprintf("%d bytes, limit %d", len(s), MaxIDLen))
	}
	if !utf8.ValidString(s) {
		return fieldErr(field, ErrBadUTF8, "")
	}
	return nil
}

func checkList(field string, list []string, limit int) error {
	if len(list) > limit {
		return fieldErr(field, ErrTooMany, fmt.Sprintf("%d entries, limit %d", len(list), limit))
	}
	for i, s := range list {
		if s == "" || len(s) > MaxIDLen || !utf8.ValidString(s) {
			// Only now build the name: the loop runs for every entry.
			name := field + "[" + strconv.Itoa(i) + "]"
			if s == "" {
				return fieldErr(name, ErrEmptyValue, "")
			}
			return checkID(name, s)
		}
	}
	return nil
}

func (e *Envelope) checkExtra() error {
	t := getTape()
	defer putTape(t)
	for i, f := range e.Extra {
		if slotOf([]byte(f.Name)) >= 0 {
			return fieldErr(f.Name, ErrDuplicateField, "Extra reuses a known member's name")
		}
		if !utf8.ValidString(f.Name) {
			return fieldErr(f.Name, ErrBadUTF8, "")
		}
		for _, g := range e.Extra[:i] {
			if g.Name == f.Name {
				return fieldErr(f.Name, ErrDuplicateField, "")
			}
		}
		if err := t.Parse(f.Value); err != nil {
			return fieldErr(f.Name, ErrBadJSON, err.Error())
		}
	}
	return nil
}

var tapePool = sync.Pool{New: func() any { return new(jsontape.Tape) }}

func getTape() *jsontape.Tape { return tapePool.Get().(*jsontape.Tape) }

func putTape(t *jsontape.Tape) {
	t.Src = nil
	if cap(t.Nodes) > 1<<14 {
		return
	}
	tapePool.Put(t)
}

// The JSON type a payload member must have.
type jtype uint8

const (
	tString      jtype = iota + 1
	tNonEmpty          // a string other than ""
	tNumber            // any JSON number
	tBool              // true or false
	tObject            // an object
	tObjectArray       // an array of objects (capability lists)
	tStringArray       // an array of strings
	tParams            // an object or an array (JSON-RPC params)
)

var jtypeNames = [...]string{
	tString: "string", tNonEmpty: "non-empty string", tNumber: "number", tBool: "boolean",
	tObject: "object", tObjectArray: "array of objects", tStringArray: "array of strings",
	tParams: "object or array",
}

// member is a rule for one payload member.
type member struct {
	name     string
	typ      jtype
	required bool
	oneOf    []string // allowed values of a string, if restricted
}

// kindRule is what Validate requires of one kind beyond the envelope rules.
type kindRule struct {
	payload     bool     // a payload is required
	correlation bool     // correlation_id is required (spec: MUST reference ...)
	context     bool     // context is required
	members     []member // payload members to check
	anyOf       []string // at least one of these payload members must be present
}

func opt(name string, typ jtype) member { return member{name: name, typ: typ} }
func req(name string, typ jtype) member { return member{name: name, typ: typ, required: true} }

var (
	reasonOnly = []member{opt("reason", tString)}
	mcpCall    = []member{req("method", tNonEmpty), opt("jsonrpc", tString), opt("params", tParams)}
	streamOwn  = []member{req("stream_id", tNonEmpty), req("participant_id", tNonEmpty), opt("reason", tString)}
	streamAck  = []member{
		req("stream_id", tNonEmpty), req("participant_id", tNonEmpty),
		opt("authorized_writers", tStringArray), opt("reason", tString),
	}
	reasoning = []member{opt("message", tString)}
)

// kindRules is the table of the package documentation; keep both in step.
var kindRules = map[string]kindRule{
	KindChat:            {payload: true, members: []member{req("text", tNonEmpty), opt("format", tString)}},
	KindChatAcknowledge: {correlation: true, members: []member{opt("status", tString)}},
	KindChatCancel:      {correlation: true, members: reasonOnly},

	KindMCPRequest:  {payload: true, members: mcpCall},
	KindMCPProposal: {payload: true, members: mcpCall},
	KindMCPResponse: {payload: true, correlation: true, members: []member{opt("jsonrpc", tString), opt("error", tObject)}},
	KindMCPWithdraw: {correlation: true, members: reasonOnly},
	KindMCPReject:   {correlation: true, members: reasonOnly},

	KindReasoningStart:      {members: reasoning},
	KindReasoningThought:    {members: reasoning},
	KindReasoningConclusion: {members: reasoning},
	KindReasoningCancel:     {context: true, members: reasonOnly},

	KindCapabilityGrant: {payload: true, members: []member{
		req("recipient", tNonEmpty), req("capabilities", tObjectArray), opt("reason", tString),
	}},
	KindCapabilityRevoke: {payload: true, anyOf: []string{"grant_id", "capabilities"}, members: []member{
		req("recipient", tNonEmpty), opt("grant_id", tNonEmpty), opt("capabilities", tObjectArray), opt("reason", tString),
	}},
	KindCapabilityGrantAck: {members: []member{opt("status", tString)}},

	KindSpaceInvite: {payload: true, members: []member{
		req("participant_id", tNonEmpty), opt("email", tString),
		opt("initial_capabilities", tObjectArray), opt("reason", tString),
	}},
	KindSpaceKick: {payload: true, members: []member{req("participant_id", tNonEmpty), opt("reason", tString)}},
	KindSpaceInviteAck: {payload: true, members: []member{
		req("status", tNonEmpty), opt("participant_id", tString), opt("token", tString),
		opt("connection_url", tString), opt("error", tString),
	}},

	KindParticipantPause:         {members: []member{opt("reason", tString), opt("timeout_seconds", tNumber)}},
	KindParticipantResume:        {members: reasonOnly},
	KindParticipantRequestStatus: {members: []member{opt("fields", tStringArray)}},
	KindParticipantStatus: {payload: true, members: []member{
		opt("tokens", tNumber), opt("max_tokens", tNumber), opt("messages_in_context", tNumber),
		opt("latency_ms", tNumber), opt("status", tString),
	}},
	KindParticipantForget: {payload: true, members: []member{
		{name: "direction", typ: tNonEmpty, required: true, oneOf: []string{ForgetOldest, ForgetNewest}},
		opt("entries", tNumber),
	}},
	KindParticipantCompact: {members: []member{opt("reason", tString), opt("target_tokens", tNumber)}},
	KindParticipantCompactDone: {members: []member{
		opt("freed_tokens", tNumber), opt("freed_messages", tNumber), opt("status", tString),
		opt("skipped", tBool), opt("reason", tString),
	}},
	KindParticipantClear:    {members: reasonOnly},
	KindParticipantRestart:  {members: []member{opt("reason", tString), opt("mode", tString)}},
	KindParticipantShutdown: {members: reasonOnly},

	KindStreamRequest: {payload: true, members: []member{
		// The spec requires direction; reference agents leave it out
		// (its e2e scenario 12), so it is checked only when present.
		{name: "direction", typ: tNonEmpty, oneOf: []string{DirectionUpload, DirectionDownload}},
		opt("expected_size_bytes", tNumber), opt("description", tString), opt("content_type", tString),
		opt("format", tString), opt("metadata", tObject), opt("target", tStringArray),
	}},
	KindStreamOpen: {payload: true, members: []member{
		req("stream_id", tNonEmpty), opt("encoding", tString), opt("owner", tString),
		opt("authorized_writers", tStringArray), opt("target", tStringArray),
	}},
	KindStreamClose:             {members: []member{opt("stream_id", tString), opt("reason", tString)}},
	KindStreamGrantWrite:        {payload: true, members: streamOwn},
	KindStreamRevokeWrite:       {payload: true, members: streamOwn},
	KindStreamTransferOwnership: {payload: true, members: []member{req("stream_id", tNonEmpty), req("new_owner", tNonEmpty), opt("reason", tString)}},
	KindStreamWriteGranted:      {payload: true, members: streamAck},
	KindStreamWriteRevoked:      {payload: true, members: streamAck},
	KindStreamOwnershipTransferred: {payload: true, members: []member{
		req("stream_id", tNonEmpty), req("new_owner", tNonEmpty), opt("previous_owner", tString),
		opt("authorized_writers", tStringArray), opt("reason", tString),
	}},

	KindFloorRespondingTo: {payload: true, correlation: true, members: []member{req("started_at", tNumber)}},
	KindFloorYield: {payload: true, correlation: true, members: []member{
		req("winner", tNonEmpty), req("winner_started_at", tNumber),
	}},

	KindSystemWelcome: {payload: true, members: []member{
		req("you", tObject), req("participants", tObjectArray), opt("active_streams", tObjectArray),
	}},
	KindSystemPresence: {payload: true, members: []member{req("event", tNonEmpty), req("participant", tObject)}},
	KindSystemError:    {payload: true, members: []member{req("error", tNonEmpty), opt("message", tString)}},
}

// checkKindRules checks correlation_id, context and the payload against the
// kind's rule; unknown kinds only need an object payload if any.
func (e *Envelope) checkKindRules() error {
	rule := kindRules[e.Kind]
	if rule.correlation && len(e.CorrelationID) == 0 {
		return fieldErr("correlation_id", ErrMissingField, e.Kind+" must reference the envelope it answers")
	}
	if rule.context && e.Context == "" {
		return fieldErr("context", ErrMissingField, e.Kind+" must name the context it ends")
	}
	if len(e.Payload) == 0 || isNull(e.Payload) {
		if rule.payload {
			return fieldErr("payload", ErrMissingPayload, e.Kind)
		}
		return nil
	}
	t := getTape()
	defer putTape(t)
	if err := t.Parse(e.Payload); err != nil {
		return fieldErr("payload", ErrBadJSON, err.Error())
	}
	if k := t.Nodes[0].Kind; k != jsontape.Object {
		return fieldErr("payload", ErrPayloadNotObject, "got "+k.String())
	}
	for _, m := range rule.members {
		v, ok := t.Lookup(0, m.name)
		if !ok || t.Nodes[v].Kind == jsontape.Null {
			if m.required {
				return fieldErr("payload."+m.name, ErrMissingField, "")
			}
			continue
		}
		if err := checkMember(t, v, m); err != nil {
			return err
		}
	}
	if len(rule.anyOf) > 0 {
		for _, name := range rule.anyOf {
			if v, ok := t.Lookup(0, name); ok && t.Nodes[v].Kind != jsontape.Null {
				return nil
			}
		}
		return fieldErr("payload."+rule.anyOf[0], ErrMissingField, "want one of "+strings.Join(rule.anyOf, ", "))
	}
	return nil
}

func checkMember(t *jsontape.Tape, v uint32, m member) error {
	n := t.Nodes[v]
	bad := func() error {
		return fieldErr("payload."+m.name, ErrBadType, "want "+jtypeNames[m.typ]+", got "+n.Kind.String())
	}
	switch m.typ {
	case tString, tNonEmpty:
		if n.Kind != jsontape.String {
			return bad()
		}
		if m.typ == tNonEmpty && n.Start == n.End {
			return fieldErr("payload."+m.name, ErrEmptyValue, "")
		}
		if m.oneOf != nil {
			for _, s := range m.oneOf {
				if t.TextEquals(v, s) {
					return nil
				}
			}
			return fieldErr("payload."+m.name, ErrBadValue,
				fmt.Sprintf("%q is not one of %s", t.Text(v), strings.Join(m.oneOf, ", ")))
		}
	case tNumber:
		if n.Kind != jsontape.Number {
			return bad()
		}
	case tBool:
		if n.Kind != jsontape.True && n.Kind != jsontape.False {
			return bad()
		}
	case tObject:
		if n.Kind != jsontape.Object {
			return bad()
		}
	case tParams:
		if n.Kind != jsontape.Object && n.Kind != jsontape.Array {
			return bad()
		}
	case tObjectArray, tStringArray:
		if n.Kind != jsontape.Array {
			return bad()
		}
		want := jsontape.Object
		if m.typ == tStringArray {
			want = jsontape.String
		}
		i := 0
		for e := v + 1; e < n.Next; e = t.Nodes[e].Next {
			if k := t.Nodes[e].Kind; k != want {
				return fieldErr("payload."+m.name+"["+strconv.Itoa(i)+"]", ErrBadType,
					"want "+want.String()+", got "+k.String())
			}
			i++
		}
	}
	return nil
}
