// Package notify delivers the gateway's signed webhook notifications: one
// space's queue of messages, posted as JSON to one URL, each signed, retried
// with back-off, kept on disk until delivered, and written to a dead-letter
// log when every attempt failed. docs/approvals.md describes the wire format
// for receivers.
//
// # Signature
//
// Each attempt is a POST of the message's body with
//
//	Content-Type: application/json
//	X-Mew-Delivery: <the message's id, the same on every attempt>
//	X-Mew-Attempt: <1, 2, …>
//	X-Mew-Timestamp: <Unix seconds at the attempt>
//	X-Mew-Signature: v1=<hex HMAC-SHA256(secret, timestamp + "." + body)>
//
// A receiver recomputes the HMAC over the timestamp header, a dot and the
// raw body, compares it in constant time, and refuses a timestamp more than
// five minutes from its clock (and a signature it has seen), so that a
// recorded request cannot be replayed later.
//
// # Delivery
//
// [Notifier.Enqueue] never blocks: it is called under a space's lock. It
// takes a message while fewer than Config.QueueSize are pending; past that
// the message goes to the dead-letter log, and is counted. A single loop
// goroutine owns the files and the schedule; Config.Workers goroutines make
// the attempts. An attempt succeeds on a 2xx answer; a network error, a
// timeout, 408, 429 and 5xx are retried after Backoff, 2×Backoff, 4×… (at
// most MaxBackoff, or a longer Retry-After up to it), each with up to half
// of it taken off at random, so that many gateways do not retry in step;
// other answers (3xx, which is not followed, and 4xx) are final. At most
// maxResponse bytes of an answer are read.
//
// # Files
//
// In Config.Dir (0700), both JSON lines, 0600:
//
//   - <name>.spool.jsonl: the pending messages. A message is appended
//     ({"op":"add",…}) before its first attempt, a failed attempt adds
//     {"op":"try",…}, and delivery or dead-lettering {"op":"done",…}. The
//     file is rewritten with only what is pending when it has grown to
//     several times that, and emptied when nothing is. [New] reads it back,
//     so a message pending when a gateway stopped is delivered by the next.
//   - <name>.dead.jsonl: one line per message given up on, with its last
//     error; rotated to <name>.dead.jsonl.1 past maxDeadFile.
//
// Neither file holds the secret or a link: a link is a credential, minted
// (Config.Link) when a message is first attempted in a process and kept in
// memory only.
//
// # Goroutines
//
// New starts the loop and the workers; Close stops them (an attempt under
// way is cancelled and stays pending in the spool) and closes the files.
package notify
