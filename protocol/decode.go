package protocol

import (
	"bytes"
	"encoding/json"
	"fmt"
	"iter"
	"strconv"
	"strings"
	"sync"

	"github.com/mew-protocol/mew/internal/jsontape"
)

// Decoder decodes envelopes strictly, reusing its parse buffers between calls:
// the gateway keeps one per connection so that decoding costs a few
// allocations for the envelope's own strings and payload and nothing else. A
// Decoder must not be used by two goroutines at once; the zero value is ready.
type Decoder struct {
	tape jsontape.Tape
}

// Members of the envelope that Decode knows, as slots of decodeState.
const (
	slotProtocol = iota
	slotID
	slotTS
	slotFrom
	slotTo
	slotKind
	slotCorrelation
	slotContext
	slotPayload
	numSlots
)

var slotNames = [numSlots]string{"protocol", "id", "ts", "from", "to", "kind", "correlation_id", "context", "payload"}

func slotOf(name []byte) int {
	switch string(name) {
	case "protocol":
		return slotProtocol
	case "id":
		return slotID
	case "ts":
		return slotTS
	case "from":
		return slotFrom
	case "to":
		return slotTo
	case "kind":
		return slotKind
	case "correlation_id":
		return slotCorrelation
	case "context":
		return slotContext
	case "payload":
		return slotPayload
	}
	return -1
}

// Decode decodes data into env, replacing everything env held. It is strict
// about types and tolerant of unknown members:
//
//   - data must be one JSON object (valid UTF-8, no duplicate keys);
//   - protocol, id, ts, from, kind and context must be non-empty strings if
//     present;
//   - to and correlation_id must be arrays of strings; an empty array is the
//     same as an absent one. Tolerated: a lone string correlation_id is a
//     one-element list, as the reference gateway reads it (its agents send
//     one); a lone string to is an error;
//   - payload must be an object if present; null counts as absent;
//   - any other member goes to Extra, in order.
//
// Limits, formats and per-kind payload rules are Validate's job. On error env
// is left unchanged. The envelope shares no memory with data, which the caller
// may reuse at once, and none with earlier envelopes, which stay valid.
func (d *Decoder) Decode(data []byte, env *Envelope) error {
	t := &d.tape
	err := t.Parse(data)
	if err == nil {
		err = d.build(env)
	} else {
		err = fmt.Errorf("invalid envelope: %w: %w", ErrBadJSON, err)
	}
	t.Src = nil // do not keep the caller's buffer alive
	return err
}

// Decode decodes one envelope strictly, as Decoder.Decode does.
func Decode(data []byte) (*Envelope, error) {
	d := getDecoder()
	defer putDecoder(d)
	env := new(Envelope)
	if err := d.Decode(data, env); err != nil {
		return nil, err
	}
	return env, nil
}

var decoderPool = sync.Pool{New: func() any { return new(Decoder) }}

func getDecoder() *Decoder { return decoderPool.Get().(*Decoder) }

func putDecoder(d *Decoder) {
	// A decoder that parsed something huge would pin its buffers forever.
	if cap(d.tape.Nodes) > 1<<14 {
		return
	}
	decoderPool.Put(d)
}

