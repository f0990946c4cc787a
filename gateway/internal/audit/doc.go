// Package audit writes the gateway's append-only audit log: two JSONL files in
// one directory, with the reference gateway's field names in its order, so
// that shell, grep and jq tooling written against it keeps working, every
// line hash-chained to the one before it. docs/audit.md describes the format
// for its readers; `mew log verify` checks the chain.
//
// # Files
//
// [Open] creates the directory (0700) when it is missing, and then also a
// .gitignore in it holding "*\n!.gitignore\n"; a directory that already exists
// is left as it is. The files are opened with O_APPEND|O_CREATE and never
// truncated. Every file the log creates has mode 0600, as envelopes may hold
// secrets; an existing regular file with a looser mode is chmod'ed to 0600
// when it is opened (Open fails if that is not possible):
//
//   - envelope-history.jsonl ([Options.EnvelopeHistory]), one line per
//     received or rejected envelope and, for a delivered one, one grouped
//     line per 256 recipients (compact) or one line per recipient
//     (reference):
//
//     {"timestamp":"2026-11-22T10:09:50.999Z","event":"received","id":"probe-1","envelope":{...},"participant":"alice","space_id":"demo","direction":"inbound","transport":"websocket","metadata":{...}}
//
//   - capability-decisions.jsonl ([Options.CapabilityDecisions]), one line per
//     capability check:
//
//     {"timestamp":"…","event":"capability_check","envelope_id":"probe-1","participant":"test-client","space_id":"demo","result":"allowed","required_capability":"chat","matched_capability":{"kind":"chat"},"matched_source":"static","granted_capabilities":[...],"metadata":{...}}
//
// In the compact format ([FormatCompact], the default) a delivered record
// is written as one line naming its recipients (split over several lines
// past 256 of them, see maxGroup), which carries no envelope when an earlier
// line holds the same body under the same id (its received line); the body
// of an envelope the gateway sent itself is written on its first delivered
// line only:
//
//	{"timestamp":"…","event":"delivered","id":"probe-1","space_id":"demo","direction":"outbound","recipients":[{"participant":"bob","transport":"websocket"},{"participant":"carol","transport":"http"}],"chain":"2:…"}
//
// The keys of a grouped line are timestamp, event, id, envelope, space_id,
// direction, recipients and metadata, in that order, so that the
// reference's grep for a delivery ("event":"delivered".*"id":"X".*"participant":"P")
// matches it.
//
// [FormatReference] writes the envelope on every line and one line per
// recipient, as the reference does.
//
// Lines are compact JSON with the keys in exactly this order, and then the
// chain: ,"chain":"<n>:<hash>" where n is the line's number in its file and
// hash 32 hex digits, the first 16 bytes of SHA-256 over the previous
// line's hash and this line's bytes before the hash (internal/auditfmt); the
// first line a Log writes into a file also carries ,"chain_prev":"<hash>",
// the hash it continues: the end of the previous (rotated) file, of the file
// it appends to, or zeros at the start of a log. A key whose
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
// see a line soon after the event. Once traffic has kept it busy for 10 ms
// (no 10 ms gap between writes), having written, it gathers for 5 ms before
// it looks at the queue again, unless 1024 records are queued by then: under
// steady traffic it is woken and writes at most 200 times a second, not once
// per record; a short exchange after a quiet moment (a request and its
// answer) is written as it comes. A flush is one write system call for
// everything buffered (group commit). The log calls fsync only when a file
// is rotated away and at Close, not per line or batch: a line handed to the
// kernel survives a crash of the gateway, and only a crash of the machine
// can lose the last moments, which verify then shows as a cut or missing
// tail; an fsync per batch would put a disk round trip on the writer every
// flush (many a second under load) for little the chain does not show.
//
// # Rotation and retention
//
// Each file is rotated before a line would take it past
// [Options.MaxFileSize] (default 256 MiB, [DefaultMaxFileSize]; negative
// never rotates): the writer flushes it, renames it, and opens a new, empty
// file under the original name, between two lines, so a line is never split.
// A line longer than the limit goes into a file of its own. The rotated file
// is named after the log with the UTC time of the rotation, to the
// millisecond, before the extension:
//
//	envelope-history.20261122T100950.999Z.jsonl
//
// The current file is always envelope-history.jsonl, so that tail -f, grep
// and jq on it keep working. Because the time has a fixed width and digits
// sort before "j", a shell glob lists the files in the order they were
// written, oldest first, with the current file last:
//
//	cat .mew/logs/envelope-history*.jsonl | jq ...
//
// The time comes from [Options.Now]; if it is not later than the newest
// rotated file's (a clock standing still or stepping back), the newest one's
// plus a millisecond is used, so the names stay unique and in order. Of the
// rotated files, the newest [Options.MaxFiles] are kept (default 10,
// [DefaultMaxFiles]; negative keeps all) and older ones are deleted after
// each rotation and at Open; files that do not match the name pattern
// exactly are never touched. So with the defaults one log takes at most
// about 2.8 GB. If the rename fails, the error is logged and the file keeps
// growing; rotation is tried again a second later. [Stats.Rotations] counts
// the rotations.
//
// # Close and errors
//
// Close stops accepting records, writes everything already accepted, flushes
// and closes the files; it is idempotent. A record offered after Close (or
// while Close is waking callers blocked on a full queue) is discarded and
// counted in [Stats.Dropped]; it never panics.
//
// A failed write, flush or re-open (a full disk: ENOSPC, or any other error)
// is counted in [Stats.Errors]; the file is closed, and the lines it had
// buffered, the line at hand and every line for the file in the next second
// are dropped without a write and counted in [Stats.Lost] (a buffered line
// may have reached the file in part or whole: Lost counts the lines not
// known to have been written whole). After that second the next line
// re-opens the file by its name, so writing resumes by itself once there is
// room again, or once a deleted file or directory can be created anew. So a
// full disk costs one open and one failed write a second, and never stops
// the writer: callers are held up no longer than with a working disk, and
// the gateway keeps routing. Nothing panics.
//
// The first failure of a file is logged through [Options.Logger] at once,
// later ones at most once a minute with the errors and lost lines since the
// previous message; when the file is written again after a logged failure,
// that is logged too, and Close logs what was lost since the last message.
// Close returns an error if a file was still failing at the end.
//
// When the writer opens a file that does not end in a chained line (its last
// line was cut off by a crash or a full disk, or it was written by an older
// gateway without a chain), it sets the file aside as a rotated file and
// starts a new one, so that a partly written line never runs into the next
// one and every file is one chain; verifying the set-aside file reports the
// damage. A file that ends in a chained line is appended to, its chain and
// numbering continued.
//
// # Differences from the reference gateway
//
// The reference stamps a line when it writes it; here timestamp is
// [EnvelopeRecord.Time] / [DecisionRecord.Time] (filled in from [Options.Now]
// when zero), the time of the event. The reference writes .gitignore into any
// log directory that lacks one; here only into a directory Open created.
package audit
