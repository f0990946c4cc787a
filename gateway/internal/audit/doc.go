// Package audit writes the gateway's append-only audit log: two JSONL files in
// one directory, byte for byte in the layout of the reference gateway, so
// that shell, grep and jq tooling written against it keeps working.
//
// # Files
//
// [Open] creates the directory (0755) when it is missing, and then also a
// .gitignore in it holding "*\n!.gitignore\n"; a directory that already exists
// is left as it is. The files are opened with O_APPEND|O_CREATE (mode 0644)
// and never truncated:
//
//   - envelope-history.jsonl ([Options.EnvelopeHistory]), one line per
//     received or rejected envelope and one per recipient of a delivered one:
//
//     {"timestamp":"2026-11-22T10:09:50.999Z","event":"received","id":"probe-1","envelope":{...},"participant":"alice","space_id":"demo","direction":"inbound","transport":"websocket","metadata":{...}}
//
//   - capability-decisions.jsonl ([Options.CapabilityDecisions]), one line per
//     capability check:
//
//     {"timestamp":"…","event":"capability_check","envelope_id":"probe-1","participant":"test-client","space_id":"demo","result":"allowed","required_capability":"chat","matched_capability":{"kind":"chat"},"matched_source":"static","granted_capabilities":[...],"metadata":{...}}
//
// Lines are compact JSON with the keys in exactly this order. A key whose
// value is absent is left out: an empty string, a nil JSON value, or a JSON
// value that is the empty object {} (the reference prunes those too; the empty
// array [] is kept). timestamp is the record's time (JavaScript's toISOString
// layout: UTC, milliseconds, "Z"); direction is "inbound" for received and
// rejected, "outbound" for delivered, and left out for any other event.
// Strings are escaped as JSON.stringify escapes them: only '"', '\\' and
// control characters; <, >, &, U+2028, U+2029 and all other non-ASCII text are
// written as is. Invalid UTF-8 in a string becomes U+FFFD.
//
// The JSON values of a record (envelope, metadata, matched and granted
// capabilities) are written verbatim, as the caller promises compact valid
// JSON; only a cheap check is made. A value that fails it (not an object or
// array, white space just inside the brackets, or a line break anywhere) is
// checked with encoding/json and compacted if it is valid; if it is not, the
// envelope is written as null and any other value is left out, and the record
// counts an error in [Stats]. So no line is ever split, and no line is
// invalid JSON unless the caller passed a value that merely looks like JSON.
//
// # Concurrency and cost
//
// A [Log] is safe for concurrent use. [Log.Envelope] and [Log.Decision] copy
// the record into an in-memory queue under a mutex and return; one writer
// goroutine, started by Open and stopped by [Log.Close], takes the whole queue
// at a time, formats the lines into a reusable buffer (no allocation per
// line) and writes them through a 64 KiB bufio.Writer per file. The byte
// slices of a record are shared with the caller and only read; the Log drops
// its references once the record is written.
//
// The queue holds up to [Options.QueueSize] records (default 65536) besides
// the batch the writer is working on. When it is full, Envelope and Decision
// block until the writer takes it: records are never dropped while the Log is
// open. The queue's memory grows with use (about 180 bytes a record plus the
// callers' byte slices it keeps alive) and is released when the load drops.
//
// The writer flushes whenever the queue is empty and, while it stays busy, at
// least every 200 ms, so that scripts polling the files (tail -f, grep loops)
// see a line soon after the event.
//
// # Close and errors
//
// Close stops accepting records, writes everything already accepted, flushes
// and closes the files; it is idempotent. A record offered after Close (or
// while Close is waking callers blocked on a full queue) is discarded and
// counted in [Stats.Dropped]; it never panics.
//
// A failed write or flush is logged once per file through [Options.Logger],
// counted in [Stats.Errors], and the writer keeps going with the next line;
// the lines it had buffered are lost. Before writing again it makes sure the
// file ends with a line break, so that a partly written line never runs into
// the next one. Open does the same for an existing file whose last line was
// cut off (for instance by a crash).
//
// # Differences from the reference gateway
//
// The reference stamps a line when it writes it; here timestamp is
// [EnvelopeRecord.Time] / [DecisionRecord.Time] (filled in from [Options.Now]
// when zero), the time of the event. The reference writes .gitignore into any
// log directory that lacks one; here only into a directory Open created.
package audit
