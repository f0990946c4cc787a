// Package summary says in a few words what an envelope's parts mean to a
// person: what a reasoning step is doing, what a tool call returned. The
// line client and the terminal UI show the same things, so they read them
// the same way; each clips and styles the words for its own screen.
package summary
