// Package auditlog reads the gateway's audit log: the directory of
// envelope-history.jsonl and capability-decisions.jsonl with their rotated
// files, in either layout the gateway writes (compact or reference; see
// docs/audit.md).
//
// It is the one reader of that format in the module, so that what `mew log`
// prints, what the gateway's lineage API serves and what [Verify] checks agree:
//
//   - [Files] lists a log's files in the order they were written;
//   - [Scan] streams a log's lines as typed [Record] values, a grouped
//     delivered line as one record per recipient, with the body of a compact
//     delivered line taken from the line that holds it, so that both layouts
//     (and the per-recipient compact layout of earlier versions) read back
//     into the same records;
//   - [Verify] checks the hash chain and names the first line that was
//     altered, removed or inserted;
//   - [Query] selects records by participant, kind, time, id, correlation and
//     text;
//   - [BuildIndex] and [Index.Lineage] answer why an envelope happened: the
//     request that ran it, the proposal it fulfilled and who approved it, the
//     grant and capability pattern that admitted it, and the conversation
//     that led to it.
//   - [Follower] keeps an Index current while the gateway appends to the
//     log, reading only what it gained (the gateway's lineage API answers
//     from one per space).
//
// The files are input that anyone with access to the directory may have
// written: every line is bounded ([ReadOptions.MaxLineSize]); a line too long,
// not JSON or not a record is skipped and counted, never fatal, and never
// read into memory beyond the bound. The file names and the chain's form and
// arithmetic are internal/auditfmt's, which the gateway's writer uses too; a
// mistake there would be shared, so both are checked against test vectors
// generated apart from either (internal/auditfmt/testdata/gen.py).
package auditlog
