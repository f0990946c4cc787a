// Package feed reads a space's stream of envelopes as a person follows it:
// it turns each envelope into typed events — a proposal made or settled, a
// request paired with its response, a reasoning started, stepping and
// ended, a grant, a stream opened or closed, a control, a gateway error —
// so that the terminal UI and the line client read the stream alike and
// differ only in how they draw it.
//
// A Reader holds what pairing needs (open requests, proposals and
// reasonings), bounded. It trusts nothing it reads: a gateway-only kind
// from a participant becomes a Spoofed event and a payload that does not
// decode becomes a Malformed one, so that no client shows either as if it
// were sound, and none drops it in silence.
//
// The web console reads the stream in JavaScript (console/web/js/feed.js).
// Both readings are held to testdata/vectors.json: envelopes and the events
// they must produce, read by this package's tests and by the console's
// Chromium test.
package feed
