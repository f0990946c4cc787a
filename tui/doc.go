// Package tui is mew's full-screen terminal client: a space shown as a
// transcript, an approval dialog for the proposals the user may decide, an
// input with slash commands and @id addressing, a side board, and a status
// bar.
//
// It is built with Bubble Tea v2. The Model is an ordinary tea.Model that
// knows nothing of sockets: what happens in the space reaches it as messages
// (Envelope, Connection), and everything it does in the space goes through the
// Space interface, which the SDK's participant.Participant implements through
// FromParticipant. Tests feed envelopes to the model, call Update with key
// messages and compare View with golden frames; Run wires the model to a
// connected participant and a terminal.
//
// # Reading the stream, and the parts of the model
//
// Each envelope is read by internal/feed, as the line client reads it
// (docs/clients.md): the model draws the feed's events (observe.go), so a
// spoofed gateway kind is not believed and a payload that does not decode
// is a line saying so. The Model is a thin root over components that own
// their state, its updates and their drawing: the transcript (its entries,
// their bound, the scroll, the search), the approvals (the proposals, their
// dialog, the decisions), the questions (the elicitations, their form), the
// board, the ledger, the command line (commands: the slash commands, the
// controls, the default targets), the prompt (the input and its completion),
// the roster, the reasonings in progress (thinking) and the requests
// awaiting an answer (calls). They share an env (the space, the clock, the
// styles, the transcript's door for notes) and read each other through
// small interfaces, never each other's fields. The root routes messages and
// keys to them and lays out the frame; docs/tui.md has the table of who
// owns what.
//
// # Rendering
//
// The transcript is a list of entries, one renderer per kind of envelope
// (chat, proposal, request paired with its response, one live line per
// reasoning, presence, system errors, streams, raw JSON in verbose mode).
// Entries that change as the space moves on (a request answered, a proposal
// settled, a reasoning that gains thoughts) are updated in place. Every string
// a peer controls goes through internal/termtext before it is drawn: Line for
// ids, tool names and reasons, Clean with indented continuation lines for
// texts, so no peer can steer the terminal or pose as another speaker.
//
// # Approvals and grants
//
// A proposal addressed to the user, or one the user's capabilities let them
// fulfil, is queued, oldest first, and offered in a dialog: Yes fulfils it
// once; Grant fulfils it and sends capability/grant to the proposer with a
// pattern for the chosen scope (these exact arguments, this tool, the target's
// tools) and lifetime (once, 10 minutes as ttl_seconds, this session, until
// revoked), so that the gateway lets the proposer's next matching call through
// without asking anyone; Edit fulfils it with arguments the user changed; No
// rejects it with a reason code and the user's words; Esc postpones it. A
// file write whose target can read the file is previewed as a diff.
//
// /grants lists the grants in force in the space from the gateway's ledger
// (GET /participants/{id}/grants) and /revoke N revokes any of them; those
// granted "for this session" are revoked when the TUI exits.
//
// # The board, search, input
//
// A side board (board.go) shows the participants and what they do, the
// proposals awaiting the user, the grants in force, the user's chats awaiting
// an acknowledgement and the open streams; docked from 120 columns, stacked
// when opened on narrower terminals. /find searches the transcript; Tab
// completes commands and @participants; the input is multi-line; chats are
// drawn as a Markdown subset (markdown.go).
//
// # Concurrency
//
// The model is owned by the Bubble Tea program's goroutine. Calls into the
// Space that may block (fulfilling waits for the target's answer) run in
// tea.Cmd goroutines and report back with messages; the model never locks.
package tui
