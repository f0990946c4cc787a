package protocol

import "errors"

// Sentinel errors. Decode and the Validate methods return them wrapped in a
// *FieldError (or, for malformed JSON, wrapped together with the
// *jsontape.SyntaxError), so callers test them with errors.Is and people read
// the field name in the message.
var (
	// ErrBadJSON: the bytes are not one well-formed JSON value (syntax, invalid
	// UTF-8, duplicate keys, nesting too deep). The jsontape error is wrapped
	// too, so errors.Is(err, jsontape.ErrDuplicateKey) also works.
	ErrBadJSON = errors.New("malformed JSON")
	// ErrNotObject: the envelope is not a JSON object.
	ErrNotObject = errors.New("not a JSON object")
	// ErrMissingKind: the envelope has no kind.
	ErrMissingKind = errors.New("kind is required")
	// ErrWrongProtocol: protocol is present and not Version.
	ErrWrongProtocol = errors.New("unsupported protocol version")
	// ErrBadType: a member has the wrong JSON type.
	ErrBadType = errors.New("wrong JSON type")
	// ErrCorrelationNotArray: correlation_id is not an array. A lone string is
	// refused rather than wrapped: the spec says "always an array", and a relay
	// that rewrites envelopes is what the reference does and we do not.
	ErrCorrelationNotArray = errors.New("correlation_id must be an array of strings")
	// ErrToNotArray: to is not an array.
	ErrToNotArray = errors.New("to must be an array of strings")
	// ErrPayloadNotObject: payload is present, not null, and not an object.
	ErrPayloadNotObject = errors.New("payload must be a JSON object")
	// ErrMissingPayload: the kind needs a payload and there is none.
	ErrMissingPayload = errors.New("payload is required for this kind")
	// ErrTooLong: a string is longer than its limit (MaxIDLen and friends).
	ErrTooLong = errors.New("too long")
	// ErrTooMany: to or correlation_id has more entries than allowed.
	ErrTooMany = errors.New("too many entries")
	// ErrBadTimestamp: ts is not an RFC 3339 timestamp.
	ErrBadTimestamp = errors.New("not an RFC 3339 timestamp")
	// ErrBadKind: kind has a character outside [A-Za-z0-9/._:-].
	ErrBadKind = errors.New("kind may only hold A-Z a-z 0-9 / . _ : -")
	// ErrMissingField: a required member is absent.
	ErrMissingField = errors.New("required field is missing")
	// ErrEmptyValue: a member that must not be empty is "". Envelope cannot
	// tell an empty string from an absent one, so Decode refuses `"id":""`
	// instead of silently dropping it.
	ErrEmptyValue = errors.New("empty value")
	// ErrBadValue: a member holds a value outside its allowed set (for example
	// participant/forget direction other than oldest or newest).
	ErrBadValue = errors.New("value not allowed")
	// ErrBadUTF8: a string set in Go holds invalid UTF-8 (decoded envelopes
	// never do: the parser refuses them).
	ErrBadUTF8 = errors.New("invalid UTF-8")
	// ErrDuplicateField: an Extra member repeats a name, or reuses the name of
	// a known envelope member; the encoding would hold a duplicate key.
	ErrDuplicateField = errors.New("duplicate member name")
)

// Errors of the stream frame codec. ParseFrame and ValidateStreamID return
// them unwrapped, so that rejecting a frame costs no allocation.
var (
	// ErrNotFrame: the message does not start with '#' or has no second '#'.
	ErrNotFrame = errors.New("not a stream frame")
	// ErrEmptyStreamID: the frame is "##...".
	ErrEmptyStreamID = errors.New("empty stream id")
	// ErrStreamIDTooLong: the stream id is longer than MaxStreamIDLen.
	ErrStreamIDTooLong = errors.New("stream id too long")
	// ErrBadStreamID: the stream id holds a byte outside visible ASCII.
	ErrBadStreamID = errors.New("stream id may only hold visible ASCII")
)

// FieldError says which member of an envelope is wrong and why. Field is a
// path such as "to[2]" or "payload.text"; it is empty when the problem is the
// envelope as a whole.
type FieldError struct {
	Field  string // where: "kind", "to[3]", "payload.method"; "" = the envelope
	Err    error  // one of the Err* sentinels of this package
	Detail string // what was found, for people; may be empty
}

func (e *FieldError) Error() string {
	s := "invalid envelope: "
	if e.Field != "" {
		s += e.Field + ": "
	}
	s += e.Err.Error()
	if e.Detail != "" {
		s += " (" + e.Detail + ")"
	}
	return s
}

// Unwrap returns the sentinel, for errors.Is.
func (e *FieldError) Unwrap() error { return e.Err }

func fieldErr(field string, err error, detail string) error {
	return &FieldError{Field: field, Err: err, Detail: detail}
}
