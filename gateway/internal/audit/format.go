package audit

import (
	"bytes"
	"encoding/json"
	"strconv"
	"time"

	"github.com/mew-protocol/mew/protocol"
)

// timeLayout is JavaScript's Date.prototype.toISOString layout, the one
// protocol.FormatTime uses. The writer appends instead of calling FormatTime,
// to avoid allocating a string per line; a test checks they agree.
const timeLayout = "2006-01-02T15:04:05.000Z"

// secondCache holds the formatted second of the last timestamp written
// ("2006-01-02T15:04:05."), since consecutive records mostly share it.
type secondCache struct {
	sec int64
	buf []byte // nil until the first use
}

// appendTime appends t in timeLayout, formatting only the milliseconds when
// t is in the same second as the previous call.
func (c *secondCache) appendTime(dst []byte, t time.Time) []byte {
	if sec := t.Unix(); sec != c.sec || c.buf == nil {
		c.buf = t.UTC().AppendFormat(c.buf[:0], timeLayout[:len(timeLayout)-4])
		c.sec = sec
	}
	dst = append(dst, c.buf...)
	ms := t.Nanosecond() / 1e6
	return append(dst, byte('0'+ms/100), byte('0'+ms/10%10), byte('0'+ms%10), 'Z')
}

// envelopeValue returns the envelope of r as written, or nil to leave it out.
func (w *writer) envelopeValue(r *EnvelopeRecord) []byte {
	// A rejected message that could not be decoded has no envelope to show;
	// leaving the member out says so without counting an error.
	required := r.Event != Rejected || len(r.Envelope) > 0
	return w.value("envelope", r.Envelope, required, r.ID)
}

// appendEnvelopeHead appends the part of an envelope line shared by all
// recipients: from '{' to the envelope, body (from envelopeValue), which is
// left out when nil.
func (w *writer) appendEnvelopeHead(dst []byte, r *EnvelopeRecord, body []byte) []byte {
	dst = append(dst, `{"timestamp":"`...)
	dst = w.ts.appendTime(dst, r.Time)
	dst = append(dst, '"')
	dst = appendStringField(dst, `,"event":`, r.Event)
	dst = appendStringField(dst, `,"id":`, r.ID)
	return appendRawField(dst, `,"envelope":`, body)
}

// appendEnvelopeTail appends the rest of an envelope line, from participant
// to the last member; the writer seals it with the chain and the closing
// brace. metadata is r.Metadata as returned by value.
func appendEnvelopeTail(dst []byte, r *EnvelopeRecord, participant, transport string, metadata []byte) []byte {
	dst = appendStringField(dst, `,"participant":`, participant)
	dst = appendStringField(dst, `,"space_id":`, r.Space)
	switch r.Event {
	case Received, Rejected:
		dst = append(dst, `,"direction":"inbound"`...)
	case Delivered:
		dst = append(dst, `,"direction":"outbound"`...)
	}
	dst = appendStringField(dst, `,"transport":`, transport)
	return appendRawField(dst, `,"metadata":`, metadata)
}

// maxGroup is the most recipients one grouped delivered line names: a
// larger fan-out is split over several lines, so that a line stays a few
// kilobytes however large the space.
const maxGroup = 256

// appendGrouped appends the rest of a compact delivered line after its head:
// space, direction, the recipients as a list of {"participant","transport"}
// objects, and metadata (r.Metadata as returned by value). "participant"
// comes first in each object so that the reference's grep for a delivery,
// "event":"delivered".*"id":"X".*"participant":"P", matches the line.
func appendGrouped(dst []byte, r *EnvelopeRecord, rcpts []Recipient, metadata []byte) []byte {
	dst = appendStringField(dst, `,"space_id":`, r.Space)
	dst = append(dst, `,"direction":"outbound","recipients":[`...)
	for i := range rcpts {
		if i > 0 {
			dst = append(dst, ',')
		}
		dst = append(dst, `{"participant":`...)
		dst = protocol.AppendString(dst, rcpts[i].ID)
		dst = appendStringField(dst, `,"transport":`, rcpts[i].Transport)
		dst = append(dst, '}')
	}
	dst = append(dst, ']')
	return appendRawField(dst, `,"metadata":`, metadata)
}