// build checks the parsed tape and fills env. It makes one pass to check types
// and measure, then allocates one string buffer for every copied string, one
// []string for to and correlation_id together, and one byte buffer for the
// payload and Extra values.
func (d *Decoder) build(env *Envelope) error {
	t := &d.tape
	if t.Nodes[0].Kind != jsontape.Object {
		return fieldErr("", ErrNotObject, "got "+t.Nodes[0].Kind.String())
	}
	var (
		slot       [numSlots]uint32 // value node of each known member; 0 = absent
		strBytes   int              // upper bound of the copied strings' size
		rawBytes   int              // size of payload and Extra values
		nTo, nCorr int
		nExtra     int
		protocol   string
		kind       string
	)
	end := t.Nodes[0].Next
	for k := uint32(1); k < end; k = t.Nodes[k+1].Next {
		v := k + 1
		s := slotOf(t.Text(k))
		if s < 0 {
			nExtra++
			strBytes += rawLen(t, k)
			rawBytes += len(t.RawValue(v))
			continue
		}
		slot[s] = v
		node := t.Nodes[v]
		switch s {
		case slotTo, slotCorrelation:
			if s == slotCorrelation && node.Kind == jsontape.String {
				// Tolerated: a lone string, as the reference's agents send
				// it, is a one-element list.
				nCorr = 1
				strBytes += rawLen(t, v)
				continue
			}
			n, err := checkStringArray(t, v, slotNames[s])
			if err != nil {
				return err
			}
			if s == slotTo {
				nTo = n
			} else {
				nCorr = n
			}
			for e := v + 1; e < node.Next; e = t.Nodes[e].Next {
				strBytes += rawLen(t, e)
			}
		case slotPayload:
			switch node.Kind {
			case jsontape.Object:
				rawBytes += len(t.RawValue(v))
			case jsontape.Null:
				slot[s] = 0
			default:
				return fieldErr("payload", ErrPayloadNotObject, "got "+node.Kind.String())
			}
		default: // the string members
			if node.Kind != jsontape.String {
				return fieldErr(slotNames[s], ErrBadType, "want string, got "+node.Kind.String())
			}
			if node.Start == node.End {
				return fieldErr(slotNames[s], ErrEmptyValue, "")
			}
			switch {
			case s == slotProtocol && t.TextEquals(v, Version):
				protocol = Version
			case s == slotKind:
				if c, ok := internKind(t.Text(v)); ok {
					kind = c
				} else {
					strBytes += rawLen(t, v)
				}
			default:
				strBytes += rawLen(t, v)
			}
		}
	}

	// Second pass: copy every string into one buffer, then slice it. The
	// lists and Extra names are written in a known order and sliced by walking
	// them again, which needs no table of offsets.
	var sb strings.Builder
	sb.Grow(strBytes)
	type span struct{ start, end int }
	var spans [numSlots]span
	for _, s := range [...]int{slotProtocol, slotID, slotTS, slotFrom, slotKind, slotContext} {
		if slot[s] == 0 || (s == slotProtocol && protocol != "") || (s == slotKind && kind != "") {
			continue
		}
		spans[s].start = sb.Len()
		sb.Write(t.Text(slot[s]))
		spans[s].end = sb.Len()
	}
	listStart := sb.Len()
	for _, s := range [...]int{slotTo, slotCorrelation} {
		if v := slot[s]; v != 0 {
			for e := range listItems(t, v) {
				sb.Write(t.Text(e))
			}
		}
	}
	extraStart := sb.Len()
	if nExtra > 0 {
		for k := uint32(1); k < end; k = t.Nodes[k+1].Next {
			if name := t.Text(k); slotOf(name) < 0 {
				sb.Write(name)
			}
		}
	}
	all := sb.String()
	str := func(s int) string { return all[spans[s].start:spans[s].end] }

	out := Envelope{Protocol: protocol, Kind: kind}
	if slot[slotProtocol] != 0 && protocol == "" {
		out.Protocol = str(slotProtocol)
	}
	if slot[slotKind] != 0 && kind == "" {
		out.Kind = str(slotKind)
	}
	out.ID, out.TS, out.From, out.Context = str(slotID), str(slotTS), str(slotFrom), str(slotContext)
	if nTo+nCorr > 0 {
		lists := make([]string, 0, nTo+nCorr)
		pos := listStart
		for _, s := range [...]int{slotTo, slotCorrelation} {
			if v := slot[s]; v != 0 {
				for e := range listItems(t, v) {
					n := textLen(t, e)
					lists = append(lists, all[pos:pos+n])
					pos += n
				}
			}
		}
		if nTo > 0 {
			out.To = lists[:nTo:nTo]
		}
		if nCorr > 0 {
			out.CorrelationID = lists[nTo : nTo+nCorr : nTo+nCorr]
		}
	}

	if rawBytes > 0 {
		raw := make([]byte, 0, rawBytes)
		if v := slot[slotPayload]; v != 0 {
			raw = append(raw, t.RawValue(v)...)
			out.Payload = raw[:len(raw):len(raw)]
		}
		if nExtra > 0 {
			out.Extra = make([]Field, 0, nExtra)
			pos := extraStart
			for k := uint32(1); k < end; k = t.Nodes[k+1].Next {
				name := t.Text(k)
				if slotOf(name) >= 0 {
					continue
				}
				n := len(name)
				start := len(raw)
				raw = append(raw, t.RawValue(k+1)...)
				out.Extra = append(out.Extra, Field{
					Name:  all[pos : pos+n],
					Value: raw[start:len(raw):len(raw)],
				})
				pos += n
			}
		}
	}
	*env = out
	return nil
}

