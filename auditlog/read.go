package auditlog

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/mew-protocol/mew/protocol"
)

// Events of the envelope history, and the one event of the capability
// decisions, the values of [Record.Event].
const (
	Received        = "received"
	Delivered       = "delivered"
	Rejected        = "rejected"
	CapabilityCheck = "capability_check"
)

// Record is one line of either log. Envelope lines fill the envelope
// members, capability-decision lines the decision members.
type Record struct {
	// File and Line say where the record is: the file's path and its
	// 1-based line number. The records of a grouped delivered line (one
	// per recipient) share its place.
	File string `json:"file"`
	Line int    `json:"line"`

	Time        time.Time `json:"timestamp"`
	Event       string    `json:"event"`
	ID          string    `json:"id"` // the envelope's id ("envelope_id" on a decision line)
	Participant string    `json:"participant,omitempty"`
	Space       string    `json:"space_id,omitempty"`
	Direction   string    `json:"direction,omitempty"`
	Transport   string    `json:"transport,omitempty"`

	// Envelope is the envelope's body. On a compact delivered line, which
	// carries none, it is the body of the nearest earlier line with the
	// same id, as the reference layout would have repeated it; Shared says
	// so. Nil when the body is nowhere in reach (see ReadOptions.MaxBodies).
	Envelope json.RawMessage `json:"envelope,omitempty"`
	Shared   bool            `json:"shared_body,omitempty"`
	// Origin marks the first record of an envelope the gateway sent itself
	// (welcome, presence, errors): a delivered record with no received line
	// before it.
	Origin bool `json:"origin,omitempty"`
	// Everyone, on a delivered record whose Participant is EveryoneElse, is
	// how many it went to: every participant connected then but the one it
	// is about (the compact layout writes a presence so, since issue 33;
	// the joins and leaves before it say who they were).
	Everyone int `json:"everyone,omitempty"`

	Result             string          `json:"result,omitempty"`              // "allowed" or "denied"
	RequiredCapability string          `json:"required_capability,omitempty"` // the kind checked
	MatchedCapability  json.RawMessage `json:"matched_capability,omitempty"`  // the pattern that admitted it
	MatchedSource      string          `json:"matched_source,omitempty"`      // static, dynamic, implicit
	Granted            json.RawMessage `json:"granted_capabilities,omitempty"`

	Metadata json.RawMessage `json:"metadata,omitempty"`

	env    *protocol.Envelope // decoded Envelope, once asked for
	envErr error
}

// Decoded returns the record's envelope decoded, or nil when it has none
// or it is not a valid envelope.
func (r *Record) Decoded() *protocol.Envelope {
	if r.env == nil && r.envErr == nil {
		if len(r.Envelope) == 0 || bytes.Equal(r.Envelope, []byte("null")) {
			r.envErr = errNoBody
		} else {
			r.env, r.envErr = protocol.Decode(r.Envelope)
		}
	}
	return r.env
}

var errNoBody = fmt.Errorf("no envelope")

// Meta returns the string member key of the record's metadata, or "".
func (r *Record) Meta(key string) string {
	if len(r.Metadata) == 0 {
		return ""
	}
	var m map[string]json.RawMessage
	if json.Unmarshal(r.Metadata, &m) != nil {
		return ""
	}
	var s string
	if json.Unmarshal(m[key], &s) != nil {
		return ""
	}
	return s
}

// Kind is the envelope's kind, or the kind a decision checked.
func (r *Record) Kind() string {
	if r.Event == CapabilityCheck {
		return r.RequiredCapability
	}
	if e := r.Decoded(); e != nil {
		return e.Kind
	}
	return ""
}

// ReadOptions bound what [Scan] holds in memory.
type ReadOptions struct {
	// MaxLineSize bounds one line; a longer line is skipped, never held.
	// Not positive: DefaultMaxLineSize.
	MaxLineSize int
	// MaxBodies is how many recent bodies are kept to give compact
	// delivered lines theirs. The gateway writes a delivered line soon after
	// its body, so the window only needs to span the envelopes in flight at
	// once. Not positive: DefaultMaxBodies.
	MaxBodies int
}

// DefaultMaxBodies is the body window when [ReadOptions.MaxBodies] is not
// positive.
const DefaultMaxBodies = 65536

