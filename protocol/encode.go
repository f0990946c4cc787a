package protocol

import (
	"bytes"
	"encoding/json"
	"unicode/utf8"
)

// AppendJSON appends the envelope to dst as compact JSON and returns the
// extended slice. Members come in the reference implementation's order:
// protocol, id, ts, from, to, kind, correlation_id, context, payload, then
// Extra in order; empty ones are left out. Strings are escaped as JavaScript's
// JSON.stringify escapes them (only '"', '\\' and control characters), because
// log scripts grep the bytes; invalid UTF-8 becomes \ufffd.
//
// Payload and Extra values are written compacted but otherwise as they are:
// they must hold valid JSON, as they do when they come from Decode, New or
// SetPayload (Validate and MarshalJSON check it; AppendJSON, on the hot path,
// does not). A value found invalid while compacting is written as null so
// that the output stays JSON.
func (e *Envelope) AppendJSON(dst []byte) []byte {
	dst = append(dst, '{')
	n := len(dst)
	sep := func(dst []byte, key string) []byte {
		if len(dst) > n {
			dst = append(dst, ',')
		}
		return append(dst, key...)
	}
	if e.Protocol != "" {
		dst = appendString(sep(dst, `"protocol":`), e.Protocol)
	}
	if e.ID != "" {
		dst = appendString(sep(dst, `"id":`), e.ID)
	}
	if e.TS != "" {
		dst = appendString(sep(dst, `"ts":`), e.TS)
	}
	if e.From != "" {
		dst = appendString(sep(dst, `"from":`), e.From)
	}
	if len(e.To) > 0 {
		dst = appendStrings(sep(dst, `"to":`), e.To)
	}
	if e.Kind != "" {
		dst = appendString(sep(dst, `"kind":`), e.Kind)
	}
	if len(e.CorrelationID) > 0 {
		dst = appendStrings(sep(dst, `"correlation_id":`), e.CorrelationID)
	}
	if e.Context != "" {
		dst = appendString(sep(dst, `"context":`), e.Context)
	}
	if len(e.Payload) > 0 && !isNull(e.Payload) {
		dst = appendRaw(sep(dst, `"payload":`), e.Payload)
	}
	for _, f := range e.Extra {
		if len(dst) > n {
			dst = append(dst, ',')
		}
		dst = append(appendString(dst, f.Name), ':')
		if len(f.Value) == 0 {
			dst = append(dst, "null"...)
		} else {
			dst = appendRaw(dst, f.Value)
		}
	}
	return append(dst, '}')
}

func appendStrings(dst []byte, list []string) []byte {
	dst = append(dst, '[')
	for i, s := range list {
		if i > 0 {
			dst = append(dst, ',')
		}
		dst = appendString(dst, s)
	}
	return append(dst, ']')
}

const hexDigits = "0123456789abcdef"

// AppendString appends s to dst as a JSON string escaped as JavaScript's
// JSON.stringify escapes it (see AppendJSON), for callers that write JSON
// around envelopes, such as audit logs.
func AppendString(dst []byte, s string) []byte { return appendString(dst, s) }

// AppendCompact appends raw JSON to dst without white space outside strings,
// as AppendJSON writes payloads; invalid JSON is written as null.
func AppendCompact(dst, raw []byte) []byte { return appendRaw(dst, raw) }

// appendString appends s as a JSON string the way JSON.stringify writes it:
// '"' and '\\' escaped, \b \f \n \r \t short, other control characters as
// lower-case \u00XX, everything else (including <, >, &, U+2028) as is.
func appendString(dst []byte, s string) []byte {
	dst = append(dst, '"')
	start := 0
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			if c >= 0x20 && c != '"' && c != '\\' {
				i++
				continue
			}
			dst = append(dst, s[start:i]...)
			switch c {
			case '"', '\\':
				dst = append(dst, '\\', c)
			case '\b':
				dst = append(dst, '\\', 'b')
			case '\f':
				dst = append(dst, '\\', 'f')
			case '\n':
				dst = append(dst, '\\', 'n')
			case '\r':
				dst = append(dst, '\\', 'r')
			case '\t':
				dst = append(dst, '\\', 't')
			default:
				dst = append(dst, '\\', 'u', '0', '0', hexDigits[c>>4], hexDigits[c&0xf])
			}
			i++
			start = i
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 {
			dst = append(dst, s[start:i]...)
			dst = append(dst, `\ufffd`...)
			i++
			start = i
			continue
		}
		i += size
	}
	dst = append(dst, s[start:]...)
	return append(dst, '"')
}

// appendRaw appends raw JSON compacted: as is when it has no white space
// outside strings (the usual case, one scan), through json.Compact otherwise.
func appendRaw(dst, raw []byte) []byte {
	if !hasSpace(raw) {
		return append(dst, raw...)
	}
	buf := bytes.NewBuffer(dst)
	if err := json.Compact(buf, raw); err != nil {
		// Compact has truncated buf back to dst.
		return append(buf.Bytes(), "null"...)
	}
	return buf.Bytes()
}

// hasSpace reports whether raw JSON holds white space outside strings.
func hasSpace(raw []byte) bool {
	for i := 0; i < len(raw); i++ {
		switch raw[i] {
		case ' ', '\t', '\n', '\r':
			return true
		case '"':
			// Skip the string: to the next quote not escaped.
			for i++; i < len(raw); i++ {
				if c := raw[i]; c == '\\' {
					i++
				} else if c == '"' {
					break
				}
			}
		}
	}
	return false
}
