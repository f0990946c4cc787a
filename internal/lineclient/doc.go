// Package lineclient is the line client of `mew client connect` and `mew
// space connect` where the full-screen UI does not run: with --no-ui, on a
// pipe, or with TERM unset or dumb. What others send is printed readably,
// one line each, as internal/feed reads it (the terminal UI reads the
// stream the same way); what the user types is sent as a chat, a JSON
// envelope or a command (/approve N, /reject N, /proposals, /quit). On a
// terminal the line being typed is edited under the output, with an
// agent's reasoning as a status line above it.
//
// Script mode (--fifo-in, --output-file, --fifo-out) reads and writes
// envelopes as JSON lines instead.
package lineclient