// ScanStats counts what [Scan] read.
type ScanStats struct {
	Files   int   // files read
	Lines   int   // lines read
	Bytes   int64 // bytes of those lines
	Records int   // records handed to the callback
	// Skipped counts lines that were not records: too long, cut off, not
	// JSON, or without an event; Problems holds the first few of them.
	Skipped  int
	Problems []Problem
}

const maxProblems = 20

func (s *ScanStats) skip(file string, n int, reason string) {
	s.Skipped++
	if len(s.Problems) < maxProblems {
		s.Problems = append(s.Problems, Problem{File: file, Line: n, Reason: reason})
	}
}

// wireRecord is the JSON of one log line, as both logs write it.
type wireRecord struct {
	Timestamp          string          `json:"timestamp"`
	Event              string          `json:"event"`
	ID                 string          `json:"id"`
	EnvelopeID         string          `json:"envelope_id"`
	Envelope           json.RawMessage `json:"envelope"`
	Participant        string          `json:"participant"`
	Space              string          `json:"space_id"`
	Direction          string          `json:"direction"`
	Transport          string          `json:"transport"`
	Result             string          `json:"result"`
	RequiredCapability string          `json:"required_capability"`
	MatchedCapability  json.RawMessage `json:"matched_capability"`
	MatchedSource      string          `json:"matched_source"`
	Granted            json.RawMessage `json:"granted_capabilities"`
	Metadata           json.RawMessage `json:"metadata"`
	Recipients         []wireRecipient `json:"recipients"`
	Everyone           int             `json:"everyone"`
}

// EveryoneElse is the Participant of a delivered record that went to every
// participant connected but the one it is about (Record.Everyone).
const EveryoneElse = "*"

// wireRecipient is one recipient of a grouped delivered line.
type wireRecipient struct {
	Participant string `json:"participant"`
	Transport   string `json:"transport"`
}

// Scan reads the log name (EnvelopeHistory or CapabilityDecisions) in dir,
// its rotated files oldest first and then the current one, and calls fn
// with each record in the order written. The record is fn's to keep. An
// error from fn, or ctx ending, stops the scan and is returned; lines that
// are not records are skipped and counted in the stats.
func Scan(ctx context.Context, dir, name string, opts ReadOptions, fn func(*Record) error) (ScanStats, error) {
	var st ScanStats
	files, err := Files(dir, name)
	if err != nil {
		return st, err
	}
	bodies := newBodyWindow(opts.MaxBodies)
	for _, path := range files {
		if err := scanFile(ctx, path, opts, bodies, &st, fn); err != nil {
			return st, err
		}
		st.Files++
	}
	return st, nil
}

func scanFile(ctx context.Context, path string, opts ReadOptions, bodies *bodyWindow, st *ScanStats, fn func(*Record) error) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	_, err = scanFrom(ctx, f, path, filePos{}, false, opts, bodies, st, fn)
	return err
}

// filePos is where a read of a file stopped: the bytes and the lines before
// the first line it did not take.
type filePos struct {
	off  int64
	line int
}

// scanFrom reads the lines of f, which is at path, from pos to its end. A
// follower (follow) leaves a last line without its '\n' unread, to take it
// once the writer has finished it; a plain scan reads it as cut off. It
// returns where it stopped.
func scanFrom(ctx context.Context, f *os.File, path string, pos filePos, follow bool, opts ReadOptions, bodies *bodyWindow, st *ScanStats, fn func(*Record) error) (filePos, error) {
	if pos.off > 0 {
		if _, err := f.Seek(pos.off, io.SeekStart); err != nil {
			return pos, fmt.Errorf("%s: %w", path, err)
		}
	}
	lr := newLineReader(f, opts.MaxLineSize)
	for {
		n := pos.line + 1
		if n%4096 == 0 && ctx.Err() != nil {
			return pos, ctx.Err()
		}
		l, ok, err := lr.next()
		if err != nil {
			return pos, fmt.Errorf("%s: %w", path, err)
		}
		if !ok || (follow && !l.complete) {
			return pos, nil
		}
		pos.off += l.n
		pos.line = n
		st.Lines++
		st.Bytes += l.n
		if err := scanLine(path, n, l, opts, bodies, st, fn); err != nil {
			return pos, err
		}
	}
}

