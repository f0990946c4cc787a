// Package clusterhist keeps the polling history of a space served by a
// cluster of gateway nodes, in the cluster's History log: the same on every
// node, so that a poller may ask any of them.
//
// Each public envelope is appended once, by the node that accepted it or
// made it. A node's Writer appends what it queues in queue order (so each
// sender's order holds in the history), a batch at a time, from one
// goroutine of its own: the routing path never waits for the network, and
// a full queue drops and counts (Options.Dropped). A record is the
// accepting node's time of the envelope (Stamp bytes, big-endian Unix
// nanoseconds), so that since= compares the time the envelope's ts says,
// then the envelope. Read returns the records after a sequence number;
// Cursor is where a poller is, in the history and in the private answers
// its node keeps for it.
//
// The gateway package decides what is public and merges the node's
// private answers in (gateway/internal/clusterlink, Link.Poll); this package knows
// nothing of spaces' members.
package clusterhist
