package protocol

import (
	"bytes"
	"encoding/json"
	"fmt"
	"slices"
	"time"
)

// Envelope is one MEW message: the single top-level JSON object that flows
// over a space (spec §3). A string member that is absent and one that is ""
// are the same here; Decode refuses the latter so nothing is lost silently.
type Envelope struct {
	Protocol string // Version; absent only in what a participant sends
	ID       string // unique message id
	// TS is the RFC 3339 timestamp exactly as written, so that relaying an
	// envelope never changes its bytes; Time parses it.
	TS            string
	From          string   // sender's participant id
	To            []string // addressees; nil or empty = broadcast
	Kind          string
	CorrelationID []string // ids of the envelopes this one relates to
	Context       string   // sub-context path, e.g. a reasoning/start id
	// Payload is the kind-specific body, kept as raw JSON so that the gateway
	// can match and relay it without decoding and re-encoding it. Nil when
	// absent; a JSON null payload counts as absent.
	Payload json.RawMessage
	// Extra holds the members this version does not know, in source order, so
	// that a relay passes newer clients' fields through unchanged.
	Extra []Field
}

// Field is one unknown top-level member of an envelope.
type Field struct {
	Name  string
	Value json.RawMessage // the member's value as raw JSON
}

// New returns an envelope of the given kind with Protocol set and payload
// encoded as its Payload (see SetPayload). ID, TS and From are left to the
// sender, which fills them when it sends: that keeps New deterministic.
func New(kind string, payload any) (*Envelope, error) {
	e := &Envelope{Protocol: Version, Kind: kind}
	if err := e.SetPayload(payload); err != nil {
		return nil, err
	}
	return e, nil
}

// SetPayload encodes v as the payload. v must encode to a JSON object (or to
// null, which removes the payload). Strings are escaped as JavaScript's
// JSON.stringify does, not HTML-escaped as json.Marshal does: the bytes must be
// what the reference implementation would send. A json.RawMessage is compacted
// and validated.
func (e *Envelope) SetPayload(v any) error {
	if v == nil {
		e.Payload = nil
		return nil
	}
	b, err := Marshal(v)
	if err != nil {
		return fmt.Errorf("protocol: encode %s payload: %w", e.Kind, err)
	}
	if isNull(b) {
		e.Payload = nil
		return nil
	}
	if len(b) == 0 || b[0] != '{' {
		return fieldErr("payload", ErrPayloadNotObject, "got "+jsonTypeOf(b))
	}
	e.Payload = json.RawMessage(b)
	return nil
}

// Marshal encodes v as envelopes carry JSON: compact, with strings not
// HTML-escaped as json.Marshal escapes them (a json.RawMessage inside is
// compacted, its escapes kept).
func Marshal(v any) ([]byte, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return bytes.TrimSuffix(buf.Bytes(), []byte("\n")), nil
}

// DecodePayload decodes the payload into v with encoding/json: JSON types must
// fit v's fields, unknown payload members are ignored (the spec lets every
// payload carry extra members). An absent payload decodes as {}, leaving v's
// fields as they are; whether a payload is required is Validate's business.
//
// Member names are exact: where encoding/json would take "Recipient" for
// "recipient", DecodePayload refuses the payload (ErrBadType), so that
// everyone who reads an envelope reads the same members, whatever their
// language's decoder (duplicate members are already refused by Decode).
func (e *Envelope) DecodePayload(v any) error {
	if len(e.Payload) == 0 {
		return json.Unmarshal([]byte("{}"), v)
	}
	if err := checkMemberCase(e.Payload, v); err != nil {
		return err
	}
	if err := json.Unmarshal(e.Payload, v); err != nil {
		return fieldErr("payload", ErrBadType, fmt.Sprintf("decoding %s payload into %T: %v", e.Kind, v, err))
	}
	return nil
}

// IsBroadcast reports whether the envelope has no addressees.
func (e *Envelope) IsBroadcast() bool { return len(e.To) == 0 }

// AddressedTo reports whether participant id should act on the envelope: it is
// broadcast, or id is listed in To.
func (e *Envelope) AddressedTo(id string) bool {
	return len(e.To) == 0 || slices.Contains(e.To, id)
}

// CorrelatesWith reports whether id is one of the envelope's correlation ids.
func (e *Envelope) CorrelatesWith(id string) bool {
	return slices.Contains(e.CorrelationID, id)
}

// Time parses TS. An absent TS is an ErrMissingField error.
func (e *Envelope) Time() (time.Time, error) {
	if e.TS == "" {
		return time.Time{}, fieldErr("ts", ErrMissingField, "")
	}
	t, err := time.Parse(time.RFC3339Nano, e.TS)
	if err != nil {
		return time.Time{}, fieldErr("ts", ErrBadTimestamp, fmt.Sprintf("%q", e.TS))
	}
	return t, nil
}

// FormatTime writes t as the reference implementation does (JavaScript's
// Date.toISOString: UTC, milliseconds, "Z"), e.g. 2026-11-22T10:03:38.358Z.
func FormatTime(t time.Time) string {
	return t.UTC().Format("2006-01-02T15:04:05.000Z")
}

// Clone returns a deep copy, so that a gateway can fill in one recipient's copy
// without touching an envelope other goroutines are reading.
func (e *Envelope) Clone() *Envelope {
	c := *e
	c.To = slices.Clone(e.To)
	c.CorrelationID = slices.Clone(e.CorrelationID)
	if e.Payload != nil {
		c.Payload = bytes.Clone(e.Payload)
	}
	if e.Extra != nil {
		c.Extra = make([]Field, len(e.Extra))
		for i, f := range e.Extra {
			c.Extra[i] = Field{Name: f.Name, Value: bytes.Clone(f.Value)}
		}
	}
	return &c
}

// MarshalJSON encodes the envelope as AppendJSON does, after checking that
// Payload and Extra hold valid JSON. It has a value receiver so that an
// Envelope held by value in another struct still encodes this way. Note that
// json.Marshal HTML-escapes what MarshalJSON returns; use AppendJSON for the
// exact bytes.
func (e Envelope) MarshalJSON() ([]byte, error) {
	if len(e.Payload) > 0 && !json.Valid(e.Payload) {
		return nil, fieldErr("payload", ErrBadJSON, "")
	}
	for _, f := range e.Extra {
		if len(f.Value) > 0 && !json.Valid(f.Value) {
			return nil, fieldErr(f.Name, ErrBadJSON, "")
		}
	}
	return e.AppendJSON(nil), nil
}

// UnmarshalJSON decodes data strictly, as Decode does.
func (e *Envelope) UnmarshalJSON(data []byte) error {
	d := getDecoder()
	defer putDecoder(d)
	return d.Decode(data, e)
}

// isNull reports whether raw JSON b is the literal null (white space allowed).
func isNull(b []byte) bool {
	return string(bytes.TrimSpace(b)) == "null"
}

// jsonTypeOf names the JSON type of the value raw starts with, for messages.
func jsonTypeOf(raw []byte) string {
	raw = bytes.TrimLeft(raw, " \t\r\n")
	if len(raw) == 0 {
		return "nothing"
	}
	switch raw[0] {
	case '{':
		return "object"
	case '[':
		return "array"
	case '"':
		return "string"
	case 't', 'f':
		return "boolean"
	case 'n':
		return "null"
	}
	return "number"
}