// scanLine hands fn the records of line n of path.
func scanLine(path string, n int, l line, opts ReadOptions, bodies *bodyWindow, st *ScanStats, fn func(*Record) error) error {
	switch {
	case l.tooLong:
		st.skip(path, n, fmt.Sprintf("longer than %d bytes", cmpMax(opts.MaxLineSize)))
		return nil
	case !l.complete:
		st.skip(path, n, "cut off: the file ends inside it")
		return nil
	}
	var w wireRecord
	if err := json.Unmarshal(l.b, &w); err != nil {
		st.skip(path, n, "not a JSON object: "+err.Error())
		return nil
	}
	if w.Event == "" {
		st.skip(path, n, "no event")
		return nil
	}
	if w.Event == Delivered && w.Recipients != nil && len(w.Recipients) == 0 {
		st.skip(path, n, "a delivered line with an empty recipients list")
		return nil
	}
	r := &Record{
		File: path, Line: n, Event: w.Event, ID: w.ID, Participant: w.Participant,
		Space: w.Space, Direction: w.Direction, Transport: w.Transport,
		Result: w.Result, RequiredCapability: w.RequiredCapability, MatchedSource: w.MatchedSource,
		MatchedCapability: w.MatchedCapability, Granted: w.Granted, Metadata: w.Metadata,
	}
	if w.Event == Delivered && w.Everyone > 0 && len(w.Recipients) == 0 {
		r.Participant, r.Everyone = EveryoneElse, w.Everyone
	}
	r.Time, _ = time.Parse(time.RFC3339Nano, w.Timestamp)
	if w.Event == CapabilityCheck {
		r.ID = w.EnvelopeID
	} else if w.Event == Delivered && len(w.Recipients) > 0 {
		return expand(r, &w, bodies, st, fn)
	} else {
		bodies.fill(r, w.Envelope)
	}
	st.Records++
	return fn(r)
}

// expand hands fn the records of a grouped delivered line (the compact
// layout since issue 19): one per recipient, each as the per-recipient line
// of the earlier layout would have read, at the grouped line's place. The
// first carries the line's own body if it has one; the others share it, as
// the lines after the first carried none.
func expand(tmpl *Record, w *wireRecord, bodies *bodyWindow, st *ScanStats, fn func(*Record) error) error {
	for i, rc := range w.Recipients {
		r := new(Record)
		*r = *tmpl
		r.Participant, r.Transport = rc.Participant, rc.Transport
		if i == 0 {
			bodies.fill(r, w.Envelope)
		} else {
			bodies.fill(r, nil)
		}
		st.Records++
		if err := fn(r); err != nil {
			return err
		}
	}
	return nil
}

// bodyWindow keeps the latest bodies by envelope id, the most recent max of
// them, to give compact delivered lines their body.
type bodyWindow struct {
	max  int
	byID map[string]json.RawMessage
	ring []string // ids in the order added, for eviction
	next int
}

func newBodyWindow(max int) *bodyWindow {
	if max <= 0 {
		max = DefaultMaxBodies
	}
	return &bodyWindow{max: max, byID: map[string]json.RawMessage{}}
}

// fill sets r's body: its own, or for a delivered line without one, the
// last one written under its id; it marks an envelope the gateway sent
// itself.
func (b *bodyWindow) fill(r *Record, own json.RawMessage) {
	if len(own) > 0 && !bytes.Equal(own, []byte("null")) {
		r.Envelope = own
		prev, known := b.byID[r.ID]
		r.Origin = r.Event == Delivered && !known
		if r.ID != "" && (!known || !bytes.Equal(prev, own)) {
			b.add(r.ID, own)
		}
		return
	}
	if r.Event == Delivered {
		if body, ok := b.byID[r.ID]; ok {
			r.Envelope, r.Shared = body, true
		}
	}
}

func (b *bodyWindow) add(id string, body json.RawMessage) {
	if _, ok := b.byID[id]; !ok {
		if len(b.ring) < b.max {
			b.ring = append(b.ring, id)
		} else {
			old := b.ring[b.next]
			delete(b.byID, old)
			b.ring[b.next] = id
			b.next = (b.next + 1) % b.max
		}
	}
	b.byID[id] = body
}