// appendEveryone appends the rest of a compact delivered line that went to
// every participant connected but the one it is about (Record.Everyone):
// their number n in place of the recipients list.
func appendEveryone(dst []byte, r *EnvelopeRecord, n int, metadata []byte) []byte {
	dst = appendStringField(dst, `,"space_id":`, r.Space)
	dst = append(dst, `,"direction":"outbound","everyone":`...)
	dst = strconv.AppendInt(dst, int64(n), 10)
	return appendRawField(dst, `,"metadata":`, metadata)
}

// appendDecision appends a capability-decision line but for its chain and
// closing brace.
func (w *writer) appendDecision(dst []byte, r *DecisionRecord) []byte {
	dst = append(dst, `{"timestamp":"`...)
	dst = w.ts.appendTime(dst, r.Time)
	dst = append(dst, `","event":"capability_check"`...)
	dst = appendStringField(dst, `,"envelope_id":`, r.EnvelopeID)
	dst = appendStringField(dst, `,"participant":`, r.Participant)
	dst = appendStringField(dst, `,"space_id":`, r.Space)
	if r.Allowed {
		dst = append(dst, `,"result":"allowed"`...)
	} else {
		dst = append(dst, `,"result":"denied"`...)
	}
	dst = appendStringField(dst, `,"required_capability":`, r.Kind)
	dst = appendRawField(dst, `,"matched_capability":`, w.value("matched_capability", r.Matched, false, r.EnvelopeID))
	dst = appendStringField(dst, `,"matched_source":`, r.Source)
	dst = appendRawField(dst, `,"granted_capabilities":`, w.value("granted_capabilities", r.Granted, false, r.EnvelopeID))
	return appendRawField(dst, `,"metadata":`, w.value("metadata", r.Metadata, false, r.EnvelopeID))
}

// appendStringField appends key (which starts with ',' and ends with ':')
// and s as a JSON string, or nothing when s is empty.
func appendStringField(dst []byte, key, s string) []byte {
	if s == "" {
		return dst
	}
	dst = append(dst, key...)
	return protocol.AppendString(dst, s)
}

// value returns the bytes to write for the JSON value v of key, or nil to
// leave the key out. Nil (or empty) v is absent. The empty object {} is left
// out, as the reference prunes it. A value that is not a compact JSON object
// or array is compacted if it is valid JSON and otherwise left out with a
// counted error. A required value (the envelope) that is absent or invalid
// becomes null, with a counted error.
func (w *writer) value(key string, v []byte, required bool, id string) []byte {
	if len(v) == 0 && !required {
		return nil
	}
	if looksCompact(v) {
		if isEmptyObject(v) {
			return nil
		}
		return v
	}
	// Not as promised: check it properly. Rare, so allocations are fine.
	if len(v) > 0 && json.Valid(v) {
		var buf bytes.Buffer
		if err := json.Compact(&buf, v); err == nil && looksCompact(buf.Bytes()) {
			if isEmptyObject(buf.Bytes()) {
				return nil
			}
			return buf.Bytes()
		}
	}
	w.badValue(key, id)
	if required {
		return []byte("null") // error path: the allocation does not matter
	}
	return nil
}

// appendRawField appends key (which starts with ',' and ends with ':') and
// the JSON value v, or nothing when v is nil.
func appendRawField(dst []byte, key string, v []byte) []byte {
	if v == nil {
		return dst
	}
	dst = append(dst, key...)
	return append(dst, v...)
}

// looksCompact is the cheap plausibility check for a JSON value the caller
// promised to be compact: an object or array, no white space just inside its
// brackets, and no line break anywhere (compact JSON cannot hold one, and it
// would split the line). White space elsewhere is not looked for: that would
// cost a scan of every string in the value.
func looksCompact(v []byte) bool {
	n := len(v)
	if n < 2 {
		return false
	}
	if !(v[0] == '{' && v[n-1] == '}') && !(v[0] == '[' && v[n-1] == ']') {
		return false
	}
	if n > 2 && (isSpace(v[1]) || isSpace(v[n-2])) {
		return false
	}
	return bytes.IndexByte(v, '\n') < 0 && bytes.IndexByte(v, '\r') < 0
}

func isSpace(c byte) bool { return c == ' ' || c == '\t' || c == '\n' || c == '\r' }

func isEmptyObject(v []byte) bool {
	return len(v) == 2 && v[0] == '{' && v[1] == '}'
}

// appendString appends s as a JSON string escaped as JavaScript's
// JSON.stringify escapes it, which is how the reference wrote its logs.
