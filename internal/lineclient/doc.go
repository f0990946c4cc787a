// Package lineclient is the line client of `mew client connect` and `mew
// space connect` where the full-screen UI does not run: with --no-ui, on a
// pipe, or with TERM unset or dumb. What others send is printed readably,
// one line each, as internal/feed reads it (the terminal UI reads the
// stream the same way); what the user types is sent as a chat, a JSON
// envelope or a command (/approve N, /reject N, /proposals, /quit). On a
// terminal the line being typed is edited by golang.org/x/term's Terminal
// (history, cursor keys, Ctrl-A/E/K/U/W), under the output, with an agent's
// reasoning as a status row above the prompt.
//
// Script mode (--fifo-in, --output-file, --fifo-out) reads and writes
// envelopes as JSON lines instead.
package lineclient