// listItems yields the string nodes of a checked list member: the items of
// an array, or the node itself when it is a lone string.
func listItems(t *jsontape.Tape, v uint32) iter.Seq[uint32] {
	return func(yield func(uint32) bool) {
		if t.Nodes[v].Kind == jsontape.String {
			yield(v)
			return
		}
		for e := v + 1; e < t.Nodes[v].Next; e = t.Nodes[e].Next {
			if !yield(e) {
				return
			}
		}
	}
}

// textLen is the size of the text of string node i.
func textLen(t *jsontape.Tape, i uint32) int {
	if t.Nodes[i].Flags&jsontape.FlagEscaped == 0 {
		return rawLen(t, i)
	}
	return len(t.Text(i))
}

// rawLen is the size of string node i as written, an upper bound of its text.
func rawLen(t *jsontape.Tape, i uint32) int {
	n := t.Nodes[i]
	return int(n.End - n.Start)
}

// checkStringArray checks that node v is an array of strings and returns its
// length.
func checkStringArray(t *jsontape.Tape, v uint32, name string) (int, error) {
	node := t.Nodes[v]
	if node.Kind != jsontape.Array {
		sentinel := ErrToNotArray
		if name == "correlation_id" {
			sentinel = ErrCorrelationNotArray
		}
		return 0, fieldErr(name, sentinel, "got "+node.Kind.String())
	}
	n := 0
	for e := v + 1; e < node.Next; e = t.Nodes[e].Next {
		if k := t.Nodes[e].Kind; k != jsontape.String {
			return 0, fieldErr(name+"["+strconv.Itoa(n)+"]", ErrBadType, "want string, got "+k.String())
		}
		n++
	}
	return n, nil
}

// PeekID returns the id of data when data is a JSON object whose id member
// is a valid id (a string of at most MaxIDLen bytes), else "". It is for
// correlating the refusal of an envelope that did not decode: the sender
// learns which of its messages was refused.
func PeekID(data []byte) string {
	d := getDecoder()
	defer putDecoder(d)
	t := &d.tape
	defer func() { t.Src = nil }()
	if t.Parse(data) != nil || t.Nodes[0].Kind != jsontape.Object {
		return ""
	}
	v, ok := t.Lookup(0, "id")
	if !ok || t.Nodes[v].Kind != jsontape.String {
		return ""
	}
	id := t.String(v)
	if checkID("id", id) != nil || id == "" {
		return ""
	}
	return id
}

// PeekIDPrefix finds the top-level "id" of an envelope of which data is only
// the beginning (a message cut at a size limit), reading members in order
// until it or the end of data: "" when the id comes later, is not a valid
// id, or data is not an object.
func PeekIDPrefix(data []byte) string {
	dec := json.NewDecoder(bytes.NewReader(data))
	if t, err := dec.Token(); err != nil || t != json.Delim('{') {
		return ""
	}
	for {
		k, err := dec.Token()
		key, ok := k.(string)
		if err != nil || !ok {
			return ""
		}
		if key == "id" {
			v, err := dec.Token()
			id, ok := v.(string)
			if err != nil || !ok || id == "" || checkID("id", id) != nil {
				return ""
			}
			return id
		}
		// Skip the value, however deep.
		depth := 0
		for {
			t, err := dec.Token()
			if err != nil {
				return ""
			}
			if d, ok := t.(json.Delim); ok {
				if d == '{' || d == '[' {
					depth++
				} else {
					depth--
				}
			}
			if depth == 0 {
				break
			}
		}
	}
}
