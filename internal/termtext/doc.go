// Package termtext makes text that other participants control safe to show
// on a terminal.
//
// Chat texts, participant ids, reasons, tool output and error messages come
// from peers. Printed raw, an escape sequence in them can clear the screen,
// set the window title, hide text or move the cursor, a carriage return can
// overwrite what the line showed, a bidi override can reverse it, and a
// newline can start a line that poses as another speaker's. Clean removes
// all of that; Line and Indent also decide where the text's lines go, so
// that a line of text can never look like a line of the program's own.
//
// The line client (mew client connect) uses it for every peer-controlled
// string it prints; a full-screen terminal UI should use it too.
package termtext
